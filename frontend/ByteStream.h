#pragma once
// Program text as ANTLR's input, one byte per symbol. The stock stream decodes UTF-8, which
// throws on invalid input and counts columns in code points, and keeps a copy of 4 bytes per
// character; this one is a view of the caller's bytes, whose offsets and columns are in the
// units Diagnostics uses for its carets. Private to frontend/.
#include "antlr4-runtime.h"

#include <algorithm>
#include <string>
#include <string_view>

namespace brevis {

class ByteStream final : public antlr4::CharStream {
public:
  /// `bytes` must outlive the stream.
  ByteStream(std::string_view bytes, std::string sourceName) : bytes_(bytes), name_(std::move(sourceName)) {}

  void consume() override {
    if (pos_ >= bytes_.size()) throw antlr4::IllegalStateException("cannot consume EOF");
    ++pos_;
  }

  size_t LA(ssize_t i) override {
    if (i == 0) return 0;
    // LA(1) is the current symbol, LA(-1) the one before it.
    ssize_t at = static_cast<ssize_t>(pos_) + (i > 0 ? i - 1 : i);
    if (at < 0 || at >= static_cast<ssize_t>(bytes_.size())) return antlr4::IntStream::EOF;
    return static_cast<unsigned char>(bytes_[static_cast<size_t>(at)]);
  }

  ssize_t mark() override { return -1; }
  void release(ssize_t) override {}
  size_t index() override { return pos_; }
  void seek(size_t index) override { pos_ = std::min(index, bytes_.size()); }
  size_t size() override { return bytes_.size(); }
  std::string getSourceName() const override { return name_; }
  std::string toString() const override { return std::string(bytes_); }

  std::string getText(const antlr4::misc::Interval &interval) override {
    if (interval.a < 0 || interval.b < interval.a) return {};
    size_t start = static_cast<size_t>(interval.a);
    if (start >= bytes_.size()) return {};
    size_t stop = std::min(static_cast<size_t>(interval.b), bytes_.size() - 1);
    return std::string(bytes_.substr(start, stop - start + 1));
  }

  std::string_view bytes() const { return bytes_; }

private:
  std::string_view bytes_;
  std::string name_;
  size_t pos_ = 0;
};

} // namespace brevis
