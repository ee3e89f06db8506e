// The caching allocator policy in plain C++ (no CUDA calls): a line-by-line mirror of
// ember.dispatcher.allocator.CachingAllocator, which is PyTorch's CUDA caching allocator.
//
// The device is reached only through DeviceInterface (raw alloc/free, events), so the same
// code runs against the real GPU (cuda_device.cpp) and against a fake device made of host
// memory and test-controlled events (policy_test.cpp, the ember_cuda._policy_test module).
//
// Policy (see docs/allocator.md): 512 B rounding; small (<= 1 MiB) and large pools;
// segments of 2 MiB (small), 20 MiB (1-10 MiB), else the request rounded to 2 MiB; best fit
// (smallest, then lowest address) with splitting (small: remainder >= 512 B, large:
// > 1 MiB); merging on free; free lists per (pool, stream); record_stream -> events recorded
// at free, the block returns to its pool when they complete (checked at every malloc);
// empty_cache; OOM -> wait for events, release free segments, retry once, then OOMError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ember_cuda {

using StreamId = uintptr_t;  // 0: the device's default stream
using EventId = uintptr_t;   // 0: nothing to wait for

// What a device supplies. alloc returns nullptr when the device is out of memory.
struct DeviceInterface {
  virtual ~DeviceInterface() = default;
  virtual std::string name() const = 0;
  virtual void* alloc(size_t nbytes) = 0;
  virtual void free(void* ptr) = 0;
  // false when the device does not report its capacity
  virtual bool mem_get_info(size_t* free_bytes, size_t* total_bytes) = 0;
  virtual EventId record_event(StreamId) { return 0; }
  virtual bool event_done(EventId) { return true; }
  virtual void event_synchronize(EventId) {}
  // the policy is done with an event (after it completed): the device may recycle it
  virtual void event_release(EventId) {}
};

// Thrown when the device cannot provide memory even after the cache was returned to it.
struct OutOfMemory : std::runtime_error {
  size_t nbytes, alloc_size;
  std::string device;
  OutOfMemory(const std::string& msg, size_t n, size_t a, std::string d)
      : std::runtime_error(msg), nbytes(n), alloc_size(a), device(std::move(d)) {}
};

struct Segment;

struct Block {
  Segment* seg;
  size_t offset;
  size_t size;
  size_t requested = 0;
  StreamId stream;
  bool small;
  bool allocated = false;
  Block* prev = nullptr;
  Block* next = nullptr;
  std::vector<StreamId> stream_uses;  // other streams that used it (record_stream)
  int event_count = 0;                // events still to complete before it is free
  void* ptr() const;                  // device address of the block
};

struct Segment {
  void* handle;
  size_t size;
  bool small;
  StreamId stream;
  uint64_t base;  // virtual address ordering blocks across segments
  Block* head = nullptr;
};

constexpr size_t kMinBlock = 512;
constexpr size_t kSmallSize = size_t(1) << 20;
constexpr size_t kSmallBuffer = size_t(2) << 20;
constexpr size_t kLargeBuffer = size_t(20) << 20;
constexpr size_t kMinLargeAlloc = size_t(10) << 20;
constexpr size_t kRoundLarge = size_t(2) << 20;

size_t round_size(size_t nbytes);
size_t segment_size(size_t size);
std::string format_size(size_t nbytes);

// Stat arrays: [all, small_pool, large_pool] x [current, peak, allocated, freed]
struct StatArray {
  int64_t v[3][4] = {};
};
enum StatName {
  kAllocation, kSegment, kActive, kInactiveSplit, kAllocatedBytes, kReservedBytes,
  kActiveBytes, kInactiveSplitBytes, kRequestedBytes, kNumStats
};
extern const char* const kStatNames[kNumStats];
enum CounterName {
  kNumAllocRetries, kNumOoms, kNumSyncAllStreams, kNumDeviceAlloc, kNumDeviceFree, kNumCounters
};
extern const char* const kCounterNames[kNumCounters];

struct SnapshotBlock {
  size_t offset, size, requested;
  const char* state;
};
struct SnapshotSegment {
  uintptr_t handle;
  uint64_t address;
  size_t total_size;
  StreamId stream;
  bool small;
  std::vector<SnapshotBlock> blocks;
};

class CachingAllocator {
 public:
  explicit CachingAllocator(DeviceInterface* device) : dev_(device) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  DeviceInterface* device() const { return dev_; }
  // nullptr for 0 bytes; throws OutOfMemory
  Block* malloc(size_t nbytes, StreamId stream = 0);
  void free(Block* block);  // nullptr ignored; throws std::logic_error on a double free
  void record_stream(Block* block, StreamId stream);
  void empty_cache();

  std::vector<std::pair<std::string, int64_t>> memory_stats();  // sorted by key
  std::vector<SnapshotSegment> memory_snapshot();
  int64_t memory_allocated();
  int64_t max_memory_allocated();
  int64_t memory_reserved();
  int64_t max_memory_reserved();
  int64_t counter(CounterName c);
  void reset_peak_memory_stats();
  void reset_accumulated_memory_stats();
  // the most this process may reserve (set_per_process_memory_fraction); -1: no limit but
  // the device's own. A request beyond it frees the cache, then raises OutOfMemory.
  void set_limit(int64_t bytes, double fraction);
  int64_t limit() const { return limit_; }

 private:
  using Key = std::pair<size_t, uint64_t>;  // (size, address)
  using FreeList = std::map<Key, Block*>;
  using PoolKey = std::pair<bool, StreamId>;

  void allocate_block(Block* b, size_t size, size_t nbytes);
  Block* take_free_block(size_t size, bool small, StreamId stream);
  void insert_free(Block* b);
  void remove_free(Block* b);
  Block* alloc_segment(size_t size, bool small, StreamId stream, size_t nbytes);
  void* device_alloc(size_t n);
  std::string oom_message(size_t alloc_size);
  void free_locked(Block* b);
  void free_block(Block* b);
  void process_events();
  void synchronize_and_free_events();
  void release_free_segments();
  void inc(StatName s, int pool, int64_t n);
  void dec(StatName s, int pool, int64_t n);
  static Key key_of(const Block* b);

  DeviceInterface* dev_;
  std::recursive_mutex mu_;
  std::map<PoolKey, FreeList> pools_;
  // insertion-ordered per stream (oldest event first)
  std::vector<std::pair<StreamId, std::deque<std::pair<EventId, Block*>>>> events_;
  std::map<uint64_t, Segment*> segments_;  // by base
  std::set<const Block*> live_;            // allocated or awaiting events (double-free check)
  uint64_t next_base_ = 0;
  int64_t limit_ = -1;
  double fraction_ = 1.0;
  StatArray stats_[kNumStats];
  int64_t counters_[kNumCounters] = {};
};

}  // namespace ember_cuda
