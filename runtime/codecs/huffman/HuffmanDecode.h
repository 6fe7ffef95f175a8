#pragma once
// Decoding of `huffman` literals: read the table -> build a lookup table (2^L entries for a
// long literal, L its longest code; 2^11 and a second level for a short one) -> per
// block, decode the four LSB-first streams (each a run of the block's words), several symbols
// per refill. The fast loop loads 8 bytes at a time while every stream's next byte is within
// its bytes (the payload's 16 bytes of slack cover the loads past the end); the tail loads
// byte by byte. Every block checks that each stream was consumed exactly.
#include "lang/Result.h"
#include "runtime/common/Bytes.h"
#include "runtime/codecs/huffman/HuffmanCode.h"

#include <memory>

namespace brevis {

/// Index bits of the primary lookup table of a literal too short to pay for 2^L entries (L its
/// longest code): 2^11 entries fit the L1 cache.
inline constexpr unsigned kHuffmanPrimaryBits = 11;
/// A literal of 2^(L + this) words or more gets the full 2^L-entry table: wide alphabets...
inline constexpr unsigned kHuffmanFullTableShift = 2;
/// ...and byte alphabets, whose entries decode up to three symbols each and cost more to build.
inline constexpr unsigned kHuffmanFullPairTableShift = 5;
/// Byte alphabets decode several symbols per lookup (a pair table of 2^K entries, each built by
/// up to three lookups) from 2^(K + this) words on.
inline constexpr unsigned kHuffmanPairTableShift = 2;
/// The primary table's index bits K for a code of `symbols` words whose longest code has
/// `maxLength` bits, decoding `count` words: maxLength where it is at most kHuffmanPrimaryBits or
/// the literal is long enough (above); kHuffmanPrimaryBits otherwise.
unsigned huffmanPrimaryBits(unsigned maxLength, uint64_t count, size_t symbols);

struct HuffmanLookupTable;

/// A parsed, validated `huffman` literal that decodes block by block.
class HuffmanDecoder {
public:
  /// Parses the table and the block layout of a literal of `count` words of `width` bits in
  /// `bytes`; the bytes must stay alive and have 16 readable bytes after them (Payload does).
  /// Without `buildTables`, only the table and the layout are checked (validation): decodeBlock()
  /// must not be called then.
  static Result<std::unique_ptr<HuffmanDecoder>> create(ByteSpan bytes, unsigned width, uint64_t count,
                                                        bool buildTables = true);

  uint64_t blockWords() const { return blockWords_; }
  size_t blockCount() const { return blocks_.size(); }
  const std::vector<uint64_t> &alphabet() const { return code_.words; }

  /// Decodes block `b` into symbol indices (alphabet() maps them to words); `out` holds at
  /// least blockWords() entries. Fails on a stream that is too short or has bits left over.
  Result<void> decodeBlock(size_t b, uint16_t *out) const;
  /// The same for alphabets of at most 256 words (a quarter of the memory traffic of words).
  Result<void> decodeBlock(size_t b, uint8_t *out) const;
  /// Words [b * blockWords(), ...) of block b.
  uint64_t blockLength(size_t b) const;

private:
  void buildLookupTables();
  void buildPairTable();
  HuffmanLookupTable lookupTable() const;
  /// Checks that each stream of block b (BitStream[4] after decoding) used exactly its bytes.
  Result<void> checkStreamsConsumed(size_t b, const void *streams) const;

  struct Block {
    const uint8_t *streams[kHuffmanStreams];
    uint64_t sizes[kHuffmanStreams];
    uint64_t starts[kHuffmanStreams + 1]; ///< stream k codes words [starts[k], starts[k + 1])
  };
  HuffmanCode code_;
  std::vector<uint32_t> table_;     ///< 2^K primary entries (symbol << 8 | length), then blocks for longer codes
  unsigned primaryBits_ = 0;        ///< K
  std::vector<uint32_t> pairTable_; ///< large literals of byte alphabets: up to three symbols per lookup
  uint64_t count_ = 0;
  uint64_t blockWords_ = 0;
  std::vector<Block> blocks_;
};

namespace detail {
/// The pair table of a primary table of 2^K entries (`symbol << 8 | length`, length 0 for the
/// prefix of a longer code) into `out` (2^K entries): up to three codes per pattern. With
/// `vector`, sixteen patterns at a time where the CPU has AVX-512; both paths give the same
/// entries (exposed for the test that says so).
void huffmanPairEntries(const uint32_t *table, unsigned K, uint32_t *out, bool vector);
} // namespace detail

} // namespace brevis
