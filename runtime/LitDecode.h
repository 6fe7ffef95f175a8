#pragma once
// Decoding of literal payloads (wire formats in docs/format/literals.md).
//
//   raw      N words, each in containerBytes(W) little-endian bytes; every word < 2^W.
//   bitpack  one byte b (0 <= b <= W), then ceil(N*b/8) bytes holding word i in bits
//            [i*b, i*b+b) of a little-endian bit stream; unused high bits of the last byte are 0.
//
// validateLit() checks a literal's payload completely (sizes, headers, every word's range)
// without decoding it into memory; after it succeeds, a decoder may run unchecked.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/Payload.h"

namespace brevis {

/// Checks that the payload of `lit` (a payload reference) is a well-formed encoding of its type.
Result<void> validateLit(const Lit &lit, const Payload &payload);

/// The bit count b of a validated bitpack literal.
unsigned bitpackBits(const Lit &lit, const Payload &payload);

/// Decodes words [first, first + count) of a validated literal into `out`.
void decodeLitWords(const Lit &lit, const Payload &payload, uint64_t first, size_t count, uint64_t *out);

} // namespace brevis
