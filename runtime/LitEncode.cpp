#include "runtime/LitEncode.h"

#include <bit>

namespace brevis {

namespace {

/// Smallest b such that every word fits in b bits.
unsigned usedBits(std::span<const uint64_t> words) {
  uint64_t all = 0;
  for (uint64_t w : words) all |= w;
  return static_cast<unsigned>(std::bit_width(all));
}

} // namespace

uint64_t encodedSize(Encoding encoding, std::span<const uint64_t> words, unsigned width) {
  if (encoding == Encoding::Raw) return words.size() * containerBytes(width);
  unsigned b = usedBits(words);
  return 1 + static_cast<uint64_t>((static_cast<unsigned __int128>(words.size()) * b + 7) / 8);
}

void encodeLit(Encoding encoding, std::span<const uint64_t> words, unsigned width, Bytes &out) {
  if (encoding == Encoding::Raw) {
    unsigned cb = containerBytes(width);
    size_t at = out.size();
    out.resize(at + words.size() * cb);
    for (uint64_t w : words)
      for (unsigned k = 0; k < cb; ++k, ++at) out[at] = static_cast<uint8_t>(w >> (8 * k));
    return;
  }
  unsigned b = usedBits(words);
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

Encoding chooseEncoding(std::span<const uint64_t> words, unsigned width) {
  return encodedSize(Encoding::Bitpack, words, width) < encodedSize(Encoding::Raw, words, width) ? Encoding::Bitpack
                                                                                                : Encoding::Raw;
}

} // namespace brevis
