#pragma once
// Encoding of `huffman` literals: count -> build lengths (Huffman, then limited with the JPEG
// method, keeping the code complete) -> write the table -> encode each block's words
// as four runs of consecutive words, each an LSB-first bit stream.
#include "runtime/common/Bytes.h"
#include "runtime/common/RunBlocks.h"
#include "runtime/common/Words.h"
#include "runtime/codecs/huffman/HuffmanCode.h"

#include <optional>
#include <span>

namespace brevis {

/// Code lengths (1..limit) for symbols with these counts (at least two, all non-zero), complete.
std::vector<uint8_t> huffmanLengths(std::span<const uint64_t> counts, unsigned limit);

/// Appends the `huffman` encoding of `words` (each < 2^width); false (and nothing appended)
/// if they have more distinct values than a huffman literal allows. `byteCounts`, where the
/// caller has counted words of at most 8 bits (256 entries), saves counting them again. `run`,
/// where given, codes the blocks (RunBlocks.h).
bool encodeHuffman(WordsView words, unsigned width, Bytes &out, const uint64_t *byteCounts = nullptr,
                   const RunBlocks *run = nullptr);

/// The distinct words and how often each occurs (ascending), or nullopt beyond `maxSymbols`.
struct WordHistogram {
  std::vector<uint64_t> words;
  std::vector<uint64_t> counts;
};
/// encodeHuffman with the words' histogram already made (histogram(words, width, kHuffmanMaxSymbols)).
bool encodeHuffman(WordsView words, unsigned width, Bytes &out, const WordHistogram &counted,
                   const RunBlocks *run = nullptr);
std::optional<WordHistogram> histogram(WordsView words, unsigned width, uint64_t maxSymbols);

/// The histogram of bytes counted in counts[0..256).
WordHistogram histogramOfBytes(const uint64_t *counts);
/// Adds how often each value occurs to `counts` (2^width entries), for width <= 16.
void countWords(WordsView words, unsigned width, uint64_t *counts);

} // namespace brevis
