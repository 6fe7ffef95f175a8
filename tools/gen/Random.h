#pragma once
// Deterministic random numbers and float rounding shared by the checkpoint generators.
#include <bit>
#include <cmath>
#include <cstdint>

namespace brevis::gen {

/// splitmix64: small, fast, and the same everywhere.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Approximately standard normal: the sum of four 32-bit uniforms from two draws, centred and
  /// scaled (Irwin–Hall), cheap enough for billions of weights. 32 bits per uniform keep small
  /// values finely spaced, so mantissa bits come out as evenly spread as trained weights' do.
  float normal() {
    uint64_t a = next(), b = next();
    uint64_t sum = (a & 0xffffffff) + (a >> 32) + (b & 0xffffffff) + (b >> 32);
    return static_cast<float>((static_cast<double>(sum) * 0x1.0p-32 - 2.0) * 1.7320508075688772);
  }
};

inline uint16_t toBf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  u += 0x7fff + ((u >> 16) & 1); // round to nearest even (no NaNs are generated)
  return static_cast<uint16_t>(u >> 16);
}

inline uint16_t toF16(float f) {
  // Finite values of small magnitude only (weights): normal and subnormal halves, rounded.
  uint32_t u = std::bit_cast<uint32_t>(f);
  uint32_t sign = (u >> 16) & 0x8000;
  float a = std::fabs(f);
  if (a >= 65504.0f) return static_cast<uint16_t>(sign | 0x7bff);
  if (a < 0x1.0p-14f) return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 0x1.0p24f)));
  uint32_t au = std::bit_cast<uint32_t>(a);
  uint32_t exp = ((au >> 23) & 0xff) - 127 + 15, mant = au & 0x7fffff;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

} // namespace brevis::gen
