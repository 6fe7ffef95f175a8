#pragma once
// The interpreter's fused path for the programs most tensors get: a merge of literal and
// constant fields (or a single literal) whose words fit 32 bits, a literal field possibly under
// `map add|xor [column constants]` — BF16/F16/F32 split into
// sign, exponent and mantissa, and byte streams. Each field is decoded straight into an array
// of the output's word type (u8, u16 or u32), the fields are shifted together in place, and
// the array is the output: no 64-bit intermediate words, no per-node virtual calls per chunk.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/execution/ByteSink.h"
#include "runtime/containers/Payload.h"

namespace brevis {

/// Whether decodeFused() handles `e` (a well-typed, hole-free expression).
bool fusedKernelApplies(const Expr &e);

/// Writes words [first, first + count) of `e`, little-endian in containerBytes(W) bytes each.
/// Same preconditions as RegionDecoder::decodeWords.
Result<void> decodeFused(const Expr &e, const Payload &payload, uint64_t first, uint64_t count, ByteSink &sink);

} // namespace brevis
