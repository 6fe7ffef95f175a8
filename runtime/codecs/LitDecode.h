#pragma once
// Decoding of literal payloads (wire formats in docs/format/literals.md): the dispatch over
// encodings to their codecs.
//
//   raw, bitpack    fixed-width words, any word located directly (bitpack/BitpackDecode.h).
//   huffman         a canonical code and blocks of four interleaved bit streams (huffman/).
//   rans, rans_o1   blocks of htscodecs rANS frames, or our own coder for 9..16 bits (rans/).
//   zstd            blocks of one zstd frame each, bytes (zstd/).
//
// validateLit() checks a raw or bitpack payload completely (sizes, headers, every word's
// range), so that decodeLitWords() may then run unchecked and in any order. For entropy-coded
// literals it checks the table and the block layout (zstd: every frame's header); the coded
// streams themselves are checked while a LitCursor decodes them, which reports corruption as an
// error.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/containers/Payload.h"

#include <memory>
#include <vector>

namespace brevis {

/// Checks that the payload of `lit` (a payload reference) is a well-formed encoding of its type.
Result<void> validateLit(const Lit &lit, const Payload &payload);

/// Whether decodeLitWords() can decode this literal (inline, raw, bitpack): any range, any order.
bool isRandomAccess(const Lit &lit);

/// Decodes words [first, first + count) of a validated random-access literal into `out`.
void decodeLitWords(const Lit &lit, const Payload &payload, uint64_t first, size_t count, uint64_t *out);

/// The same into narrow words (T = uint8_t, uint16_t or uint32_t; the literal's width fits T).
/// Bit-packed fields of up to 16 bits unpack eight words per load.
template <typename T>
void decodeLitNarrow(const Lit &lit, const Payload &payload, uint64_t first, size_t count, T *out);

/// Blocks of entropy-coded literals hold at most this many words; larger ones are refused, so
/// that a decoder's block buffer is bounded whatever a payload claims.
inline constexpr uint64_t kMaxLitBlockWords = uint64_t{1} << 26;

/// Sequential decoding of any validated literal, one block of memory at most.
class LitCursor {
public:
  static Result<std::unique_ptr<LitCursor>> open(const Lit &lit, const Payload &payload);
  virtual ~LitCursor() = default;
  /// The next n words (no more than remain).
  virtual Result<void> read(uint64_t *out, size_t n) = 0;
  /// Back to the first word.
  virtual void reset() = 0;
  /// Moves past the next n words (no more than remain); block-coded literals jump to the block
  /// holding the target and decode only that one.
  virtual Result<void> skip(uint64_t n);
  /// The next n words as narrow words (the literal's width fits the type), for the fused
  /// kernels; a quarter to an eighth of the memory traffic of read().
  virtual Result<void> read8(uint8_t *out, size_t n);
  virtual Result<void> read16(uint16_t *out, size_t n);
  virtual Result<void> read32(uint32_t *out, size_t n);
  /// The next n words as bytes without a copy, where the cursor holds them decoded in one piece
  /// (they are then consumed; the pointer is valid until the next call); null where it does not
  /// (nothing is consumed: use read8).
  virtual Result<const uint8_t *> readInPlace8(size_t) { return nullptr; }
  template <typename T> Result<void> readNarrow(T *out, size_t n) {
    if constexpr (sizeof(T) == 1) return read8(out, n);
    else if constexpr (sizeof(T) == 2) return read16(out, n);
    else return read32(out, n);
  }
};

/// All words of a validated literal (tests and small literals).
Result<std::vector<uint64_t>> decodeLit(const Lit &lit, const Payload &payload);

} // namespace brevis
