#pragma once
// Compiled decoders run without LLVM (docs/jit.md, "Across runs"): x86-64 ELF relocatable
// objects, as LLVM compiles a decode function's module, placed together in memory of their own,
// relocated and made executable. Loading LLVM to link a few kilobytes of cached code cost a
// `--jit` run ~30 ms; this costs microseconds per object.
//
// It accepts only what LLVM makes of the generated code: sections of code and of constants
// (and tables of addresses), relocations R_X86_64_PC32, _PLT32 and _64, and calls of memcpy
// and memset. Anything else is refused with a reason, and the caller compiles the shape again
// through LLVM.
#include "lang/Result.h"
#include "runtime/common/Bytes.h"

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace brevis::jit {

class LoadedCode {
public:
  /// Places, relocates and protects `objects` in one mapping (code read-and-execute, constants
  /// read-only): one mapping and one protection per kind of section for a checkpoint's shapes,
  /// where a mapping each took a third of the loading. outcomes[i] says whether objects[i] was
  /// loaded, or why not; the others are loaded all the same. Null when none was.
  static std::unique_ptr<LoadedCode> load(std::span<const ByteSpan> objects, std::vector<Result<void>> &outcomes);
  /// One object; its refusal as an error.
  static Result<std::unique_ptr<LoadedCode>> load(ByteSpan object);
  ~LoadedCode();
  LoadedCode(const LoadedCode &) = delete;
  LoadedCode &operator=(const LoadedCode &) = delete;

  /// The address of the global function `name` a loaded object defines, or null.
  void *function(const std::string &name) const;

private:
  LoadedCode() = default;
  void *memory_ = nullptr;
  size_t size_ = 0;
  std::unordered_map<std::string, void *> functions_;
};

} // namespace brevis::jit
