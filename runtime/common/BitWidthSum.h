#pragma once
// The sum of the bit widths of a stream of bytes: the statistic the search cuts integer streams
// by (synth/search/HoleSearch, statisticsCut), read at every depth of the search.
#include <bit>
#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace brevis {

/// The sum of std::bit_width over the n bytes at p: sixteen at a time where SSE2 is, each
/// byte's width counted as the powers of two it reaches (a `bsr` and a branch a byte were about
/// 5% of level 5's time on a U8 model, by `perf`).
inline uint64_t bitWidthSum(const uint8_t *p, size_t n) {
  uint64_t total = 0;
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  __m128i sums = zero; // psadbw's sums, in two 64-bit lanes
  for (; i + 16 <= n; i += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + i));
    __m128i widths = zero;
    for (unsigned b = 0; b < 8; ++b) {
      const __m128i power = _mm_set1_epi8(static_cast<char>(1u << b));
      widths = _mm_sub_epi8(widths, _mm_cmpeq_epi8(_mm_max_epu8(x, power), x)); // +1 where x >= 2^b
    }
    sums = _mm_add_epi64(sums, _mm_sad_epu8(widths, zero));
  }
  alignas(16) uint64_t lanes[2];
  _mm_store_si128(reinterpret_cast<__m128i *>(lanes), sums);
  total = lanes[0] + lanes[1];
#endif
  for (; i < n; ++i) total += static_cast<uint64_t>(std::bit_width(p[i]));
  return total;
}

} // namespace brevis
