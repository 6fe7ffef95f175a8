#pragma once
// Encoding of the two fixed-width literal formats: `raw` (each word little-endian in
// containerBytes(W) bytes) and `bitpack` (a bit count b, then every word in b bits, LSB first;
// lang/BitpackFormat.h). Both are exact: their sizes follow from the words without encoding.
#include "runtime/common/Bytes.h"
#include "runtime/common/Words.h"

#include <span>

namespace brevis {

/// The bits per word a bitpack encoding of `words` uses: the fewest that hold every word.
unsigned bitpackBits(WordsView words);

/// Appends the `raw` encoding of `words` (each < 2^width) to `out`.
void encodeRaw(WordsView words, unsigned width, Bytes &out);

/// Appends the `bitpack` encoding of `words` to `out`, at bitpackBits(words) bits per word.
void encodeBitpack(WordsView words, Bytes &out);
/// The same where the caller knows bits == bitpackBits(words) (a pass over the words less).
void encodeBitpack(WordsView words, unsigned bits, Bytes &out);

} // namespace brevis
