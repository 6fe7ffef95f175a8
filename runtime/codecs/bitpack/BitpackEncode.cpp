#include "runtime/codecs/bitpack/BitpackEncode.h"

#include "lang/BitpackFormat.h"
#include "lang/StreamType.h"

#include <bit>
#include <cstring>

namespace brevis {

namespace {

template <typename W> unsigned bitpackBitsOf(std::span<const W> words) {
  W all = 0;
  for (W w : words) all |= w;
  return static_cast<unsigned>(std::bit_width(all));
}

template <typename W> void encodeRawOf(std::span<const W> words, unsigned width, Bytes &out) {
  const unsigned cb = containerBytes(width);
  size_t at = out.size();
  out.resize(at + words.size() * cb);
  if (cb == sizeof(W)) { // the container's bytes as they are (little-endian host)
    if (!words.empty()) std::memcpy(out.data() + at, words.data(), words.size() * sizeof(W));
    return;
  }
  for (uint64_t w : words)
    for (unsigned k = 0; k < cb; ++k, ++at) out[at] = static_cast<uint8_t>(w >> (8 * k));
}

#if defined(__x86_64__)
/// Packs groups of eight narrow words with BMI2's pext: one load, one pext and one store pack
/// eight bytes (eight 16-bit words take two pexts), where shifting each word into place took
/// nine instructions a word. Every word must be below 2^b. Returns the groups packed: those
/// whose stores, 8 or 16 bytes wide, stay before `end`.
template <typename W>
[[gnu::target("bmi2")]] size_t packGroupsPext(const W *words, size_t groups, unsigned b, uint8_t *&p,
                                              const uint8_t *end) {
  static_assert(sizeof(W) <= 2);
  constexpr uint64_t lanes = sizeof(W) == 1 ? 0x0101010101010101ull : 0x0001000100010001ull;
  const uint64_t mask = lanes * ((uint64_t{1} << b) - 1);
  size_t g = 0;
  if constexpr (sizeof(W) == 1) {
    for (; g < groups && end - p >= 8; ++g) {
      uint64_t eight;
      std::memcpy(&eight, words + 8 * g, 8);
      const uint64_t packed = __builtin_ia32_pext_di(eight, mask);
      std::memcpy(p, &packed, 8);
      p += b;
    }
  } else {
    for (; g < groups && end - p >= 16; ++g) {
      uint64_t low, high;
      std::memcpy(&low, words + 8 * g, 8);
      std::memcpy(&high, words + 8 * g + 4, 8);
      const unsigned __int128 packed = __builtin_ia32_pext_di(low, mask) |
                                       static_cast<unsigned __int128>(__builtin_ia32_pext_di(high, mask)) << (4 * b);
      std::memcpy(p, &packed, 16);
      p += b;
    }
  }
  return g;
}
#endif

template <typename W> void encodeBitpackOf(std::span<const W> words, unsigned b, Bytes &out) {
  static_assert(kBitpackHeaderBytes == 1, "the header is the bit count's one byte");
  const size_t start = out.size();
  const size_t bytes = bitpackPayloadSize(words.size(), b);
  out.resize(start + bytes);
  uint8_t *p = out.data() + start;
  *p++ = static_cast<uint8_t>(b);
  // Accumulate LSB-first into 64 bits and store them whole when full; the bits of the word
  // that did not fit start the next accumulator (byte pushes from a 128-bit window took
  // 3.8 ns a word, most of packing a large mantissa field).
  uint8_t *const end = out.data() + out.size();
  size_t i = 0;
#if defined(__x86_64__)
  if constexpr (sizeof(W) <= 2) {
    static const bool bmi2 = __builtin_cpu_supports("bmi2");
    if (bmi2 && b > 0 && b <= 8 * sizeof(W)) i = 8 * packGroupsPext(words.data(), words.size() / 8, b, p, end);
  }
#endif
  if (b <= 8) {
    // Eight words fill exactly b bytes: gather them in one register and store it, each group
    // starting where the last one's b bytes end (8-byte stores while 8 bytes remain).
    for (; i + 8 <= words.size() && end - p >= 8; i += 8) {
      uint64_t group = 0;
      for (unsigned k = 0; k < 8; ++k) group |= uint64_t{words[i + k]} << (k * b);
      std::memcpy(p, &group, 8);
      p += b;
    }
  }
  uint64_t acc = 0;
  unsigned filled = 0; // < 64
  for (uint64_t w : words.subspan(i)) {
    acc |= w << filled;
    filled += b;
    if (filled >= 64) {
      for (unsigned k = 0; k < 8; ++k) p[k] = static_cast<uint8_t>(acc >> (8 * k));
      p += 8;
      filled -= 64;
      acc = filled ? w >> (b - filled) : 0;
    }
  }
  for (; filled > 0; filled = filled > 8 ? filled - 8 : 0) {
    *p++ = static_cast<uint8_t>(acc);
    acc >>= 8;
  }
  if (p != end) __builtin_trap(); // bitpackPayloadSize disagrees with the layout written
}

} // namespace

unsigned bitpackBits(WordsView words) {
  return words.visit([](auto w) { return bitpackBitsOf(w); });
}

void encodeRaw(WordsView words, unsigned width, Bytes &out) {
  words.visit([&](auto w) { encodeRawOf(w, width, out); });
}

void encodeBitpack(WordsView words, Bytes &out) { encodeBitpack(words, bitpackBits(words), out); }

void encodeBitpack(WordsView words, unsigned bits, Bytes &out) {
  words.visit([&](auto w) { encodeBitpackOf(w, bits, out); });
}

} // namespace brevis
