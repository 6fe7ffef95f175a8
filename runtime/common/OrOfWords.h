#pragma once
// The OR of a buffer's words: what a decoder checks a block it wrote against its width, so that
// no word wider than the literal's type leaves it.
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace brevis {

/// The OR of the `containerBytes`-byte little-endian words (1, 2, 4 or 8 bytes) that make up
/// `bytes` bytes at `p` (a multiple of containerBytes). Eight bytes a load in four independent
/// chains: a word-by-word reduction, which GCC at -O2 does not vectorize, was a fifth of
/// decoding a 7-bit rans field.
inline uint64_t orOfWords(const uint8_t *p, size_t bytes, unsigned containerBytes) {
  // Four accumulators and four loads by name: through arrays, GCC kept them on the stack, and
  // each iteration waited for the last one's store.
  uint64_t l0 = 0, l1 = 0, l2 = 0, l3 = 0;
  size_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    uint64_t x0, x1, x2, x3; // x86-64 and every target we build for are little-endian
    std::memcpy(&x0, p + i, 8);
    std::memcpy(&x1, p + i + 8, 8);
    std::memcpy(&x2, p + i + 16, 8);
    std::memcpy(&x3, p + i + 24, 8);
    l0 |= x0, l1 |= x1, l2 |= x2, l3 |= x3;
  }
  uint64_t all = l0 | l1 | l2 | l3;
  // The bytes left keep their places in an 8-byte lane: words start at multiples of their size.
  for (; i < bytes; ++i) all |= uint64_t{p[i]} << (8 * (i % 8));
  for (unsigned half = 32; half >= 8 * containerBytes; half /= 2) all |= all >> half;
  return containerBytes >= 8 ? all : all & ((uint64_t{1} << (8 * containerBytes)) - 1);
}

} // namespace brevis
