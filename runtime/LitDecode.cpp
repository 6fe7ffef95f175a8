#include "runtime/LitDecode.h"

#include <fmt/format.h>

#include <cstring>

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

uint64_t bitpackBodyBytes(uint64_t n, unsigned b) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(n) * b + 7) / 8);
}

} // namespace

Result<void> validateLit(const Lit &lit, const Payload &payload) {
  if (lit.isInline()) return {};
  const ByteRange r = lit.payload();
  const StreamType t = lit.type;
  auto where = [&] { return fmt::format("{} literal {} at payload @{}+{}", encodingName(lit.encoding), toString(t), r.offset, r.size); };
  if (!payload.contains(r)) return Error{fmt::format("{} lies outside the payload of {} bytes", where(), payload.size())};
  ByteSpan bytes = payload.slice(r);

  if (lit.encoding == Encoding::Raw) {
    unsigned cb = containerBytes(t.width);
    if (static_cast<unsigned __int128>(t.length) * cb != r.size)
      return Error{fmt::format("{} has the wrong size for its type", where())};
    if (t.width % 8 == 0) return {};
    uint64_t seen = 0;
    for (uint64_t i = 0; i < t.length; ++i) seen |= loadLE(bytes.data() + i * cb, cb);
    if (seen & ~widthMask(t.width))
      return Error{fmt::format("{} holds words wider than {} bits", where(), t.width)};
    return {};
  }

  if (r.size < 1) return Error{fmt::format("{} is missing its bit-count byte", where())};
  unsigned b = bytes[0];
  if (b > t.width) return Error{fmt::format("{} declares {} bits per word, more than the width {}", where(), b, t.width)};
  uint64_t body = bitpackBodyBytes(t.length, b);
  if (r.size - 1 != body)
    return Error{fmt::format("{} needs {} bytes for {} bits per word, but has {}", where(), body + 1, b, r.size)};
  uint64_t usedBits = t.length * b; // cannot overflow: body bytes fit in the payload
  if (usedBits % 8 != 0 && (bytes[r.size - 1] >> (usedBits % 8)) != 0)
    return Error{fmt::format("{} has non-zero padding bits", where())};
  return {};
}

unsigned bitpackBits(const Lit &lit, const Payload &payload) { return payload.data()[lit.payload().offset]; }

void decodeLitWords(const Lit &lit, const Payload &payload, uint64_t first, size_t count, uint64_t *out) {
  if (lit.isInline()) {
    std::memcpy(out, lit.words().data() + first, count * sizeof(uint64_t));
    return;
  }
  const uint8_t *base = payload.data() + lit.payload().offset;
  if (lit.encoding == Encoding::Raw) {
    unsigned cb = containerBytes(lit.type.width);
    const uint8_t *p = base + first * cb;
    switch (cb) {
    case 1: for (size_t i = 0; i < count; ++i) out[i] = p[i]; break;
    case 2: for (size_t i = 0; i < count; ++i) out[i] = loadLE(p + 2 * i, 2); break;
    case 4: for (size_t i = 0; i < count; ++i) out[i] = loadLE(p + 4 * i, 4); break;
    default: for (size_t i = 0; i < count; ++i) out[i] = loadLE(p + 8 * i, 8); break;
    }
    return;
  }
  unsigned b = base[0];
  if (b == 0) {
    std::memset(out, 0, count * sizeof(uint64_t));
    return;
  }
  const uint8_t *bits = base + 1;
  uint64_t bit = first * b;
  for (size_t i = 0; i < count; ++i, bit += b) out[i] = extractBits(bits, bit, b);
}

} // namespace brevis
