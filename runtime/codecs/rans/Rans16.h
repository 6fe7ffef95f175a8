#pragma once
// Static order-0 rANS for `rans` literals of 9 to 16-bit words, whose alphabets are too large
// for htscodecs' byte coder (wire format in docs/format/literals.md):
//
//   varint K                        distinct words (1..65536)
//   K varints                       the words, ascending (first as is, then gaps minus 1)
//   K varints (K >= 2)              frequencies f_i >= 1 summing to 2^16 exactly
//   varint B (K >= 2)               words per block
//   per block (K >= 2): varint size, then 4 little-endian u32 final states, then the
//                       little-endian 16-bit renormalization words in decoding order
//
// Four states interleave: word i of a block is coded by state i % 4. States live in
// [2^16, 2^32); a decoder reads a 16-bit word whenever a state drops below 2^16, and every state
// must end at exactly 2^16, having read exactly the block's words.
#include "lang/Result.h"
#include "runtime/common/Bytes.h"
#include "runtime/common/Words.h"

#include <memory>
#include <span>
#include <vector>

namespace brevis {

struct WordHistogram; // runtime/codecs/huffman/HuffmanEncode.h

inline constexpr unsigned kRans16ScaleBits = 16;
/// Words per block the encoder writes (the format takes any). A block costs its four states and
/// its size, about 19 bytes. A block alone decodes through four states' chains of lookups and
/// multiplies, two blocks together through eight (kBlocksTogether): with 2^20 words a block, the
/// fields of a model's layer matrices (2^18 to 2^20 words) were one block each, and decoding
/// them was a fifth of decoding a 134 MB BF16 checkpoint of such layers. 2^16 decoded as fast as
/// 2^17 for ten times the added bytes there (8.4 KB against 0.9 KB).
inline constexpr uint64_t kRans16BlockWords = uint64_t{1} << 17;

/// Appends the encoding of `words` (each < 2^width, at most 65,536 distinct); false if there
/// are more distinct words than that.
/// `counted`, where given, is the words' histogram (histogram(words, width, 2^16)), or that of a
/// stream they are part of (every word of `words` among its words): its table is then coded.
/// `blockWords` (1 to 2^26): words per block, as archives written with other sizes have them.
bool encodeRans16(WordsView words, unsigned width, Bytes &out, const WordHistogram *counted = nullptr,
                  uint64_t blockWords = kRans16BlockWords);

class Rans16Decoder {
public:
  /// Blocks decoded by one call where there are that many: their states interleave.
  static constexpr size_t kBlocksTogether = 2;

  /// Without `buildTables`, only the table and the layout are checked (validation).
  static Result<std::unique_ptr<Rans16Decoder>> create(ByteSpan bytes, unsigned width, uint64_t count,
                                                       bool buildTables = true);
  const std::vector<uint64_t> &alphabet() const { return words_; }
  uint64_t blockWords() const { return blockWords_; }
  size_t blockCount() const { return blocks_.size(); }
  uint64_t blockLength(size_t b) const;
  /// Decodes blocks [first, first + n) one after another into `out`, as words (not alphabet
  /// indices: every word fits in 16 bits).
  Result<void> decodeBlocks(size_t first, size_t n, uint16_t *out) const;

private:
  struct Lane;
  Result<void> finishLane(Lane &lane) const;

  std::vector<uint64_t> words_;
  /// Per slot of 2^16: freq << 16 | (slot - start) of the symbol whose range holds it, which is
  /// all a state's step needs (one load in its chain), and that symbol's word.
  std::unique_ptr<uint32_t[]> slotStep_;
  std::unique_ptr<uint16_t[]> slotWord_;
  uint64_t count_ = 0, blockWords_ = 1;
  std::vector<ByteSpan> blocks_;
};

} // namespace brevis
