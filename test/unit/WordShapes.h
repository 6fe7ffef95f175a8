#pragma once
// Random word streams of the shapes the codec and cost-model tests cover: uniform, skewed
// (geometric), one symbol, a few symbols.
#include "lang/StreamType.h"

#include <cstdint>
#include <random>
#include <vector>

namespace brevis {

enum class Shape { Uniform, Skewed, OneSymbol, FewSymbols };

inline std::vector<uint64_t> makeWords(std::mt19937_64 &rng, size_t n, unsigned width, Shape shape) {
  std::vector<uint64_t> w(n);
  std::geometric_distribution<uint64_t> geometric(0.3);
  uint64_t one = rng() & widthMask(width);
  for (auto &x : w) {
    switch (shape) {
    case Shape::Uniform: x = rng() & widthMask(width); break;
    case Shape::Skewed: x = (geometric(rng) * 0x9e3779b97f4a7c15ull) & widthMask(width); break;
    case Shape::OneSymbol: x = one; break;
    case Shape::FewSymbols: x = (one + rng() % 3) & widthMask(width); break;
    }
  }
  return w;
}

} // namespace brevis
