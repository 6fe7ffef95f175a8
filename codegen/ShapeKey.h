#pragma once
// The shape of a program the JIT compiles: everything its generated code depends on, as a key
// under which compiled functions are cached, and the facts about a program that emission and the
// chunk driver share.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/containers/Payload.h"

#include <cstdint>
#include <string>
#include <vector>

namespace brevis::jit {

/// The payload literals (every literal but inline ones) of a program, in pre-order:
/// their index is their slot in the generated function's `operands` argument.
void operandLiterals(const Expr &e, std::vector<const Lit *> &out);

/// Whether generated code reads the payload literal `l` through the runtime's cursor, called back
/// into, rather than locating its words in the payload itself: entropy- and LZ-coded literals,
/// and bit-packed ones whose bit count is not 0 or a whole power-of-two of bytes (the runtime
/// unpacks those with BMI2 or AVX-512 VBMI, faster than the loops LLVM makes of them). The
/// emitter and the chunk driver must agree on it. `l`'s range must lie inside `payload`.
bool readsThroughCursor(const Lit &l, const Payload &payload);

/// The stream type of an expression by the operators' typing rules (lang/OperatorTyping.h); a
/// broken rule is an error, so that the generated code's loops and shifts, which follow from
/// the types, are sound even for a program nobody checked.
Result<StreamType> typeOf(const Expr &e);

/// Appends to `key` everything the generated code for `e` depends on: the program's structure and
/// constants, each literal's kind, width and whether it is empty, and the bitpack bit counts
/// read from the payload (not the literals' lengths or offsets: those are arguments). Equal keys
/// mean interchangeable code. Also checks, in O(1) per literal, that every load the code will make stays inside the
/// payload (plus its slack), so that even an unvalidated payload cannot make it read wild memory,
/// and that the program is well-typed (typeOf).
Result<void> appendShapeKey(const Expr &e, const Payload &payload, std::string &key);

/// The name of the decode function compiled for `shapeKey`: a hash of it, so that a module's
/// text, and its code, are the same in every run.
std::string decodeFunctionName(const std::string &shapeKey);

} // namespace brevis::jit
