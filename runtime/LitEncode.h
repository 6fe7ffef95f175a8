#pragma once
// Encoding of literal payloads; the inverse of LitDecode. The encoder picks the smallest
// encoding by exact size, ties going to the earlier encoding in Encoding's order.
#include "lang/Ast.h"
#include "runtime/Bytes.h"

#include <span>

namespace brevis {

/// Exact payload size of `words` (each < 2^width) in `encoding`.
uint64_t encodedSize(Encoding encoding, std::span<const uint64_t> words, unsigned width);

/// Appends the encoding of `words` to `out`.
void encodeLit(Encoding encoding, std::span<const uint64_t> words, unsigned width, Bytes &out);

/// The smallest encoding for these words.
Encoding chooseEncoding(std::span<const uint64_t> words, unsigned width);

} // namespace brevis
