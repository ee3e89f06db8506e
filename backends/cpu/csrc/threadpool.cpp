// ember's own thread pool: std::thread workers + condition variables (no OpenMP).
// Workers spin briefly (~kWorkerSpinUs) for the next job before sleeping, and the caller spins
// briefly for the last chunk: back-to-back kernels (a training step) then pay no futex
// wake-up per region, while an idle pool still sleeps.
//
// parallel_run splits [begin, end) into at most num_threads chunks; the calling thread runs
// chunks too.  Only one parallel region runs at a time (a second caller runs inline), and
// nested parallel_for calls run inline.  The pool is created lazily and recreated after fork.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "ember.h"

namespace ember {

thread_local bool tl_gil_released = false;

namespace {

thread_local bool tl_in_region = false;

// The caller spins for the last chunk up to kSpinUs. Workers spin for the next job up to
// kWorkerSpinUs: long enough to bridge the Python between two kernels that a captured graph
// (ember.compile's default mode: ~10 us of capture per op) or a few eager ops put there. A
// worker woken from its futex instead started ~50 us late on this 2-core VM, which cost a
// compiled 1M-element GELU 0.77 vs 0.72 ms. (libgomp, under PyTorch, spins ~300k pauses.)
constexpr int64_t kSpinUs = 50;
constexpr int64_t kWorkerSpinUs = 300;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until pred() holds or ~us microseconds pass; returns pred().
template <class P>
inline bool spin_until(P&& pred, int64_t us = kSpinUs) {
  if (pred()) return true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  for (int i = 1;; ++i) {
    cpu_relax();
    if (pred()) return true;
    if ((i & 63) == 0 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

struct Pool {
  explicit Pool(int nworkers) {
    for (int i = 0; i < nworkers; ++i) threads.emplace_back([this] { worker(); });
  }
  // Joins the workers.  The object itself is never freed (a thread that fetched the pointer
  // just before a resize may still run a job on it; the caller then executes every chunk).
  void shutdown() {
    {
      std::lock_guard<std::mutex> lk(mu);
      stop.store(true);
    }
    cv.notify_all();
    for (auto& t : threads) t.join();
    threads.clear();
  }

  std::mutex region_mu;  // one parallel region at a time
  std::mutex mu;
  std::condition_variable cv, done_cv;
  std::vector<std::thread> threads;
  std::atomic<uint64_t> gen{0};
  std::atomic<bool> stop{false};
  int busy = 0;  // workers currently inside work() (reading job fields)
  // job
  void (*job_fn)(void*, int) = nullptr;
  void* job_ctx = nullptr;
  int job_n = 0;
  std::atomic<int> next{0};
  std::atomic<int> remaining{0};
  std::exception_ptr err;

  void work() {
    int c;
    while ((c = next.fetch_add(1, std::memory_order_relaxed)) < job_n) {
      try {
        job_fn(job_ctx, c);
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu);
        if (!err) err = std::current_exception();
      }
      if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lk(mu);
        done_cv.notify_all();
      }
    }
  }

  void worker() {
    tl_in_region = true;
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] {
        return stop.load(std::memory_order_acquire) || gen.load(std::memory_order_acquire) != seen;
      }, kWorkerSpinUs);
      {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return stop.load() || gen.load() != seen; });
        if (stop) return;
        seen = gen.load();
        ++busy;
      }
      work();
      {
        std::lock_guard<std::mutex> lk(mu);
        if (--busy == 0) done_cv.notify_all();
      }
    }
  }

  void run(int n, void (*fn)(void*, int), void* ctx) {
    {
      std::unique_lock<std::mutex> lk(mu);
      done_cv.wait(lk, [&] { return busy == 0; });  // stragglers of the previous job are gone
      job_fn = fn;
      job_ctx = ctx;
      job_n = n;
      err = nullptr;
      next.store(0, std::memory_order_relaxed);
      remaining.store(n, std::memory_order_relaxed);
      gen.fetch_add(1, std::memory_order_release);
    }
    cv.notify_all();
    tl_in_region = true;
    work();
    tl_in_region = false;
    if (!spin_until([&] { return remaining.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock<std::mutex> lk(mu);
      done_cv.wait(lk, [&] { return remaining.load(std::memory_order_acquire) == 0; });
    }
    if (err) {
      std::exception_ptr e = err;
      err = nullptr;
      std::rethrow_exception(e);
    }
  }
};

std::atomic<int> g_num_threads{0};
Pool* g_pool = nullptr;
std::mutex g_pool_mu;  // guards g_pool creation / replacement

int default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : (int)n;
}

void atfork_child() {
  // the workers do not exist in the child: forget (leak) the pool, recreate lazily
  g_pool = nullptr;
  new (&g_pool_mu) std::mutex();
}

struct AtForkInit {
  AtForkInit() { pthread_atfork(nullptr, nullptr, atfork_child); }
} g_atfork_init;

Pool* get_pool() {
  std::lock_guard<std::mutex> lk(g_pool_mu);
  if (!g_pool) g_pool = new Pool(get_num_threads() - 1);
  return g_pool;
}

}  // namespace

int get_num_threads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  if (n == 0) {
    n = default_threads();
    g_num_threads.store(n, std::memory_order_relaxed);
  }
  return n;
}

void set_num_threads(int n) {
  if (n < 1) raise(PyExc_ValueError, "set_num_threads(): expected a positive number of threads, got %d", n);
  Pool* old = nullptr;
  {
    std::lock_guard<std::mutex> lk(g_pool_mu);
    if (n != get_num_threads()) {
      old = g_pool;
      g_pool = nullptr;
      g_num_threads.store(n, std::memory_order_relaxed);
    }
  }
  if (old) {
    // wait for a region in flight (another Python thread) before joining
    { std::lock_guard<std::mutex> rl(old->region_mu); }
    old->shutdown();
  }
  blas_set_num_threads(n);
}

bool in_parallel_region() { return tl_in_region; }

void parallel_run(int64_t begin, int64_t end, int64_t grain, FnRef fn) {
  int nt = get_num_threads();
  int64_t len = end - begin;
  int64_t nchunks = std::min<int64_t>(nt, (len + grain - 1) / grain);
  if (nchunks <= 1 || tl_in_region) {
    fn(begin, end);
    return;
  }
  int64_t cs = (len + nchunks - 1) / nchunks;
  // keep chunk starts cache-line friendly for element ranges; small task counts (GEMM
  // panels, batches) split exactly
  if (cs >= 1024) cs = (cs + 63) / 64 * 64;
  nchunks = (len + cs - 1) / cs;
  if (nchunks <= 1) {
    fn(begin, end);
    return;
  }
  Pool* pool = get_pool();
  std::unique_lock<std::mutex> rl(pool->region_mu, std::try_to_lock);
  if (!rl.owns_lock()) {  // another thread is using the pool: run inline
    fn(begin, end);
    return;
  }
  struct Ctx {
    FnRef* fn;
    int64_t begin, end, cs;
  } ctx{&fn, begin, end, cs};
  pool->run((int)nchunks,
            [](void* p, int c) {
              Ctx* x = (Ctx*)p;
              int64_t b = x->begin + (int64_t)c * x->cs;
              int64_t e = std::min(x->end, b + x->cs);
              if (b < e) (*x->fn)(b, e);
            },
            &ctx);
}

}  // namespace ember
