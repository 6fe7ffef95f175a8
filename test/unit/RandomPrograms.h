#pragma once
// Random well-typed programs of every operator, for the tests that compare executors (the
// interpreter against the reference evaluation, the JIT against the interpreter).
#include "lang/Ast.h"
#include "runtime/codecs/LitEncode.h"
#include "runtime/common/Bytes.h"

#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace brevis {

/// Builds random programs of a requested type; literal payloads go into one shared buffer.
class ProgramGenerator {
public:
  explicit ProgramGenerator(uint64_t seed) : rng_(seed) {}

  ExprPtr make(StreamType t, unsigned depth) {
    ExprPtr e = makeNode(t, depth);
    if (pick(6) == 0) e->annotation = t;
    return e;
  }

  Bytes &payload() { return payload_; }

private:
  uint64_t pick(uint64_t n) { return rng_() % n; }
  uint64_t word(unsigned w) {
    // Mix small values, extremes and random bits: edge cases are where codecs break.
    switch (pick(4)) {
    case 0: return 0;
    case 1: return widthMask(w);
    case 2: return pick(4) & widthMask(w);
    default: return rng_() & widthMask(w);
    }
  }

  ExprPtr leaf(StreamType t) {
    switch (pick(4)) {
    case 0: return Const::make(t, word(t.width));
    case 1: {
      std::vector<uint64_t> words(t.length);
      for (auto &w : words)
        w = word(t.width);
      return Lit::make(t, std::move(words));
    }
    default: {
      std::vector<uint64_t> words(t.length);
      uint64_t mask = pick(2) ? widthMask(t.width) : widthMask(1 + pick(t.width));
      for (auto &w : words)
        w = word(t.width) & mask;
      Encoding enc = kAllEncodings[pick(std::size(kAllEncodings))];
      if (t.width > maxEncodingWidth(enc)) enc = pick(2) ? Encoding::Raw : Encoding::Bitpack;
      uint64_t at = payload_.size();
      if (!encodeLit(enc, words, t.width, payload_)) {
        payload_.resize(at);
        enc = Encoding::Raw;
        encodeLit(enc, words, t.width, payload_);
      }
      return Lit::make(t, enc, ByteRange{at, payload_.size() - at});
    }
    }
  }

  ExprPtr makeNode(StreamType t, unsigned depth) {
    if (depth == 0) return leaf(t);
    switch (pick(7)) {
    case 0: return leaf(t);
    case 1: { // concat: split the length into 1..4 parts
      size_t k = 1 + pick(4);
      std::vector<ExprPtr> parts;
      uint64_t left = t.length;
      for (size_t i = 0; i < k; ++i) {
        uint64_t n = i + 1 == k ? left : pick(left + 1);
        parts.push_back(make(StreamType{t.width, n}, depth - 1));
        left -= n;
      }
      return Concat::make(std::move(parts));
    }
    case 2: { // repeat needs a length with a divisor k >= 2
      for (uint64_t k : {2u, 3u, 4u, 5u, 7u})
        if (t.length >= k && t.length % k == 0)
          return Repeat::make(k, make(StreamType{t.width, t.length / k}, depth - 1));
      return leaf(t);
    }
    case 3: {
      auto fn = static_cast<MapFn>(pick(static_cast<uint64_t>(MapFn::BitRev) + 1));
      uint64_t param = fn == MapFn::Rotl ? pick(t.width) : mapFnTakesParameter(fn) ? word(t.width) : 0;
      auto map = Map::make(fn, param, make(t, depth - 1));
      if ((fn == MapFn::Add || fn == MapFn::Xor) && pick(2)) { // constants by position modulo their count
        map->param = 0;
        for (uint64_t k = 1 + pick(9); k > 0; --k) map->periodic.push_back(word(t.width));
        if (pick(2)) map->per = 1 + pick(5000); // each for a run of words, across read blocks too
      }
      return map;
    }
    case 4: {
      if (t.length == 0) return leaf(t);
      return Scan::make(pick(2) ? ScanOp::Add : ScanOp::Xor, word(t.width),
                        make(StreamType{t.width, t.length - 1}, depth - 1));
    }
    default: { // merge: split the width into 1..3 fields
      if (t.width < 2) return leaf(t);
      std::vector<MergeField> fields;
      unsigned left = t.width;
      size_t k = 1 + pick(std::min<unsigned>(3, t.width));
      for (size_t i = 0; i < k; ++i) {
        unsigned w = i + 1 == k ? left : 1 + static_cast<unsigned>(pick(left - (k - i - 1)));
        std::string name = pick(2) ? "f" + std::to_string(i) : "";
        fields.push_back({name, make(StreamType{w, t.length}, depth - 1)});
        left -= w;
      }
      return Merge::make(std::move(fields));
    }
    }
  }

  std::mt19937_64 rng_;
  Bytes payload_;
};

} // namespace brevis
