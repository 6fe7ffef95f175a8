#pragma once
// IR emission: one decode function per program shape, in LLVM IR, for the ORC session to compile
// (docs/jit.md: fused loops and readers).
#include "lang/Ast.h"
#include "runtime/containers/Payload.h"

#include <cstdint>
#include <string>

namespace llvm {
class Module;
}

namespace brevis::jit {

/// Skips the next `skip` words of one region's program, then writes the `count` words after them
/// to `out`, each stored little-endian in containerBytes(W) bytes; count is at most the
/// `maxWords` the function was emitted for. Successive calls continue where the last stopped:
/// `state` (FrameLayout::stateSlots words, all zero before the first call) holds the readers'
/// positions, and `scratch` (FrameLayout::scratchBytes bytes) their buffers.
///
/// operands[k] is the k-th payload literal's (operandLiterals() order): for a raw literal its
/// payload bytes, for a bit-packed one its payload bytes after the bit count, for a literal a
/// cursor decodes (huffman, rans, rans_o1, zstd, context) the runtime's stream handle. After the
/// literals come the LitStreamCallbacks, one pointer each, that generated code calls with those
/// handles. Addresses are arguments, not constants, so that every region of one shape (a model's
/// layers) shares one compiled function.
using DecodeFn = void (*)(uint8_t *out, uint64_t skip, uint64_t count, const void *const *operands, uint64_t *state,
                          uint8_t *scratch);

/// The runtime's side of a cursor-decoded literal: its next n words into `out` (each in
/// containerBytes of the literal's width), a skip, a rewind, and a view: the next n words where
/// the cursor holds them decoded, or else read into `scratch`, and where they are. Errors are
/// the runtime's to record.
struct LitStreamCallbacks {
  void (*read)(void *stream, void *out, uint64_t n);
  void (*skip)(void *stream, uint64_t n);
  void (*reset)(void *stream);
  const void *(*view)(void *stream, void *scratch, uint64_t n);
};
inline constexpr size_t kLitStreamCallbackCount = 4;

/// What a caller of a DecodeFn allocates for it.
struct FrameLayout {
  uint64_t stateSlots = 0;
  uint64_t scratchBytes = 0;
};

/// Emits into `module` a DecodeFn named `name` for `root` (well-typed: appendShapeKey has
/// accepted it), specialized to its shape in `payload`, producing at most `maxWords` words a
/// call, and tuned for the host's `cpu` and `features`.
FrameLayout emitDecodeFunction(llvm::Module &module, const Payload &payload, const std::string &name, const Expr &root,
                               uint64_t maxWords, const std::string &cpu, const std::string &features);

} // namespace brevis::jit
