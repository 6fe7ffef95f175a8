#pragma once
// Program text as ANTLR's input, one byte per symbol. The stock stream decodes UTF-8, which
// throws on invalid input and counts columns in code points; bytes keep token offsets and
// columns in the units Diagnostics uses for its carets. Private to frontend/.
#include "antlr4-runtime.h"

#include <string>
#include <string_view>

namespace brevis {

class ByteStream final : public antlr4::ANTLRInputStream {
public:
  ByteStream(std::string_view bytes, std::string sourceName) : bytes_(bytes) {
    name = std::move(sourceName);
    _data.reserve(bytes.size());
    for (unsigned char c : bytes) _data.push_back(c);
  }

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
};

} // namespace brevis
