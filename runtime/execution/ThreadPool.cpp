#include "runtime/execution/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace brevis {

namespace {

/// One parallelFor call: the indices left, and how many workers may still join it.
struct Batch {
  size_t n = 0;
  const std::function<bool(size_t)> *work = nullptr; ///< false: hand out no more indices
  std::atomic<size_t> next{0};
  std::atomic<bool> stopped{false};
  unsigned openSlots = 0; ///< workers that may still join (guarded by the pool's mutex)
  unsigned joined = 0;    ///< workers running it now (guarded by the pool's mutex)

  void run() {
    for (size_t i; !stopped.load(std::memory_order_relaxed) && (i = next.fetch_add(1, std::memory_order_relaxed)) < n;)
      if (!(*work)(i)) stopped.store(true, std::memory_order_relaxed);
  }
};

class Pool {
public:
  void run(Batch &batch, unsigned helpers) {
    if (helpers > 0) {
      std::lock_guard lock(mutex_);
      while (workers_.size() < helpers) workers_.emplace_back([this] { loop(); });
      batch.openSlots = helpers;
      queue_.push_back(&batch);
    }
    wake_.notify_all();
    done_.notify_all(); // a caller waiting for its own batch may help with this one
    batch.run();
    if (helpers == 0) return;
    std::unique_lock lock(mutex_);
    // No worker joins once it is out of the queue; wait for those that did. While they run,
    // help with any batch queued meanwhile, such as one they started from inside this one:
    // waiting idle, this thread would leave that nested work to them alone.
    std::erase(queue_, &batch);
    while (true) {
      done_.wait(lock, [&] { return batch.joined == 0 || !queue_.empty(); });
      if (batch.joined == 0) return;
      join(*queue_.front(), lock);
    }
  }

private:
  void loop() {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return !queue_.empty(); });
      join(*queue_.front(), lock);
    }
  }

  /// Runs the queued `batch` alongside its caller, taking one of its open slots.
  void join(Batch &batch, std::unique_lock<std::mutex> &lock) {
    if (--batch.openSlots == 0) queue_.pop_front();
    ++batch.joined;
    lock.unlock();
    batch.run();
    lock.lock();
    if (--batch.joined == 0) done_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<Batch *> queue_;
  std::vector<std::thread> workers_;
};

/// Never destroyed: its workers wait for work until the process exits.
Pool &sharedPool() {
  static Pool *pool = new Pool;
  return *pool;
}

/// Runs work(i) for i in [0, n) until a call returns false; once an index is handed out, it runs.
void runBatch(size_t n, unsigned threads, const std::function<bool(size_t)> &work) {
  Batch batch;
  batch.n = n;
  batch.work = &work;
  const unsigned used = static_cast<unsigned>(std::clamp<size_t>(threads, 1, std::max<size_t>(n, 1)));
  sharedPool().run(batch, used - 1);
}

} // namespace

void parallelFor(size_t n, unsigned threads, const std::function<void(size_t)> &work) {
  runBatch(n, threads, [&](size_t i) {
    work(i);
    return true;
  });
}

Result<void> parallelForEach(size_t n, unsigned threads, const std::function<Result<void>(size_t)> &work) {
  std::vector<std::optional<Error>> errors(n);
  runBatch(n, threads, [&](size_t i) {
    auto r = work(i);
    if (!r) errors[i] = r.error();
    return bool(r);
  });
  for (auto &e : errors)
    if (e) return *e;
  return {};
}

} // namespace brevis
