// The cost model: the size estimators' bound against exact encoded sizes, and the choice of
// encoding (the exact smallest; the levels' policies; zstd where strings repeat; a fixed set of
// encodings).
#include "runtime/codecs/LitDecode.h"
#include "runtime/codecs/LitEncode.h"
#include "runtime/containers/Payload.h"
#include "runtime/containers/FileIO.h"
#include "synth/CostModel.h"
#include "synth/Literals.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "WordShapes.h"

using namespace brevis;

TEST(CostModel, EmptyStreamsAreRaw) {
  std::vector<uint64_t> none;
  Bytes out;
  EXPECT_EQ(encodeSmallest(none, 8, out), Encoding::Raw);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(encodeSmallestOf(none, 8, out, {Encoding::Huffman}), Encoding::Raw);
  EXPECT_TRUE(out.empty());
}

TEST(CostModel, BitpackOrRawWhicheverIsSmaller) {
  std::vector<uint64_t> words = {1, 5, 3, 0}; // 3 bits each
  Bytes out;
  EXPECT_EQ(encodeSmallest(words, 16, out), Encoding::Bitpack);
  std::vector<uint64_t> full = {0xff, 0x80};
  out.clear();
  EXPECT_EQ(encodeSmallest(full, 8, out), Encoding::Raw); // raw is smaller by the header byte
}

TEST(CostModel, AFixedSetOfEncodingsKeepsItsSmallest) {
  std::mt19937_64 rng(7);
  auto skewed = makeWords(rng, 10000, 8, Shape::Skewed);
  Bytes out, huffman;
  ASSERT_TRUE(encodeLit(Encoding::Huffman, skewed, 8, huffman));
  EXPECT_EQ(encodeSmallestOf(skewed, 8, out, {Encoding::Raw, Encoding::Huffman}), Encoding::Huffman);
  EXPECT_EQ(out, huffman);
  // Uniform bytes: bitpack needs all 8 bits and a header byte, so raw is smaller.
  auto uniform = makeWords(rng, 1000, 8, Shape::Uniform);
  out.clear();
  EXPECT_EQ(encodeSmallestOf(uniform, 8, out, {Encoding::Bitpack, Encoding::Raw}), Encoding::Raw);
  EXPECT_EQ(out.size(), uniform.size());
  // Where none of the set applies (rans holds at most 16 bits), raw.
  std::vector<uint64_t> wide = {uint64_t{1} << 40, 3};
  out.clear();
  EXPECT_EQ(encodeSmallestOf(wide, 64, out, {Encoding::Rans}), Encoding::Raw);
  EXPECT_EQ(out.size(), 16u);
}

TEST(CostModel, SmallestEncodingIsKeptAndEstimatesStayWithinTheirBound) {
  std::mt19937_64 rng(5);
  std::vector<std::pair<std::string, std::vector<uint64_t>>> streams;
  // Real BF16 exponents and mantissas from the committed checkpoint.
  auto model = readFile(std::string(BREVIS_TEST_DATA) + "/stories260K.bf16.safetensors");
  ASSERT_TRUE(model);
  uint64_t headerLength;
  std::memcpy(&headerLength, model->data(), 8);
  std::vector<uint64_t> exponents, mantissas;
  for (size_t at = 8 + headerLength; at + 1 < model->size(); at += 2) {
    uint16_t w = static_cast<uint16_t>((*model)[at] | ((*model)[at + 1] << 8));
    exponents.push_back((w >> 7) & 0xff);
    mantissas.push_back(w & 0x7f);
  }
  streams.push_back({"bf16 exponents", exponents});
  streams.push_back({"bf16 mantissas", mantissas});
  streams.push_back({"skewed u8", makeWords(rng, 300000, 8, Shape::Skewed)});
  streams.push_back({"uniform u8", makeWords(rng, 100000, 8, Shape::Uniform)});
  streams.push_back({"few u5", makeWords(rng, 50000, 5, Shape::FewSymbols)});
  streams.push_back({"json header", jsonHeaderBytes(40000)});
  for (const auto &[name, words] : streams) {
    unsigned width = 8;
    uint64_t smallest = ~uint64_t{0};
    for (Encoding enc : kAllEncodings) {
      Bytes bytes;
      if (!encodeLit(enc, words, width, bytes)) continue;
      smallest = std::min<uint64_t>(smallest, bytes.size());
      auto estimate = estimateSize(enc, words, width);
      ASSERT_TRUE(estimate) << name;
      double error = std::abs(static_cast<double>(*estimate) - static_cast<double>(bytes.size()));
      EXPECT_LE(error, kEstimateRelative * static_cast<double>(bytes.size()) + kEstimateAbsolute)
          << name << " " << encodingName(enc) << ": estimate " << *estimate << ", exact " << bytes.size();
    }
    Bytes chosen;
    encodeSmallest(words, width, chosen);
    EXPECT_EQ(chosen.size(), smallest) << name;
  }
}

TEST(CostModel, ALiteralIsAppendedAfterWhatThePayloadHoldsAsIntoNothing) {
  // encodeSmallest codes its first candidate straight into the payload after what it holds, and
  // drops it there where it loses (small near-uniform streams are tried whatever their
  // estimates): the payload's bytes before it stay, and what it appends is what it codes into
  // an empty one, whatever the level.
  std::mt19937_64 rng(47);
  std::vector<std::pair<unsigned, std::vector<uint64_t>>> streams;
  for (unsigned width : {1u, 7u, 8u, 12u})
    for (Shape shape : {Shape::Skewed, Shape::Uniform, Shape::FewSymbols})
      for (size_t n : {size_t{3000}, size_t{70000}}) streams.push_back({width, makeWords(rng, n, width, shape)});
  streams.push_back({8, jsonHeaderBytes(30000)});
  Bytes prefix(100000);
  for (uint8_t &b : prefix) b = static_cast<uint8_t>(rng());
  for (int level : {1, 5, 9})
    for (const auto &[width, words] : streams) {
      const EncodePolicy policy = policyForLevel(level);
      Bytes alone;
      const Encoding expected = encodeSmallest(words, width, alone, policy);
      Bytes payload(prefix); // its capacity no more than the prefix: the literal grows it
      const Encoding got = encodeSmallest(words, width, payload, policy);
      const std::string what = fmt::format("u{} of {} words at level {}", width, words.size(), level);
      EXPECT_EQ(got, expected) << what;
      ASSERT_EQ(payload.size(), prefix.size() + alone.size()) << what;
      EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), payload.begin())) << what;
      const auto appended = payload.begin() + static_cast<ptrdiff_t>(prefix.size());
      EXPECT_TRUE(std::equal(alone.begin(), alone.end(), appended)) << what;
      // Nothing of a candidate that lost is left before the literal's own bytes.
      const auto lit = Lit::make(StreamType{width, words.size()}, got, ByteRange{prefix.size(), alone.size()});
      const Payload whole = Payload::fromBytes(std::move(payload));
      ASSERT_TRUE(validateLit(*lit, whole)) << what;
      const auto decoded = decodeLit(*lit, whole);
      ASSERT_TRUE(decoded) << what;
      EXPECT_EQ(*decoded, words) << what;
    }
}

TEST(CostModel, Rans16EstimatesStayWithinTheirBound) {
  // Coding cost close to the entropy: a skewed 9- to 16-bit stream codes within 1% + the table.
  std::mt19937_64 rng(12);
  for (unsigned width : {9u, 12u, 16u}) {
    auto words = makeWords(rng, 20000, width, Shape::Skewed);
    Bytes good;
    ASSERT_TRUE(encodeLit(Encoding::Rans, words, width, good));
    auto estimate = estimateSize(Encoding::Rans, words, width);
    ASSERT_TRUE(estimate);
    EXPECT_LE(std::abs(static_cast<double>(*estimate) - static_cast<double>(good.size())),
              kEstimateRelative * static_cast<double>(good.size()) + kEstimateAbsolute)
        << "u" << width << ": estimate " << *estimate << ", exact " << good.size();
  }
}

TEST(CostModel, LevelPoliciesOnLargeLiteralsChooseWhatTryingEveryEncodingWould) {
  // Below level 9, large literals try a slower encoding only where its estimate promises the
  // level's gain. On these streams that must pick what encoding every candidate and applying
  // the policy (each slower encoding must beat the best faster one by minGain) picks: here
  // bitpack, huffman, rans, zstd and rans_o1 each win somewhere, and Huffman is skipped where
  // rANS's estimate promises to beat it.
  std::mt19937_64 rng(43);
  std::vector<std::pair<std::string, std::vector<uint64_t>>> streams;
  std::vector<uint64_t> mantissa(1 << 20), exponent(1 << 20), markov(1 << 20), twoLevel(1 << 20), peaked(1 << 18);
  std::normal_distribution<double> normal(0, 0.02);
  for (size_t i = 0; i < mantissa.size(); ++i) {
    float f = static_cast<float>(normal(rng));
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    mantissa[i] = (bits >> 16) & 0x7f;
    exponent[i] = (bits >> 23) & 0xff;
    // Order-1 structure: the next byte is usually the previous one or its neighbour.
    markov[i] = i == 0 ? 100 : (markov[i - 1] + (rng() % 8 == 0 ? rng() % 5 : 0) + 254) % 256 % 16 + 96;
    // A gain just under 1% (level 5's threshold): the top of 7 bits set a third of the time.
    twoLevel[i] = (rng() & 0x3f) | (rng() % 100 < 34 ? 0x40 : 0);
  }
  // One byte nine times in ten: Huffman spends a bit where rANS spends a sixth of one, so
  // Huffman is not even encoded (huffmanLosesToRans).
  for (uint64_t &w : peaked) w = rng() % 10 != 0 ? 7 : rng() % 40;
  // Probabilities 1/2, 1/4, 1/8, 1/16, 1/16: Huffman's codes are the entropy, and it is kept.
  std::vector<uint64_t> dyadic(1 << 18);
  for (uint64_t &w : dyadic) w = 40 + std::min<uint64_t>(std::countr_zero(rng() | 16), 4);
  // Uniform bytes, whose sample rules out the order-0 coders without a count of the whole
  // stream; and words uniform below the top bit but for two outside every sampled run, whose
  // sample rules out nothing: the whole stream is counted.
  std::vector<uint64_t> uniform(1 << 20), belowTop(1 << 20);
  for (size_t i = 0; i < uniform.size(); ++i) {
    uniform[i] = rng() & 0xff;
    belowTop[i] = rng() & 0x7f;
  }
  belowTop[5000] = belowTop[(1 << 20) - 5000] = 0xff;
  streams.push_back({"uniform bytes", uniform});
  streams.push_back({"uniform below the top bit", belowTop});
  streams.push_back({"bf16-like mantissas", mantissa});
  streams.push_back({"bf16-like exponents", exponent});
  streams.push_back({"order-1 structured", markov});
  streams.push_back({"gain just under 1%", twoLevel});
  streams.push_back({"json header", jsonHeaderBytes(1 << 20)});
  streams.push_back({"one byte nine times in ten", peaked});
  streams.push_back({"dyadic probabilities", dyadic});
  const unsigned width = 8;
  for (int level : {1, 5, 8}) {
    const EncodePolicy policy = policyForLevel(level);
    for (const auto &[name, words] : streams) {
      // The reference: every candidate encoded, in decreasing decoding speed.
      Encoding best = encodedSize(Encoding::Bitpack, words, width) < encodedSize(Encoding::Raw, words, width)
                          ? Encoding::Bitpack
                          : Encoding::Raw;
      uint64_t bestSize = encodedSize(best, words, width);
      for (Encoding e : kAllEncodings) {
        Bytes bytes;
        if (hasCheapExactSize(e) || !policy.tries(e) || !encodeLit(e, words, width, bytes, policy.zstdLevelFor(words.size())))
          continue;
        if (static_cast<double>(bytes.size()) < static_cast<double>(bestSize) * (1 - policy.gainFor(e, width))) {
          best = e;
          bestSize = bytes.size();
        }
      }
      Bytes chosen;
      EXPECT_EQ(encodeSmallest(words, width, chosen, policy), best) << name << ", level " << level;
      EXPECT_EQ(chosen.size(), bestSize) << name << ", level " << level;
    }
  }
}

namespace {

/// 2^22 words of `width` bits (four rans blocks of either coder), value s drawn with probability
/// proportional to 1 + skew * (s / (2^width - 1) - 1/2): near-uniform mantissa-like words whose
/// order-0 gain over bitpack's full width grows with the skew.
std::vector<uint64_t> skewedWords(unsigned width, double skew) {
  std::mt19937_64 rng(45);
  const uint64_t values = uint64_t{1} << width;
  std::vector<uint64_t> words(size_t{1} << 22);
  for (uint64_t &w : words) {
    for (;;) {
      const uint64_t s = rng() % values;
      const double at = static_cast<double>(s) / static_cast<double>(values - 1);
      const double accept = (1 + skew * (at - 0.5)) / (1 + skew / 2);
      if (static_cast<double>(rng() % 1000000) < accept * 1e6) {
        w = s;
        break;
      }
    }
  }
  return words;
}

/// The encoding every candidate encoded and `policy` applied picks among bitpack, huffman and
/// rans, and its size.
std::pair<Encoding, uint64_t> exhaustiveChoice(const std::vector<uint64_t> &words, unsigned width,
                                               const EncodePolicy &policy) {
  Encoding best = Encoding::Bitpack;
  uint64_t bestSize = encodedSize(Encoding::Bitpack, words, width);
  for (Encoding e : {Encoding::Huffman, Encoding::Rans}) {
    Bytes bytes;
    if (!encodeLit(e, words, width, bytes)) continue;
    if (static_cast<double>(bytes.size()) < static_cast<double>(bestSize) * (1 - policy.gainFor(e, width))) {
      best = e;
      bestSize = bytes.size();
    }
  }
  return {best, bestSize};
}

/// 2^22 seven-bit words (four rans blocks) drawn from a mix of two distributions: with weight
/// 1 - mix, one Huffman codes at its entropy (8 words of probability 1/16, 16 of 1/32), with
/// weight mix, a bell over all 128 values, which it codes ~1% past it.
std::vector<uint64_t> mixedBytes(double mix) {
  std::vector<double> weights(128);
  for (size_t s = 0; s < 128; ++s) {
    const double dyadic = s < 8 ? 1.0 / 16 : s < 24 ? 1.0 / 32 : 0;
    const double z = (static_cast<double>(s) - 64) / 12;
    weights[s] = (1 - mix) * dyadic + mix * std::exp(-z * z / 2) / (12 * std::sqrt(2 * M_PI));
  }
  std::mt19937_64 rng(46);
  std::discrete_distribution<uint64_t> pick(weights.begin(), weights.end());
  std::vector<uint64_t> words(size_t{1} << 22);
  for (uint64_t &w : words) w = pick(rng);
  return words;
}

/// How far rans' exact size comes below the size it must beat (the best faster encoding's, less
/// the policy's gain), relative to that best.
double ransMarginPastGain(const std::vector<uint64_t> &words, unsigned width, const EncodePolicy &policy) {
  uint64_t faster = encodedSize(Encoding::Bitpack, words, width);
  Bytes huffman, rans;
  const double huffmanGain = policy.gainFor(Encoding::Huffman, width);
  if (encodeLit(Encoding::Huffman, words, width, huffman) &&
      static_cast<double>(huffman.size()) < static_cast<double>(faster) * (1 - huffmanGain))
    faster = huffman.size();
  encodeLit(Encoding::Rans, words, width, rans);
  return 1 - static_cast<double>(rans.size()) / static_cast<double>(faster) - policy.gainFor(Encoding::Rans, width);
}

} // namespace

TEST(CostModel, RansOnStreamsOfManyBlocksShowsItsGainOnOneBlockFirst) {
  // A stream of four rans blocks or more is rans-coded whole only where coding its middle block
  // alone shows the level's gain with a tenth of a percent to spare: near the gain, rans'
  // estimates (~0.1% low on such streams, for bytes and for 9 to 16 bits alike) had it coded,
  // only to lose by bytes.
  const EncodePolicy policy = policyForLevel(5);
  for (unsigned width : {7u, 10u}) {
    ASSERT_GT(policy.gainFor(Encoding::Rans, width), 0);
    // A skew whose rans wins just past the level's gain, within the room: found by bisection, the
    // margin growing with the skew.
    double low = 0, high = 1.9, margin = 0;
    std::vector<uint64_t> nearGain;
    for (int step = 0; step < 14; ++step) {
      const double skew = (low + high) / 2;
      nearGain = skewedWords(width, skew);
      margin = ransMarginPastGain(nearGain, width, policy);
      if (margin < 0.0003) low = skew;
      else if (margin > 0.0007) high = skew;
      else break;
    }
    ASSERT_GT(margin, 0.0002) << "u" << width << ": no skew found with rans just past the level's gain";
    ASSERT_LT(margin, 0.0008) << "u" << width << ": no skew found with rans just past the level's gain";
    const auto [reference, referenceSize] = exhaustiveChoice(nearGain, width, policy);
    ASSERT_EQ(reference, Encoding::Rans) << "u" << width;
    Bytes chosen;
    const Encoding got = encodeSmallest(nearGain, width, chosen, policy);
    EXPECT_NE(got, Encoding::Rans) << "u" << width << ": rans wins by " << margin << " past the gain, within the room";
    Bytes faster;
    ASSERT_TRUE(encodeLit(got, nearGain, width, faster));
    EXPECT_EQ(chosen.size(), faster.size()) << "u" << width;
  }
  // Away from the gain, a stream is coded as every candidate encoded and the policy applied would
  // code it: here rans, by a clear margin.
  const std::vector<uint64_t> clearGain = skewedWords(7, 1.0);
  ASSERT_GT(ransMarginPastGain(clearGain, 7, policy), 0.003);
  const auto [best, bestSize] = exhaustiveChoice(clearGain, 7, policy);
  ASSERT_EQ(best, Encoding::Rans);
  Bytes clear;
  EXPECT_EQ(encodeSmallest(clearGain, 7, clear, policy), best);
  EXPECT_EQ(clear.size(), bestSize);
}

TEST(CostModel, HuffmanOrRansOnLongByteStreamsIsDecidedWithoutEncodingBoth) {
  // Where huffman's and rans' estimates put rans within their room of the gain asked of it, a
  // stream of four rans blocks or more is judged by its middle block coded by rans alone: the
  // verdict is the one encoding both would give, and the stream is coded as encoding both would
  // code it (a 7-bit field of a 131 MB tensor was huffman-coded whole for nothing, 6% of level
  // 5's time).
  const EncodePolicy policy = policyForLevel(5);
  const double room = policy.estimateRoom, gain = policy.gainFor(Encoding::Rans, 7);
  ASSERT_GT(room, 0);
  for (const double target : {0.003, -0.002}) {
    // The margin rises from below nothing (mix 0) past 0.5% (mix 0.1), not monotonically after.
    double low = 0, high = 0.1, margin = 0;
    std::vector<uint64_t> words;
    for (int step = 0; step < 16; ++step) {
      const double mix = (low + high) / 2;
      words = mixedBytes(mix);
      margin = ransMarginPastGain(words, 7, policy);
      if (margin < target - 0.001) low = mix;
      else if (margin > target + 0.001) high = mix;
      else break;
    }
    ASSERT_NEAR(margin, target, 0.001) << "no mix found with rans " << target << " past the gain";
    const auto [reference, referenceSize] = exhaustiveChoice(words, 7, policy);
    ASSERT_EQ(reference, target > 0 ? Encoding::Rans : Encoding::Huffman) << margin;
    // The estimates alone leave it open.
    const auto huffman = estimateSize(Encoding::Huffman, words, 7), rans = estimateSize(Encoding::Rans, words, 7);
    ASSERT_TRUE(huffman && rans);
    const double threshold = static_cast<double>(*huffman) * (1 - gain);
    ASSERT_GE(static_cast<double>(*rans) * (1 + room), threshold * (1 - room)) << margin;
    ASSERT_LT(static_cast<double>(*rans) * (1 - room), threshold * (1 + room)) << margin;
    EXPECT_EQ(byteCoderByEstimates(words, 7, policy), reference) << "rans " << margin << " past the gain";
    Bytes chosen;
    EXPECT_EQ(encodeSmallest(words, 7, chosen, policy), reference) << margin;
    EXPECT_EQ(chosen.size(), referenceSize) << margin;
  }
  // Level 1 leaves the choice to the estimates alone, with no room: never open, and no probe.
  const EncodePolicy fast = policyForLevel(1);
  const std::vector<uint64_t> mixed = mixedBytes(0.05);
  const auto huffman = estimateSize(Encoding::Huffman, mixed, 7), rans = estimateSize(Encoding::Rans, mixed, 7);
  ASSERT_TRUE(huffman && rans);
  const double mark = static_cast<double>(*huffman) * (1 - fast.gainFor(Encoding::Rans, 7));
  const bool ransByEstimates = static_cast<double>(*rans) < mark;
  EXPECT_EQ(byteCoderByEstimates(mixed, 7, fast), ransByEstimates ? Encoding::Rans : Encoding::Huffman);
}

TEST(CostModel, TableCodersCannotPayWhereThreeQuartersOfAProbeOccurOnce) {
  // The definition: 1,024 words evenly spaced (every one of a shorter stream), sorted; the
  // share of them whose value occurs once in the probe.
  auto byDefinition = [](const std::vector<uint64_t> &words, unsigned width) {
    if (width <= 12 || words.size() < 64) return false;
    std::vector<uint64_t> probe;
    const size_t step = std::max<size_t>(1, words.size() / 1024);
    for (size_t i = 0; i < words.size() && probe.size() < 1024; i += step) probe.push_back(words[i]);
    std::sort(probe.begin(), probe.end());
    size_t once = 0;
    for (size_t i = 0; i < probe.size();) {
      size_t j = i + 1;
      while (j < probe.size() && probe[j] == probe[i]) ++j;
      once += j - i == 1;
      i = j;
    }
    return once * 4 >= probe.size() * 3;
  };
  std::mt19937_64 rng(45);
  size_t cannot = 0, can = 0;
  for (unsigned width : {12u, 13u, 16u, 23u, 32u, 64u})
    for (size_t n : {size_t{63}, size_t{64}, size_t{900}, size_t{1024}, size_t{5000}, size_t{300000}})
      for (uint64_t distinct : {uint64_t{3}, uint64_t{300}, uint64_t{1500}, uint64_t{2600}, uint64_t{3300},
                                uint64_t{3600}, uint64_t{4000}, uint64_t{1} << 40}) {
        // Values drawn from `distinct` of them: a probe of 1,024 sees about e^(-1023/distinct)
        // of its words once, three quarters from about 3,560 distinct values on, so that both
        // sides of the threshold come up; shifted up over fixed low bits, which narrow widths
        // cut back to few values.
        std::vector<uint64_t> words(n);
        for (uint64_t &w : words) w = ((rng() % distinct) << 11 | 0x5a5) & widthMask(width);
        const bool expected = byDefinition(words, width);
        EXPECT_EQ(tableCodersCannotPay(words, width), expected) << "u" << width << " n " << n << " of " << distinct;
        (expected ? cannot : can) += 1;
      }
  EXPECT_GT(cannot, 10u);
  EXPECT_GT(can, 10u);
}

TEST(CostModel, TheSmallestEstimateCountsOnceAndChoosesAsEstimatingEachEncodingWould) {
  // estimateSmallest shares one count of the words among the order-0 estimates and bitpack's;
  // the reference estimates every encoding on its own and applies the policy's rules.
  std::mt19937_64 rng(44);
  std::vector<std::pair<unsigned, std::vector<uint64_t>>> streams;
  for (unsigned width : {1u, 5u, 8u, 12u, 16u})
    for (Shape shape : {Shape::Skewed, Shape::Uniform, Shape::FewSymbols})
      for (size_t n : {size_t{3}, size_t{700}, size_t{40000}}) streams.push_back({width, makeWords(rng, n, width, shape)});
  streams.push_back({8, jsonHeaderBytes(30000)});
  for (int level : {1, 5, 9}) {
    const EncodePolicy policy = policyForLevel(level);
    for (const auto &[width, words] : streams) {
      const bool manySymbols = tableCodersCannotPay(words, width);
      double best = -1;
      Encoding expected = Encoding::Raw;
      for (Encoding e : kAllEncodings) {
        if (!policy.tries(e) || (manySymbols && !hasCheapExactSize(e) && e != Encoding::Zstd)) continue;
        if (e == Encoding::Zstd && (best < 0 || !zstdWorthTrying(words, width, static_cast<uint64_t>(best), policy)))
          continue;
        const auto estimate = estimateSize(e, words, width);
        if (!estimate) continue;
        const auto size = static_cast<double>(*estimate);
        if (best < 0 || (size < best * (1 - policy.gainFor(e, width)) && size < best)) {
          best = size;
          expected = e;
        }
      }
      Encoding chosen = Encoding::Raw;
      const uint64_t size = estimateSmallest(words, width, policy, &chosen);
      const std::string what = fmt::format("u{} of {} words at level {}", width, words.size(), level);
      EXPECT_EQ(chosen, expected) << what;
      EXPECT_EQ(size, static_cast<uint64_t>(best)) << what;
    }
  }
}

// Mantissa bits that look like noise are not worth simulating the context coder on; ones that
// follow their neighbours, or are not spread over their width, are.
TEST(CostModel, OrderOneEntropyIsThatOfEveryPairCountedPlainly) {
  // Short streams list the pairs they touch, long ones count in a table two runs at a time
  // (the first half and the second): every length's pairs, the one across the halves and an
  // odd length's last included, must be counted as a plain count of all of them does.
  std::mt19937_64 rng(31);
  auto plain = [](const std::vector<uint64_t> &words, uint64_t &used) {
    std::map<std::pair<uint64_t, uint64_t>, uint64_t> pairs;
    std::map<uint64_t, uint64_t> rows;
    uint64_t previous = 0;
    for (uint64_t w : words) {
      ++pairs[{previous, w}];
      ++rows[previous];
      previous = w;
    }
    double bits = 0;
    for (const auto &[row, total] : rows) bits += static_cast<double>(total) * std::log2(static_cast<double>(total));
    for (const auto &[pair, count] : pairs) bits -= static_cast<double>(count) * std::log2(static_cast<double>(count));
    used = pairs.size();
    return bits;
  };
  for (unsigned width : {1u, 3u, 8u})
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{4095}, size_t{4096}, size_t{4097},
                     size_t{4098}, size_t{70001}, size_t{70002}, size_t{200001}})
      for (Shape shape : {Shape::Skewed, Shape::Uniform}) {
        // Runs of one word (long runs of one pair) as well as changes.
        std::vector<uint64_t> words = makeWords(rng, n, width, shape);
        for (size_t i = 1; i < n; ++i)
          if (rng() % 4 != 0) words[i] = words[i - 1];
        uint64_t used = 0, expectedUsed = 0;
        const double bits = order1EntropyBits(words, width, used);
        const double expected = plain(words, expectedUsed);
        EXPECT_NEAR(bits, expected, 1e-6 * std::max(1.0, expected)) << "u" << width << ", " << n << " words";
        EXPECT_EQ(used, expectedUsed) << "u" << width << ", " << n << " words";
      }
  // A count above the c log2 c table's range (2^16) in one cell.
  std::vector<uint64_t> same(200000, 5);
  uint64_t used = 0, expectedUsed = 0;
  EXPECT_NEAR(order1EntropyBits(same, 8, used), plain(same, expectedUsed), 1e-3);
  EXPECT_EQ(used, expectedUsed);
}

TEST(CostModel, MantissasLookRandomOnlyWhereUniformAndUnrelatedToTheWordBefore) {
  std::mt19937_64 rng(21);
  for (unsigned width : {1u, 4u, 7u, 12u, 16u}) {
    // Noise of 16 bits is not told from a skewed stream by 2^15 words: their plug-in entropy
    // comes out 1.4 bits short (a sample of words, as the search scores, tells only narrower ones).
    const std::vector<uint64_t> noise = makeWords(rng, 1 << 15, width, Shape::Uniform);
    EXPECT_EQ(mantissaLooksRandom(noise, width), width <= 12) << "u" << width;
    // Each value about as often, but each a few steps on from the one before.
    std::vector<uint64_t> ramp(1 << 15);
    uint64_t v = 0;
    for (uint64_t &w : ramp) w = v = (v + 1 + rng() % 3) & widthMask(width);
    if (width >= 4) {
      EXPECT_FALSE(mantissaLooksRandom(ramp, width)) << "u" << width;
    }
    EXPECT_FALSE(mantissaLooksRandom(makeWords(rng, 1 << 15, width, Shape::Skewed), width)) << "u" << width;
  }
  // Words of more than 16 bits are not judged; neither is a stream of one word.
  EXPECT_FALSE(mantissaLooksRandom(makeWords(rng, 1 << 12, 20, Shape::Uniform), 20));
  EXPECT_FALSE(mantissaLooksRandom(std::vector<uint64_t>{5}, 4));
}

TEST(CostModel, ZstdIsChosenWhereStringsRepeatAndNotForRandomBytes) {
  std::mt19937_64 rng(17);
  const auto header = jsonHeaderBytes(100000);
  // A quantized tensor whose rows repeat: 64-byte rows drawn from a few dozen.
  std::vector<std::vector<uint64_t>> rows;
  for (int r = 0; r < 40; ++r) rows.push_back(makeWords(rng, 64, 8, Shape::Skewed));
  std::vector<uint64_t> tensor;
  while (tensor.size() < 200000) {
    const auto &row = rows[rng() % rows.size()];
    tensor.insert(tensor.end(), row.begin(), row.end());
  }
  const auto random = makeWords(rng, 200000, 8, Shape::Uniform);
  const auto skewed = makeWords(rng, 200000, 8, Shape::Skewed);
  for (int level = 1; level <= 9; ++level) {
    const EncodePolicy policy = policyForLevel(level);
    Bytes out;
    EXPECT_EQ(encodeSmallest(header, 8, out, policy), Encoding::Zstd) << "header, level " << level;
    EXPECT_LT(out.size(), header.size() / 5) << "level " << level;
    out.clear();
    EXPECT_EQ(encodeSmallest(tensor, 8, out, policy), Encoding::Zstd) << "repeated rows, level " << level;
    out.clear();
    EXPECT_EQ(encodeSmallest(random, 8, out, policy), Encoding::Raw) << "random, level " << level;
    out.clear();
    EXPECT_NE(encodeSmallest(skewed, 8, out, policy), Encoding::Zstd) << "skewed, level " << level;
  }
  // Without a zstd level, zstd is not tried.
  EncodePolicy none;
  none.zstdLevel = 0;
  Bytes out;
  EXPECT_NE(encodeSmallest(header, 8, out, none), Encoding::Zstd);
  // Nor for words wider than bytes: a header's bytes as 9-bit words.
  out.clear();
  EXPECT_NE(encodeSmallest(header, 9, out), Encoding::Zstd);
}

TEST(CostModel, LevelsAskZstdForMoreWorkAsTheyRise) {
  EXPECT_EQ(policyForLevel(1).zstdLevel, 1);
  EXPECT_EQ(policyForLevel(kDefaultLevel).zstdLevel, kDefaultZstdLevel);
  EXPECT_EQ(policyForLevel(9).zstdLevel, 15);
  for (int level = 2; level <= 9; ++level) {
    EXPECT_GE(policyForLevel(level).zstdLevel, policyForLevel(level - 1).zstdLevel) << level;
    EXPECT_LE(policyForLevel(level).minGain, policyForLevel(level - 1).minGain) << level;
  }
  // Streams up to 1 MiB get a higher level from 5 on (zstd's time is small there); larger ones
  // the level's own, and no policy that does not try zstd tries it on small ones.
  constexpr uint64_t small = EncodePolicy::kZstdSmallStreamBytes, large = small + 1;
  EXPECT_EQ(policyForLevel(1).zstdLevelFor(small), 1);
  EXPECT_EQ(policyForLevel(kDefaultLevel).zstdLevelFor(small), 15);
  EXPECT_EQ(policyForLevel(kDefaultLevel).zstdLevelFor(large), kDefaultZstdLevel);
  EXPECT_EQ(policyForLevel(9).zstdLevelFor(small), 19);
  for (int level = 1; level <= 9; ++level)
    EXPECT_GE(policyForLevel(level).zstdLevelFor(small), policyForLevel(level).zstdLevelFor(large)) << level;
  EncodePolicy noZstd = policyForLevel(9);
  noZstd.zstdLevel = 0;
  EXPECT_EQ(noZstd.zstdLevelFor(small), 0);
}

TEST(CostModel, LevelOneKeepsToOrderZeroCoders) {
  // Bytes that follow their predecessor (each word one of four successors of the previous):
  // order 1 codes them in about 2 bits, order 0 in 8. The default level takes rans_o1; level 1,
  // for its speed of compression and decoding, does not try it.
  std::mt19937_64 rng(5);
  std::vector<uint64_t> words(1 << 17);
  for (size_t i = 1; i < words.size(); ++i) words[i] = (words[i - 1] * 37 + 11 + (rng() & 3)) & 0xff;
  Bytes chosen;
  EXPECT_EQ(encodeSmallest(words, 8, chosen, policyForLevel(kDefaultLevel)), Encoding::RansO1);
  EXPECT_FALSE(policyForLevel(1).tries(Encoding::RansO1));
  Bytes fast;
  const Encoding atLevelOne = encodeSmallest(words, 8, fast, policyForLevel(1));
  EXPECT_NE(atLevelOne, Encoding::RansO1);
  EXPECT_GT(fast.size(), chosen.size() * 2);
}

TEST(CostModel, ContextCodesSparseStreamsBelowOrderZeroAndOrderOneTables) {
  // An order-0 code pays for every zero's fields; a static order-1 table (rans_o1) pays for its
  // table. The adaptive context coder learns both the zero runs and the bytes under each top byte.
  std::mt19937_64 rng(11);
  auto words = sparseHalves(rng, 20000);
  Bytes context, huffman;
  ASSERT_TRUE(encodeLit(Encoding::Context, words, 16, context));
  ASSERT_TRUE(encodeLit(Encoding::Huffman, words, 16, huffman));
  EXPECT_LT(context.size() * 10, huffman.size() * 8) << context.size() << " vs huffman " << huffman.size();
  // And encodeSmallest chooses it at the default level.
  Bytes chosen;
  EXPECT_EQ(encodeSmallest(words, 16, chosen, policyForLevel(kDefaultLevel)), Encoding::Context);
  // Level 1, for speed, does not try it.
  EXPECT_FALSE(policyForLevel(1).tries(Encoding::Context));
  Bytes fast;
  EXPECT_NE(encodeSmallest(words, 16, fast, policyForLevel(1)), Encoding::Context);
  // The estimate of a long stream (simulated on a run of it) is within the cost model's bound.
  auto longer = sparseHalves(rng, 1500000);
  Bytes coded;
  ASSERT_TRUE(encodeLit(Encoding::Context, longer, 16, coded));
  auto estimate = estimateSize(Encoding::Context, longer, 16);
  ASSERT_TRUE(estimate);
  EXPECT_NEAR(static_cast<double>(*estimate), static_cast<double>(coded.size()),
              kEstimateRelative * static_cast<double>(coded.size()) + kEstimateAbsolute);
}


namespace {

/// `words` copied into containers of T.
template <typename T> std::vector<T> narrowed(const std::vector<uint64_t> &words) {
  return std::vector<T>(words.begin(), words.end());
}

} // namespace

// Encoders and estimates read words in the container they come in (a BF16 tensor as 16-bit
// words, a field as bytes): the bytes written and the choices made must not depend on it.
TEST(NarrowWords, EveryContainerEncodesTheSameBytes) {
  std::mt19937_64 rng(7);
  for (unsigned width : {1u, 3u, 8u, 9u, 16u, 17u, 32u}) {
    for (size_t n : {size_t{1}, size_t{37}, size_t{5000}}) {
      std::vector<uint64_t> words(n);
      // Skewed, so that the entropy coders apply and compete.
      for (uint64_t &w : words) w = (rng() % 7 == 0 ? rng() : rng() % 5) & widthMask(width);
      for (Encoding e : kAllEncodings) {
        Bytes wide;
        const bool applies = encodeLit(e, words, width, wide, 3);
        auto same = [&](WordsView view) {
          Bytes narrow;
          EXPECT_EQ(encodeLit(e, view, width, narrow, 3), applies);
          EXPECT_EQ(narrow, wide) << encodingName(e) << " u" << width << "[" << n << "] from " << view.containerBytes()
                                  << "-byte words";
        };
        if (width <= 32) same(narrowed<uint32_t>(words));
        if (width <= 16) same(narrowed<uint16_t>(words));
        if (width <= 8) same(narrowed<uint8_t>(words));
      }
      Bytes wide, narrow;
      const Encoding chosen = encodeSmallest(words, width, wide, policyForLevel(5));
      if (width <= 16) {
        EXPECT_EQ(encodeSmallest(narrowed<uint16_t>(words), width, narrow, policyForLevel(5)), chosen);
        EXPECT_EQ(narrow, wide);
      }
    }
  }
}

TEST(NarrowWords, FieldsComeOutInTheNarrowestContainer) {
  std::mt19937_64 rng(9);
  std::vector<uint16_t> words(1000);
  for (uint16_t &w : words) w = static_cast<uint16_t>(rng());
  const std::vector<uint64_t> wide(words.begin(), words.end());
  FieldBuffers buffers;
  const WordsView exponent = extractField(words, 7, 8, buffers);
  EXPECT_EQ(exponent.containerBytes(), 1u);
  EXPECT_EQ(exponent.widened(), extractField(wide, 7, 8));
  const WordsView low = extractField(words, 0, 15, buffers);
  EXPECT_EQ(low.containerBytes(), 2u);
  EXPECT_EQ(low.widened(), extractField(wide, 0, 15));
  EXPECT_EQ(extractField(wide, 3, 40, buffers).containerBytes(), 8u);
}

// Every container, every field within its width, lengths around a vector register's words (the
// AVX-512 loop takes 64 / sizeof(word) at a time; the rest word by word): as the 64-bit path.
TEST(NarrowWords, EveryFieldOfEveryContainerIsItsBits) {
  std::mt19937_64 rng(10);
  FieldBuffers buffers;
  auto check = [&]<typename W>(W) {
    constexpr unsigned bits = 8 * sizeof(W);
    for (size_t n : {0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000}) {
      std::vector<W> words(n);
      for (W &w : words) w = static_cast<W>(rng());
      const std::vector<uint64_t> wide(words.begin(), words.end());
      // Fields reaching past the container too: its bits above are zeros.
      for (unsigned shift = 0; shift < bits; ++shift)
        for (unsigned width = 1; width <= bits; ++width) {
          const WordsView field = extractField(WordsView(std::span<const W>(words)), shift, width, buffers);
          ASSERT_EQ(field.widened(), extractField(wide, shift, width))
              << bits << "-bit words, " << n << " of them, bits [" << shift << ", " << shift + width << ")";
        }
    }
  };
  check(uint8_t{});
  check(uint16_t{});
  check(uint32_t{});
}

TEST(NarrowWords, TensorBytesAreViewedInPlaceWhereAligned) {
  std::vector<uint32_t> backing(65);
  auto *bytes = reinterpret_cast<uint8_t *>(backing.data());
  for (size_t i = 0; i < 4 * backing.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 1);
  for (unsigned wordBytes : {1u, 2u, 3u, 4u, 8u}) {
    for (size_t offset : {size_t{0}, size_t{1}}) {
      const ByteSpan span(bytes + offset, 4 * 64);
      WordBuffer copy;
      const WordsView view = viewWords(span, wordBytes, copy);
      const std::vector<uint64_t> expected = readWords(span, wordBytes);
      EXPECT_EQ(view.widened(), expected) << wordBytes << "-byte words at offset " << offset;
      // Only misaligned words, or a size no container has, are copied.
      const bool copied = offset % wordBytes != 0 || wordBytes == 3;
      EXPECT_EQ(copy.size(), copied ? expected.size() : 0) << wordBytes << "-byte words at offset " << offset;
    }
  }
}
