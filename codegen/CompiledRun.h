#pragma once
// Running a compiled decode function over a region (docs/jit.md): the operands it reads, the
// runtime's cursors it calls back into, and the chunk loop. Shared by the JIT's decoder and by
// the decoder of code loaded from the cache without LLVM (CachedCodeDecoder).
#include "codegen/DecodeFunctionEmitter.h"
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/containers/Payload.h"
#include "runtime/execution/ByteSink.h"

#include <cstddef>
#include <cstdint>

namespace brevis::jit {

/// Output is produced in chunks of this many bytes, whatever the region's size.
inline constexpr size_t kChunkBytes = 64 * 1024;

/// A program of more nodes (operators and literals) than this is not compiled but decoded by
/// the interpreter: compile time and memory grow with a program (a concat of 1,000 parts takes
/// seconds, of 10,000 a third of a gigabyte), and an archive's program may be made to be huge,
/// where the synthesizer's have a dozen nodes.
inline constexpr size_t kMaxCompiledNodes = 256;

/// The most words one call of a region's function produces: a chunk of output.
uint64_t chunkWords(unsigned width);

/// The nodes of `e`, counted up to limit + 1 (where counting stops).
size_t nodesUpTo(const Expr &e, size_t limit);

/// Checks that `region`'s program (well-typed) produces exactly its bytes, and that words
/// [first, first + count) lie inside it.
Result<void> checkWordRange(const Region &region, uint64_t first, uint64_t count);

/// Writes words [first, first + count) of `region` to `sink`, in chunks of at most kChunkBytes,
/// with `fn`, the function compiled for its program's shape (checkWordRange has passed, and
/// every literal of the region has been validated against `payload`).
Result<void> runCompiled(DecodeFn fn, const FrameLayout &layout, const Region &region, const Payload &payload,
                         uint64_t first, uint64_t count, ByteSink &sink);

} // namespace brevis::jit
