#include "runtime/codecs/bitpack/BitpackEncode.h"

#include "lang/BitpackFormat.h"
#include "lang/StreamType.h"

#include <bit>

namespace brevis {

unsigned bitpackBits(std::span<const uint64_t> words) {
  uint64_t all = 0;
  for (uint64_t w : words) all |= w;
  return static_cast<unsigned>(std::bit_width(all));
}

void encodeRaw(std::span<const uint64_t> words, unsigned width, Bytes &out) {
  unsigned cb = containerBytes(width);
  size_t at = out.size();
  out.resize(at + words.size() * cb);
  for (uint64_t w : words)
    for (unsigned k = 0; k < cb; ++k, ++at) out[at] = static_cast<uint8_t>(w >> (8 * k));
}

void encodeBitpack(std::span<const uint64_t> words, Bytes &out) {
  const unsigned b = bitpackBits(words);
  static_assert(kBitpackHeaderBytes == 1, "the header is the bit count's one byte");
  out.push_back(static_cast<uint8_t>(b));
  // Accumulate LSB-first into a 128-bit window and flush whole bytes.
  unsigned __int128 window = 0;
  unsigned filled = 0;
  for (uint64_t w : words) {
    window |= static_cast<unsigned __int128>(w) << filled;
    filled += b;
    while (filled >= 8) {
      out.push_back(static_cast<uint8_t>(window));
      window >>= 8;
      filled -= 8;
    }
  }
  if (filled) out.push_back(static_cast<uint8_t>(window));
}

} // namespace brevis
