#pragma once
// Building literals from tensor bytes, shared by the strategies: the words go to the payload in
// the encoding the cost model (synth/CostModel.h) chooses, and a Lit node points at them.
#include "lang/Ast.h"
#include "runtime/common/Bytes.h"
#include "synth/CostModel.h"

#include <initializer_list>
#include <span>
#include <vector>

namespace brevis {

/// The little-endian words of `wordBytes` bytes each in `bytes`.
std::vector<uint64_t> readWords(ByteSpan bytes, unsigned wordBytes);

/// Bits [shift, shift + width) of each word: one field of a merge.
std::vector<uint64_t> extractField(std::span<const uint64_t> words, unsigned shift, unsigned width);
/// The same into `field` (resized to the words'), so that one buffer serves field after field.
void extractField(std::span<const uint64_t> words, unsigned shift, unsigned width, std::vector<uint64_t> &field);

/// A literal of `words` in the encoding `policy` picks, its payload appended to `payload`.
ExprPtr makeLit(std::span<const uint64_t> words, unsigned width, Bytes &payload, EncodePolicy policy);

/// A literal of `words` in the smallest of `encodings` (raw where none applies).
ExprPtr makeLitFrom(std::span<const uint64_t> words, unsigned width, Bytes &payload,
                    std::initializer_list<Encoding> encodings);

/// A literal of `words` Huffman-coded or raw, whichever is smaller: how the peers' pipelines
/// (ZipNN's byte planes, DFloat11's exponent) code a stream.
ExprPtr makeHuffmanOrRawLit(std::span<const uint64_t> words, unsigned width, Bytes &payload);

} // namespace brevis
