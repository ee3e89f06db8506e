// The caching allocator policy (see allocator_policy.h): plain C++, no CUDA calls.
// Each function mirrors the method of the same name in ember/dispatcher/allocator.py.
#include "allocator_policy.h"

#include <algorithm>
#include <cstdio>

namespace ember_cuda {

const char* const kStatNames[kNumStats] = {
    "allocation", "segment", "active", "inactive_split", "allocated_bytes",
    "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes"};
const char* const kCounterNames[kNumCounters] = {
    "num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
    "num_device_free"};

namespace {
constexpr int kSmallPool = 1, kLargePool = 2;
const char* const kPoolNames[3] = {"all", "small_pool", "large_pool"};
const char* const kMetrics[4] = {"current", "peak", "allocated", "freed"};
}  // namespace

void* Block::ptr() const { return static_cast<char*>(seg->handle) + offset; }

size_t round_size(size_t nbytes) {
  return nbytes < kMinBlock ? kMinBlock : (nbytes + kMinBlock - 1) & ~(kMinBlock - 1);
}

size_t segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) & ~(kRoundLarge - 1);
}

std::string format_size(size_t n) {
  char buf[64];
  if (n <= 1024) std::snprintf(buf, sizeof buf, "%zu bytes", n);
  else if (n <= (size_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.2f KiB", n / 1024.0);
  else if (n <= (size_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f MiB", n / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%.2f GiB", n / 1073741824.0);
  return buf;
}

CachingAllocator::~CachingAllocator() {
  // Blocks still referenced by storages leak with their segments at exit (as PyTorch).
  for (auto& kv : segments_) {
    Block* b = kv.second->head;
    while (b) {
      Block* n = b->next;
      delete b;
      b = n;
    }
    delete kv.second;
  }
}

void CachingAllocator::inc(StatName s, int pool, int64_t n) {
  for (int p : {0, pool}) {
    int64_t* v = stats_[s].v[p];
    v[0] += n;
    v[2] += n;
    if (v[0] > v[1]) v[1] = v[0];
  }
}

void CachingAllocator::dec(StatName s, int pool, int64_t n) {
  for (int p : {0, pool}) {
    int64_t* v = stats_[s].v[p];
    v[0] -= n;
    v[3] += n;
  }
}

CachingAllocator::Key CachingAllocator::key_of(const Block* b) {
  return {b->size, b->seg->base + b->offset};
}

// -- allocation ------------------------------------------------------------------------

Block* CachingAllocator::malloc(size_t nbytes, StreamId stream) {
  if (nbytes == 0) return nullptr;
  const size_t size = round_size(nbytes);
  const bool small = size <= kSmallSize;
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (!events_.empty()) process_events();
  Block* b = take_free_block(size, small, stream);
  if (!b) b = alloc_segment(size, small, stream, nbytes);
  allocate_block(b, size, nbytes);
  return b;
}

void CachingAllocator::allocate_block(Block* b, size_t size, size_t nbytes) {
  const int pool = b->small ? kSmallPool : kLargePool;
  const size_t remaining = b->size - size;
  const bool already_split = b->prev || b->next;
  if (b->small ? remaining >= kMinBlock : remaining > kSmallSize) {
    Block* rest = new Block{b->seg, b->offset + size, remaining, 0, b->stream, b->small};
    rest->prev = b;
    rest->next = b->next;
    if (rest->next) rest->next->prev = rest;
    b->next = rest;
    b->size = size;
    insert_free(rest);
    if (already_split) {
      dec(kInactiveSplitBytes, pool, (int64_t)size);
    } else {
      inc(kInactiveSplit, pool, 1);
      inc(kInactiveSplitBytes, pool, (int64_t)remaining);
    }
  } else if (already_split) {
    dec(kInactiveSplit, pool, 1);
    dec(kInactiveSplitBytes, pool, (int64_t)b->size);
  }
  b->allocated = true;
  b->requested = nbytes;
  live_.insert(b);
  inc(kAllocation, pool, 1);
  inc(kAllocatedBytes, pool, (int64_t)b->size);
  inc(kActive, pool, 1);
  inc(kActiveBytes, pool, (int64_t)b->size);
  inc(kRequestedBytes, pool, (int64_t)nbytes);
}

Block* CachingAllocator::take_free_block(size_t size, bool small, StreamId stream) {
  auto pit = pools_.find({small, stream});
  if (pit == pools_.end()) return nullptr;
  FreeList& fl = pit->second;
  auto it = fl.lower_bound({size, 0});
  if (it == fl.end()) return nullptr;
  Block* b = it->second;
  fl.erase(it);
  return b;
}

void CachingAllocator::insert_free(Block* b) { pools_[{b->small, b->stream}][key_of(b)] = b; }

void CachingAllocator::remove_free(Block* b) {
  auto pit = pools_.find({b->small, b->stream});
  if (pit != pools_.end()) pit->second.erase(key_of(b));
}

Block* CachingAllocator::alloc_segment(size_t size, bool small, StreamId stream, size_t nbytes) {
  const size_t alloc_size = segment_size(size);
  void* handle = device_alloc(alloc_size);
  if (!handle) {
    // Out of device memory: wait for blocks held by other streams' events (one may fit
    // now), return every fully free segment, and try once more.
    counters_[kNumAllocRetries] += 1;
    synchronize_and_free_events();
    if (Block* b = take_free_block(size, small, stream)) return b;
    release_free_segments();
    handle = device_alloc(alloc_size);
    if (!handle) {
      counters_[kNumOoms] += 1;
      throw OutOfMemory(oom_message(alloc_size), nbytes, alloc_size, dev_->name());
    }
  }
  Segment* seg = new Segment{handle, alloc_size, small, stream, next_base_};
  next_base_ += alloc_size;
  segments_[seg->base] = seg;
  Block* b = seg->head = new Block{seg, 0, alloc_size, 0, stream, small};
  const int pool = small ? kSmallPool : kLargePool;
  counters_[kNumDeviceAlloc] += 1;
  inc(kSegment, pool, 1);
  inc(kReservedBytes, pool, (int64_t)alloc_size);
  return b;
}

void* CachingAllocator::device_alloc(size_t n) {
  if (limit_ >= 0 && stats_[kReservedBytes].v[0][0] + (int64_t)n > limit_) return nullptr;
  return dev_->alloc(n);
}

void CachingAllocator::set_limit(int64_t bytes, double fraction) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  limit_ = bytes;
  fraction_ = fraction;
}

std::string CachingAllocator::oom_message(size_t alloc_size) {
  const std::string name = dev_->name();
  size_t free_b = 0, total_b = 0;
  std::string capacity;
  if (dev_->mem_get_info(&free_b, &total_b))
    capacity = name + " has a total capacity of " + format_size(total_b) + " of which " +
               format_size(free_b) + " is free. ";
  else
    capacity = name + " does not report its capacity. ";
  const int64_t allocated = stats_[kAllocatedBytes].v[0][0];
  const int64_t reserved = stats_[kReservedBytes].v[0][0];
  std::string why;
  if (limit_ >= 0) {
    char frac[32];
    std::snprintf(frac, sizeof frac, "%g", fraction_);
    why = "This process may reserve " + format_size((size_t)limit_) +
          " (set_per_process_memory_fraction(" + frac + ")). ";
  }
  return "Out of memory on " + name + ". Tried to allocate " + format_size(alloc_size) + ". " + why +
         capacity + "Of the allocated memory " + format_size((size_t)allocated) +
         " is allocated by ember, and " + format_size((size_t)(reserved - allocated)) +
         " is reserved by ember but unallocated. If reserved but unallocated memory is large, "
         "the cache is fragmented: free tensors you no longer need, or allocate the largest "
         "buffers first. If this is a training step, the activations saved for the backward pass "
         "can move to host memory (ember.utils.offload) or be recomputed "
         "(ember.utils.checkpoint) instead of staying on the device.";
}

// -- freeing ---------------------------------------------------------------------------

void CachingAllocator::free(Block* b) {
  if (!b) return;
  std::lock_guard<std::recursive_mutex> lock(mu_);
  free_locked(b);
}

void CachingAllocator::free_locked(Block* b) {
  if (!live_.count(b) || !b->allocated)
    throw std::logic_error("block is not allocated by this allocator (freed twice?)");
  b->allocated = false;
  const int pool = b->small ? kSmallPool : kLargePool;
  dec(kAllocation, pool, 1);
  dec(kAllocatedBytes, pool, (int64_t)b->size);
  if (!b->stream_uses.empty()) {
    std::vector<StreamId> uses;
    uses.swap(b->stream_uses);
    for (StreamId s : uses) {
      EventId e = dev_->record_event(s);
      if (e) {
        b->event_count += 1;
        auto it = std::find_if(events_.begin(), events_.end(),
                               [s](const auto& q) { return q.first == s; });
        if (it == events_.end()) {
          events_.emplace_back(s, std::deque<std::pair<EventId, Block*>>{});
          it = events_.end() - 1;
        }
        it->second.emplace_back(e, b);
      }
    }
    if (b->event_count) return;
  }
  free_block(b);
}

void CachingAllocator::free_block(Block* b) {
  const int pool = b->small ? kSmallPool : kLargePool;
  const size_t size = b->size;
  const size_t requested = b->requested;
  int64_t net_blocks = 0, net_bytes = 0;
  live_.erase(b);
  Block* prev = b->prev;
  if (prev && !prev->allocated && !prev->event_count) {
    remove_free(prev);
    b->offset = prev->offset;
    b->size += prev->size;
    b->prev = prev->prev;
    if (!b->prev) b->seg->head = b;
    else b->prev->next = b;
    net_blocks -= 1;
    net_bytes -= (int64_t)prev->size;
    delete prev;
  }
  Block* nxt = b->next;
  if (nxt && !nxt->allocated && !nxt->event_count) {
    remove_free(nxt);
    b->size += nxt->size;
    b->next = nxt->next;
    if (b->next) b->next->prev = b;
    net_blocks -= 1;
    net_bytes -= (int64_t)nxt->size;
    delete nxt;
  }
  if (b->prev || b->next) {
    net_blocks += 1;
    net_bytes += (int64_t)b->size;
  }
  b->requested = 0;
  insert_free(b);
  if (net_blocks > 0) inc(kInactiveSplit, pool, net_blocks);
  else if (net_blocks < 0) dec(kInactiveSplit, pool, -net_blocks);
  if (net_bytes > 0) inc(kInactiveSplitBytes, pool, net_bytes);
  else if (net_bytes < 0) dec(kInactiveSplitBytes, pool, -net_bytes);
  dec(kActive, pool, 1);
  dec(kActiveBytes, pool, (int64_t)size);
  dec(kRequestedBytes, pool, (int64_t)requested);
}

// -- streams ---------------------------------------------------------------------------

void CachingAllocator::record_stream(Block* b, StreamId stream) {
  if (!b) return;
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (!live_.count(b) || !b->allocated)
    throw std::logic_error("record_stream on a block which is not allocated");
  if (stream == b->stream) return;
  if (std::find(b->stream_uses.begin(), b->stream_uses.end(), stream) == b->stream_uses.end())
    b->stream_uses.push_back(stream);
}

void CachingAllocator::process_events() {
  for (auto it = events_.begin(); it != events_.end();) {
    auto& q = it->second;
    while (!q.empty()) {
      auto [event, block] = q.front();
      if (!dev_->event_done(event)) break;
      q.pop_front();
      dev_->event_release(event);
      if (--block->event_count == 0) free_block(block);
    }
    if (q.empty()) it = events_.erase(it);
    else ++it;
  }
}

void CachingAllocator::synchronize_and_free_events() {
  counters_[kNumSyncAllStreams] += 1;
  auto events = std::move(events_);
  events_.clear();
  for (auto& sq : events)
    for (auto [event, block] : sq.second) {
      dev_->event_synchronize(event);
      dev_->event_release(event);
      if (--block->event_count == 0) free_block(block);
    }
}

// -- the cache -------------------------------------------------------------------------

void CachingAllocator::empty_cache() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  synchronize_and_free_events();
  release_free_segments();
}

void CachingAllocator::release_free_segments() {
  std::vector<Block*> released;
  for (auto pit = pools_.begin(); pit != pools_.end();) {
    FreeList& fl = pit->second;
    for (auto it = fl.begin(); it != fl.end();) {
      if (!it->second->prev && !it->second->next) {
        released.push_back(it->second);
        it = fl.erase(it);
      } else {
        ++it;
      }
    }
    if (fl.empty()) pit = pools_.erase(pit);
    else ++pit;
  }
  for (Block* b : released) {
    Segment* seg = b->seg;
    segments_.erase(seg->base);
    const int pool = seg->small ? kSmallPool : kLargePool;
    counters_[kNumDeviceFree] += 1;
    dec(kSegment, pool, 1);
    dec(kReservedBytes, pool, (int64_t)seg->size);
    void* handle = seg->handle;
    delete b;
    delete seg;
    dev_->free(handle);
  }
}

// -- statistics ------------------------------------------------------------------------

std::vector<std::pair<std::string, int64_t>> CachingAllocator::memory_stats() {
  std::vector<std::pair<std::string, int64_t>> items;
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    for (int s = 0; s < kNumStats; ++s)
      for (int p = 0; p < 3; ++p)
        for (int m = 0; m < 4; ++m)
          items.emplace_back(std::string(kStatNames[s]) + "." + kPoolNames[p] + "." + kMetrics[m],
                             stats_[s].v[p][m]);
    for (int c = 0; c < kNumCounters; ++c) items.emplace_back(kCounterNames[c], counters_[c]);
  }
  items.emplace_back("max_split_size", -1);
  for (const char* name : {"oversize_allocations", "oversize_segments"})
    for (int m = 0; m < 4; ++m) items.emplace_back(std::string(name) + "." + kMetrics[m], 0);
  std::sort(items.begin(), items.end());
  return items;
}

std::vector<SnapshotSegment> CachingAllocator::memory_snapshot() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::vector<SnapshotSegment> out;
  for (auto& kv : segments_) {
    Segment* seg = kv.second;
    SnapshotSegment s{(uintptr_t)seg->handle, seg->base, seg->size, seg->stream, seg->small, {}};
    for (Block* b = seg->head; b; b = b->next)
      s.blocks.push_back({b->offset, b->size, b->requested,
                          b->allocated ? "active_allocated"
                          : b->event_count ? "active_awaiting_free"
                                           : "inactive"});
    out.push_back(std::move(s));
  }
  return out;
}

int64_t CachingAllocator::memory_allocated() { return stats_[kAllocatedBytes].v[0][0]; }
int64_t CachingAllocator::max_memory_allocated() { return stats_[kAllocatedBytes].v[0][1]; }
int64_t CachingAllocator::memory_reserved() { return stats_[kReservedBytes].v[0][0]; }
int64_t CachingAllocator::max_memory_reserved() { return stats_[kReservedBytes].v[0][1]; }
int64_t CachingAllocator::counter(CounterName c) { return counters_[c]; }

void CachingAllocator::reset_peak_memory_stats() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  for (auto& s : stats_)
    for (auto& p : s.v) p[1] = p[0];
}

void CachingAllocator::reset_accumulated_memory_stats() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  for (auto& s : stats_)
    for (auto& p : s.v) p[2] = p[3] = 0;
  for (auto& c : counters_) c = 0;
}

}  // namespace ember_cuda
