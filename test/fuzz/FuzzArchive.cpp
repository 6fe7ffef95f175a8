// libFuzzer target: reading an archive, then parsing, checking and running the program it
// holds, as `brevisc decompress` does, on arbitrary bytes.
#include "frontend/Parser.h"
#include "lang/TypeChecker.h"
#include "runtime/Archive.h"
#include "runtime/CheckpointRunner.h"
#include "runtime/Interpreter.h"

using namespace brevis;

namespace {
class DiscardSink final : public ByteSink {
public:
  Result<void> write(const uint8_t *, size_t) override { return {}; }
};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto archive = readArchive(ByteSpan(data, size), "fuzz.brv");
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
