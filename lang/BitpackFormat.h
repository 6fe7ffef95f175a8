#pragma once
// The facts of the `bitpack` wire format (docs/format/literals.md), defined once for every layer
// that reads or writes it: the type checker bounds a literal's range by them, the codec in
// runtime/codecs/bitpack encodes and decodes by them, and the JIT emits its loads from them.
// They sit in lang, the layer all of those build on.
//
//   byte 0   b, the bits per word (0 <= b <= W; 0: every word is 0 and the body is empty)
//   body     ceil(N*b/8) bytes: word i in bits [i*b, i*b + b) of a little-endian bit stream,
//            bit k of the stream being bit k mod 8 of byte k / 8 (LSB first); the unused high
//            bits of the last byte are 0
#include <cstdint>

namespace brevis {

/// Bytes before the packed words: the bit count b.
inline constexpr unsigned kBitpackHeaderBytes = 1;

/// The bits per word of a bitpack payload.
constexpr unsigned bitpackBitCount(const uint8_t *payload) { return payload[0]; }

/// Where the packed words of a bitpack payload begin.
constexpr const uint8_t *bitpackBody(const uint8_t *payload) { return payload + kBitpackHeaderBytes; }

/// The first bit of word i in the body, for b bits per word.
constexpr uint64_t bitpackBitOffset(uint64_t i, unsigned b) { return i * b; }

/// Payload bytes of a bitpack literal of n words at b bits each: the header and ceil(n * b / 8)
/// bytes; UINT64_MAX when that does not fit in 64 bits.
constexpr uint64_t bitpackPayloadSize(uint64_t n, unsigned b) {
  const unsigned __int128 bytes = kBitpackHeaderBytes + (static_cast<unsigned __int128>(n) * b + 7) / 8;
  return bytes > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

} // namespace brevis
