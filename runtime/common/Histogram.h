#pragma once
// Counting values below 256 (float exponents, sign bits, bytes) quickly: long runs of one value
// would make every increment wait on the previous one, so four tables take turns.
#include <cstddef>
#include <cstdint>
#include <span>

namespace brevis {

/// Adds how often each value occurs to counts[0..256); every value must be below 256.
template <typename T> void countSmallValues(std::span<const T> values, uint64_t *counts) {
  uint64_t partial[4][256] = {};
  size_t i = 0;
  for (; i + 4 <= values.size(); i += 4) {
    ++partial[0][values[i]];
    ++partial[1][values[i + 1]];
    ++partial[2][values[i + 2]];
    ++partial[3][values[i + 3]];
  }
  for (; i < values.size(); ++i) ++partial[0][values[i]];
  for (size_t v = 0; v < 256; ++v) counts[v] += partial[0][v] + partial[1][v] + partial[2][v] + partial[3][v];
}

} // namespace brevis
