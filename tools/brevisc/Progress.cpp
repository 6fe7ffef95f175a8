#include "tools/brevisc/Progress.h"

#include "tools/brevisc/Common.h"

#include <chrono>
#include <cstdio>

namespace brevis::cli {

ProgressBar::ProgressBar(std::string label, uint64_t total, const std::atomic<uint64_t> &done, bool enabled)
    : label_(std::move(label)), total_(total), done_(done) {
  if (!enabled) return;
  thread_ = std::thread([this] {
    auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    // The first draw waits a moment, so that quick runs print nothing at all.
    while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stop_; }))
      draw(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  });
}

ProgressBar::~ProgressBar() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  std::fputs("\r\033[K", stderr); // erase the line
  std::fflush(stderr);
}

void ProgressBar::draw(double seconds) const {
  uint64_t done = done_.load(std::memory_order_relaxed);
  double fraction = total_ ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
  constexpr int kWidth = 24;
  int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  std::string line = fmt::format("\r{} [{}] {:3.0f}%  {} / {}  {}/s\033[K", label_, bar, 100 * fraction,
                                 humanBytes(done), humanBytes(total_), humanBytes(static_cast<uint64_t>(rate)));
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

} // namespace brevis::cli
