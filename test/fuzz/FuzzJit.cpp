// libFuzzer target: the JIT decoder against the interpreter on valid programs. The input is not
// program text but the choices of a generator (ProgramGen below): every operator (merge, concat,
// repeat, map, scan over literals and constants) at any nesting, every literal encoding, widths 1..64, lengths that
// cross the JIT's chunks and the entropy coders' blocks, words from seeded skewed distributions; then a range of words
// to decode. Both decoders must produce the same bytes, whole and for the range.
//
// The JIT is built once per process: creating LLJIT costs tens of milliseconds, and its cache
// of compiled shapes is part of what is under test (a shape decoded again against another
// payload must be reused or recompiled, never misdecode).
#include "codegen/JitDecoder.h"
#include "runtime/codecs/LitEncode.h"
#include "runtime/execution/Interpreter.h"

#include <algorithm>
#include <random>

using namespace brevis;

namespace {

/// The fuzzer's bytes, consumed as choices; zeros once they run out.
class Choices {
public:
  Choices(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  uint64_t below(uint64_t n) { // n >= 1
    uint64_t v = byte();
    if (n > 256) v = v << 8 | byte();
    if (n > 65536) v = v << 8 | byte();
    return v % n;
  }

private:
  const uint8_t *data_;
  size_t size_, at_ = 0;
};

class ProgramGen {
public:
  explicit ProgramGen(Choices &c) : c_(c), rng_(c.byte() | uint64_t{c.byte()} << 8) {}
  Bytes payload;

  ExprPtr make(unsigned width, uint64_t n, int depth) {
    const unsigned kind = c_.byte() % 12;
    if (kind >= 8 && depth > 0) {
      if (ExprPtr structural = makeStructural(kind, width, n, depth)) return structural;
    }
    if (kind < 3 && depth > 0 && width >= 2) {
      const unsigned parts = 2 + c_.below(std::min(3u, width - 1));
      std::vector<unsigned> cuts;
      while (cuts.size() < parts - 1) { // distinct points in [1, width): there are enough
        unsigned cut = 1 + static_cast<unsigned>(c_.below(width - 1));
        while (std::find(cuts.begin(), cuts.end(), cut) != cuts.end())
          cut = cut % (width - 1) + 1;
        cuts.push_back(cut);
      }
      std::sort(cuts.begin(), cuts.end());
      cuts.push_back(width);
      std::vector<MergeField> fields;
      unsigned previous = 0;
      for (unsigned cut : cuts) {
        fields.push_back(MergeField{"", make(cut - previous, n, depth - 1)});
        previous = cut;
      }
      return Merge::make(std::move(fields));
    }
    if (kind == 3) return Const::make(StreamType{width, n}, rng_() & widthMask(width));
    std::vector<uint64_t> words = draw(width, n);
    if (kind == 4 && n <= 4096) return Lit::make(StreamType{width, n}, std::move(words));
    const Encoding encoding = kAllEncodings[c_.byte() % std::size(kAllEncodings)];
    ByteRange r{payload.size(), 0};
    if (!encodeLit(encoding, words, width, payload)) encodeLit(Encoding::Bitpack, words, width, payload);
    r.size = payload.size() - r.offset;
    const Encoding used = encodingApplies(encoding, words, width) ? encoding : Encoding::Bitpack;
    return Lit::make(StreamType{width, n}, used, r);
  }

private:
  /// concat, repeat, map or scan of type u<width>[n]; null where the length does not suit.
  ExprPtr makeStructural(unsigned kind, unsigned width, uint64_t n, int depth) {
    switch (kind) {
    case 8: { // concat of 2..3 parts, any of them empty
      const unsigned parts = 2 + c_.byte() % 2;
      std::vector<ExprPtr> made;
      uint64_t left = n;
      for (unsigned i = 0; i < parts; ++i) {
        const uint64_t take = i + 1 == parts ? left : c_.below(left + 1);
        made.push_back(make(width, take, depth - 1));
        left -= take;
      }
      return Concat::make(std::move(made));
    }
    case 9: // repeat a body whose length divides n
      for (uint64_t k : {2u, 3u, 5u, 64u})
        if (n >= k && n % k == 0 && c_.byte() % 2) return Repeat::make(k, make(width, n / k, depth - 1));
      return nullptr;
    case 10: {
      const auto fn = static_cast<MapFn>(c_.byte() % (static_cast<unsigned>(MapFn::BitRev) + 1));
      const uint64_t param = fn == MapFn::Rotl         ? c_.below(width)
                             : mapFnTakesParameter(fn) ? rng_() & widthMask(width)
                                                       : 0;
      auto map = Map::make(fn, param, make(width, n, depth - 1));
      if ((fn == MapFn::Add || fn == MapFn::Xor) && c_.byte() % 2) { // constants by position modulo their count
        map->param = 0;
        for (unsigned k = 1 + c_.byte() % 9; k > 0; --k) map->periodic.push_back(rng_() & widthMask(width));
        if (c_.byte() % 2) map->per = 1 + c_.below(5000); // each for a run of words
      }
      return map;
    }
    default:
      if (n == 0) return nullptr;
      return Scan::make(c_.byte() % 2 ? ScanOp::Add : ScanOp::Xor, rng_() & widthMask(width),
                        make(width, n - 1, depth - 1));
    }
  }

  /// Words of a few shapes real fields have: few distinct values, geometric around a mode,
  /// uniform below some bit count.
  std::vector<uint64_t> draw(unsigned width, uint64_t n) {
    std::vector<uint64_t> words(n);
    const unsigned shape = c_.byte() % 4;
    const unsigned bits = 1 + static_cast<unsigned>(c_.below(width));
    const uint64_t base = rng_();
    std::geometric_distribution<uint64_t> geometric(0.05 + 0.9 * (c_.byte() / 255.0));
    for (auto &w : words) {
      switch (shape) {
      case 0: w = base + rng_() % 3; break;
      case 1: w = base + geometric(rng_); break;
      case 2: w = rng_(); break;
      default: w = rng_() % 7 == 0 ? rng_() : base; break;
      }
      w &= widthMask(bits);
    }
    return words;
  }

  Choices &c_;
  std::mt19937_64 rng_;
};

/// Decodes words [first, first + count) of `region` with `decoder`.
Bytes decodeWith(RegionDecoder &decoder, const Region &region, const Payload &payload, uint64_t first, uint64_t count) {
  Bytes out;
  VectorSink sink(out);
  if (!decoder.decodeWords(region, payload, first, count, sink)) __builtin_trap(); // valid programs decode
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::unique_ptr<JitDecoder> jit = [] {
    auto made = JitDecoder::create({});
    if (!made) __builtin_trap();
    return std::move(*made);
  }();
  Choices choices(data, size);
  static constexpr unsigned kRootWidths[] = {8, 16, 32, 64};
  const unsigned width =
      choices.byte() % 2 ? kRootWidths[choices.byte() % 4] : 1 + static_cast<unsigned>(choices.below(64));
  // Lengths up to 100,000 words: past the JIT's 64 KiB chunks of output, at any width. A rans
  // block boundary (1 Mi words) is too far for a fuzzer's speed; RoundTripLarge crosses it.
  static constexpr uint64_t kLengthScale[] = {1, 17, 1000, 100000};
  const uint64_t n = choices.below(kLengthScale[choices.byte() % 4]) + 1;
  ProgramGen gen(choices);
  Region region;
  region.program = gen.make(width, n, 3);
  region.bytes = ByteRange{0, n * containerBytes(width)};
  Payload payload(std::move(gen.payload));
  if (!validateForExecution(*region.program, payload)) __builtin_trap(); // what the encoders wrote
  Interpreter interpreter;
  if (decodeWith(*jit, region, payload, 0, n) != decodeWith(interpreter, region, payload, 0, n)) __builtin_trap();
  const uint64_t first = choices.below(n);
  const uint64_t count = choices.below(n - first) + 1;
  if (decodeWith(*jit, region, payload, first, count) != decodeWith(interpreter, region, payload, first, count))
    __builtin_trap();
  return 0;
}
