#pragma once
// Building literals from tensor bytes, shared by the strategies: the words go to the payload in
// the encoding the cost model (synth/CostModel.h) chooses, and a Lit node points at them.
#include "lang/Ast.h"
#include "runtime/common/Bytes.h"
#include "runtime/common/UninitializedAllocator.h"
#include "synth/CostModel.h"

#include <initializer_list>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace brevis {

/// The little-endian words of `wordBytes` bytes each in `bytes`.
std::vector<uint64_t> readWords(ByteSpan bytes, unsigned wordBytes);

/// Bits [shift, shift + width) of each word: one field of a merge.
std::vector<uint64_t> extractField(WordsView words, unsigned shift, unsigned width);
/// A field buffer: written whole after every resize, so not cleared by it.
template <typename T> using FieldBuffer = UninitializedVector<T>;

/// Buffers that fields extracted one after another reuse, one per container: a large tensor's
/// pages are touched once, not once per field.
struct FieldBuffers {
  FieldBuffer<uint8_t> bytes;
  FieldBuffer<uint16_t> halves;
  FieldBuffer<uint32_t> singles;
  FieldBuffer<uint64_t> doubles;
};
/// FieldBuffers lent by the calling thread and given back when this goes out of scope: kept from
/// tensor to tensor (up to 16 MiB), so that the next tensor's fields reuse pages already faulted
/// in (fresh ones for every tensor were a fifth of level 1's page faults); a merge nested in a
/// field borrows buffers of its own.
class PooledFieldBuffers {
public:
  PooledFieldBuffers();
  ~PooledFieldBuffers();
  PooledFieldBuffers(const PooledFieldBuffers &) = delete;
  PooledFieldBuffers &operator=(const PooledFieldBuffers &) = delete;
  FieldBuffers &operator*() { return *buffers_; }

private:
  std::unique_ptr<FieldBuffers> buffers_;
};
/// The same in the narrowest container for `width` (a byte per exponent), held in `buffers`
/// until the next extraction of that container.
WordsView extractField(WordsView words, unsigned shift, unsigned width, FieldBuffers &buffers);

/// A literal of `words` in the encoding `policy` picks, its payload appended to `payload`.
ExprPtr makeLit(WordsView words, unsigned width, Bytes &payload, EncodePolicy policy);

/// A literal of `words` in the smallest of `encodings` (raw where none applies).
ExprPtr makeLitFrom(WordsView words, unsigned width, Bytes &payload,
                    std::initializer_list<Encoding> encodings);

/// A literal of `words` Huffman-coded or raw, whichever is smaller: how the peers' pipelines
/// (ZipNN's byte planes, DFloat11's exponent) code a stream.
ExprPtr makeHuffmanOrRawLit(WordsView words, unsigned width, Bytes &payload);

/// Headers up to this size are written as text; larger ones as a literal. The program text of an
/// archive is bounded (kMaxProgramTextSize), and a header of many MB is more than anyone reads.
inline constexpr size_t kMaxHeaderTextBytes = size_t{4} << 20;

/// A safetensors header as text, readable and editable in the program: `concat(lit u8[8]
/// [<the length's bytes, in hex>], text '<the JSON>')`. The program section of an archive compresses it
/// together with the program text, which repeats its names and shapes, smaller than a literal
/// of its own. Null for a header too short to hold the length, or longer than
/// kMaxHeaderTextBytes.
ExprPtr makeHeaderText(ByteSpan header);

} // namespace brevis
