#include "tools/brevisc/Verify.h"

#include "tools/brevisc/Common.h"

namespace brevis::cli {

Result<void> verifyProgram(const std::string &programName, const std::string &programText, const Bytes &payload) {
  auto module = loadProgram(programName, programText, /*requireRunnable=*/true);
  if (!module) return Error{"internal error: the synthesized program does not check"};
  DiscardSink sink;
  auto decoded = decodeCheckpoint(module->checkpoint(), Payload::fromBytes(payload), DecodeOptions{}, sink);
  if (!decoded) return Error{"internal error: the synthesized program does not reproduce the input: " + decoded.error().message};
  return {};
}

} // namespace brevis::cli
