#pragma once
// Random word streams of the shapes the codec and cost-model tests cover: uniform, skewed
// (geometric), one symbol, a few symbols; and the bytes of a safetensors-like JSON header, whose
// repeated strings LZ coding is for.
#include "lang/StreamType.h"

#include <cstdint>
#include <random>
#include <string>
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

/// n bytes of a JSON header as safetensors files have: tensor names that differ in a layer
/// number and a suffix, dtypes, shapes and growing offsets.
inline std::vector<uint64_t> jsonHeaderBytes(size_t n) {
  static const char *const kParts[] = {"attention.wq", "attention.wk", "attention.wv", "attention.wo",
                                       "feed_forward.w1", "feed_forward.w2", "feed_forward.w3", "attention_norm"};
  std::string text = "{\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t offset = 0;
  for (unsigned i = 0; text.size() < n; ++i) {
    const uint64_t rows = 64 << (i % 3), size = rows * 64 * 2;
    text += ",\"layers." + std::to_string(i / 8) + "." + kParts[i % 8] + ".weight\":{\"dtype\":\"BF16\",\"shape\":[" +
            std::to_string(rows) + ",64],\"data_offsets\":[" + std::to_string(offset) + "," +
            std::to_string(offset + size) + "]}";
    offset += size;
  }
  text.resize(n);
  return std::vector<uint64_t>(text.begin(), text.end());
}

/// A sparse 16-bit stream: runs of zero words between runs of non-zero words whose top byte
/// drifts by at most one from word to word (an exponent), the low byte depending on it. The
/// context coder codes it well below every other encoding.
inline std::vector<uint64_t> sparseHalves(std::mt19937_64 &rng, size_t n) {
  std::vector<uint64_t> words(n);
  uint64_t top = 0x38;
  bool zeros = true;
  for (auto &w : words) {
    if (rng() % 20 == 0) zeros = !zeros;
    if (zeros) continue;
    top = 0x30 + (top - 0x30 + 16 + rng() % 3 - 1) % 16;
    w = top << 8 | ((top * 37 + rng() % 16) & 0xff);
  }
  return words;
}

} // namespace brevis
