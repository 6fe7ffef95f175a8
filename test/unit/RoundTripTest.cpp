// End-to-end round trips of the committed real checkpoints through every layer:
// synth -> print -> parse -> check -> run (interpreter and JIT), and compress -> archive ->
// decompress, compared byte for byte with the original file.
#include "codegen/JitDecoder.h"
#include "frontend/Parser.h"
#include "lang/Diagnostics.h"
#include "lang/Printer.h"
#include "lang/TypeChecker.h"
#include "runtime/containers/Archive.h"
#include "runtime/execution/CheckpointRunner.h"
#include "runtime/containers/FileIO.h"
#include "runtime/execution/DeclarationCheck.h"
#include "runtime/execution/Interpreter.h"
#include "runtime/containers/Checksum.h"
#include "runtime/execution/ParallelDecode.h"
#include "synth/Driver.h"
#include "tools/gen/SyntheticCheckpoint.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>

using namespace brevis;

namespace {

/// The default strategy, keeping the exact smallest encodings (level 9).
SynthOutput synthesize(ByteSpan file, const std::string &name, const std::string &payloadName, unsigned threads = 1) {
  auto strategy = makeStrategy(kDefaultStrategy);
  EXPECT_TRUE(strategy);
  return synthesizeCheckpoint(file, name, payloadName, **strategy, SynthOptions{threads});
}

class RoundTrip : public ::testing::TestWithParam<std::string> {
protected:
  Bytes original() {
    auto bytes = readFile(std::string(BREVIS_TEST_DATA) + "/" + GetParam());
    EXPECT_TRUE(bytes) << bytes.error().message;
    return bytes ? *bytes : Bytes{};
  }

  /// Parses and checks printed text, failing the test on any diagnostic.
  std::optional<Module> reparse(const std::string &text) {
    Diagnostics diags("synth.bdsl", text);
    auto module = parseModule(diags);
    if (module) {
      TypeChecker checker(diags);
      checker.checkModule(*module);
    }
    EXPECT_FALSE(diags.hasErrors()) << diags.render();
    return diags.hasErrors() ? std::nullopt : std::move(module);
  }

  Bytes decodeWith(RegionDecoder &decoder, const Checkpoint &c, const Payload &payload) {
    Bytes out;
    VectorSink sink(out);
    auto done = runCheckpoint(c, payload, decoder, sink);
    EXPECT_TRUE(done) << done.error().message;
    return out;
  }
};

} // namespace

TEST_P(RoundTrip, SynthPrintParseRunIsBitExact) {
  Bytes file = original();
  ASSERT_FALSE(file.empty());
  SynthOutput synth = synthesize(file, GetParam(), "synth.bdsl.bin");
  ASSERT_FALSE(synth.notSafetensorsReason) << *synth.notSafetensorsReason;
  std::string text = printCheckpoint(synth.checkpoint);
  auto module = reparse(text);
  ASSERT_TRUE(module);
  EXPECT_EQ(printModule(*module), text); // the printer's output is a fixed point

  const Checkpoint &c = module->checkpoint();
  Payload payload = Payload::fromBytes(synth.payload);
  Interpreter interpreter;
  EXPECT_EQ(decodeWith(interpreter, c, payload), file);

  auto jit = JitDecoder::create({});
  ASSERT_TRUE(jit) << jit.error().message;
  EXPECT_EQ(decodeWith(**jit, c, payload), file);
  // Every region through the JIT, and the header once more: the declarations are checked against it.
  EXPECT_EQ((*jit)->compiledRegions(), c.regions.size() + (headerRegion(c) ? 1 : 0));
}

TEST_P(RoundTrip, ArchiveRoundTripIsBitExactOnAnyThreadCount) {
  Bytes file = original();
  SynthOutput synth = synthesize(file, GetParam(), "synth.bdsl.bin", 3);
  // Synthesis does not depend on the thread count.
  SynthOutput serial = synthesize(file, GetParam(), "synth.bdsl.bin", 1);
  EXPECT_EQ(printCheckpoint(synth.checkpoint), printCheckpoint(serial.checkpoint));
  EXPECT_EQ(synth.payload, serial.payload);

  std::vector<uint64_t> digests;
  for (const Region &r : synth.checkpoint.regions) digests.push_back(regionDigest(ByteSpan(file).subspan(r.bytes.offset, r.bytes.size)));
  Bytes archive;
  VectorPositionalSink out(archive);
  ArchiveWriter writer(out);
  auto range = writer.appendPayload(synth.payload);
  ASSERT_TRUE(range);
  ArchiveMember member;
  member.path = GetParam();
  member.sourceSize = file.size();
  member.sourceXxh64 = synth.checkpoint.source.xxh64;
  member.programText = printCheckpoint(synth.checkpoint);
  member.digests = digests;
  member.payloadRange = *range;
  auto size = writer.finish({member}, /*directory=*/false);
  ASSERT_TRUE(size);
  EXPECT_EQ(*size, archive.size());
  EXPECT_LT(archive.size(), file.size()); // the float fields alone already save the unused bits

  auto back = readArchive(MappedFile::fromBytes(archive), "model.brv", ArchiveReadOptions{.verifyWholeFile = true});
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->members.size(), 1u);
  auto module = reparse(back->members[0].programText);
  ASSERT_TRUE(module);
  ASSERT_TRUE(checkMemberProgram(module->checkpoint(), back->members[0], "model.brv"));
  for (unsigned threads : {1u, 2u, 5u}) {
    for (bool jit : {false, true}) {
      Bytes decoded(file.size());
      VectorPositionalSink sink(decoded);
      DecodeJob job{&module->checkpoint(), &back->members[0].payload, digests, &sink, "model.brv", {}};
      std::unique_ptr<RegionDecoder> decoder;
      if (jit) {
        auto made = JitDecoder::create({});
        ASSERT_TRUE(made);
        decoder = std::move(*made);
      } else {
        decoder = std::make_unique<Interpreter>();
      }
      auto done = decodeJobs(std::span(&job, 1), *decoder, DecodeOptions{.threads = threads});
      ASSERT_TRUE(done) << done.error().message;
      EXPECT_EQ(decoded, file) << threads << " threads, jit " << jit;
    }
  }

  // A wrong digest names the region.
  digests.back() ^= 1;
  DiscardPositionalSink discard;
  DecodeJob job{&module->checkpoint(), &back->members[0].payload, digests, &discard, "model.brv", {}};
  Interpreter interpreter;
  auto wrong = decodeJobs(std::span(&job, 1), interpreter, DecodeOptions{.threads = 2});
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("do not match their checksum"), std::string::npos) << wrong.error().message;

  // Work beside the decoding runs once, on any thread count; its failure is returned where the
  // regions decode, and theirs first where they do not.
  digests.back() ^= 1;
  for (unsigned threads : {1u, 2u, 5u}) {
    std::atomic<int> runs{0};
    DecodeOptions options{.threads = threads};
    options.alongside = [&]() -> Result<void> {
      ++runs;
      return Error{"beside"};
    };
    DecodeJob good{&module->checkpoint(), &back->members[0].payload, digests, &discard, "model.brv", {}};
    auto besideFailed = decodeJobs(std::span(&good, 1), interpreter, options);
    ASSERT_FALSE(besideFailed);
    EXPECT_EQ(besideFailed.error().message, "beside") << threads << " threads";
    EXPECT_EQ(runs.load(), 1) << threads << " threads";
    digests.back() ^= 1;
    auto regionFailed = decodeJobs(std::span(&good, 1), interpreter, options);
    digests.back() ^= 1;
    ASSERT_FALSE(regionFailed);
    EXPECT_NE(regionFailed.error().message.find("do not match their checksum"), std::string::npos)
        << regionFailed.error().message;
    options.alongside = [&]() -> Result<void> {
      ++runs;
      return {};
    };
    EXPECT_TRUE(decodeJobs(std::span(&good, 1), interpreter, options));
    EXPECT_EQ(runs.load(), 3) << threads << " threads";
  }
}

TEST_P(RoundTrip, EveryStrategyIsBitExactOnAnyThreadCount) {
  Bytes file = original();
  for (std::string_view name : strategyNames()) {
    auto strategy = makeStrategy(name, strategyOptionsForLevel(kDefaultLevel));
    ASSERT_TRUE(strategy) << name;
    SynthOutput serial = synthesizeCheckpoint(file, GetParam(), "synth.bdsl.bin", **strategy, SynthOptions{1});
    SynthOutput parallel = synthesizeCheckpoint(file, GetParam(), "synth.bdsl.bin", **strategy, SynthOptions{3});
    const std::string text = printCheckpoint(serial.checkpoint);
    EXPECT_EQ(printCheckpoint(parallel.checkpoint), text) << name;
    EXPECT_EQ(parallel.payload, serial.payload) << name;
    auto module = reparse(text);
    ASSERT_TRUE(module) << name;
    Interpreter interpreter;
    EXPECT_EQ(decodeWith(interpreter, module->checkpoint(), Payload::fromBytes(serial.payload)), file) << name;
  }
}

TEST(Strategy, AnUnknownNameIsAnErrorListingTheKnownOnes) {
  EXPECT_EQ(strategyNames().front(), kDefaultStrategy);
  auto none = makeStrategy("lzma");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "unknown synthesis strategy 'lzma' (known: search, floatfields, zipnn, dfloat11)");
}

TEST_P(RoundTrip, CorruptPayloadIsCaughtNotMisdecoded) {
  Bytes file = original();
  SynthOutput synth = synthesize(file, GetParam(), "synth.bdsl.bin");
  // Flip a bit in the last literal's payload (a mantissa field): decoding must fail the checksum.
  synth.payload[synth.payload.size() - 3] ^= 0x01;
  Interpreter interpreter;
  Bytes out;
  VectorSink sink(out);
  auto done = runCheckpoint(synth.checkpoint, Payload::fromBytes(synth.payload), interpreter, sink);
  ASSERT_FALSE(done);
  EXPECT_NE(done.error().message.find("checksum"), std::string::npos) << done.error().message;
}

INSTANTIATE_TEST_SUITE_P(CommittedCheckpoints, RoundTrip,
                         ::testing::Values("stories260K.bf16.safetensors", "stories260K.safetensors"),
                         [](const auto &info) { return info.param.find("bf16") != std::string::npos ? "BF16" : "F32"; });

TEST(RoundTripNonSafetensors, ArbitraryBytesAreKeptAsOneStream) {
  Bytes file(5000);
  for (size_t i = 0; i < file.size(); ++i) file[i] = static_cast<uint8_t>(i * i);
  SynthOutput synth = synthesize(file, "blob.bin", "blob.bdsl.bin");
  ASSERT_TRUE(synth.notSafetensorsReason);
  ASSERT_EQ(synth.checkpoint.regions.size(), 1u);
  EXPECT_EQ(synth.checkpoint.regions[0].kind, RegionKind::Bytes);
  Interpreter interpreter;
  Bytes out;
  VectorSink sink(out);
  ASSERT_TRUE(runCheckpoint(synth.checkpoint, Payload::fromBytes(synth.payload), interpreter, sink));
  EXPECT_EQ(out, file);
}

namespace {

/// Reparses printed text (the archive's path) and decodes it with both executors.
void expectBitExact(const Bytes &file, const std::string &what) {
  SynthOutput synth = synthesize(file, "edge.safetensors", "edge.bdsl.bin");
  ASSERT_FALSE(synth.notSafetensorsReason) << what << ": " << *synth.notSafetensorsReason;
  std::string text = printCheckpoint(synth.checkpoint);
  Diagnostics diags("edge.bdsl", text);
  auto module = parseModule(diags);
  ASSERT_TRUE(module) << diags.render();
  TypeChecker checker(diags);
  ASSERT_TRUE(checker.checkModule(*module)) << what << "\n" << diags.render() << text;
  Payload payload = Payload::fromBytes(synth.payload);
  Interpreter interpreter;
  auto jit = JitDecoder::create({});
  ASSERT_TRUE(jit);
  for (RegionDecoder *decoder : {static_cast<RegionDecoder *>(&interpreter), static_cast<RegionDecoder *>(jit->get())}) {
    Bytes out;
    VectorSink sink(out);
    auto done = runCheckpoint(module->checkpoint(), payload, *decoder, sink);
    ASSERT_TRUE(done) << what << ": " << done.error().message;
    EXPECT_EQ(out, file) << what;
  }
}

} // namespace

TEST(RoundTripSafetensors, EveryDtypeEmptyTensorsMetadataPaddingOrderAndUncoveredBytes) {
  // Every dtype, scalars, empty tensors (one where another starts), tensors listed out of
  // offset order, header padding: all parsed as tensors and back exactly. Bytes no tensor
  // covers make a file the format refuses: it comes back exactly too, as one byte stream.
  const char *dtypes[] = {"BOOL", "U8", "I8", "F8_E4M3", "F8_E5M2", "I16", "U16", "F16",
                          "BF16", "I32", "U32", "F32", "F64", "I64", "U64"};
  const unsigned bytesPer[] = {1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8};
  std::string json = R"({"__metadata__":{"format":"pt","note":"edge cases"})";
  std::vector<std::pair<std::string, uint64_t>> entries; // listed in reverse offset order below
  uint64_t offset = 0;
  for (size_t i = 0; i < std::size(dtypes); ++i) {
    uint64_t n = 37 * bytesPer[i];
    entries.push_back({fmt::format(R"("t{}":{{"dtype":"{}","shape":[37],"data_offsets":[{},{}]}})", i, dtypes[i],
                                   offset, offset + n),
                       offset});
    offset += n;
  }
  entries.push_back({fmt::format(R"("scalar":{{"dtype":"F32","shape":[],"data_offsets":[{},{}]}})", offset, offset + 4),
                     offset});
  offset += 4;
  entries.push_back({fmt::format(R"("empty":{{"dtype":"BF16","shape":[2,0],"data_offsets":[{},{}]}})", offset, offset),
                     offset});
  entries.push_back({R"("empty_first":{"dtype":"U8","shape":[0],"data_offsets":[0,0]})", 0});
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) json += "," + it->first;
  json += "}";
  json.append(7, ' '); // header padding
  Bytes file;
  for (int i = 0; i < 8; ++i) file.push_back(static_cast<uint8_t>(json.size() >> (8 * i)));
  file.insert(file.end(), json.begin(), json.end());
  std::mt19937_64 rng(5);
  for (uint64_t i = 0; i < offset; ++i) file.push_back(static_cast<uint8_t>(rng() >> (i % 3 == 0 ? 0 : 60)));
  expectBitExact(file, "edge cases");
  Bytes trailing = file;
  for (int i = 0; i < 11; ++i) trailing.push_back(static_cast<uint8_t>(i));
  SynthOutput synth = synthesize(trailing, "edge.safetensors", "edge.bdsl.bin");
  ASSERT_TRUE(synth.notSafetensorsReason);
  EXPECT_EQ(*synth.notSafetensorsReason, "11 bytes after the last tensor belong to no tensor");
  Interpreter interpreter;
  Bytes out;
  VectorSink sink(out);
  ASSERT_TRUE(runCheckpoint(synth.checkpoint, Payload::fromBytes(synth.payload), interpreter, sink));
  EXPECT_EQ(out, trailing);
}

TEST(RoundTripSafetensors, TensorsOfDtypesWithoutWordsAreKeptAsBytes) {
  const std::string json = R"({"f4":{"dtype":"F4","shape":[4],"data_offsets":[0,2]},)"
                           R"("w":{"dtype":"BF16","shape":[3],"data_offsets":[2,8]}})";
  Bytes file;
  for (int i = 0; i < 8; ++i) file.push_back(static_cast<uint8_t>(json.size() >> (8 * i)));
  file.insert(file.end(), json.begin(), json.end());
  for (uint8_t b : {0x12, 0x34, 0x80, 0x3f, 0x00, 0x40, 0x40, 0xc0}) file.push_back(b);
  expectBitExact(file, "an F4 tensor");
  SynthOutput synth = synthesize(file, "f4.safetensors", "f4.bdsl.bin");
  ASSERT_EQ(synth.checkpoint.regions.size(), 3u);
  EXPECT_EQ(synth.checkpoint.regions[1].kind, RegionKind::Bytes);
  EXPECT_EQ(synth.checkpoint.regions[2].kind, RegionKind::Tensor);
  EXPECT_EQ(synth.checkpoint.regions[2].name, "w");
}

TEST(RoundTripSafetensors, RepeatedTensorsShareTheFirstOnesPayload) {
  // "a" and "c" hold the same BF16 words; "b" the same bytes as U8 (another dtype: its own
  // program); "d" the same words but one. Only "c" repeats "a".
  std::mt19937_64 rng(8);
  Bytes words(4096);
  for (auto &b : words) b = static_cast<uint8_t>(rng() >> (rng() % 2 ? 0 : 61));
  Bytes other = words;
  other[100] ^= 1;
  const std::string json = R"({"a":{"dtype":"BF16","shape":[2048],"data_offsets":[0,4096]},)"
                           R"("b":{"dtype":"U8","shape":[4096],"data_offsets":[4096,8192]},)"
                           R"("c":{"dtype":"BF16","shape":[64,32],"data_offsets":[8192,12288]},)"
                           R"("d":{"dtype":"BF16","shape":[2048],"data_offsets":[12288,16384]}})";
  Bytes file;
  for (int i = 0; i < 8; ++i) file.push_back(static_cast<uint8_t>(json.size() >> (8 * i)));
  file.insert(file.end(), json.begin(), json.end());
  for (const Bytes *t : {&words, &words, &words, &other}) file.insert(file.end(), t->begin(), t->end());
  expectBitExact(file, "repeated tensors");

  SynthOutput synth = synthesize(file, "rep.safetensors", "rep.bdsl.bin");
  const auto &regions = synth.checkpoint.regions;
  ASSERT_EQ(regions.size(), 5u);
  auto ranges = [](const Expr &root) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    auto walk = [&](auto &self, const Expr &e) -> void {
      if (e.kind == NodeKind::Lit && !as<Lit>(e).isInline())
        out.emplace_back(as<Lit>(e).payload().offset, as<Lit>(e).payload().size);
      forEachChild(e, [&](const Expr &c) { self(self, c); });
    };
    walk(walk, root);
    return out;
  };
  const auto a = ranges(*regions[1].program), b = ranges(*regions[2].program), c = ranges(*regions[3].program),
             d = ranges(*regions[4].program);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(c, a); // the repeat reads the first one's bytes
  EXPECT_EQ(printExpr(*regions[3].program), printExpr(*regions[1].program));
  for (const auto &r : b) EXPECT_GE(r.first, a.back().first + a.back().second);
  for (const auto &r : d) EXPECT_GE(r.first, b.back().first + b.back().second);
  // The payload holds the header, "a", "b" and "d" once each: nothing for "c".
  const auto header = ranges(*regions[0].program);
  uint64_t stored = 0;
  for (const auto *list : {&header, &a, &b, &d})
    for (const auto &r : *list) stored += r.second;
  EXPECT_EQ(synth.payload.size(), stored);
}

TEST(RoundTripLarge, RegionDigestsHashedPieceByPieceOnThreadsAreEachRegionsDigest) {
  // firstWithSameBytes hashes the regions' 16 MiB digest pieces as tasks of their own (one large
  // tensor is hashed on every thread) and joins each region's: the same digests as regionDigest
  // of each region, and the same repeats, on any thread count.
  std::mt19937_64 rng(9);
  Bytes file(3 * kDigestPieceBytes + 2 * kDigestPieceBytes + 4096);
  for (size_t i = 0; i < file.size(); i += 8) {
    const uint64_t x = rng();
    std::memcpy(file.data() + i, &x, std::min<size_t>(8, file.size() - i));
  }
  const uint64_t big = 2 * kDigestPieceBytes + 77; // three pieces, the last of 77 bytes
  std::memcpy(file.data() + big + 10, file.data(), kDigestPieceBytes + 5); // a repeat of the 2nd region
  std::vector<Region> regions;
  auto add = [&](uint64_t offset, uint64_t size) {
    Region r;
    r.kind = RegionKind::Bytes;
    r.bytes = ByteRange{offset, size};
    regions.push_back(std::move(r));
  };
  add(0, big);
  add(0, kDigestPieceBytes + 5);
  add(big, 10);
  add(big + 10, kDigestPieceBytes + 5);
  add(big + 10, 0);
  add(big + 10 + kDigestPieceBytes + 5, file.size() - (big + 10 + kDigestPieceBytes + 5));
  for (unsigned threads : {1u, 2u, 5u}) {
    std::vector<uint64_t> digests;
    const std::vector<size_t> first = firstWithSameBytes(regions, file, &digests, threads);
    ASSERT_EQ(digests.size(), regions.size());
    for (size_t i = 0; i < regions.size(); ++i)
      EXPECT_EQ(digests[i], regionDigest(ByteSpan(file).subspan(regions[i].bytes.offset, regions[i].bytes.size)))
          << "region " << i << " on " << threads << " threads";
    EXPECT_EQ(first, (std::vector<size_t>{0, 1, 2, 1, 4, 5})) << threads << " threads";
  }
}

TEST(RoundTripLarge, TensorsSplitIntoPiecesDecodeIdenticallyOnAnyThreadCount) {
  // An embedding of 5000 x 2048 BF16 words (20 MB) spans two 16 MiB pieces, so its second
  // piece starts mid-tensor: every literal must skip to it (entropy-coded ones by jumping to
  // the block holding it), and the two pieces' hashes make the region's digest.
  std::string path = ::testing::TempDir() + "/brevis-large.safetensors";
  gen::SyntheticOptions options;
  options.targetBytes = 44u << 20;
  options.vocab = 5000;
  auto size = gen::writeSyntheticCheckpoint(path, options, /*overwrite=*/true);
  ASSERT_TRUE(size) << size.error().message;
  auto file = readFile(path);
  ASSERT_TRUE(file);
  std::remove(path.c_str());
  SynthOutput synth = synthesize(*file, "large.safetensors", "large.bdsl.bin", 2);
  const Checkpoint &c = synth.checkpoint;
  ASSERT_GT(c.regions[1].bytes.size, kDigestPieceBytes);
  std::vector<uint64_t> digests;
  for (const Region &r : c.regions) digests.push_back(regionDigest(ByteSpan(*file).subspan(r.bytes.offset, r.bytes.size)));
  Payload payload(std::move(synth.payload));
  auto jit = JitDecoder::create({});
  ASSERT_TRUE(jit);
  Interpreter interpreter;
  for (RegionDecoder *decoder : {static_cast<RegionDecoder *>(&interpreter), static_cast<RegionDecoder *>(jit->get())})
    for (unsigned threads : {1u, 3u}) {
      Bytes out(file->size());
      VectorPositionalSink sink(out);
      DecodeJob job{&c, &payload, digests, &sink, "large", {}};
      auto done = decodeJobs(std::span(&job, 1), *decoder, DecodeOptions{.threads = threads});
      ASSERT_TRUE(done) << done.error().message;
      EXPECT_TRUE(out == *file) << threads << " threads";
    }
}

namespace {

/// Fails the first write that covers byte `at`, and no other: only that failure can report
/// the loss.
class FailingSink final : public PositionalSink {
public:
  explicit FailingSink(uint64_t at) : at_(at) {}
  Result<void> writeAt(uint64_t offset, const uint8_t *, size_t size) override {
    if (offset <= at_ && at_ < offset + size && !failed_.exchange(true)) return Error{"input/output error"};
    return {};
  }

private:
  uint64_t at_;
  std::atomic<bool> failed_{false};
};

/// A sized buffer that takes bytes only through writeAt() (as a file does): decoding then goes
/// through the write buffers.
class WritesOnlySink final : public PositionalSink {
public:
  explicit WritesOnlySink(Bytes &out) : out_(out) {}
  Result<void> writeAt(uint64_t offset, const uint8_t *data, size_t size) override {
    if (offset + size > out_.size()) return Error{"written past the end"};
    std::memcpy(out_.data() + offset, data, size);
    return {};
  }

private:
  Bytes &out_;
};

/// The interpreter's bytes, passed on in uneven pieces by every route a ByteSink offers:
/// write(), reserve() and commit() of all of it, and reserve() of more than is committed.
class UnevenDecoder final : public RegionDecoder {
public:
  Result<void> decodeWords(const Region &region, const Payload &payload, uint64_t first, uint64_t count,
                           ByteSink &sink) override {
    Bytes bytes;
    VectorSink whole(bytes);
    BREVIS_TRY(interpreter_.decodeWords(region, payload, first, count, whole));
    std::mt19937_64 rng(region.bytes.offset * 31 + first); // calls may come from several threads
    for (size_t at = 0; at < bytes.size();) {
      const size_t n = std::min<size_t>(bytes.size() - at, 1 + rng() % 300000);
      switch (rng() % 3) {
      case 0: BREVIS_TRY(sink.write(bytes.data() + at, n)); break;
      case 1:
        std::memcpy(sink.reserve(n), bytes.data() + at, n);
        BREVIS_TRY(sink.commit(n));
        break;
      default:
        std::memcpy(sink.reserve(n + 1 + rng() % 5000), bytes.data() + at, n);
        BREVIS_TRY(sink.commit(n));
        break;
      }
      at += n;
    }
    return {};
  }

private:
  Interpreter interpreter_;
};

} // namespace

TEST(RoundTripLarge, OutputInUnevenPiecesIsExactAndAnyFailedWriteIsReported) {
  // Output is gathered into writes of 128 KiB (in place, with a queue or without), whatever sizes the
  // decoder hands over; a write failing anywhere in a file must come back as the error.
  std::string path = ::testing::TempDir() + "/brevis-uneven.safetensors";
  gen::SyntheticOptions options;
  options.targetBytes = 8u << 20;
  options.hidden = 512;
  options.vocab = 4000; // a 4 MB embedding
  auto size = gen::writeSyntheticCheckpoint(path, options, /*overwrite=*/true);
  ASSERT_TRUE(size) << size.error().message;
  auto file = readFile(path);
  ASSERT_TRUE(file);
  std::remove(path.c_str());
  SynthOutput synth = synthesize(*file, "w.safetensors", "w.bdsl.bin");
  std::vector<uint64_t> digests;
  uint64_t largest = 0;
  for (const Region &r : synth.checkpoint.regions) {
    digests.push_back(regionDigest(ByteSpan(*file).subspan(r.bytes.offset, r.bytes.size)));
    largest = std::max(largest, r.bytes.size);
  }
  ASSERT_GT(largest, 2u << 20); // a region spans many writes
  Payload payload(std::move(synth.payload));
  UnevenDecoder decoder;
  for (unsigned threads : {1u, 2u}) {
    Bytes out(file->size());
    VectorPositionalSink whole(out);
    DecodeJob job{&synth.checkpoint, &payload, digests, &whole, "w", {}};
    auto done = decodeJobs(std::span(&job, 1), decoder, DecodeOptions{.threads = threads});
    ASSERT_TRUE(done) << done.error().message;
    EXPECT_TRUE(out == *file) << threads << " threads";
    Bytes written(file->size());
    WritesOnlySink writes(written);
    job.output = &writes;
    done = decodeJobs(std::span(&job, 1), decoder, DecodeOptions{.threads = threads});
    ASSERT_TRUE(done) << done.error().message;
    EXPECT_TRUE(written == *file) << threads << " threads, through writeAt() alone";
    for (uint64_t k = 0; k <= 16; ++k) {
      const uint64_t at = std::min<uint64_t>(file->size() - 1, file->size() * k / 16 + k * 4099);
      FailingSink failing(at);
      job.output = &failing;
      auto failed = decodeJobs(std::span(&job, 1), decoder, DecodeOptions{.threads = threads});
      ASSERT_FALSE(failed) << "failing at byte " << at << ", " << threads << " threads";
      EXPECT_NE(failed.error().message.find("input/output error"), std::string::npos) << failed.error().message;
    }
  }
}
