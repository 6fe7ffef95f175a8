#pragma once
// LEB128 unsigned varints for literal headers: 7 bits per byte, low bits first, at most 10
// bytes. Readers are bounds-checked and reject overlong encodings.
#include "runtime/common/Bytes.h"

#include <cstdint>
#include <optional>

namespace brevis {

inline void putVarint(Bytes &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

inline unsigned varintSize(uint64_t v) {
  unsigned n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

/// A bounds-checked cursor over a byte range.
class ByteReader {
public:
  ByteReader(const uint8_t *begin, const uint8_t *end) : p_(begin), end_(end) {}
  explicit ByteReader(ByteSpan s) : p_(s.data()), end_(s.data() + s.size()) {}

  std::optional<uint64_t> varint() {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) return std::nullopt;
      uint8_t b = *p_++;
      if (shift == 63 && b > 1) return std::nullopt; // beyond 64 bits
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    return std::nullopt;
  }
  std::optional<uint8_t> byte() {
    if (p_ == end_) return std::nullopt;
    return *p_++;
  }
  /// The next n bytes, or nullopt if fewer remain.
  const uint8_t *take(uint64_t n) {
    if (n > static_cast<uint64_t>(end_ - p_)) return nullptr;
    const uint8_t *at = p_;
    p_ += n;
    return at;
  }
  const uint8_t *position() const { return p_; }
  uint64_t remaining() const { return static_cast<uint64_t>(end_ - p_); }

private:
  const uint8_t *p_;
  const uint8_t *end_;
};

} // namespace brevis
