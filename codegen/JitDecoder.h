#pragma once
// A RegionDecoder that runs native code generated per program by LLVM ORC (LLJIT). LLVM stays
// behind the pimpl: including this header does not pull in LLVM.
#include "codegen/CompiledRun.h"
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

/// Decodes regions with native code generated per program (docs/jit.md): every well-typed
/// program compiles, every operator at any nesting. Raw, bit-packed and inline literals are read
/// by the generated code itself; entropy- and LZ-coded literals (huffman, rans, rans_o1, zstd,
/// context) by the runtime's cursors, which the generated code calls.
///
/// Generated code is specialized to a program's shape: its operators and their constants, the
/// lengths concat and repeat walk by, literal kinds and widths, and bitpack bit counts (read from
/// the payload); literal addresses are arguments. Compiled functions are cached by that shape, so
/// the regions of a model's repeated layers share one function, and a program decoded against
/// another payload reuses or recompiles code as its shape says, never misdecodes.
/// decodeWords() may run on several threads at once; prepare() may not.
class JitDecoder final : public RegionDecoder {
public:
  using Notice = std::function<void(const std::string &)>;

  /// Output is produced in chunks of this many bytes, whatever the region's size.
  static constexpr size_t kChunkBytes = jit::kChunkBytes;
  /// A program of more nodes than this is decoded by the interpreter (jit::kMaxCompiledNodes).
  static constexpr size_t kMaxCompiledNodes = jit::kMaxCompiledNodes;
  /// Once shapes of this many nodes in all have been compiled (or loaded from the cache),
  /// regions of further new shapes are interpreted: a shape of 256 nodes takes a third of a
  /// second to compile, and an archive may hold thousands of distinct ones. The corpus' 26
  /// checkpoints have 377 shapes of about ten nodes in all.
  static constexpr size_t kMaxSessionNodes = 8192;

  /// Sets up the JIT for the host CPU. `notice` (for remarks about decoding) may be empty; a
  /// non-empty `emitLlvm` names a file that receives every module's IR before and after
  /// optimization (created or truncated here); a non-empty `cacheDir` keeps compiled code across
  /// runs in that directory (docs/jit.md), created if needed, unused where it cannot be.
  /// `nodeBudget` is the session's budget of compiled nodes (kMaxSessionNodes). With a cache, a
  /// non-empty `shapeIdentity` keeps each function's object by its shape key too, for runs that
  /// load it without LLVM (ShapeCodeCache, CachedCodeDecoder).
  static Result<std::unique_ptr<JitDecoder>> create(Notice notice, const std::string &emitLlvm = {},
                                                    const std::string &cacheDir = {},
                                                    size_t nodeBudget = kMaxSessionNodes,
                                                    const std::string &shapeIdentity = {});
  ~JitDecoder() override;

  /// Compiles every region of `c`, specialized to `payload`, in one batch (one function per
  /// program shape), split into a few modules that the JIT compiles concurrently, one per
  /// hardware thread at most. Optional: decode() compiles on demand, one region at a time.
  /// The literals of `c` must have been validated against `payload` (validatePayload).
  Result<void> prepare(const Checkpoint &c, const Payload &payload) override;

  /// Writes the range's bytes to `sink` in chunks of at most kChunkBytes. Every literal of the
  /// region must have been validated against `payload`. Thread-safe: compilation on demand and
  /// notices are serialized.
  Result<void> decodeWords(const Region &region, const Payload &payload, uint64_t first, uint64_t count,
                           ByteSink &sink) override;

  /// "jit: N functions (C compiled, H from the cache) in T ms (session set-up S ms); R region
  /// pieces decoded".
  std::string summary() const override;

  /// Region pieces decodeWords() has decoded with compiled code.
  size_t compiledRegions() const;
  /// Region pieces decodeWords() has left to the interpreter (programs of more than
  /// kMaxCompiledNodes nodes, or of new shapes past kMaxSessionNodes).
  size_t interpretedRegions() const;
  /// Functions made so far: one per program shape, compiled or loaded from the cache.
  size_t compiledFunctions() const;
  /// Of those, the ones loaded from the cache.
  size_t cachedFunctions() const;

private:
  struct Impl;
  explicit JitDecoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace brevis
