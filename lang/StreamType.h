#pragma once
// The type of every DSL expression: a stream of `length` words of `width` bits, u<W>[N].
#include <cstdint>
#include <string>

namespace brevis {

inline constexpr unsigned kMaxWordWidth = 64;

struct StreamType {
  unsigned width = 0;   ///< W, 1..64 when valid
  uint64_t length = 0;  ///< N
  bool operator==(const StreamType &) const = default;
};

std::string toString(StreamType t); ///< "u8[1024]"

/// All-ones mask of the low `width` bits (width 1..64).
constexpr uint64_t widthMask(unsigned width) {
  return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
}

/// Bytes a raw word of this width occupies: 1, 2, 4 or 8.
constexpr unsigned containerBytes(unsigned width) {
  return width <= 8 ? 1 : width <= 16 ? 2 : width <= 32 ? 4 : 8;
}

} // namespace brevis
