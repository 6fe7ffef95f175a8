// libFuzzer target: reading an archive, then parsing, checking and running the program it
// holds, as `brevisc decompress` does, on arbitrary bytes.
#include "frontend/Parser.h"
#include "lang/TypeChecker.h"
#include "runtime/Archive.h"
#include "runtime/CheckpointRunner.h"
#include "runtime/Checksum.h"
#include "runtime/Interpreter.h"

#include <cstring>

using namespace brevis;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Mutations almost never keep the trailing checksum right, so the target sets it: that lets
  // the fuzzer reach the program, payload and decoders behind it. (The checksum itself is
  // covered by the unit tests.)
  Bytes bytes(data, data + size);
  if (bytes.size() >= 8) {
    uint64_t sum = xxh64(ByteSpan(bytes).first(bytes.size() - 8));
    std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  }
  auto archive = readArchive(bytes, "fuzz.brv");
  if (!archive) return 0;
  Diagnostics diags("fuzz.bdsl", archive->programText);
  auto module = parseModule(diags);
  if (!module || !module->isCheckpoint()) return 0;
  TypeChecker checker(diags);
  if (!checker.checkModule(*module) || checker.sawHole()) return 0;
  Interpreter interpreter;
  DiscardSink sink;
  (void)runCheckpoint(module->checkpoint(), Payload::fromBytes(archive->payload), interpreter, sink);
  return 0;
}
