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
