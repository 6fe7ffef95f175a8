// libFuzzer target: the compress path on arbitrary files, as `brevisc compress` runs it before it
// writes anything: synthesize (safetensors or not), print, parse and check the printed program,
// decode it with the interpreter. The result must be the input, byte for byte. Seeds are small
// safetensors files of every dtype (test/fuzz/corpus/compress), whose tensor bytes mutations
// change freely and whose headers they bend into near-misses of the format.
#include "frontend/Parser.h"
#include "lang/Printer.h"
#include "lang/TypeChecker.h"
#include "runtime/execution/CheckpointRunner.h"
#include "runtime/execution/Interpreter.h"
#include "synth/Driver.h"

#include <cstring>

using namespace brevis;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const ByteSpan file(data, size);
  // The level follows the input, so that every policy is exercised.
  auto strategy = makeStrategy(kDefaultStrategy, strategyOptionsForLevel(1 + static_cast<int>(size % 9)));
  if (!strategy) __builtin_trap();
  SynthOutput synth = synthesizeCheckpoint(file, "fuzz.safetensors", "fuzz.bdsl.bin", **strategy);
  const std::string text = printCheckpoint(synth.checkpoint);
  Diagnostics diags("fuzz.bdsl", text);
  auto module = parseModule(diags);
  if (!module || !module->isCheckpoint()) __builtin_trap(); // the printer wrote what the parser refuses
  TypeChecker checker(diags);
  if (!checker.checkModule(*module) || checker.sawHole()) __builtin_trap();
  Bytes out;
  VectorSink sink(out);
  Interpreter interpreter;
  auto done = runCheckpoint(module->checkpoint(), Payload(std::move(synth.payload)), interpreter, sink);
  if (!done || out.size() != size || (size && std::memcmp(out.data(), data, size) != 0)) __builtin_trap();
  return 0;
}
