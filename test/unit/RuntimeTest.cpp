// Unit tests for runtime/: literal codecs, the interpreter against a direct reference
// evaluation, safetensors layout parsing, and the archive's corruption checks.
#include "runtime/containers/Archive.h"
#include "runtime/containers/Checksum.h"
#include "runtime/execution/Interpreter.h"
#include "runtime/codecs/LitDecode.h"
#include "runtime/codecs/LitEncode.h"
#include "runtime/containers/Safetensors.h"
#include "runtime/common/WordOps.h"
#include "runtime/containers/Xxh3Variants.h"

#include <xxhash.h>

#include "ReferenceEval.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

namespace {
Bytes safetensors(const std::string &json, size_t dataBytes) {
  Bytes file;
  for (int i = 0; i < 8; ++i) file.push_back(static_cast<uint8_t>(json.size() >> (8 * i)));
  for (char ch : json) file.push_back(static_cast<uint8_t>(ch));
  file.resize(file.size() + dataBytes, 0x5a);
  return file;
}
} // namespace

TEST(Safetensors, ParsesLayoutSortedByOffset) {
  auto file = safetensors(R"({"__metadata__":{"format":"pt"},)"
                          R"("b":{"dtype":"BF16","shape":[2,2],"data_offsets":[4,12]},)"
                          R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                          12);
  auto layout = parseSafetensors(file);
  ASSERT_TRUE(layout) << layout.error().message;
  ASSERT_EQ(layout->tensors.size(), 2u);
  EXPECT_EQ(layout->tensors[0].name, "a");
  EXPECT_EQ(layout->tensors[1].name, "b");
  EXPECT_EQ(layout->tensors[1].dtype, DType::BF16);
  EXPECT_EQ(layout->tensors[1].begin, layout->headerSize + 4);
}

// Each of the format's rules, on both sides: what it allows is parsed as tensors, what it
// forbids is refused with the reason (and then compressed as bytes by the synthesizer).
TEST(Safetensors, AcceptsWhatTheFormatAllows) {
  // An empty tensor at the start of another (sorting [4,4] after [4,8] once made this an overlap).
  auto empty = parseSafetensors(safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                            R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                                            R"("z":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]}})",
                                            8));
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(empty->tensors.size(), 3u);
  // Any header length (no 8-byte alignment), trailing spaces, any key order, string metadata.
  auto padded = parseSafetensors(safetensors(R"({"__metadata__":{"format":"pt","x":""},"a":{"shape":[3],)"
                                             R"("data_offsets":[0,3],"dtype":"U8"}}   )",
                                             3));
  ASSERT_TRUE(padded) << padded.error().message;
  // No tensors at all, and a scalar (shape []) of one element.
  EXPECT_TRUE(parseSafetensors(safetensors("{}", 0)));
  EXPECT_TRUE(parseSafetensors(safetensors(R"({"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]}})", 8)));
  // Dtypes the format defines without DSL words are valid; their bytes are kept apart.
  auto opaque = parseSafetensors(safetensors(R"({"f4":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]},)"
                                             R"("e":{"dtype":"F8_E8M0","shape":[2],"data_offsets":[3,5]},)"
                                             R"("a":{"dtype":"BF16","shape":[1],"data_offsets":[5,7]}})",
                                             7));
  ASSERT_TRUE(opaque) << opaque.error().message;
  ASSERT_EQ(opaque->tensors.size(), 1u);
  EXPECT_EQ(opaque->tensors[0].name, "a");
  ASSERT_EQ(opaque->opaque.size(), 2u);
  EXPECT_EQ(opaque->opaque[0].name, "f4");
}

TEST(Safetensors, RefusesWhatTheFormatForbids) {
  auto reason = [](const Bytes &file) {
    auto layout = parseSafetensors(file);
    return layout ? std::string("accepted") : layout.error().message;
  };
  Bytes tooLong(8, 0);
  tooLong[3] = 0x10; // 2^28 > 100,000,000
  EXPECT_EQ(reason(tooLong), "header length 268435456 is more than the format allows (100000000)");
  EXPECT_EQ(reason(safetensors(R"( {"a":1})", 0)), "header does not start with '{'");
  EXPECT_EQ(reason(safetensors(std::string("{\"") + char(0xff) + "\":{}}", 0)), "header is not UTF-8");
  EXPECT_EQ(reason(safetensors(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                               R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                               2)),
            "header names \"a\" twice");
  EXPECT_EQ(reason(safetensors(R"({"__metadata__":{"n":1}})", 0)), "__metadata__ value \"n\" is not a string");
  EXPECT_EQ(reason(safetensors(R"({"__metadata__":[]})", 0)), "__metadata__ is not an object");
  EXPECT_EQ(reason(safetensors(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", 2)),
            "1 bytes before tensor a belong to no tensor");
  EXPECT_EQ(reason(safetensors(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 2)),
            "1 bytes after the last tensor belong to no tensor");
  EXPECT_EQ(reason(safetensors(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2)),
            "tensor a has 2 bytes, which does not match its shape and dtype"); // 12 bits
  EXPECT_EQ(reason(safetensors(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                               R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                               6)),
            "tensors a and b overlap");
  EXPECT_EQ(reason(safetensors(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", 1)),
            "tensor a has a shape that is not unsigned integers");
}

TEST(Safetensors, RejectsInconsistentHeaders) {
  EXPECT_FALSE(parseSafetensors(Bytes{1, 2, 3}));
  EXPECT_FALSE(parseSafetensors(safetensors("not json", 0)));
  EXPECT_FALSE(parseSafetensors(safetensors(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", 1)));
  auto wrongSize = parseSafetensors(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8));
  ASSERT_FALSE(wrongSize);
  EXPECT_EQ(wrongSize.error().message, "tensor a has 4 bytes, which does not match its shape and dtype");
  EXPECT_FALSE(parseSafetensors(safetensors(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                                            R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                                            6)));
  Bytes huge(8, 0xff); // header length far beyond the file
  EXPECT_FALSE(parseSafetensors(huge));
}

namespace {

ArchiveMember fakeMember(std::string path, std::string text, uint64_t sourceSize) {
  ArchiveMember m;
  m.path = std::move(path);
  m.programText = std::move(text);
  m.sourceSize = sourceSize;
  m.sourceXxh64 = 0x1122334455667788 ^ sourceSize;
  m.digests.push_back(0xabcdef);
  return m;
}

/// An archive of members with the given payloads (program texts are not parsed by the reader).
Bytes buildArchive(std::vector<ArchiveMember> members, const std::vector<Bytes> &payloads, bool directory) {
  Bytes out;
  VectorPositionalSink sink(out);
  ArchiveWriter writer(sink);
  for (size_t i = 0; i < members.size(); ++i) members[i].payloadRange = *writer.appendPayload(payloads[i]);
  EXPECT_TRUE(writer.finish(members, directory));
  return out;
}

std::string readFailure(const Bytes &archive, bool whole = false) {
  auto r = readArchive(MappedFile::fromBytes(archive), "a.brv", ArchiveReadOptions{.verifyWholeFile = whole});
  return r ? std::string("accepted") : r.error().message;
}

} // namespace

TEST(Archive, RoundTripsMembersIndexAndPayloads) {
  std::vector<Bytes> payloads{Bytes(1000, 0x42), Bytes{}, Bytes(7, 0x07)};
  Bytes archive = buildArchive({fakeMember("a.safetensors", "brevis 1\n# a\n", 12345), fakeMember("config.json", "x", 10),
                                fakeMember("sub/b.safetensors", "yz", 99)},
                               payloads, /*directory=*/true);
  auto back = readArchive(MappedFile::fromBytes(archive), "a.brv", ArchiveReadOptions{.verifyWholeFile = true});
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(back->directory);
  ASSERT_EQ(back->members.size(), 3u);
  EXPECT_EQ(back->members[0].programText, "brevis 1\n# a\n");
  EXPECT_EQ(back->members[2].path, "sub/b.safetensors");
  EXPECT_EQ(back->members[2].sourceSize, 99u);
  EXPECT_EQ(back->members[1].digests.at(0), 0xabcdefu);
  for (size_t i = 0; i < payloads.size(); ++i) {
    const Payload &p = back->members[i].payload;
    EXPECT_EQ(Bytes(p.data(), p.data() + p.size()), payloads[i]);
  }
  EXPECT_EQ(back->fileSize, archive.size());
}

TEST(Archive, DetectsDamage) {
  Bytes archive = buildArchive({fakeMember("m.safetensors", "brevis 1\n", 5000)}, {Bytes(1000, 0x42)}, false);
  using ::testing::HasSubstr;
  EXPECT_EQ(readFailure(archive, true), "accepted");
  EXPECT_THAT(readFailure(Bytes{}), HasSubstr("bad magic"));
  EXPECT_THAT(readFailure(Bytes(archive.begin(), archive.begin() + 10)), HasSubstr("is truncated"));
  for (size_t cut : {kArchiveHeaderSize, kArchiveHeaderSize + 500, archive.size() - 1})
    EXPECT_THAT(readFailure(Bytes(archive.begin(), archive.begin() + static_cast<long>(cut))),
                HasSubstr("truncated"))
        << cut;
  Bytes appended = archive;
  appended.push_back(0);
  EXPECT_THAT(readFailure(appended), HasSubstr("truncated or corrupt"));
  auto flip = [&](size_t pos, bool whole = false) {
    Bytes flipped = archive;
    flipped[pos] ^= 0x10;
    return readFailure(flipped, whole);
  };
  EXPECT_THAT(flip(8), HasSubstr(fmt::format("archive format version {}", kArchiveVersion ^ 0x10)));
  EXPECT_THAT(flip(12), HasSubstr("flags 0x10"));
  // Header fields, the metadata after the payload, the metadata checksum itself.
  for (size_t pos : {size_t{20}, size_t{66}, kArchiveHeaderSize + 1000 + 16 + 3, archive.size() - 20})
    EXPECT_THAT(flip(pos), ::testing::AnyOf(HasSubstr("checksum of its header and index"), HasSubstr("truncated or corrupt")))
        << "flip at " << pos;
  // The payload is covered by the archive checksum (read by verify) and by the region digests.
  EXPECT_EQ(flip(kArchiveHeaderSize + 10), "accepted");
  EXPECT_THAT(flip(kArchiveHeaderSize + 10, true), HasSubstr("archive checksum mismatch"));
  EXPECT_THAT(flip(archive.size() - 1, true), HasSubstr("archive checksum mismatch"));
  EXPECT_THAT(flip(kArchiveHeaderSize + 1000 + 2), HasSubstr("padding after the payload"));
  EXPECT_EQ(readFailure(Bytes(100, 0)), "a.brv is not a brevis archive (bad magic)");
}

TEST(Archive, RejectsUnusableMemberPaths) {
  auto withPaths = [](std::vector<std::string> paths) {
    std::vector<ArchiveMember> members;
    std::vector<Bytes> payloads;
    for (auto &p : paths) {
      members.push_back(fakeMember(p, "t", 1));
      payloads.push_back(Bytes(3, 1));
    }
    return readFailure(buildArchive(members, payloads, true));
  };
  using ::testing::HasSubstr;
  EXPECT_EQ(withPaths({"a", "b/c", "b/d"}), "accepted");
  for (const char *bad : {"/abs", "../up", "a/../b", "a//b", "./a", "a/", ""})
    EXPECT_THAT(withPaths({bad}), HasSubstr("unusable path")) << bad;
  EXPECT_THAT(withPaths({"a", "a"}), HasSubstr("appears twice"));
  EXPECT_THAT(withPaths({"a", "a/b"}), HasSubstr("both a file and a directory"));
  // A single-file archive holds exactly one member.
  std::vector<ArchiveMember> two{fakeMember("a", "t", 1), fakeMember("b", "t", 1)};
  EXPECT_THAT(readFailure(buildArchive(two, {Bytes(3, 1), Bytes(3, 1)}, false)), HasSubstr("several members"));
}

TEST(Checksum, RegionDigestIsTheHashOfPieceHashes) {
  Bytes data(kDigestPieceBytes + 1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + (i >> 13));
  uint64_t pieces[2] = {xxh3(ByteSpan(data).first(kDigestPieceBytes)), xxh3(ByteSpan(data).subspan(kDigestPieceBytes))};
  EXPECT_EQ(regionDigest(data), combinePieceHashes(pieces));
  EXPECT_NE(regionDigest(data), xxh3(data));
  data.back() ^= 1;
  EXPECT_NE(regionDigest(data), combinePieceHashes(pieces));
  EXPECT_EQ(regionDigest({}), combinePieceHashes({}));
}

TEST(Checksum, StreamingMatchesOneShot) {
  Bytes data(10000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31);
  Xxh64Stream s;
  s.update(data.data(), 3000);
  s.update(data.data() + 3000, 7000);
  EXPECT_EQ(s.digest(), xxh64(data));
  EXPECT_NE(xxh64(ByteSpan(data).first(9999)), xxh64(data));
}

TEST(Checksum, Xxh3VariantsMatchTheLibraryAtEverySplit) {
  // The checksums in archives are XXH3; decoding hashes with AVX-512 or AVX2 builds of it where
  // the CPU has them. Each must give the library's hash for any length and any way the bytes
  // arrive (the stream's internal buffer and stripe boundaries are at 64, 256 and 1024 bytes).
  std::mt19937_64 rng(41);
  Bytes data(70000);
  for (auto &b : data) b = static_cast<uint8_t>(rng());
  struct Variant {
    const char *name;
    bool available;
    void (*update)(void *, const void *, size_t);
    uint64_t (*digest)(const void *);
    uint64_t (*oneShot)(const void *, size_t);
  };
  const Variant variants[] = {
      {"avx2", __builtin_cpu_supports("avx2") != 0, detail::xxh3UpdateAvx2, detail::xxh3DigestAvx2,
       detail::xxh3OneShotAvx2},
      {"avx512", __builtin_cpu_supports("avx512f") != 0, detail::xxh3UpdateAvx512, detail::xxh3DigestAvx512,
       detail::xxh3OneShotAvx512}};
  const size_t lengths[] = {0, 1, 3, 16, 17, 128, 129, 240, 241, 1024, 1025, 4096, 65536 + 13, 70000};
  size_t checked = 0;
  for (const Variant &v : variants) {
    if (!v.available) continue;
    for (size_t n : lengths) {
      const uint64_t want = XXH3_64bits(data.data(), n);
      EXPECT_EQ(v.oneShot(data.data(), n), want) << v.name << ", " << n << " bytes";
      for (int trial = 0; trial < 3; ++trial) {
        XXH3_state_t *state = XXH3_createState();
        XXH3_64bits_reset(state);
        for (size_t at = 0; at < n;) {
          size_t take = std::min<size_t>(n - at, 1 + rng() % (trial == 0 ? 7 : trial == 1 ? 300 : 20000));
          v.update(state, data.data() + at, take);
          at += take;
        }
        EXPECT_EQ(v.digest(state), want) << v.name << ", " << n << " bytes, trial " << trial;
        XXH3_freeState(state);
      }
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "neither AVX2 nor AVX-512 on this CPU";
  // And what the runtime picked agrees too.
  Xxh3Stream stream;
  stream.update(data.data(), 12345);
  stream.update(data.data() + 12345, data.size() - 12345);
  EXPECT_EQ(stream.digest(), XXH3_64bits(data.data(), data.size()));
  EXPECT_EQ(xxh3(data), XXH3_64bits(data.data(), data.size()));
}
