// The JIT decoder against the interpreter and against words computed here directly: random
// programs of every operator, every literal encoding and width, nested merges, chunk boundaries,
// ranges that start mid-literal, shapes and payload specialization, and the cache of compiled
// code kept across sessions.
#include "codegen/CachedCodeDecoder.h"
#include "codegen/JitDecoder.h"
#include "codegen/ObjectLoader.h"
#include "codegen/ShapeCodeCache.h"
#include "codegen/ShapeKey.h"
#include "lang/Printer.h"
#include "runtime/codecs/LitEncode.h"
#include "runtime/codecs/zstd/ZstdCodec.h"
#include "runtime/execution/Interpreter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "RandomPrograms.h"
#include "WordShapes.h"

namespace brevis {
namespace {

/// A program together with the words it must produce.
struct Built {
  ExprPtr expr;
  std::vector<uint64_t> words;
  unsigned width = 0;
};

/// Records what it receives, and the largest single write (chunking must bound it). Its buffer
/// for writing in place (reserve) is aligned, or with `oddAddresses` at an odd address, as a
/// writer's buffer is after a region of odd size.
class RecordingSink final : public ByteSink {
public:
  explicit RecordingSink(bool oddAddresses = false) : skew_(oddAddresses ? 1 : 0) {}
  Result<void> write(const uint8_t *data, size_t size) override {
    bytes.insert(bytes.end(), data, data + size);
    largestWrite = std::max(largestWrite, size);
    return {};
  }
  uint8_t *reserve(size_t size) override {
    room_.resize(size + skew_);
    return room_.data() + skew_;
  }
  Result<void> commit(size_t size) override { return write(room_.data() + skew_, size); }
  Bytes bytes;
  size_t largestWrite = 0;

private:
  size_t skew_;
  Bytes room_;
};

Bytes storeWords(const std::vector<uint64_t> &words, unsigned width) {
  Bytes out;
  const unsigned cb = containerBytes(width);
  for (uint64_t w : words)
    for (unsigned k = 0; k < cb; ++k) out.push_back(static_cast<uint8_t>(w >> (8 * k)));
  return out;
}

/// Builds random programs and the payload their literals live in.
class ProgramBuilder {
public:
  explicit ProgramBuilder(uint64_t seed) : rng_(seed) {}

  Bytes &payload() { return payload_; }

  /// Words below 2^bits, with the top bit used once so that bitpack really packs `bits` bits.
  std::vector<uint64_t> randomWords(uint64_t n, unsigned bits) {
    std::vector<uint64_t> words(n);
    if (bits == 0) return words;
    // Runs of small values alongside uniform ones, as real tensors have.
    for (auto &w : words) w = (rng_() % 4 == 0 ? rng_() % 3 : rng_()) & widthMask(bits);
    if (n > 0) words[rng_() % n] |= uint64_t{1} << (bits - 1);
    return words;
  }

  Built lit(unsigned width, uint64_t n, Encoding encoding, unsigned bits) {
    std::vector<uint64_t> words = randomWords(n, bits);
    ByteRange r{payload_.size(), 0};
    encodeLit(encoding, words, width, payload_);
    r.size = payload_.size() - r.offset;
    return {Lit::make(StreamType{width, n}, encoding, r), std::move(words), width};
  }

  Built inlineLit(unsigned width, uint64_t n) {
    std::vector<uint64_t> words = randomWords(n, width);
    return {Lit::make(StreamType{width, n}, words), words, width};
  }

  Built constant(unsigned width, uint64_t n) {
    uint64_t v = rng_() & widthMask(width);
    return {Const::make(StreamType{width, n}, v), std::vector<uint64_t>(n, v), width};
  }

  static Built merge(std::vector<Built> fields) {
    Built out;
    std::vector<MergeField> mf;
    out.words.assign(fields.front().words.size(), 0);
    for (auto &f : fields) {
      for (size_t i = 0; i < out.words.size(); ++i)
        out.words[i] = (f.width == 64 ? 0 : out.words[i] << f.width) | f.words[i];
      out.width += f.width;
      mf.push_back(MergeField{"", std::move(f.expr)});
    }
    out.expr = Merge::make(std::move(mf));
    return out;
  }

  /// A random supported program of type u<width>[n]: merges nested up to `depth` deep.
  Built random(unsigned width, uint64_t n, int depth) {
    unsigned choice = rng_() % 10;
    if (depth > 0 && width >= 2 && choice < 4) {
      unsigned parts = 2 + rng_() % std::min(3u, width - 1);
      // Cut [0, width) at parts-1 distinct points.
      std::vector<unsigned> cuts;
      while (cuts.size() < parts - 1) {
        unsigned c = 1 + rng_() % (width - 1);
        if (std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
      }
      std::sort(cuts.begin(), cuts.end());
      cuts.push_back(width);
      std::vector<Built> fields;
      unsigned prev = 0;
      for (unsigned c : cuts) {
        fields.push_back(random(c - prev, n, depth - 1));
        prev = c;
      }
      return merge(std::move(fields));
    }
    if (choice < 6) return lit(width, n, Encoding::Raw, rng_() % (width + 1));
    if (choice < 8) return lit(width, n, Encoding::Bitpack, rng_() % (width + 1));
    if (choice < 9 && n <= 5000) return inlineLit(width, n);
    return constant(width, n);
  }

private:
  std::mt19937_64 rng_;
  Bytes payload_;
};

Region makeRegion(Built &b, uint64_t offset = 0) {
  Region r;
  r.kind = RegionKind::Bytes;
  r.bytes = ByteRange{offset, b.words.size() * containerBytes(b.width)};
  r.program = std::move(b.expr);
  return r;
}

std::unique_ptr<JitDecoder> makeJit(std::vector<std::string> *notices = nullptr) {
  auto jit = JitDecoder::create([notices](const std::string &s) {
    if (notices) notices->push_back(s);
  });
  EXPECT_TRUE(jit) << (jit ? "" : jit.error().message);
  return jit ? std::move(*jit) : nullptr;
}

/// Decodes `region` with both decoders and checks both against `expected`.
void expectSameBytes(RegionDecoder &jit, const Region &region, const Payload &payload, const Bytes &expected,
                     const std::string &what) {
  ASSERT_TRUE(validateForExecution(*region.program, payload)) << what;
  Bytes interpreted;
  VectorSink interpreterSink(interpreted);
  auto ir = Interpreter().decode(region, payload, interpreterSink);
  ASSERT_TRUE(ir) << what << ": " << ir.error().message;
  RecordingSink jitSink;
  auto jr = jit.decode(region, payload, jitSink);
  ASSERT_TRUE(jr) << what << ": " << jr.error().message;
  EXPECT_LE(jitSink.largestWrite, JitDecoder::kChunkBytes) << what;
  ASSERT_EQ(interpreted.size(), expected.size()) << what;
  EXPECT_TRUE(interpreted == expected) << what << ": the interpreter disagrees with the expected words";
  ASSERT_EQ(jitSink.bytes.size(), expected.size()) << what;
  if (jitSink.bytes != expected) {
    auto at = std::mismatch(jitSink.bytes.begin(), jitSink.bytes.end(), expected.begin()).first - jitSink.bytes.begin();
    ADD_FAILURE() << what << ": the JIT's bytes differ first at byte " << at;
  }
}

// Differential test: random well-typed programs of every operator (RandomPrograms.h), nested up
// to 5 deep, at widths 1..64 and lengths 0, 1 and around a chunk, decode to the same bytes
// through the JIT as through the interpreter, whole and from random ranges. One prepared batch
// per round, as a checkpoint is compiled.
TEST(Jit, RandomProgramsOfEveryOperatorMatchTheInterpreter) {
  auto jit = makeJit();
  ASSERT_TRUE(jit);
  const unsigned widths[] = {1, 3, 7, 8, 12, 16, 23, 32, 33, 63, 64};
  constexpr uint64_t kRounds = 4, kProgramsPerRound = 150;
  size_t ranges = 0;
  for (uint64_t round = 0; round < kRounds; ++round) {
    ProgramGenerator gen(1000 + round);
    Checkpoint c;
    uint64_t offset = 0;
    for (uint64_t i = 0; i < kProgramsPerRound; ++i) {
      const uint64_t seed = round * kProgramsPerRound + i;
      const unsigned width = widths[seed % std::size(widths)];
      const uint64_t chunkWords = JitDecoder::kChunkBytes / containerBytes(width);
      const uint64_t lengths[] = {0, 1, 2, 9, chunkWords - 1, chunkWords + 1, 2 * chunkWords + 3};
      const uint64_t n = seed % 3 == 0 ? lengths[seed / 3 % std::size(lengths)] : 1 + (seed * 7919) % 9000;
      Region r;
      r.kind = RegionKind::Bytes;
      r.program = gen.make(StreamType{width, n}, 1 + static_cast<unsigned>(seed % 5));
      r.bytes = ByteRange{offset, n * containerBytes(width)};
      offset += r.bytes.size;
      c.regions.push_back(std::move(r));
    }
    Payload payload = Payload::fromBytes(gen.payload());
    auto prepared = jit->prepare(c, payload);
    ASSERT_TRUE(prepared) << prepared.error().message;
    std::mt19937_64 rng(round);
    for (size_t i = 0; i < c.regions.size(); ++i) {
      const Region &region = c.regions[i];
      const std::string what = "round " + std::to_string(round) + ", program " + std::to_string(i) + ": " +
                               printExpr(*region.program).substr(0, 2000);
      ASSERT_TRUE(validateForExecution(*region.program, payload)) << what;
      Bytes expected;
      VectorSink interpreterSink(expected);
      ASSERT_TRUE(Interpreter().decode(region, payload, interpreterSink)) << what;
      for (bool odd : {false, true}) {
        RecordingSink whole(odd);
        auto done = jit->decode(region, payload, whole);
        ASSERT_TRUE(done) << what << ": " << done.error().message;
        EXPECT_LE(whole.largestWrite, JitDecoder::kChunkBytes) << what;
        ASSERT_TRUE(whole.bytes == expected) << what << (odd ? ", into a buffer at an odd address" : "");
      }
      const StreamType t = streamTypeOf(*region.program);
      const unsigned cb = containerBytes(t.width);
      for (int k = 0; k < 3 && t.length > 0; ++k, ++ranges) {
        const uint64_t first = rng() % t.length, count = rng() % (t.length - first + 1);
        RecordingSink part;
        auto partDone = jit->decodeWords(region, payload, first, count, part);
        ASSERT_TRUE(partDone) << what << ": " << partDone.error().message;
        ASSERT_TRUE(std::equal(part.bytes.begin(), part.bytes.end(), expected.begin() + static_cast<long>(first * cb)) &&
                    part.bytes.size() == count * cb)
            << what << ", words " << first << "+" << count;
      }
    }
  }
  EXPECT_GT(ranges, kRounds * kProgramsPerRound);
}

// Every literal width 1..64 in both payload encodings, at the packed bit counts that matter for
// bitpack, padded by a constant (above or below) to a region width. All in one checkpoint.
TEST(Jit, EveryLiteralWidthAndEncoding) {
  ProgramBuilder pb(1);
  std::vector<Built> built;
  for (unsigned w = 1; w <= 64; ++w) {
    const unsigned rootWidth = 8 * containerBytes(w);
    for (Encoding enc : {Encoding::Raw, Encoding::Bitpack}) {
      // For bitpack, the packed bit counts the generated code distinguishes: none, whole power-of-two
      // words, other multiples of 8, fits a 64-bit load with its shift (<= 57), needs 128 bits.
      std::vector<unsigned> bitCounts = {w, w - 1, w / 2};
      if (enc == Encoding::Bitpack)
        for (unsigned b : {0, 1, 2, 3, 5, 7, 8, 9, 13, 16, 17, 24, 31, 32, 33, 40, 48, 55, 56, 57, 58, 59, 63, 64})
          if (b <= w) bitCounts.push_back(b);
      std::sort(bitCounts.begin(), bitCounts.end());
      bitCounts.erase(std::unique(bitCounts.begin(), bitCounts.end()), bitCounts.end());
      for (unsigned bits : bitCounts) {
        const uint64_t n = std::vector<uint64_t>{1, 2, 7, 9, 64, 333}[(w + bits) % 6];
        Built l = pb.lit(w, n, enc, bits);
        if (w == rootWidth) {
          built.push_back(std::move(l));
          continue;
        }
        Built pad = pb.constant(rootWidth - w, n);
        std::vector<Built> fields;
        if (bits % 2) {
          fields.push_back(std::move(pad));
          fields.push_back(std::move(l));
        } else {
          fields.push_back(std::move(l));
          fields.push_back(std::move(pad));
        }
        built.push_back(ProgramBuilder::merge(std::move(fields)));
      }
    }
  }
  Checkpoint c;
  std::vector<Bytes> expected;
  uint64_t offset = 0;
  for (auto &b : built) {
    expected.push_back(storeWords(b.words, b.width));
    c.regions.push_back(makeRegion(b, offset));
    offset += c.regions.back().bytes.size;
  }
  Payload payload = Payload::fromBytes(pb.payload());
  std::vector<std::string> notices;
  auto jit = makeJit(&notices);
  ASSERT_TRUE(jit);
  auto prepared = jit->prepare(c, payload);
  ASSERT_TRUE(prepared) << prepared.error().message;
  for (size_t i = 0; i < c.regions.size(); ++i)
    expectSameBytes(*jit, c.regions[i], payload, expected[i], "region " + std::to_string(i));
  EXPECT_EQ(jit->compiledRegions(), c.regions.size());
  EXPECT_TRUE(notices.empty());
}

// Literals that only a cursor decodes reach the generated code through chunk buffers: whole
// regions and ranges that start mid-literal (the cursor skips, jumping blocks), alone and as
// merge fields, at lengths around the chunk size and past a zstd block.
TEST(Jit, CursorDecodedLiteralsMatchInWholeRegionsAndRanges) {
  std::mt19937_64 rng(99);
  auto jit = makeJit();
  ASSERT_TRUE(jit);
  const uint64_t chunkWords = JitDecoder::kChunkBytes;
  for (Encoding enc : {Encoding::Huffman, Encoding::Rans, Encoding::Zstd, Encoding::RansO1}) {
    for (unsigned width : {1u, 5u, 8u}) {
      for (uint64_t n : {uint64_t{1}, uint64_t{1000}, chunkWords + 1, 2 * chunkWords + 5}) {
        // Repeated phrases with changes, so that zstd codes matches as well as literals.
        std::vector<uint64_t> phrase(50), words;
        for (auto &w : phrase) w = rng() & widthMask(width);
        while (words.size() < n) {
          words.insert(words.end(), phrase.begin(), phrase.end());
          phrase[rng() % phrase.size()] = rng() & widthMask(width);
        }
        words.resize(n);
        Bytes payloadBytes;
        ASSERT_TRUE(encodeLit(enc, words, width, payloadBytes));
        Payload payload = Payload::fromBytes(payloadBytes);
        const std::string what =
            std::string(encodingName(enc)) + " u" + std::to_string(width) + "[" + std::to_string(n) + "]";
        auto lit = [&] { return Lit::make(StreamType{width, n}, enc, ByteRange{0, payloadBytes.size()}); };
        // Alone when it fills bytes; else as the low field of a byte under a constant.
        Built b{lit(), words, width};
        if (width < 8) {
          std::vector<Built> fields;
          fields.push_back(ProgramBuilder(width).constant(8 - width, n));
          fields.push_back(std::move(b));
          b = ProgramBuilder::merge(std::move(fields));
        }
        const Bytes expected = storeWords(b.words, b.width);
        Region region = makeRegion(b);
        expectSameBytes(*jit, region, payload, expected, what);
        for (uint64_t first : {n / 3, n - 1}) {
          RecordingSink sink;
          auto r = jit->decodeWords(region, payload, first, n - first, sink);
          ASSERT_TRUE(r) << what << " from " << first << ": " << r.error().message;
          EXPECT_TRUE(std::equal(sink.bytes.begin(), sink.bytes.end(), expected.begin() + first, expected.end()) &&
                      sink.bytes.size() == n - first)
              << what << " from word " << first;
        }
      }
    }
  }
  // Past a zstd block: the second block's words, from a skip that lands in it.
  std::vector<uint64_t> words = jsonHeaderBytes(kZstdBlockWords + 3000);
  Bytes payloadBytes;
  ASSERT_TRUE(encodeLit(Encoding::Zstd, words, 8, payloadBytes, 1));
  Payload payload = Payload::fromBytes(payloadBytes);
  Built b{Lit::make(StreamType{8, words.size()}, Encoding::Zstd, ByteRange{0, payloadBytes.size()}), words, 8};
  const Bytes expected = storeWords(b.words, 8);
  Region region = makeRegion(b);
  expectSameBytes(*jit, region, payload, expected, "zstd, two blocks");
  RecordingSink sink;
  ASSERT_TRUE(jit->decodeWords(region, payload, kZstdBlockWords + 10, 2000, sink));
  EXPECT_TRUE(std::equal(sink.bytes.begin(), sink.bytes.end(), expected.begin() + kZstdBlockWords + 10));
  EXPECT_EQ(sink.bytes.size(), 2000u);
}

// Random nested programs at every region width and at lengths around the chunk size, compiled
// on demand (no prepare).
TEST(Jit, RandomProgramsMatchInterpreter) {
  auto jit = makeJit();
  ASSERT_TRUE(jit);
  size_t regions = 0;
  for (unsigned width : {8u, 16u, 32u, 64u}) {
    const uint64_t chunkWords = JitDecoder::kChunkBytes / containerBytes(width);
    for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{8}, uint64_t{63}, uint64_t{1000},
                       chunkWords - 1, chunkWords, chunkWords + 1, 2 * chunkWords + 5}) {
      for (uint64_t seed = 0; seed < 2; ++seed) {
        ProgramBuilder pb(width * 1000003 + n * 31 + seed);
        Built b = pb.random(width, n, 3);
        Bytes expected = storeWords(b.words, b.width);
        Region region = makeRegion(b);
        Payload payload = Payload::fromBytes(pb.payload());
        expectSameBytes(*jit, region, payload, expected,
                        "u" + std::to_string(width) + "[" + std::to_string(n) + "] seed " + std::to_string(seed));
        ++regions;
      }
    }
  }
  EXPECT_EQ(jit->compiledRegions(), regions);
}

/// A checkpoint of random programs (ProgramBuilder::random), region i of 8 << (i % 4) bits and
/// 1 + (i * step) % 20000 words, and the bytes each region must decode to.
struct RandomCheckpoint {
  Checkpoint c;
  std::vector<Bytes> expected;
  Payload payload;
};

RandomCheckpoint randomCheckpoint(uint64_t seed, int regions, uint64_t step, int depth) {
  ProgramBuilder pb(seed);
  RandomCheckpoint out;
  uint64_t offset = 0;
  for (int i = 0; i < regions; ++i) {
    Built b = pb.random(8u << (i % 4), 1 + (static_cast<uint64_t>(i) * step) % 20000, depth);
    out.expected.push_back(storeWords(b.words, b.width));
    out.c.regions.push_back(makeRegion(b, offset));
    offset += out.c.regions.back().bytes.size;
  }
  out.payload = Payload::fromBytes(pb.payload());
  return out;
}

// A prepared checkpoint of random programs decodes the same as on demand.
TEST(Jit, PreparedRandomCheckpoint) {
  const RandomCheckpoint r = randomCheckpoint(77, 40, 977, 4);
  auto jit = makeJit();
  ASSERT_TRUE(jit);
  auto prepared = jit->prepare(r.c, r.payload);
  ASSERT_TRUE(prepared) << prepared.error().message;
  for (size_t i = 0; i < r.c.regions.size(); ++i)
    expectSameBytes(*jit, r.c.regions[i], r.payload, r.expected[i], "region " + std::to_string(i));
}

/// `scan add init (lit raw u<width>[n - 1])` and its words.
Built scanProgram(ProgramBuilder &pb, unsigned width, uint64_t n, uint64_t init) {
  Built body = pb.lit(width, n - 1, Encoding::Raw, width);
  Built out;
  out.width = width;
  out.words.push_back(init);
  for (uint64_t w : body.words) out.words.push_back((out.words.back() + w) & widthMask(width));
  out.expr = Scan::make(ScanOp::Add, init, std::move(body.expr));
  return out;
}

// A scan's running word carries across chunks and survives a skip into the middle.
TEST(Jit, ScanCarriesItsWordAcrossChunksAndSkips) {
  ProgramBuilder pb(5);
  Built a = scanProgram(pb, 16, 70000, 3);
  Built b = scanProgram(pb, 8, 10, 0);
  Bytes ea = storeWords(a.words, a.width), eb = storeWords(b.words, b.width);
  Region ra = makeRegion(a), rb = makeRegion(b);
  Payload payload = Payload::fromBytes(pb.payload());
  std::vector<std::string> notices;
  auto jit = makeJit(&notices);
  ASSERT_TRUE(jit);
  expectSameBytes(*jit, ra, payload, ea, "scan u16");
  expectSameBytes(*jit, rb, payload, eb, "scan u8");
  for (uint64_t first : {uint64_t{1}, uint64_t{32768}, uint64_t{65537}, uint64_t{69999}}) {
    RecordingSink sink;
    ASSERT_TRUE(jit->decodeWords(ra, payload, first, 70000 - first, sink));
    EXPECT_TRUE(sink.bytes == Bytes(ea.begin() + static_cast<long>(2 * first), ea.end())) << "from " << first;
  }
  EXPECT_TRUE(notices.empty());
  EXPECT_EQ(jit->compiledFunctions(), 2u);
}

// Structural programs of one shape share a function; another period, map constant or scan
// operator is another shape.
TEST(Jit, StructuralShapesAreKeyedByTheirConstants) {
  ProgramBuilder pb(6);
  Checkpoint c;
  std::vector<Bytes> expected;
  uint64_t offset = 0;
  auto add = [&](Built b) {
    expected.push_back(storeWords(b.words, b.width));
    c.regions.push_back(makeRegion(b, offset));
    offset += c.regions.back().bytes.size;
  };
  auto repeated = [&](uint64_t period, uint64_t times, uint64_t xorWith) {
    Built body = pb.lit(8, period, Encoding::Raw, 8);
    Built out;
    out.width = 8;
    for (uint64_t k = 0; k < times; ++k)
      for (uint64_t w : body.words) out.words.push_back(w ^ xorWith);
    out.expr = Map::make(MapFn::Xor, xorWith, Repeat::make(times, std::move(body.expr)));
    return out;
  };
  for (int i = 0; i < 3; ++i) add(scanProgram(pb, 32, 100 + i, 7)); // one shape: lengths are arguments
  add(scanProgram(pb, 32, 100, 8));                                  // another initial word
  add(repeated(5, 3, 0x11));
  add(repeated(5, 7, 0x11)); // the count only bounds the reads: the same shape
  add(repeated(6, 3, 0x11)); // another period
  add(repeated(5, 3, 0x12)); // another constant
  Payload payload = Payload::fromBytes(pb.payload());
  auto jit = makeJit();
  ASSERT_TRUE(jit);
  ASSERT_TRUE(jit->prepare(c, payload));
  EXPECT_EQ(jit->compiledFunctions(), 5u);
  for (size_t i = 0; i < c.regions.size(); ++i)
    expectSameBytes(*jit, c.regions[i], payload, expected[i], "region " + std::to_string(i));
  EXPECT_EQ(jit->compiledFunctions(), 5u);
  EXPECT_EQ(jit->compiledRegions(), c.regions.size());
}

// Regions of one shape (a model's repeated layers) share one compiled function whatever their
// lengths and payload offsets; another kind is another shape. Bit-packed literals the runtime
// unpacks share their code whatever their bit count; a bit count read in place is a shape.
TEST(Jit, RegionsOfOneShapeShareOneFunction) {
  ProgramBuilder pb(31);
  Checkpoint c;
  std::vector<Bytes> expected;
  uint64_t offset = 0;
  auto add = [&](Built b) {
    expected.push_back(storeWords(b.words, b.width));
    c.regions.push_back(makeRegion(b, offset));
    offset += c.regions.back().bytes.size;
  };
  for (int i = 0; i < 12; ++i) add(pb.lit(8, 100 + 37 * i, Encoding::Bitpack, 5));
  for (int i = 0; i < 5; ++i) add(pb.lit(16, 50 + 3 * i, Encoding::Raw, 16));
  add(pb.lit(8, 64, Encoding::Bitpack, 6));
  add(pb.lit(16, 64, Encoding::Bitpack, 8));  // whole bytes: read in place
  add(pb.lit(16, 64, Encoding::Bitpack, 16)); // another in-place bit count
  Payload payload = Payload::fromBytes(pb.payload());
  auto jit = makeJit();
  ASSERT_TRUE(jit);
  ASSERT_TRUE(jit->prepare(c, payload));
  EXPECT_EQ(jit->compiledFunctions(), 4u);
  for (size_t i = 0; i < c.regions.size(); ++i)
    expectSameBytes(*jit, c.regions[i], payload, expected[i], "region " + std::to_string(i));
  EXPECT_EQ(jit->compiledFunctions(), 4u);
}

// Code follows the bitpack bit count found in the payload: the same program against a payload
// with another bit count decodes that payload's words, never the first one's.
TEST(Jit, SpecializationFollowsThePayload) {
  auto program = [] {
    return Lit::make(StreamType{8, 2}, Encoding::Bitpack, ByteRange{0, 2});
  };
  Bytes three, four;
  encodeLit(Encoding::Bitpack, std::vector<uint64_t>{5, 2}, 8, three);
  encodeLit(Encoding::Bitpack, std::vector<uint64_t>{9, 3}, 8, four);
  ASSERT_EQ(three.size(), 2u);
  ASSERT_EQ(four.size(), 2u);
  ASSERT_EQ(three[0], 3);
  ASSERT_EQ(four[0], 4);
  Payload p3 = Payload::fromBytes(three), p4 = Payload::fromBytes(four);
  Checkpoint c;
  Region r;
  r.bytes = ByteRange{0, 2};
  r.program = program();
  c.regions.push_back(std::move(r));
  auto jit = makeJit();
  ASSERT_TRUE(jit);
  ASSERT_TRUE(jit->prepare(c, p3));
  expectSameBytes(*jit, c.regions[0], p3, Bytes{5, 2}, "b = 3");
  expectSameBytes(*jit, c.regions[0], p4, Bytes{9, 3}, "b = 4");
  expectSameBytes(*jit, c.regions[0], p3, Bytes{5, 2}, "b = 3 again");
}

// Compiled code is kept across sessions in a cache directory: a second session with the same
// programs compiles nothing and decodes the same bytes; a damaged entry is compiled again.
TEST(Jit, CompiledCodeIsKeptAcrossSessions) {
  const RandomCheckpoint r = randomCheckpoint(61, 6, 17, 3);
  const Checkpoint &c = r.c;
  const Payload &payload = r.payload;
  const std::vector<Bytes> &expected = r.expected;
  const std::string dir = ::testing::TempDir() + "brevis-jit-cache-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  size_t shapes = 0;
  for (int session = 0; session < 3; ++session) {
    auto jit = JitDecoder::create({}, {}, dir);
    ASSERT_TRUE(jit) << jit.error().message;
    ASSERT_TRUE((*jit)->prepare(c, payload));
    if (session == 0) {
      shapes = (*jit)->compiledFunctions();
      EXPECT_GT(shapes, 1u);
      EXPECT_EQ((*jit)->cachedFunctions(), 0u);
    } else if (session == 1) {
      EXPECT_EQ((*jit)->compiledFunctions(), shapes);
      EXPECT_EQ((*jit)->cachedFunctions(), shapes);
    } else {
      EXPECT_EQ((*jit)->cachedFunctions(), shapes - 1); // the damaged entry was compiled again
    }
    for (size_t i = 0; i < c.regions.size(); ++i)
      expectSameBytes(**jit, c.regions[i], payload, expected[i], "session " + std::to_string(session));
    if (session == 1) {
      // Damage one entry: a byte of its code.
      for (const auto &entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().filename().string().rfind("llvmcache-brevis-", 0) != 0) continue;
        std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(40);
        f.put('\x5a');
        break;
      }
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Jit, ProgramsOfTooManyNodesAreLeftToTheInterpreter) {
  // A concat of one-byte constants: the largest program that compiles, and one node more
  // (parts, and the concat itself). Both decode to their bytes; the larger is interpreted, and
  // said to be once.
  for (const size_t nodes : {JitDecoder::kMaxCompiledNodes, JitDecoder::kMaxCompiledNodes + 1}) {
    std::vector<ExprPtr> parts;
    Bytes expected;
    for (size_t k = 0; k + 1 < nodes; ++k) {
      parts.push_back(Const::make(StreamType{8, 1}, k % 251));
      expected.push_back(static_cast<uint8_t>(k % 251));
    }
    Checkpoint c;
    Region r;
    r.bytes = ByteRange{0, expected.size()};
    r.program = Concat::make(std::move(parts));
    c.regions.push_back(std::move(r));
    std::vector<std::string> notices;
    auto jit = makeJit(&notices);
    ASSERT_TRUE(jit);
    ASSERT_TRUE(jit->prepare(c, Payload()));
    expectSameBytes(*jit, c.regions[0], Payload(), expected, std::to_string(nodes) + " nodes");
    expectSameBytes(*jit, c.regions[0], Payload(), expected, std::to_string(nodes) + " nodes, again");
    const bool compiled = nodes <= JitDecoder::kMaxCompiledNodes;
    EXPECT_EQ(jit->compiledFunctions(), compiled ? 1u : 0u) << nodes;
    EXPECT_EQ(jit->interpretedRegions() > 0, !compiled) << nodes;
    EXPECT_EQ(notices.size(), compiled ? 0u : 1u) << nodes;
    if (!compiled) {
      EXPECT_NE(notices[0].find("decoded by the interpreter"), std::string::npos) << notices[0];
      EXPECT_NE(jit->summary().find("by the interpreter"), std::string::npos) << jit->summary();
    }
  }
}

TEST(Jit, ShapesPastTheSessionsBudgetOfNodesAreInterpreted) {
  // Regions of distinct shapes (a concat of 3 constants, its constants differing), 4 nodes
  // each, under a budget of 10 nodes: the first two shapes compile, in prepare() or on demand,
  // and the regions of the others decode by the interpreter, to the same bytes.
  Checkpoint c;
  std::vector<Bytes> expected;
  for (uint64_t k = 0; k < 5; ++k) {
    std::vector<ExprPtr> parts;
    Bytes bytes;
    for (uint64_t j = 0; j < 3; ++j) {
      parts.push_back(Const::make(StreamType{8, 1}, 10 * k + j));
      bytes.push_back(static_cast<uint8_t>(10 * k + j));
    }
    Region r;
    r.bytes = ByteRange{3 * k, 3};
    r.program = Concat::make(std::move(parts));
    c.regions.push_back(std::move(r));
    expected.push_back(bytes);
  }
  for (const bool prepared : {true, false}) {
    std::vector<std::string> notices;
    auto jit = JitDecoder::create([&notices](const std::string &s) { notices.push_back(s); }, {}, {}, 10);
    ASSERT_TRUE(jit);
    if (prepared) {
      ASSERT_TRUE((*jit)->prepare(c, Payload()));
    }
    for (size_t k = 0; k < c.regions.size(); ++k)
      expectSameBytes(**jit, c.regions[k], Payload(), expected[k], "region " + std::to_string(k));
    EXPECT_EQ((*jit)->compiledFunctions(), 2u);
    EXPECT_EQ((*jit)->interpretedRegions(), 3u);
    ASSERT_EQ(notices.size(), 1u);
    EXPECT_NE(notices[0].find("budget"), std::string::npos) << notices[0];
  }
}

TEST(Jit, RegionSizeMismatchIsAnError) {
  Region r;
  r.bytes = ByteRange{0, 7};
  r.program = Const::make(StreamType{16, 4}, 0x1234);
  auto jit = makeJit();
  ASSERT_TRUE(jit);
  Bytes out;
  VectorSink sink(out);
  EXPECT_FALSE(jit->decode(r, Payload(), sink));
}

/// A CachedCodeDecoder over `dir` for code made by `identity`, whose fallback (the JIT, keeping
/// objects by shape under the same identity) counts in *made the times it is made.
std::unique_ptr<CachedCodeDecoder> cachedDecoder(const std::string &dir, const std::string &identity, int *made) {
  auto shapes = jit::ShapeCodeCache::open(dir, identity);
  EXPECT_TRUE(shapes);
  if (!shapes) return nullptr;
  return std::make_unique<CachedCodeDecoder>(
      std::move(shapes),
      [dir, identity, made]() -> Result<std::unique_ptr<RegionDecoder>> {
        ++*made;
        auto jit = JitDecoder::create({}, {}, dir, JitDecoder::kMaxSessionNodes, identity);
        if (!jit) return jit.error();
        return std::unique_ptr<RegionDecoder>(std::move(*jit));
      },
      JitDecoder::kMaxSessionNodes);
}

/// The cache's entries kept by shape.
std::vector<std::filesystem::path> shapeEntries(const std::string &dir) {
  std::vector<std::filesystem::path> found;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    if (entry.path().filename().string().rfind(jit::ShapeCodeCache::kEntryPrefix, 0) == 0) found.push_back(entry);
  std::sort(found.begin(), found.end());
  return found;
}

// What the JIT compiled is kept by shape, and a later session runs it without the JIT: the same
// bytes, prepared or on demand, from ranges too, with no fallback made. A damaged entry, or code
// made for another module or CPU (another identity), is a miss that the JIT compiles again.
TEST(CachedCode, RunsWhatTheJitCompiledWithoutIt) {
  const RandomCheckpoint r = randomCheckpoint(83, 12, 311, 3);
  const std::string dir = ::testing::TempDir() + "brevis-shape-cache-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  int made = 0;
  size_t shapes = 0;
  // A decoder made over the cache, prepared, and each region decoded whole.
  auto decodeAll = [&](const std::string &identity, const std::string &what) {
    auto decoder = cachedDecoder(dir, identity, &made);
    EXPECT_TRUE(decoder && decoder->prepare(r.c, r.payload)) << what;
    if (decoder)
      for (size_t i = 0; i < r.c.regions.size(); ++i)
        expectSameBytes(*decoder, r.c.regions[i], r.payload, r.expected[i], what + ", region " + std::to_string(i));
    return decoder;
  };
  {
    auto first = decodeAll("identity A", "compiled");
    ASSERT_TRUE(first);
    EXPECT_EQ(made, 1);
    EXPECT_EQ(first->loadedFunctions(), 0u);
    shapes = shapeEntries(dir).size();
    EXPECT_GT(shapes, 1u);
  }
  for (const bool prepared : {true, false}) {
    auto again = cachedDecoder(dir, "identity A", &made);
    ASSERT_TRUE(again);
    if (prepared) {
      ASSERT_TRUE(again->prepare(r.c, r.payload));
    }
    for (size_t i = 0; i < r.c.regions.size(); ++i)
      expectSameBytes(*again, r.c.regions[i], r.payload, r.expected[i], "loaded, region " + std::to_string(i));
    // Ranges, as a region's later pieces are decoded: from a third of each region to its end.
    for (size_t i = 0; i < r.c.regions.size(); ++i) {
      const Region &region = r.c.regions[i];
      const StreamType type = streamTypeOf(*region.program);
      const unsigned bytesPerWord = containerBytes(type.width);
      const uint64_t from = type.length / 3;
      Bytes out;
      VectorSink sink(out);
      ASSERT_TRUE(again->decodeWords(region, r.payload, from, type.length - from, sink));
      EXPECT_TRUE(std::equal(out.begin(), out.end(), r.expected[i].begin() + from * bytesPerWord))
          << "range of region " << i;
    }
    EXPECT_EQ(made, 1) << "no shape was missing";
    EXPECT_FALSE(again->usedFallback());
    EXPECT_EQ(again->loadedFunctions(), shapes);
    EXPECT_NE(again->summary().find("LLVM not loaded"), std::string::npos) << again->summary();
  }
  {
    // A byte of one entry's code damaged: that shape alone goes to the JIT.
    const auto entries = shapeEntries(dir);
    ASSERT_FALSE(entries.empty());
    std::fstream f(entries.front(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(entries.front()) - 3));
    f.put('\x5a');
    f.close();
    auto damaged = decodeAll("identity A", "damaged");
    ASSERT_TRUE(damaged);
    EXPECT_EQ(made, 2);
    EXPECT_TRUE(damaged->usedFallback());
    EXPECT_EQ(damaged->loadedFunctions(), shapes - 1);
  }
  {
    // Another identity finds nothing of A's.
    auto other = decodeAll("identity B", "identity B");
    ASSERT_TRUE(other);
    EXPECT_EQ(other->loadedFunctions(), 0u);
    EXPECT_EQ(made, 3);
  }
  std::filesystem::remove_all(dir);
}

/// The objects the JIT compiled for `r`'s shapes, as the cache keeps them.
std::vector<Bytes> compiledObjects(const RandomCheckpoint &r, const std::string &dir) {
  std::filesystem::remove_all(dir);
  auto jit = JitDecoder::create({}, {}, dir, JitDecoder::kMaxSessionNodes, "objects");
  EXPECT_TRUE(jit);
  if (!jit) return {};
  EXPECT_TRUE((*jit)->prepare(r.c, r.payload));
  auto shapes = jit::ShapeCodeCache::open(dir, "objects");
  std::vector<Bytes> objects;
  for (const Region &region : r.c.regions) {
    std::string key;
    EXPECT_TRUE(jit::appendShapeKey(*region.program, r.payload, key));
    if (auto entry = shapes->find(key)) objects.push_back(std::move(entry->object));
  }
  std::filesystem::remove_all(dir);
  return objects;
}

// The loader takes what LLVM compiles and refuses anything else with a reason, never crashing:
// every prefix of an object, another machine, a call of an unknown function, noise.
TEST(CachedCode, TheLoaderRefusesWhatItDoesNotKnow) {
  const RandomCheckpoint r = randomCheckpoint(89, 10, 401, 3);
  const std::vector<Bytes> objects =
      compiledObjects(r, ::testing::TempDir() + "brevis-objects-" + std::to_string(::getpid()));
  ASSERT_EQ(objects.size(), r.c.regions.size());
  bool sawCall = false;
  for (const Bytes &object : objects) {
    auto loaded = jit::LoadedCode::load(object);
    ASSERT_TRUE(loaded) << loaded.error().message;
    for (size_t cut = 0; cut < object.size(); cut += 1 + cut / 8)
      EXPECT_FALSE(jit::LoadedCode::load(ByteSpan(object).first(cut))) << "a prefix of " << cut << " bytes";
    Bytes arm = object;
    arm[18] = 183; // e_machine: EM_AARCH64
    EXPECT_FALSE(jit::LoadedCode::load(arm));
    // A call of memcpy renamed: a function the loader does not give code.
    const std::string_view name("memcpy", 7);
    const auto at = std::search(object.begin(), object.end(), name.begin(), name.end());
    if (at != object.end()) {
      sawCall = true;
      Bytes renamed = object;
      renamed[at - object.begin() + 1] = 'a';
      auto refused = jit::LoadedCode::load(renamed);
      ASSERT_FALSE(refused);
      EXPECT_NE(refused.error().message.find("it calls mamcpy"), std::string::npos) << refused.error().message;
    }
  }
  EXPECT_TRUE(sawCall) << "no compiled shape calls memcpy: the renamed call is not tested";
  // Garbage is refused.
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200; ++i) {
    Bytes noise(64 + rng() % 4096);
    for (auto &b : noise) b = static_cast<uint8_t>(rng());
    std::copy_n(objects.front().begin(), 20, noise.begin()); // a valid ELF header's start
    EXPECT_FALSE(jit::LoadedCode::load(noise));
  }
}

} // namespace
} // namespace brevis
