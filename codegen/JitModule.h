#pragma once
// The JIT as a module loaded on demand (libbrevis-jit.so): the names the module exports and what
// the host checks before calling it. Commands that do not decode with --jit never load the
// module, and so never load LLVM. C++ objects (a RegionDecoder, Results, std::function) cross
// the boundary, which is sound only when host and module were built from the same sources by
// the same compiler with the same flags: the module exports its build's identity, and the host
// calls the entry point only when that identity is its own.
#include "lang/Result.h"
#include "runtime/execution/RegionDecoder.h"

#include <functional>
#include <memory>
#include <string>

namespace brevis {

/// The module's file name.
inline constexpr const char *kJitModuleFileName = "libbrevis-jit.so";

/// The build identity both sides are compiled with (BREVIS_JIT_BUILD_ID, set by CMake): version,
/// compiler, build type, sanitizers, and a token drawn when the build tree was configured.
inline constexpr const char *kJitBuildId = BREVIS_JIT_BUILD_ID;

/// Exported symbols: a NUL-terminated build identity, and the factory.
inline constexpr const char *kJitModuleBuildIdSymbol = "brevis_jit_build_id";
inline constexpr const char *kJitModuleFactorySymbol = "brevis_jit_make_decoder";

using JitNotice = std::function<void(const std::string &)>;

/// What the host asks of the JIT decoder it makes (JitDecoder::create).
struct JitSettings {
  JitNotice notice;
  /// Where to write the generated IR, before and after optimization; empty: nowhere.
  std::string emitLlvm;
  /// The directory of compiled code kept across runs; empty: none.
  std::string cacheDir;
  /// What compiled code depends on besides its shape (ShapeCodeCache): with a cache, each
  /// function's object is also kept by its shape key under it; empty: not kept so.
  std::string shapeIdentity;
};

/// The factory's type: sets *out to a JIT decoder made with *settings (JitDecoder::create).
/// C++ types travel by pointer so that the signature stays C-compatible for dlsym.
using JitModuleFactory = void (*)(const JitSettings *settings, Result<std::unique_ptr<RegionDecoder>> *out);

} // namespace brevis
