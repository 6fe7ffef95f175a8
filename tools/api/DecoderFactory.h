#pragma once
// Choosing the executor that decodes regions: the interpreter, or the LLVM-compiled decoders.
#include "lang/Result.h"
#include "runtime/execution/RegionDecoder.h"

#include <functional>
#include <memory>
#include <string>

namespace brevis {

/// The interpreter, or the JIT reporting notices through `notice`.
///
/// The JIT lives in a module of its own, libbrevis-jit.so, loaded (with LLVM) by the first call
/// that asks for it and kept until the process exits. The module used is the first that exists of:
///   1. $BREVIS_JIT_MODULE, when set (and then only that file);
///   2. libbrevis-jit.so next to the executable;
///   3. ../lib/brevis/libbrevis-jit.so relative to the executable's folder (an installed layout);
///   4. for an executable inside the build tree it was built in, that build's module.
/// The executable's path is /proc/self/exe, symbolic links resolved. A module that is missing,
/// cannot be loaded or comes from another build is an error naming where it looked.
/// With the JIT, `emitLlvm` names a file for the IR it generates (empty: none). The JIT keeps
/// compiled code across runs in $BREVIS_JIT_CACHE ("off" or empty: nowhere), by default
/// $XDG_CACHE_HOME/brevis/jit or else $HOME/.cache/brevis/jit.
Result<std::unique_ptr<RegionDecoder>> makeRegionDecoder(bool jit, std::function<void(const std::string &)> notice,
                                                         const std::string &emitLlvm = {});

} // namespace brevis
