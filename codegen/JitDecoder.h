#pragma once
// A RegionDecoder that runs native code generated per program by LLVM ORC (LLJIT). LLVM stays
// behind the pimpl: including this header does not pull in LLVM.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/execution/ByteSink.h"
#include "runtime/containers/Payload.h"
#include "runtime/execution/RegionDecoder.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace brevis {

/// Decodes regions with native code generated per program. Programs made only of lit, const and
/// merge — at any nesting — are compiled; any other program is decoded by the interpreter, and
/// the fallback is reported through the notice callback once per operator kind, e.g. "note: the
/// JIT does not compile 'scan' yet; 3 regions use the interpreter". Raw, bit-packed and inline
/// literals are read by the generated code itself; entropy- and LZ-coded literals (huffman,
/// rans, zstd) are decoded chunk by chunk by the runtime's kernels into buffers the generated
/// code reads.
///
/// Generated code is specialized to a program's shape: its operators, constants, literal kinds
/// and widths, and bitpack bit counts (read from the payload); literal addresses are arguments.
/// Compiled functions are cached by that shape, so the regions of a model's repeated layers
/// share one function, and a program decoded against another payload reuses or recompiles
/// code as its shape says, never misdecodes.
/// decodeWords() may run on several threads at once; prepare() may not.
class JitDecoder final : public RegionDecoder {
public:
  using Notice = std::function<void(const std::string &)>;

  /// Output is produced in chunks of this many bytes, whatever the region's size.
  static constexpr size_t kChunkBytes = 64 * 1024;

  /// Sets up the JIT for the host CPU. `notice` may be empty.
  static Result<std::unique_ptr<JitDecoder>> create(Notice notice);
  ~JitDecoder() override;

  /// Compiles every supported region of `c`, specialized to `payload`, in one batch (one function
  /// per region; identical programs share one), split into a few modules that the JIT compiles
  /// concurrently, one per hardware thread at most; then reports the interpreter fallbacks with
  /// their region counts. Optional: decode() compiles on demand, one region at a time.
  /// The literals of `c` must have been validated against `payload` (validatePayload).
  Result<void> prepare(const Checkpoint &c, const Payload &payload) override;

  /// Writes the range's bytes to `sink` in chunks of at most kChunkBytes. Every literal of the
  /// region must have been validated against `payload`. Thread-safe: compilation on demand and
  /// notices are serialized.
  Result<void> decodeWords(const Region &region, const Payload &payload, uint64_t first, uint64_t count,
                           ByteSink &sink) override;

  /// Whether `e` is compiled: made only of lit, const and merge.
  static bool supports(const Expr &e);

  /// "jit: N functions compiled in T ms (session set-up S ms); R region pieces ran compiled code,
  /// I the interpreter".
  std::string summary() const override;

  /// Regions decode() has run as native code and through the interpreter, respectively.
  size_t compiledRegions() const;
  size_t interpretedRegions() const;
  /// Functions compiled so far: one per program shape.
  size_t compiledFunctions() const;

private:
  struct Impl;
  explicit JitDecoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace brevis
