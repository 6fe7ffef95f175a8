// Writes the literal fuzz target's seed corpus (test/fuzz/corpus/literal): for every encoding
// and a few widths, a small stream of skewed words encoded as the encoders write it, in the
// target's input layout (FuzzLiteral.cpp: encoding/width byte, 16-bit count, payload). Rerun
// after a wire-format change:  make_literal_seeds test/fuzz/corpus/literal
#include "runtime/codecs/LitEncode.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <random>

using namespace brevis;

namespace {

/// The first byte that FuzzLiteral.cpp maps to (encoding, width), if any.
int selectorByte(size_t encodingIndex, unsigned width) {
  for (int b = 0; b < 256; ++b) {
    Encoding e = kAllEncodings[b % std::size(kAllEncodings)];
    if (e == kAllEncodings[encodingIndex] && 1 + (b >> 3) % maxEncodingWidth(e) % 64 == width) return b;
  }
  return -1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_literal_seeds DIR\n");
    return 2;
  }
  for (size_t e = 0; e < std::size(kAllEncodings); ++e) {
    for (unsigned width : {1u, 5u, 8u, 10u, 12u, 16u, 23u, 32u}) {
      int selector = selectorByte(e, width);
      if (selector < 0) continue;
      // Variant 3: a rans literal long enough for htscodecs' 32-way frame (from 4 KiB on),
      // which the AVX-512 decoder takes; a zstd literal of repeated phrases, which codes
      // matches (the skewed words of variants 1 and 2 code mostly as literals); a context
      // literal of mostly zeros, coded with an escape word. Variant 4: a context literal of
      // words whose low bits are noise, which it stores raw.
      const bool third = kAllEncodings[e] == Encoding::Rans || kAllEncodings[e] == Encoding::Zstd ||
                         kAllEncodings[e] == Encoding::Context;
      const unsigned variants = kAllEncodings[e] == Encoding::Context && width > 8 ? 4 : third ? 3 : 2;
      for (unsigned variant = 1; variant <= variants; ++variant) {
        std::mt19937_64 rng(width * 10 + variant);
        std::geometric_distribution<uint64_t> geometric(variant == 1 ? 0.3 : 0.05);
        std::vector<uint64_t> words(variant == 1 ? 300 : variant == 2 ? 3000 : 6000);
        for (auto &w : words) w = (geometric(rng) * 0x9e3779b97f4a7c15ull) & widthMask(width);
        if (variant == 2 && width >= 8) words[7] = widthMask(width); // a rare word (rans patches it)
        if (variant == 3 && kAllEncodings[e] == Encoding::Zstd)
          for (size_t i = 24; i < words.size(); ++i) words[i] = i % 97 == 0 ? rng() & widthMask(width) : words[i - 24];
        if (variant == 3 && kAllEncodings[e] == Encoding::Context)
          for (auto &w : words) w = rng() % 10 < 7 ? 0 : w;
        if (variant == 4)
          for (auto &w : words) w = ((geometric(rng) << 6) | (rng() & 63)) & widthMask(width);
        Bytes payload;
        if (!encodingApplies(kAllEncodings[e], words, width) || !encodeLit(kAllEncodings[e], words, width, payload))
          continue;
        Bytes seed = {static_cast<uint8_t>(selector), static_cast<uint8_t>(words.size()),
                      static_cast<uint8_t>(words.size() >> 8)};
        seed.insert(seed.end(), payload.begin(), payload.end());
        auto path = fmt::format("{}/{}-u{}-{}.bin", argv[1], encodingName(kAllEncodings[e]), width, variant);
        std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(seed.data()),
                                                    static_cast<std::streamsize>(seed.size()));
      }
    }
  }
  return 0;
}
