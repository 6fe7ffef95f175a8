#pragma once
// A progress line on stderr for long work: percentage, bytes done and throughput, redrawn a few
// times a second by its own thread, erased when done. Only drawn on a terminal.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace brevis::cli {

class ProgressBar {
public:
  /// Draws `label` and the progress of `done` towards `total` while alive, if `enabled`.
  ProgressBar(std::string label, uint64_t total, const std::atomic<uint64_t> &done, bool enabled);
  ~ProgressBar(); ///< stops and erases the line
  ProgressBar(const ProgressBar &) = delete;
  ProgressBar &operator=(const ProgressBar &) = delete;

private:
  void draw(double seconds) const;
  std::string label_;
  uint64_t total_;
  const std::atomic<uint64_t> &done_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

} // namespace brevis::cli
