#pragma once
// Choosing the executor that decodes regions: the interpreter, or the LLVM-compiled decoders.
#include "lang/Result.h"
#include "runtime/execution/RegionDecoder.h"

#include <functional>
#include <memory>
#include <string>

namespace brevis {

/// The interpreter, or the JIT reporting notices (interpreter fallbacks) through `notice`.
Result<std::unique_ptr<RegionDecoder>> makeRegionDecoder(bool jit, std::function<void(const std::string &)> notice);

} // namespace brevis
