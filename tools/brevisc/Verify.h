#pragma once
// The round trip every compression is held to before anything is written: the printed
// program is parsed back, type-checked and executed, and must reproduce the input exactly.
#include "lang/Result.h"
#include "runtime/common/Bytes.h"

#include <string>

namespace brevis::cli {

Result<void> verifyProgram(const std::string &programName, const std::string &programText, const Bytes &payload);

} // namespace brevis::cli
