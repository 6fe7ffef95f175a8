#pragma once
// `map add|xor [c0, …, cP−1]`: word i takes constant c(i mod P), or with `per R`, c((i / R) mod P).
// Applied in runs (of one period, or of one constant), so that each run is a plain loop (the interpreter's pull
// path and its fused merge kernel both apply them this way).
#include "lang/Ast.h"
#include "runtime/common/WordOps.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace brevis {

/// Applies the constants to n words in w, of stream positions [position, position + n), each
/// below 2^width; fn is Add or Xor; each constant holds for `per` consecutive words (1: word i
/// takes c(i mod P); more: c((i / per) mod P), one constant a run).
template <typename T>
void applyMapConstants(MapFn fn, std::span<const uint64_t> constants, uint64_t per, unsigned width, uint64_t position,
                       T *w, size_t n) {
  const size_t period = constants.size();
  const uint64_t mask = widthMask(width);
  if (per > 1) {
    size_t at = static_cast<size_t>((position / per) % period);
    uint64_t into = position % per;
    for (size_t i = 0; i < n;) {
      const size_t run = static_cast<size_t>(std::min<uint64_t>(n - i, per - into));
      const uint64_t c = constants[at];
      if (fn == MapFn::Xor)
        for (size_t k = 0; k < run; ++k) w[i + k] = static_cast<T>(w[i + k] ^ c);
      else
        for (size_t k = 0; k < run; ++k) w[i + k] = static_cast<T>((w[i + k] + c) & mask);
      i += run;
      into = 0;
      at = at + 1 == period ? 0 : at + 1;
    }
    return;
  }
  size_t at = static_cast<size_t>(position % period);
  for (size_t i = 0; i < n;) {
    const size_t run = std::min(n - i, period - at);
    const uint64_t *c = constants.data() + at;
    if (fn == MapFn::Xor)
      for (size_t k = 0; k < run; ++k) w[i + k] = static_cast<T>(w[i + k] ^ c[k]);
    else
      for (size_t k = 0; k < run; ++k) w[i + k] = static_cast<T>((w[i + k] + c[k]) & mask);
    i += run;
    at = 0;
  }
}

/// The constants that undo `fn` with `constants` at `width`: xor's own, add's negatives. Applied
/// as above to a map's words, they give its body's (what the synthesizer codes under the map).
inline std::vector<uint64_t> inverseMapConstants(MapFn fn, std::span<const uint64_t> constants, unsigned width) {
  std::vector<uint64_t> out(constants.begin(), constants.end());
  if (fn == MapFn::Add)
    for (uint64_t &c : out) c = (uint64_t{0} - c) & widthMask(width);
  return out;
}

} // namespace brevis
