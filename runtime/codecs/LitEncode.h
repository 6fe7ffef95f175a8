#pragma once
// Encoding of literal payloads; the inverse of LitDecode. Which encoding a literal gets, and
// size estimates, are the synthesizer's (synth/CostModel.h): decoders do not link them.
#include "lang/Ast.h"
#include "runtime/common/Bytes.h"
#include "runtime/common/Words.h"

#include <span>

namespace brevis {

/// Whether `encoding` can hold these words (huffman: at most 65,536 distinct; rans_o1, zstd: W <= 8).
bool encodingApplies(Encoding encoding, WordsView words, unsigned width);

/// The compression level of `zstd` literals where the caller names none (libzstd's levels, 1..22).
inline constexpr int kDefaultZstdLevel = 9;

/// Appends the encoding of `words` (each < 2^width) to `out`; false, with nothing appended,
/// if the encoding does not apply. `zstdLevel` is the compression level of a `zstd` literal;
/// `contextRawRoom` how much larger (a fraction) a `context` literal may be for storing more
/// low bits raw, which decode faster (0: the smallest).
bool encodeLit(Encoding encoding, WordsView words, unsigned width, Bytes &out,
               int zstdLevel = kDefaultZstdLevel, double contextRawRoom = 0.0);

/// Whether encodedSize() gives the encoding's exact size without encoding (raw and bitpack;
/// an entropy or LZ coder's size is known only by encoding).
bool hasCheapExactSize(Encoding encoding);

/// Exact size of an encoding that hasCheapExactSize (cheap, no encoding).
uint64_t encodedSize(Encoding encoding, WordsView words, unsigned width);

} // namespace brevis
