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

TEST_P(RoundTrip, ArchiveRoundTripIsBitExact) {
  Bytes file = original();
  SynthOutput synth = synthesizeTemplate(file, GetParam(), "synth.bdsl.bin");
  ArchiveContents contents{printCheckpoint(synth.checkpoint), synth.payload, file.size(),
                           synth.checkpoint.source.xxh64};
  Bytes archive = writeArchive(contents);
  EXPECT_LT(archive.size(), file.size()); // the float fields alone already save the unused bits

  auto back = readArchive(archive, "model.brv");
  ASSERT_TRUE(back) << back.error().message;
  auto module = reparse(back->programText);
  ASSERT_TRUE(module);
  Interpreter interpreter;
  EXPECT_EQ(decodeWith(interpreter, module->checkpoint(), Payload::fromBytes(back->payload)), file);
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
