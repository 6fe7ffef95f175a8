#include "runtime/codecs/SymbolMap.h"

// GCC 12's AVX-512 intrinsics pass an uninitialized vector as the unused merge source.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace brevis {

namespace {

template <typename Word> void mapScalar(const uint8_t *symbols, size_t n, const uint16_t *table, Word *out) {
  for (size_t i = 0; i < n; ++i) out[i] = table[symbols[i]];
}

#if defined(__x86_64__)
// The 128-entry table in four registers: two permutations of 64 entries each give every
// symbol's word from both halves, and bit 6 of the symbol picks one.
template <typename Word>
[[gnu::target("avx512f,avx512bw")]] size_t mapAvx512(const uint8_t *symbols, size_t n, const uint16_t *table,
                                                      Word *out) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 32);
  const __m512i t2 = _mm512_loadu_si512(table + 64), t3 = _mm512_loadu_si512(table + 96);
  const __m512i high = _mm512_set1_epi16(64);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i index = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(symbols + i)));
    const __m512i low = _mm512_permutex2var_epi16(t0, index, t1);
    const __m512i upper = _mm512_permutex2var_epi16(t2, index, t3);
    const __mmask32 inUpper = _mm512_test_epi16_mask(index, high);
    const __m512i words = _mm512_mask_blend_epi16(inUpper, low, upper);
    if constexpr (sizeof(Word) == 1) {
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), _mm512_cvtepi16_epi8(words));
    } else if constexpr (sizeof(Word) == 2) {
      _mm512_storeu_si512(out + i, words);
    } else { // widened to 32 bits, 16 words per store
      _mm512_storeu_si512(out + i, _mm512_cvtepu16_epi32(_mm512_castsi512_si256(words)));
      _mm512_storeu_si512(out + i + 16, _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(words, 1)));
    }
  }
  return i;
}

// Bytes: the table's 128 entries narrowed to bytes in two registers; one permutation of both
// maps 64 symbols (bit 6 of each picks the register).
[[gnu::target("avx512f,avx512bw,avx512vbmi")]] size_t mapBytesVbmi(const uint8_t *symbols, size_t n,
                                                                    const uint16_t *table, uint8_t *out) {
  __m512i half[2];
  for (int h = 0; h < 2; ++h) {
    const __m256i a = _mm512_cvtepi16_epi8(_mm512_loadu_si512(table + 64 * h));
    const __m256i b = _mm512_cvtepi16_epi8(_mm512_loadu_si512(table + 64 * h + 32));
    half[h] = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
  }
  const __m512i lo = half[0], hi = half[1];
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i index = _mm512_loadu_si512(symbols + i);
    _mm512_storeu_si512(out + i, _mm512_permutex2var_epi8(lo, index, hi));
  }
  return i;
}
#endif

template <typename Word> void mapAny(const uint8_t *symbols, size_t n, const uint16_t *table, Word *out) {
  size_t done = 0;
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  static const bool vbmi = avx512 && __builtin_cpu_supports("avx512vbmi");
  if constexpr (sizeof(Word) == 1) {
    if (vbmi) done = mapBytesVbmi(symbols, n, table, out);
  }
  if (avx512) done += mapAvx512(symbols + done, n - done, table, out + done);
#endif
  mapScalar(symbols + done, n - done, table, out + done);
}

} // namespace

void mapByteSymbols(const uint8_t *symbols, size_t n, const uint16_t *table, uint16_t *out) {
  mapAny(symbols, n, table, out);
}
void mapByteSymbols(const uint8_t *symbols, size_t n, const uint16_t *table, uint32_t *out) {
  mapAny(symbols, n, table, out);
}
void mapByteSymbols(const uint8_t *symbols, size_t n, const uint16_t *table, uint8_t *out) {
  mapAny(symbols, n, table, out);
}

} // namespace brevis
