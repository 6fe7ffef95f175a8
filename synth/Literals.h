#pragma once
// Building literals from tensor bytes, shared by the synthesizers.
#include "lang/Ast.h"
#include "runtime/common/Bytes.h"
#include "runtime/codecs/LitEncode.h"

#include <initializer_list>
#include <span>
#include <vector>

namespace brevis {

/// The little-endian words of `wordBytes` bytes each in `bytes`.
std::vector<uint64_t> readWords(ByteSpan bytes, unsigned wordBytes);

/// A literal of `words` in the encoding `policy` picks, its payload appended to `payload`.
ExprPtr makeLit(std::span<const uint64_t> words, unsigned width, Bytes &payload, EncodePolicy policy);

/// A literal of `words` in the smallest of `encodings` (which must include raw or bitpack).
ExprPtr makeLitFrom(std::span<const uint64_t> words, unsigned width, Bytes &payload,
                    std::initializer_list<Encoding> encodings);

} // namespace brevis
