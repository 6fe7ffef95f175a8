#include "runtime/codecs/bitpack/BitpackDecode.h"

#include "lang/BitpackFormat.h"
#include "runtime/common/OrOfWords.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <immintrin.h>
#include <utility>

namespace brevis {

namespace {

uint64_t loadLE(const uint8_t *p, unsigned bytes) {
  uint64_t v = 0;
  std::memcpy(&v, p, bytes); // x86-64 and every target we build for are little-endian
  return v;
}

/// Bits [bit, bit + b) of the little-endian bit stream at `base`, for b in 1..64.
inline uint64_t extractBits(const uint8_t *base, uint64_t bit, unsigned b) {
  const uint8_t *p = base + (bit >> 3);
  unsigned shift = bit & 7;
  uint64_t v = loadLE(p, 8) >> shift;
  if (shift + b > 64) v |= uint64_t{p[8]} << (64 - shift);
  return v & widthMask(b);
}

uint64_t load64(const uint8_t *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

/// Eight B-bit words per group of B bytes, from group `g0` on; one (or, past 8 bits, one
/// 16-byte) load per group, past 16 bits one 8-byte load per word at offsets known at compile
/// time. Reads up to 16 - B bytes past a group (past 16 bits, up to 8 - B/8): within the payload
/// slack.
template <unsigned B, typename T> void unpackGroups(const uint8_t *bits, uint64_t g0, size_t groups, T *out) {
  constexpr uint64_t mask = (uint64_t{1} << B) - 1;
  const uint8_t *p = bits + g0 * B;
  for (size_t g = 0; g < groups; ++g, p += B, out += 8) {
    if constexpr (B <= 8) {
      const uint64_t v = load64(p);
      for (unsigned j = 0; j < 8; ++j) out[j] = static_cast<T>((v >> (j * B)) & mask);
    } else if constexpr (B > 16) {
      for (unsigned j = 0; j < 8; ++j) out[j] = static_cast<T>((load64(p + j * B / 8) >> (j * B % 8)) & mask);
    } else {
      unsigned __int128 v;
      std::memcpy(&v, p, 16);
      for (unsigned j = 0; j < 8; ++j) out[j] = static_cast<T>(static_cast<uint64_t>(v >> (j * B)) & mask);
    }
  }
}

template <typename T, unsigned... B>
constexpr auto makeUnpackTable(std::integer_sequence<unsigned, B...>) {
  using Fn = void (*)(const uint8_t *, uint64_t, size_t, T *);
  return std::array<Fn, sizeof...(B)>{&unpackGroups<B + 1, T>...};
}

/// The same with BMI2's pdep, which deposits a group's bits into byte (B <= 8) or 16-bit lanes
/// (B <= 16) in one instruction per four or eight words; any B, chosen at run time.
template <typename T>
[[gnu::target("bmi2")]] void unpackGroupsPdep(const uint8_t *bits, unsigned B, uint64_t g0, size_t groups, T *out) {
  const uint8_t *p = bits + g0 * B;
  if (B <= 8) {
    const uint64_t spread = ((uint64_t{1} << B) - 1) * 0x0101010101010101ull;
    for (size_t g = 0; g < groups; ++g, p += B, out += 8) {
      uint64_t lanes = _pdep_u64(load64(p), spread);
      uint8_t b[8];
      std::memcpy(b, &lanes, 8);
      for (unsigned j = 0; j < 8; ++j) out[j] = b[j];
    }
  } else {
    const uint64_t spread = ((uint64_t{1} << B) - 1) * 0x0001000100010001ull;
    for (size_t g = 0; g < groups; ++g, p += B, out += 8) {
      unsigned __int128 v;
      std::memcpy(&v, p, 16);
      uint64_t lanes[2] = {_pdep_u64(static_cast<uint64_t>(v), spread),
                           _pdep_u64(static_cast<uint64_t>(v >> (4 * B)), spread)};
      uint16_t h[8];
      std::memcpy(h, lanes, 16);
      for (unsigned j = 0; j < 8; ++j) out[j] = static_cast<T>(h[j]);
    }
  }
}

#if defined(__x86_64__)
/// Eight groups (64 words of B <= 8 bits, 8B bytes) per step with AVX-512 VBMI: a byte permute
/// gives each 64-bit lane its group's bytes, a multishift takes 8 bits at each word's offset,
/// a mask keeps B. Returns the groups done (a multiple of eight); the rest is left to pdep.
template <typename T>
[[gnu::target("avx512f,avx512bw,avx512vbmi")]] size_t unpackGroupsVbmi(const uint8_t *bits, unsigned B, uint64_t g0,
                                                                         size_t groups, T *out) {
  alignas(64) uint8_t index[64], shift[64];
  for (unsigned lane = 0; lane < 8; ++lane)
    for (unsigned k = 0; k < 8; ++k) {
      index[8 * lane + k] = static_cast<uint8_t>(lane * B + k);
      shift[8 * lane + k] = static_cast<uint8_t>(k * B);
    }
  const __m512i idx = _mm512_load_si512(index), shifts = _mm512_load_si512(shift);
  const __m512i mask = _mm512_set1_epi8(static_cast<char>((1u << B) - 1));
  // Load exactly the 8B bytes of the eight groups: masked-off bytes are not read.
  const __mmask64 load = B == 8 ? ~__mmask64{0} : (__mmask64{1} << (8 * B)) - 1;
  const uint8_t *p = bits + g0 * B;
  const size_t steps = groups / 8;
  for (size_t s = 0; s < steps; ++s, p += 8 * B, out += 64) {
    // The bits of a large literal stream in from memory beside other fields' (on the 1 GiB
    // checkpoint this loop waited on its loads for a fifth of decoding): asked for 2 KiB ahead.
    _mm_prefetch(reinterpret_cast<const char *>(p) + 2048, _MM_HINT_T0);
    __m512i src = _mm512_maskz_loadu_epi8(load, p);
    // (The maskz forms: GCC 12's unmasked ones warn about their undefined pass-through.)
    const __mmask64 all = ~__mmask64{0};
    __m512i lanes = _mm512_maskz_permutexvar_epi8(all, idx, src);
    __m512i words = _mm512_and_si512(_mm512_maskz_multishift_epi64_epi8(all, shifts, lanes), mask);
    if constexpr (sizeof(T) == 1) {
      _mm512_storeu_si512(out, words);
    } else {
      alignas(64) uint8_t narrow[64];
      _mm512_store_si512(narrow, words);
      for (unsigned half = 0; half < 2; ++half) {
        __m256i bytes = _mm256_load_si256(reinterpret_cast<const __m256i *>(narrow + 32 * half));
        _mm512_storeu_si512(out + 32 * half, _mm512_maskz_cvtepu8_epi16(~__mmask32{0}, bytes));
      }
    }
  }
  return steps * 8;
}

/// Groups of eight 17- to 32-bit words (B bytes each) into 32-bit words with AVX-512 VBMI: a byte
/// permute gives each 64-bit lane the eight bytes from its word's first one, a multishift takes
/// 32 bits from the word's bit offset, a mask keeps B, and the lanes narrow to 32 bits. An F32
/// checkpoint's low mantissa bits (21 to 23 a word) took a sixth of its decoding a word at a time.
/// Returns the groups done: all of them.
[[gnu::target("avx512f,avx512bw,avx512vbmi")]] size_t unpackWideGroupsVbmi(const uint8_t *bits, unsigned B,
                                                                           uint64_t g0, size_t groups, uint32_t *out) {
  alignas(64) uint8_t index[64], shift[64];
  for (unsigned lane = 0; lane < 8; ++lane)
    for (unsigned k = 0; k < 8; ++k) {
      index[8 * lane + k] = static_cast<uint8_t>(lane * B / 8 + k);
      shift[8 * lane + k] = static_cast<uint8_t>(lane * B % 8 + 8 * (k % 4)); // bytes 4-7 unused
    }
  const __m512i idx = _mm512_load_si512(index), shifts = _mm512_load_si512(shift);
  const __m512i mask = _mm512_set1_epi64(static_cast<long long>((uint64_t{1} << B) - 1));
  // Load exactly the B bytes of the group: masked-off bytes are not read.
  const __mmask64 load = (__mmask64{1} << B) - 1;
  const __mmask64 all = ~__mmask64{0};
  const uint8_t *p = bits + g0 * B;
  for (size_t g = 0; g < groups; ++g, p += B, out += 8) {
    const __m512i src = _mm512_maskz_loadu_epi8(load, p);
    const __m512i lanes = _mm512_maskz_permutexvar_epi8(all, idx, src);
    const __m512i words = _mm512_and_si512(_mm512_maskz_multishift_epi64_epi8(all, shifts, lanes), mask);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out), _mm512_maskz_cvtepi64_epi32(__mmask8{0xff}, words));
  }
  return groups;
}
#endif

} // namespace

Result<void> validateRaw(ByteSpan payload, StreamType t) {
  const unsigned cb = containerBytes(t.width);
  if (static_cast<unsigned __int128>(t.length) * cb != payload.size()) return Error{"has the wrong size for its type"};
  if (t.width == 8 * cb) return {}; // every container value is a valid word
  if (orOfWords(payload.data(), payload.size(), cb) & ~widthMask(t.width))
    return Error{fmt::format("holds words wider than {} bits", t.width)};
  return {};
}

Result<void> validateBitpack(ByteSpan payload, StreamType t) {
  if (payload.size() < kBitpackHeaderBytes) return Error{"is missing its bit-count byte"};
  const unsigned b = bitpackBitCount(payload.data());
  if (b > t.width) return Error{fmt::format("declares {} bits per word, more than the width {}", b, t.width)};
  const uint64_t need = bitpackPayloadSize(t.length, b);
  if (payload.size() != need)
    return Error{fmt::format("needs {} bytes for {} bits per word, but has {}", need, b, payload.size())};
  const uint64_t usedBits = t.length * b; // cannot overflow: body bytes fit in the payload
  if (usedBits % 8 != 0 && (payload.back() >> (usedBits % 8)) != 0) return Error{"has non-zero padding bits"};
  return {};
}

void decodeRaw(const uint8_t *payload, unsigned width, uint64_t first, size_t count, uint64_t *out) {
  const unsigned cb = containerBytes(width);
  const uint8_t *p = payload + first * cb;
  switch (cb) {
  case 1: for (size_t i = 0; i < count; ++i) out[i] = p[i]; break;
  case 2: for (size_t i = 0; i < count; ++i) out[i] = loadLE(p + 2 * i, 2); break;
  case 4: for (size_t i = 0; i < count; ++i) out[i] = loadLE(p + 4 * i, 4); break;
  default: for (size_t i = 0; i < count; ++i) out[i] = loadLE(p + 8 * i, 8); break;
  }
}

template <typename T>
void decodeRawNarrow(const uint8_t *payload, unsigned width, uint64_t first, size_t count, T *out) {
  const unsigned cb = containerBytes(width);
  const uint8_t *p = payload + first * cb;
  if (cb == sizeof(T)) {
    std::memcpy(out, p, count * sizeof(T));
  } else {
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<T>(loadLE(p + i * cb, cb));
  }
}

void decodeBitpack(const uint8_t *payload, uint64_t first, size_t count, uint64_t *out) {
  const unsigned b = bitpackBitCount(payload);
  if (b == 0) {
    std::memset(out, 0, count * sizeof(uint64_t));
    return;
  }
  const uint8_t *bits = bitpackBody(payload);
  uint64_t bit = bitpackBitOffset(first, b);
  for (size_t i = 0; i < count; ++i, bit += b) out[i] = extractBits(bits, bit, b);
}

template <typename T> void decodeBitpackNarrow(const uint8_t *payload, uint64_t first, size_t count, T *out) {
  const unsigned b = bitpackBitCount(payload);
  if (b == 0) {
    std::memset(out, 0, count * sizeof(T));
    return;
  }
  const uint8_t *bits = bitpackBody(payload);
  // Words before the first whole group of eight, the groups, then the words after.
  size_t i = 0;
  for (; i < count && (first + i) % 8 != 0; ++i)
    out[i] = static_cast<T>(extractBits(bits, bitpackBitOffset(first + i, b), b));
  const size_t groups = (count - i) / 8;
  // Words of up to 16 bits through pdep (or VBMI); wider ones in 32-bit containers through VBMI,
  // or loops unrolled for their width (a word at a time, they were 5% of an F32 checkpoint's
  // decode) where the CPU has none.
  static constexpr auto table = makeUnpackTable<T>(std::make_integer_sequence<unsigned, sizeof(T) >= 4 ? 32 : 16>{});
  if (b <= table.size() && groups) {
    static const bool bmi2 = __builtin_cpu_supports("bmi2");
    size_t done = 0;
#if defined(__x86_64__)
    static const bool vbmi = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
    if constexpr (sizeof(T) <= 2)
      if (vbmi && b <= 8) done = unpackGroupsVbmi(bits, b, (first + i) / 8, groups, out + i);
    if constexpr (sizeof(T) == 4)
      if (vbmi && b > 16) done = unpackWideGroupsVbmi(bits, b, (first + i) / 8, groups, out + i);
#endif
    if (done < groups) {
      const uint64_t g = (first + i) / 8 + done;
      if (bmi2 && b <= 16 && (b <= 8 || sizeof(T) >= 2)) unpackGroupsPdep(bits, b, g, groups - done, out + i + 8 * done);
      else table[b - 1](bits, g, groups - done, out + i + 8 * done);
    }
    i += groups * 8;
  }
  for (; i < count; ++i) out[i] = static_cast<T>(extractBits(bits, bitpackBitOffset(first + i, b), b));
}

template void decodeRawNarrow<uint8_t>(const uint8_t *, unsigned, uint64_t, size_t, uint8_t *);
template void decodeRawNarrow<uint16_t>(const uint8_t *, unsigned, uint64_t, size_t, uint16_t *);
template void decodeRawNarrow<uint32_t>(const uint8_t *, unsigned, uint64_t, size_t, uint32_t *);
template void decodeBitpackNarrow<uint8_t>(const uint8_t *, uint64_t, size_t, uint8_t *);
template void decodeBitpackNarrow<uint16_t>(const uint8_t *, uint64_t, size_t, uint16_t *);
template void decodeBitpackNarrow<uint32_t>(const uint8_t *, uint64_t, size_t, uint32_t *);

} // namespace brevis
