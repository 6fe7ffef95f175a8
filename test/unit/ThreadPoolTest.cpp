// The process's one thread pool: every index runs exactly once on any thread count, calls made
// from inside a worker finish, and failures are reported as the smallest failing index.
#include "runtime/execution/ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using namespace brevis;

TEST(ThreadPool, RunsEveryIndexExactlyOnceOnAnyThreadCount) {
  for (unsigned threads : {0u, 1u, 2u, 3u, 8u})
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{1000}}) {
      std::vector<std::atomic<int>> runs(n);
      parallelFor(n, threads, [&](size_t i) { runs[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(runs[i].load(), 1) << "n=" << n << " threads=" << threads << " i=" << i;
    }
}

TEST(ThreadPool, UsesSeveralThreadsWhenAsked) {
  std::mutex m;
  std::set<std::thread::id> seen;
  std::atomic<int> arrived{0};
  // Each index waits until two have started, which only several threads can satisfy.
  parallelFor(2, 2, [&](size_t) {
    {
      std::lock_guard lock(m);
      seen.insert(std::this_thread::get_id());
    }
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();
  });
  EXPECT_EQ(seen.size(), 2u);
}

TEST(ThreadPool, CallsFromInsideAWorkerFinish) {
  std::atomic<size_t> total{0};
  parallelFor(4, 4, [&](size_t) { parallelFor(100, 4, [&](size_t j) { total.fetch_add(j); }); });
  EXPECT_EQ(total.load(), 4u * (99u * 100u / 2));
}

TEST(ThreadPool, ACallerWaitingForItsWorkersHelpsWithTheirNestedCalls) {
  // The main thread's index waits until the worker's has started a nested call, then returns;
  // the nested call's two indices each wait until both have started, which only the main
  // thread, waiting for its worker, can make happen by helping.
  const auto main = std::this_thread::get_id();
  std::atomic<bool> nestedStarted{false};
  std::mutex m;
  std::set<std::thread::id> nestedThreads;
  std::atomic<int> arrived{0};
  auto waitFor = [](auto &&ready) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!ready() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  };
  parallelFor(2, 2, [&](size_t) {
    if (std::this_thread::get_id() == main) {
      waitFor([&] { return nestedStarted.load(); });
      return;
    }
    nestedStarted = true;
    parallelFor(2, 2, [&](size_t) {
      {
        std::lock_guard lock(m);
        nestedThreads.insert(std::this_thread::get_id());
      }
      arrived.fetch_add(1);
      waitFor([&] { return arrived.load() >= 2; });
    });
  });
  EXPECT_TRUE(nestedStarted.load());
  // In a process of its own (ctest runs each test so) the pool has this call's one worker, and
  // the second thread can only be the main one; after other tests it may be an idle worker.
  EXPECT_EQ(nestedThreads.size(), 2u) << "the nested call ran on one thread";
}

TEST(ThreadPool, ConcurrentCallersShareThePool) {
  std::atomic<size_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] { parallelFor(500, 3, [&](size_t) { total.fetch_add(1); }); });
  for (auto &t : callers) t.join();
  EXPECT_EQ(total.load(), 2000u);
}

TEST(ThreadPool, ReportsTheSmallestFailingIndexAndStopsHandingOutWork) {
  for (unsigned threads : {1u, 2u, 4u}) {
    std::atomic<size_t> started{0};
    auto r = parallelForEach(10000, threads, [&](size_t i) -> Result<void> {
      started.fetch_add(1);
      if (i == 3 || i == 5) return Error{"failed at " + std::to_string(i)};
      return {};
    });
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "failed at 3") << threads << " threads";
    EXPECT_LT(started.load(), 10000u) << threads << " threads";
  }
  EXPECT_TRUE(parallelForEach(100, 2, [](size_t) -> Result<void> { return {}; }));
}
