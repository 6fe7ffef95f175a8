// End-to-end round trips of the committed real checkpoints through every layer:
// synth -> print -> parse -> check -> run (interpreter and JIT), and compress -> archive ->
// decompress, compared byte for byte with the original file.
#include "codegen/JitDecoder.h"
#include "frontend/Parser.h"
#include "lang/Diagnostics.h"
#include "lang/Printer.h"
#include "lang/TypeChecker.h"
#include "runtime/Archive.h"
#include "runtime/CheckpointRunner.h"
#include "runtime/FileIO.h"
#include "runtime/Interpreter.h"
#include "runtime/Checksum.h"
#include "runtime/ParallelDecode.h"
#include "synth/TemplateSynth.h"

#include <gtest/gtest.h>

using namespace brevis;

namespace {

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
  SynthOutput synth = synthesizeTemplate(file, GetParam(), "synth.bdsl.bin");
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
  EXPECT_EQ((*jit)->interpretedRegions(), 0u); // the template only uses what the JIT compiles
  EXPECT_EQ((*jit)->compiledRegions(), c.regions.size());
}

TEST_P(RoundTrip, ArchiveRoundTripIsBitExactOnAnyThreadCount) {
  Bytes file = original();
  SynthOutput synth = synthesizeTemplate(file, GetParam(), "synth.bdsl.bin", SynthOptions{.threads = 3});
  // Synthesis does not depend on the thread count.
  SynthOutput serial = synthesizeTemplate(file, GetParam(), "synth.bdsl.bin", SynthOptions{.threads = 1});
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
  member.index = indexFor(synth.checkpoint, digests);
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
      auto done = decodeJobs(std::span(&job, 1), *decoder, DecodeOptions{threads, nullptr});
      ASSERT_TRUE(done) << done.error().message;
      EXPECT_EQ(decoded, file) << threads << " threads, jit " << jit;
    }
  }

  // A wrong digest names the region.
  digests.back() ^= 1;
  DiscardPositionalSink discard;
  DecodeJob job{&module->checkpoint(), &back->members[0].payload, digests, &discard, "model.brv", {}};
  Interpreter interpreter;
  auto wrong = decodeJobs(std::span(&job, 1), interpreter, DecodeOptions{2, nullptr});
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("do not match their checksum"), std::string::npos) << wrong.error().message;
}

TEST_P(RoundTrip, CorruptPayloadIsCaughtNotMisdecoded) {
  Bytes file = original();
  SynthOutput synth = synthesizeTemplate(file, GetParam(), "synth.bdsl.bin");
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
  SynthOutput synth = synthesizeTemplate(file, "blob.bin", "blob.bdsl.bin");
  ASSERT_TRUE(synth.notSafetensorsReason);
  ASSERT_EQ(synth.checkpoint.regions.size(), 1u);
  EXPECT_EQ(synth.checkpoint.regions[0].kind, RegionKind::Bytes);
  Interpreter interpreter;
  Bytes out;
  VectorSink sink(out);
  ASSERT_TRUE(runCheckpoint(synth.checkpoint, Payload::fromBytes(synth.payload), interpreter, sink));
  EXPECT_EQ(out, file);
}
