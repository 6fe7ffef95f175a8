// Unit tests for runtime/execution and runtime/common: literal decoding as executors use it,
// word operations, and the interpreter against a direct reference evaluation.
#include "runtime/codecs/LitDecode.h"
#include "runtime/codecs/LitEncode.h"
#include "runtime/common/BitWidthSum.h"
#include "runtime/common/WordOps.h"
#include "runtime/execution/Interpreter.h"

#include "ReferenceEval.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>

using namespace brevis;

namespace {

std::vector<uint64_t> randomWords(std::mt19937_64 &rng, size_t n, unsigned width) {
  std::vector<uint64_t> w(n);
  for (auto &x : w) x = rng() & widthMask(width);
  return w;
}

/// A payload holding one literal of `words`, and that literal.
std::pair<Payload, ExprPtr> makeLiteral(const std::vector<uint64_t> &words, unsigned width, Encoding enc) {
  Bytes bytes = {0xAA, 0xBB}; // the literal does not start at offset 0
  encodeLit(enc, words, width, bytes);
  ExprPtr lit = Lit::make(StreamType{width, words.size()}, enc, ByteRange{2, bytes.size() - 2});
  return {Payload::fromBytes(bytes), std::move(lit)};
}

} // namespace
TEST(LitCodec, RoundTripsEveryWidthAndEncoding) {
  std::mt19937_64 rng(7);
  for (unsigned width = 1; width <= 64; ++width) {
    for (Encoding enc : {Encoding::Raw, Encoding::Bitpack}) {
      for (size_t n : {0, 1, 7, 64, 1000}) {
        auto words = randomWords(rng, n, width);
        auto [payload, lit] = makeLiteral(words, width, enc);
        const Lit &l = as<Lit>(*lit);
        ASSERT_TRUE(validateLit(l, payload)) << "width " << width << " n " << n;
        EXPECT_EQ(payload.size() - 2, encodedSize(enc, words, width));
        std::vector<uint64_t> back(n);
        decodeLitWords(l, payload, 0, n, back.data());
        EXPECT_EQ(back, words) << "width " << width << " " << encodingName(enc);
        if (n > 3) { // decoding from the middle
          decodeLitWords(l, payload, 3, 1, back.data());
          EXPECT_EQ(back[0], words[3]);
        }
      }
    }
  }
}

TEST(LitCodec, BitpackUsesTheLargestWordsBitWidth) {
  std::vector<uint64_t> words = {1, 5, 3, 0}; // 3 bits each
  EXPECT_EQ(encodedSize(Encoding::Bitpack, words, 16), 1u + 2u);
  std::vector<uint64_t> zeros(100, 0);
  EXPECT_EQ(encodedSize(Encoding::Bitpack, zeros, 8), 1u);
  std::vector<uint64_t> full = {0xff, 0x80};
  EXPECT_EQ(encodedSize(Encoding::Bitpack, full, 8), 3u);
  EXPECT_EQ(encodedSize(Encoding::Raw, full, 8), 2u);
}

TEST(LitCodec, RejectsMalformedPayloads) {
  // A raw u7 word with its high bit set does not fit the type.
  Bytes bytes = {0x01, 0x80};
  Payload p = Payload::fromBytes(bytes);
  auto lit = Lit::make(StreamType{7, 2}, Encoding::Raw, ByteRange{0, 2});
  auto r = validateLit(*lit, p);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("wider than 7 bits"), std::string::npos);

  // A bitpack header declaring more bits than the width.
  Bytes bad = {9, 0xff, 0xff, 0xff};
  Payload q = Payload::fromBytes(bad);
  auto bp = Lit::make(StreamType{8, 2}, Encoding::Bitpack, ByteRange{0, 3});
  EXPECT_FALSE(validateLit(*bp, q));

  // A bitpack body of the wrong size, and one with non-zero padding bits.
  Bytes shortBody = {4, 0x21};
  EXPECT_FALSE(validateLit(*Lit::make(StreamType{8, 3}, Encoding::Bitpack, ByteRange{0, 2}), Payload::fromBytes(shortBody)));
  Bytes padding = {4, 0x21, 0xf3};
  EXPECT_FALSE(validateLit(*Lit::make(StreamType{8, 3}, Encoding::Bitpack, ByteRange{0, 3}), Payload::fromBytes(padding)));

  // A range past the end of the payload.
  EXPECT_FALSE(validateLit(*Lit::make(StreamType{8, 4}, Encoding::Raw, ByteRange{1, 4}), Payload::fromBytes(bytes)));
}

TEST(WordOps, BitWidthSumIsTheSumOfEachBytesWidth) {
  std::mt19937 rng(3);
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{100}, size_t{4096}}) {
    std::vector<uint8_t> bytes(n);
    for (uint8_t &b : bytes) b = static_cast<uint8_t>(static_cast<uint8_t>(rng()) >> (rng() % 9)); // every width
    uint64_t expected = 0;
    for (uint8_t b : bytes) expected += std::bit_width(b);
    EXPECT_EQ(bitWidthSum(bytes.data(), n), expected) << n << " bytes";
  }
  const std::vector<uint8_t> edges{0, 1, 2, 3, 4, 127, 128, 129, 254, 255, 0, 255, 1, 128, 64, 32, 16, 8, 15};
  EXPECT_EQ(bitWidthSum(edges.data(), edges.size()),
            0u + 1 + 2 + 2 + 3 + 7 + 8 + 8 + 8 + 8 + 0 + 8 + 1 + 8 + 7 + 6 + 5 + 4 + 4);
}

TEST(WordOps, ScanDifferencesStayInTheWordsContainerAndScanBack) {
  // A byte stream's differences are bytes (as 64-bit words, a search over a large byte file held
  // 24 times its size), and scanning them from the first word gives the words back.
  std::mt19937_64 rng(4);
  std::vector<uint8_t> bytes(3000);
  for (uint8_t &b : bytes) b = static_cast<uint8_t>(rng());
  std::vector<uint32_t> wide(500);
  for (uint32_t &w : wide) w = static_cast<uint32_t>(rng() & widthMask(21));
  for (ScanOp op : {ScanOp::Add, ScanOp::Xor}) {
    const WordBuffer steps = scanDifferences(op, 8, std::vector<uint8_t>(bytes));
    EXPECT_EQ(steps.view().containerBytes(), 1u);
    ASSERT_EQ(steps.size(), bytes.size() - 1);
    uint64_t at = bytes[0];
    for (size_t i = 1; i < bytes.size(); ++i) EXPECT_EQ(at = scanStep(op, 8, at, steps.view()[i - 1]), bytes[i]);
    const WordBuffer wideSteps = scanDifferences(op, 21, wide);
    EXPECT_EQ(wideSteps.view().containerBytes(), 4u);
    at = wide[0];
    for (size_t i = 1; i < wide.size(); ++i) EXPECT_EQ(at = scanStep(op, 21, at, wideSteps.view()[i - 1]), wide[i]);
  }
  EXPECT_EQ(scanDifferences(ScanOp::Add, 8, std::vector<uint8_t>{}).size(), 0u);
  // Every container, each operator, widths below the container's: each step is the word-level
  // difference, within the width (an Add step not masked back to it would scan back alike).
  auto expectSteps = [&]<typename W>(W, unsigned width) {
    std::vector<W> words(300);
    for (W &w : words) w = static_cast<W>(rng() & widthMask(width));
    for (ScanOp op : {ScanOp::Add, ScanOp::Xor}) {
      const WordBuffer steps = scanDifferences(op, width, words);
      ASSERT_EQ(steps.view().containerBytes(), sizeof(W));
      ASSERT_EQ(steps.size(), words.size() - 1);
      for (size_t i = 1; i < words.size(); ++i) {
        const uint64_t step = steps.view()[i - 1];
        EXPECT_EQ(step, scanDifference(op, width, words[i - 1], words[i])) << "u" << width << " in " << sizeof(W);
        EXPECT_EQ(step & ~widthMask(width), 0u) << "u" << width << " in " << sizeof(W);
      }
    }
  };
  expectSteps(uint8_t{}, 5);
  expectSteps(uint16_t{}, 12);
  expectSteps(uint32_t{}, 21);
  expectSteps(uint64_t{}, 40);
  expectSteps(uint64_t{}, 64);
}

TEST(WordOps, InverseMapUndoesEveryMap) {
  std::mt19937_64 rng(3);
  for (unsigned width : {1u, 5u, 8u, 13u, 16u, 32u, 63u, 64u}) {
    for (int f = 0; f <= static_cast<int>(MapFn::BitRev); ++f) {
      MapFn fn = static_cast<MapFn>(f);
      uint64_t param = fn == MapFn::Rotl ? rng() % width : rng() & widthMask(width);
      for (int i = 0; i < 200; ++i) {
        uint64_t x = rng() & widthMask(width);
        uint64_t y = applyMap(fn, param, width, x);
        EXPECT_EQ(y & ~widthMask(width), 0u) << mapFnName(fn);
        EXPECT_EQ(inverseMap(fn, param, width, y), x) << mapFnName(fn) << " width " << width;
      }
    }
  }
  EXPECT_EQ(applyMap(MapFn::ZigZag, 0, 8, 0xff), 1u); // -1 -> 1
  EXPECT_EQ(applyMap(MapFn::ZigZag, 0, 8, 1), 2u);
  EXPECT_EQ(applyMap(MapFn::Gray, 0, 8, 2), 3u);
  EXPECT_EQ(applyMap(MapFn::BitRev, 0, 4, 1), 8u);
  EXPECT_EQ(applyMap(MapFn::Rotl, 1, 4, 0b1001), 0b0011u);
}

TEST(Interpreter, MatchesReferenceEvaluationAcrossChunkBoundaries) {
  std::mt19937_64 rng(11);
  Bytes bytes;
  auto lit = [&](unsigned width, size_t n) {
    auto words = randomWords(rng, n, width);
    uint64_t at = bytes.size();
    Encoding enc = rng() % 2 ? Encoding::Raw : Encoding::Bitpack;
    encodeLit(enc, words, width, bytes);
    return Lit::make(StreamType{width, n}, enc, ByteRange{at, bytes.size() - at});
  };
  const size_t big = Interpreter::kChunkWords * 2 + 17;
  std::vector<ExprPtr> programs;
  programs.push_back(Map::make(MapFn::Add, 77, lit(12, big)));
  programs.push_back(Scan::make(ScanOp::Add, 5, lit(16, big)));
  programs.push_back(Scan::make(ScanOp::Xor, 0x3ff, lit(10, big)));
  programs.push_back(Repeat::make(3, lit(8, Interpreter::kChunkWords + 5)));
  programs.push_back(Repeat::make(1000, lit(32, 7)));
  std::vector<ExprPtr> parts;
  parts.push_back(lit(16, 3));
  parts.push_back(Const::make(StreamType{16, big}, 0xbeef));
  parts.push_back(lit(16, 9000));
  programs.push_back(Concat::make(std::move(parts)));
  std::vector<MergeField> fields;
  fields.push_back({"sign", lit(1, big)});
  fields.push_back({"exp", lit(8, big)});
  fields.push_back({"mant", lit(23, big)});
  programs.push_back(Merge::make(std::move(fields)));

  Payload payload = Payload::fromBytes(bytes);
  for (const auto &program : programs) {
    auto words = evaluateWords(*program, payload);
    ASSERT_TRUE(words) << words.error().message;
    EXPECT_EQ(*words, referenceEvaluate(*program, payload)) << nodeKindName(program->kind);
  }
}

namespace {

/// Hands out in-place room at an odd address (as a sink whose buffer is not word-aligned would).
class OddAddressSink final : public ByteSink {
public:
  explicit OddAddressSink(Bytes &out) : out_(out) {}
  Result<void> write(const uint8_t *data, size_t size) override {
    out_.insert(out_.end(), data, data + size);
    return {};
  }
  uint8_t *reserve(size_t size) override {
    room_.resize(size + 1);
    return room_.data() + 1;
  }
  Result<void> commit(size_t size) override { return write(room_.data() + 1, size); }

private:
  Bytes &out_;
  Bytes room_;
};

} // namespace

TEST(Interpreter, MergesOfByteSizedFieldsMatchTheReference) {
  // Merges whose literal fields are all at most 8 bits wide are decoded field by field into
  // bytes and combined in one pass; 1 to 4 literals, constants between them, 8/16/32-bit words,
  // over more than two of the kernel's chunks and from any word on, into any sink.
  std::mt19937_64 rng(23);
  const size_t n = 40000;
  const std::vector<std::vector<unsigned>> layouts = {
      {8},          {1, 7},          {1, 8, 7},       {1, 5, 10},   {4, 4, 4, 4},
      {1, 4, 3},    {3, 6, 7, 8, 8}, {8, 8, 8, 8},    {2, 6, 6, 2}, {8, 8},
      {1, 8, 23},   {5, 11},         {7, 2, 7, 2, 7, 3, 4}};
  for (size_t li = 0; li < layouts.size(); ++li) {
    Bytes bytes;
    std::vector<MergeField> fields;
    unsigned total = 0;
    for (size_t k = 0; k < layouts[li].size(); ++k) {
      const unsigned w = layouts[li][k];
      total += w;
      if ((li + k) % 4 == 3) { // a constant field
        fields.push_back({"", Const::make(StreamType{w, n}, rng() & widthMask(w))});
        continue;
      }
      auto words = randomWords(rng, n, w);
      for (size_t i = 0; i < n; i += 1 + rng() % 3) words[i] &= 1; // skewed, for the entropy coders
      const Encoding encodings[] = {Encoding::Bitpack, Encoding::Rans, Encoding::Huffman, Encoding::Raw};
      Encoding enc = encodings[(li + k) % 4];
      uint64_t at = bytes.size();
      if (w > maxEncodingWidth(enc) || !encodeLit(enc, words, w, bytes)) {
        bytes.resize(at);
        enc = Encoding::Bitpack;
        ASSERT_TRUE(encodeLit(enc, words, w, bytes));
      }
      fields.push_back({"", Lit::make(StreamType{w, n}, enc, ByteRange{at, bytes.size() - at})});
    }
    Region region;
    region.program = Merge::make(std::move(fields));
    const unsigned cb = containerBytes(total);
    region.bytes = ByteRange{0, n * cb};
    Payload payload = Payload::fromBytes(bytes);
    ASSERT_TRUE(validateForExecution(*region.program, payload));
    auto want = referenceEvaluate(*region.program, payload);
    Interpreter interpreter;
    for (int trial = 0; trial < 3; ++trial) {
      uint64_t first = trial == 0 ? 0 : rng() % n, count = trial == 0 ? n : rng() % (n - first + 1);
      Bytes viaVector, viaOdd;
      VectorSink vectorSink(viaVector);
      OddAddressSink oddSink(viaOdd);
      ASSERT_TRUE(interpreter.decodeWords(region, payload, first, count, vectorSink));
      ASSERT_TRUE(interpreter.decodeWords(region, payload, first, count, oddSink));
      Bytes expected;
      for (uint64_t i = first; i < first + count; ++i)
        for (unsigned b = 0; b < cb; ++b) expected.push_back(static_cast<uint8_t>(want[i] >> (8 * b)));
      EXPECT_EQ(viaVector, expected) << "layout " << li << ", words " << first << "+" << count;
      EXPECT_EQ(viaOdd, expected) << "layout " << li << ", words " << first << "+" << count;
    }
  }
}

// A concat, or a repeat of long periods, is decoded as ranges of its parts (or passes), each of
// which may run in the fused kernel: ranges that start and end inside parts, cross part and
// pass boundaries, and skip empty parts.
TEST(Interpreter, ConcatsAndLongRepeatsOfMergesDecodeByRanges) {
  std::mt19937_64 rng(41);
  Bytes bytes;
  auto merge = [&](uint64_t n) { // a BF16-like field merge: sign, huffman exponent, mantissa
    std::vector<MergeField> fields;
    for (auto [w, enc] : {std::pair{1u, Encoding::Bitpack}, {8u, Encoding::Huffman}, {7u, Encoding::Bitpack}}) {
      auto words = randomWords(rng, n, w);
      for (size_t i = 0; i < n; i += 1 + rng() % 3) words[i] &= 3; // skewed, for the entropy coder
      const uint64_t at = bytes.size();
      if (n == 0) enc = Encoding::Bitpack; // nothing to model
      EXPECT_TRUE(encodeLit(enc, words, w, bytes));
      fields.push_back({"", Lit::make(StreamType{w, n}, enc, ByteRange{at, bytes.size() - at})});
    }
    return Merge::make(std::move(fields));
  };
  std::vector<ExprPtr> programs;
  {
    std::vector<ExprPtr> parts;
    parts.push_back(merge(5000));
    parts.push_back(merge(0));
    parts.push_back(merge(70001));
    parts.push_back(Const::make(StreamType{16, 3}, 0x3f80));
    parts.push_back(merge(4097));
    programs.push_back(Concat::make(std::move(parts)));
  }
  programs.push_back(Repeat::make(3, merge(4096)));  // passes decoded as ranges
  programs.push_back(Repeat::make(5, merge(4095)));  // too short a period: streamed
  programs.push_back(Repeat::make(2, merge(10007))); // a pass that is not a multiple of 8
  for (size_t p = 0; p < programs.size(); ++p) {
    const StreamType t = streamTypeOf(*programs[p]);
    Region region;
    region.program = std::move(programs[p]);
    region.bytes = ByteRange{0, t.length * 2};
    Payload payload = Payload::fromBytes(bytes);
    ASSERT_TRUE(validateForExecution(*region.program, payload));
    auto want = referenceEvaluate(*region.program, payload);
    Interpreter interpreter;
    for (int trial = 0; trial < 6; ++trial) {
      const uint64_t first = trial == 0 ? 0 : rng() % t.length;
      const uint64_t count = trial == 0 ? t.length : rng() % (t.length - first + 1);
      Bytes got;
      VectorSink sink(got);
      ASSERT_TRUE(interpreter.decodeWords(region, payload, first, count, sink));
      Bytes expected;
      for (uint64_t i = first; i < first + count; ++i)
        for (unsigned b = 0; b < 2; ++b) expected.push_back(static_cast<uint8_t>(want[i] >> (8 * b)));
      EXPECT_EQ(got, expected) << "program " << p << ", words " << first << "+" << count;
    }
  }
}

TEST(Interpreter, ByteFieldsAcrossEntropyBlockBoundaries) {
  // An entropy-coded field is read in place from its decoded blocks; a chunk of the merge that
  // spans two decoded pieces (rans decodes blocks in pairs) is copied instead. BF16-like fields, with
  // the exponent in rans blocks of 2^20 words and the mantissa in huffman blocks.
  std::mt19937_64 rng(29);
  const size_t n = (size_t{3} << 20) + 5000;
  Bytes bytes;
  std::vector<MergeField> fields;
  const unsigned widths[] = {1, 8, 7};
  const Encoding encodings[] = {Encoding::Bitpack, Encoding::Rans, Encoding::Huffman};
  for (int k = 0; k < 3; ++k) {
    auto words = randomWords(rng, n, widths[k]);
    for (size_t i = 0; i < n; i += 1 + rng() % 3) words[i] &= 3; // skewed
    uint64_t at = bytes.size();
    ASSERT_TRUE(encodeLit(encodings[k], words, widths[k], bytes));
    fields.push_back({"", Lit::make(StreamType{widths[k], n}, encodings[k], ByteRange{at, bytes.size() - at})});
  }
  Region region;
  region.program = Merge::make(std::move(fields));
  region.bytes = ByteRange{0, n * 2};
  Payload payload = Payload::fromBytes(bytes);
  ASSERT_TRUE(validateForExecution(*region.program, payload));
  auto want = referenceEvaluate(*region.program, payload);
  Interpreter interpreter;
  const uint64_t block = uint64_t{1} << 20;
  const std::pair<uint64_t, uint64_t> ranges[] = {
      {0, n}, {block - 7, 40000}, {1000003, 100000}, {2 * block - 16384, 16385}, {100, 2 * block},
      {3 * block - 1, 5001}};
  for (auto [first, count] : ranges) {
    Bytes got;
    VectorSink sink(got);
    ASSERT_TRUE(interpreter.decodeWords(region, payload, first, count, sink));
    ASSERT_EQ(got.size(), count * 2);
    bool same = true;
    for (uint64_t i = 0; i < count && same; ++i)
      same = (got[2 * i] | got[2 * i + 1] << 8) == static_cast<int>(want[first + i]);
    EXPECT_TRUE(same) << "words " << first << "+" << count;
  }
}

TEST(Interpreter, StoresWordsLittleEndianAndRefusesHoles) {
  auto e = Lit::make(StreamType{16, 2}, std::vector<uint64_t>{0x1234, 0xabcd});
  auto bytes = evaluate(*e, Payload());
  ASSERT_TRUE(bytes);
  EXPECT_EQ(*bytes, (Bytes{0x34, 0x12, 0xcd, 0xab}));
  auto hole = Hole::make(StreamType{8, 4});
  auto refused = evaluate(*hole, Payload());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("hole"), std::string::npos);
}

