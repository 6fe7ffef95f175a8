#pragma once
// IR emission: one decode function per program shape, in LLVM IR, for the ORC session to compile.
#include "lang/Ast.h"
#include "runtime/containers/Payload.h"

#include <cstdint>
#include <string>

namespace llvm {
class Module;
}

namespace brevis::jit {

/// Produces words [first, first + count) of one region's program, each stored little-endian in
/// containerBytes(W) bytes at out; `first` is a multiple of 8. operands[k] is where the k-th
/// payload literal's words come from (operandLiterals() order): for an entropy-coded literal, a
/// buffer holding its words [first, first + count), decoded by the runtime's kernels, each in
/// containerBytes of that literal's width (a byte for an 8-bit exponent, not eight); for a raw
/// literal, its payload bytes; for a bit-packed one, its payload bytes after the bit count.
/// Addresses are arguments, not constants, so that every region of one shape (a model's layers)
/// shares one compiled function.
using DecodeFn = void (*)(uint8_t *out, uint64_t first, uint64_t count, const void *const *operands);

/// Emits into `module` a DecodeFn named `name` for the supported program `root`, specialized to
/// its shape in `payload` (see appendShapeKey, which must have accepted it) and tuned for the
/// host's `cpu` and `features`.
void emitDecodeFunction(llvm::Module &module, const Payload &payload, const std::string &name, const Expr &root,
                        const std::string &cpu, const std::string &features);

} // namespace brevis::jit
