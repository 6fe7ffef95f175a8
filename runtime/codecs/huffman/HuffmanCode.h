#pragma once
// The canonical Huffman code of a `huffman` literal, shared by its encoder and decoder
// (wire format in docs/format/literals.md):
//
//   varint K                      number of distinct words (1..65536)
//   K varints                     the words, ascending: the first as is, then each minus the previous minus 1
//   ceil(K/2) bytes (if K >= 2)   code length - 1 of word i in nibble i (low nibble first), lengths 1..16
//
// Codes are canonical: assigned in order of (length, word index). The code must be complete
// (Kraft sum exactly 1), so that every bit pattern decodes to some word.
#include "lang/Result.h"
#include "runtime/common/Bytes.h"
#include "runtime/common/Varint.h"

#include <vector>

namespace brevis {

inline constexpr unsigned kHuffmanMaxLength = 16;
inline constexpr uint64_t kHuffmanMaxSymbols = 65536;
inline constexpr unsigned kHuffmanStreams = 4;
/// Words per independently decodable block: large enough to amortize the four stream sizes,
/// small enough that a block's symbols stay in L2 and blocks spread over cores.
inline constexpr uint64_t kHuffmanBlockWords = uint64_t{1} << 18;

struct HuffmanCode {
  std::vector<uint64_t> words;  ///< the alphabet, ascending; symbol i stands for words[i]
  std::vector<uint8_t> lengths; ///< code length of symbol i (empty when K == 1)
  unsigned maxLength = 0;
};

/// Appends the code's table to `out`.
void writeHuffmanCode(const HuffmanCode &code, Bytes &out);
/// Serialized size of the table.
uint64_t huffmanCodeSize(const HuffmanCode &code);

/// Reads and validates a table: words ascending and below 2^width, lengths 1..16, complete.
Result<HuffmanCode> readHuffmanCode(ByteReader &in, unsigned width);

/// Canonical codes, bit-reversed so that they can be written and read LSB first.
std::vector<uint32_t> canonicalCodesLsbFirst(const HuffmanCode &code);

} // namespace brevis
