#pragma once
// Word-level semantics of `map` and `scan`, shared by every executor (interpreter, JIT
// fallbacks, synthesizer inverses) so that they cannot drift apart.
#include "lang/Ast.h"
#include "runtime/common/Words.h"

#include <cstdint>
#include <span>
#include <vector>

namespace brevis {

/// The 64 bits of x in reverse order.
constexpr uint64_t reverseBits64(uint64_t x) {
  x = ((x >> 1) & 0x5555555555555555) | ((x & 0x5555555555555555) << 1);
  x = ((x >> 2) & 0x3333333333333333) | ((x & 0x3333333333333333) << 2);
  x = ((x >> 4) & 0x0f0f0f0f0f0f0f0f) | ((x & 0x0f0f0f0f0f0f0f0f) << 4);
  return __builtin_bswap64(x);
}

/// f(x) for the map function `fn` with parameter `param` on `width`-bit words (x < 2^width).
inline uint64_t applyMap(MapFn fn, uint64_t param, unsigned width, uint64_t x) {
  const uint64_t mask = widthMask(width);
  switch (fn) {
  case MapFn::Xor: return x ^ param;
  case MapFn::Add: return (x + param) & mask;
  case MapFn::ZigZag: {
    uint64_t negative = (x >> (width - 1)) & 1;
    return ((x << 1) & mask) ^ (negative ? mask : 0);
  }
  case MapFn::Gray: return x ^ (x >> 1);
  case MapFn::Rotl: return param == 0 ? x : ((x << param) | (x >> (width - param))) & mask;
  case MapFn::BitRev: return reverseBits64(x) >> (64 - width);
  }
  return x;
}

/// f^-1(y): the inverse of applyMap, so that applyMap(inverseMap(y)) == y.
inline uint64_t inverseMap(MapFn fn, uint64_t param, unsigned width, uint64_t y) {
  const uint64_t mask = widthMask(width);
  switch (fn) {
  case MapFn::Xor: return y ^ param;
  case MapFn::Add: return (y - param) & mask;
  case MapFn::ZigZag: return (y >> 1) ^ ((y & 1) ? mask : 0);
  case MapFn::Gray: {
    uint64_t x = y;
    for (unsigned s = 1; s < 64; s <<= 1) x ^= x >> s;
    return x;
  }
  case MapFn::Rotl: return param == 0 ? y : ((y >> param) | (y << (width - param))) & mask;
  case MapFn::BitRev: return reverseBits64(y) >> (64 - width);
  }
  return y;
}

/// One scan step: the next output word from the previous one and an update word.
inline uint64_t scanStep(ScanOp op, unsigned width, uint64_t previous, uint64_t update) {
  return op == ScanOp::Xor ? previous ^ update : (previous + update) & widthMask(width);
}

/// scanStep's inverse: the update word that takes `previous` to `next`.
inline uint64_t scanDifference(ScanOp op, unsigned width, uint64_t previous, uint64_t next) {
  return op == ScanOp::Xor ? next ^ previous : (next - previous) & widthMask(width);
}

/// The update words of a scan producing `words` (one fewer than there are words), in the words'
/// own container: a byte stream's steps are bytes (as 64-bit words, the search's scans nested
/// three deep held 24 times a large byte file in memory).
/// One loop per operator, in the container's arithmetic, so that each vectorizes: the search
/// takes the differences of every stream it tries a scan on, nested (a U8 model's level 5 spent
/// an eighth of its instructions here, a word at a time).
inline WordBuffer scanDifferences(ScanOp op, unsigned width, WordsView words) {
  return words.visit([&](auto w) {
    using W = typename decltype(w)::value_type;
    const size_t n = w.empty() ? 0 : w.size() - 1;
    std::vector<W> steps(n);
    const W *in = w.data();
    W *out = steps.data();
    if (op == ScanOp::Xor) {
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<W>(in[i + 1] ^ in[i]);
    } else {
      const auto mask = static_cast<W>(widthMask(width)); // width <= the container's bits
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<W>(in[i + 1] - in[i]) & mask;
    }
    return WordBuffer(std::move(steps));
  });
}

} // namespace brevis
