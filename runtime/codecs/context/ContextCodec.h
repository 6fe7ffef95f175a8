#pragma once
// `context` literals: words of up to 32 bits, each split into lanes of bits from the top (the
// top lane holds W mod 8 bits, or 8; the others a byte each), every lane coded bit by bit by
// an adaptive binary range coder whose models are chosen by a context (docs/format/literals.md):
//
//   varint B        words per block
//   u8 mode         bits 0-3: the rate (4..7), models adapt by 1/2^rate of the distance to
//                   each bit seen; bit 4: an escape word follows; bit 5: raw low bits follow
//   [varint escape] a word coded by one flag ahead of the lanes
//   [u8 raw]        how many low bits of the last lane are stored as they are (1..8)
//   per block: varint size, then the range coder's bytes of the block's words; with raw bits,
//              then varint size, then the raw bits of the block's words (not the escape word's)
//
// The top lane's context is the previous word's top lane; each further lane's is the lane just
// above it in the same word. So an exponent is coded in the context of the exponent before it,
// and a sparse tensor's zero flags and the mantissa under each exponent learn their own
// statistics, where an order-0 code pays for every field's zero again. The models start from
// even odds in every block and adapt as they go, so nothing like a table is stored: contexts
// that occur a few times cost little, which is what makes a context affordable on small
// tensors, where a static order-1 table (rans_o1) costs more than it saves.
//
// With an escape word (a sparse tensor's zero, a few-valued tensor's common word), every word
// first codes whether it is that word, and only the others code their lanes: a run of zeros
// costs a step a word instead of one a bit, and codes smaller, as the models' 12-bit
// probabilities charged every certain bit of a zero again.
//
// With raw bits, the lowest bits of the last lane (a float's low mantissa bits, near random)
// are not coded but stored as they are, beside the coder's bytes: an adaptive model of a random
// bit costs 1-2% more than the bit, and a range-coder step per bit is the decoding's whole
// cost. The lane's value, raw bits included, is still the context of the lanes that use it.
//
// It is the slowest encoding to decode (one range-coder step per coded bit), and is kept where
// it wins by the level's margin.
#include "lang/Result.h"
#include "runtime/common/Bytes.h"
#include "runtime/common/Words.h"

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace brevis {

inline constexpr unsigned kContextMaxWidth = 32;
/// Words per block: the models restart at each block, so a decoder can start at any.
inline constexpr uint64_t kContextBlockWords = uint64_t{1} << 20;
inline constexpr unsigned kContextMinRate = 4, kContextMaxRate = 7;
/// The mode byte: the rate in its low bits, the flag that an escape word follows, and the flag
/// that a count of raw low bits follows.
inline constexpr unsigned kContextRateMask = 0x0f, kContextEscapeFlag = 0x10, kContextRawFlag = 0x20;
/// The most raw low bits: the last lane's bits (8, or the width of a word of one lane, less one).
inline constexpr unsigned kContextMaxRawBits = 8;
/// A word is worth an escape flag (worth simulating with one) from this share of the words on:
/// the flag costs every other word a step and a little code.
inline constexpr double kContextEscapeMinShare = 1.0 / 3;

/// The rates encodeLit chooses from (kContextMinRate on).
inline constexpr unsigned kContextTriedRates = 2;
/// The rate the cost model's estimates simulate, alone: the search simulates `context` on most
/// of its candidates, and one rate takes two thirds of the instructions of both (corpus, level
/// 5: 15-19% fewer instructions in all), for archives 857 bytes larger over the corpus than
/// with both (rate 4 alone: 2.1 KB).
inline constexpr unsigned kContextEstimateRate = 5;
/// encodeLit picks the rate from a simulation of at most this many words (a longer stream's
/// middle run): a block's worth. (A run of 2^16 picked the worse rate for a 300 KB checkpoint,
/// 0.5% larger.)
inline constexpr uint64_t kContextRateWords = kContextBlockWords;

/// Code length in bits of `words` (each < 2^width) at each tried adaptation rate, as
/// encodeContext would code them in one block (within a few bytes of the coded size), without a
/// coder: per rate, the bits of words [0, split) and of words [split, end). The second part is
/// coded by models that have learnt from the first, which lets the cost model tell the models'
/// learning from their steady cost.
/// With `escape`, as coded with that escape word.
std::vector<std::array<double, 2>> contextCodeBits(WordsView words, unsigned width, size_t split,
                                                   const std::optional<uint64_t> &escape = std::nullopt);

/// contextCodeBits at kContextEstimateRate alone.
std::array<double, 2> contextEstimateBits(WordsView words, unsigned width, size_t split,
                                          const std::optional<uint64_t> &escape = std::nullopt);

/// The word an escape flag may pay for: the most common of `words`, where it is at least
/// kContextEscapeMinShare of them.
std::optional<uint64_t> contextEscapeCandidate(WordsView words, unsigned width);

/// The escape words to simulate `words` with, and to keep the smaller code of: none, and the
/// candidate where there is one.
std::vector<std::optional<uint64_t>> contextEscapesToTry(WordsView words, unsigned width);

/// The most raw low bits words of `width` may have: the bits of their last lane, and fewer than
/// the width.
unsigned contextMaxRawBits(unsigned width);

/// One way to code words as a `context` literal, and its size in bits (within a few bytes of the
/// coded size).
struct ContextCoding {
  std::optional<uint64_t> escape;
  unsigned rate = kContextMinRate;
  unsigned rawBits = 0;
  double bits = 0;
};

/// Every way to code `words` with `escape` that encodeLit weighs, from one simulation: each
/// tried rate with each count of raw low bits (0 to contextMaxRawBits(width)).
std::vector<ContextCoding> contextCodings(WordsView words, unsigned width, const std::optional<uint64_t> &escape);

/// Of `codings` (not empty), the one with the most raw bits among those at most `room` (a
/// fraction) larger than the smallest, and the smallest of those: a raw bit is a range-coder
/// step less per word to decode.
ContextCoding chooseContextCoding(std::span<const ContextCoding> codings, double room);

/// Appends the `context` encoding of `words` (each < 2^width, width <= kContextMaxWidth) at
/// adaptation `rate`, with an escape word or none, and `rawBits` low bits stored as they are
/// (at most contextMaxRawBits(width)).
void encodeContext(WordsView words, unsigned width, unsigned rate, const std::optional<uint64_t> &escape, Bytes &out,
                   unsigned rawBits = 0);

/// A parsed `context` literal: its block layout and rate are checked; a block's bytes are
/// checked while decoding (a block that needs bytes it does not have is an error).
class ContextDecoder {
public:
  /// `bytes` must stay alive while the decoder is used.
  static Result<std::unique_ptr<ContextDecoder>> create(ByteSpan bytes, unsigned width, uint64_t count);
  uint64_t blockWords() const { return blockWords_; }
  size_t blockCount() const { return blocks_.size(); }
  unsigned rate() const { return rate_; }
  const std::optional<uint64_t> &escape() const { return escape_; }
  unsigned rawBits() const { return rawBits_; }
  uint64_t blockLength(size_t b) const;
  /// Decodes block b into `out` (at least blockLength(b) words; the width fits T).
  template <typename T> Result<void> decodeBlock(size_t b, T *out) const;

private:
  unsigned width_ = 8;
  unsigned rate_ = kContextMinRate;
  unsigned rawBits_ = 0;
  std::optional<uint64_t> escape_;
  uint64_t count_ = 0;
  uint64_t blockWords_ = 0;
  /// Per block: the coder's bytes, and the raw bits' (empty without raw bits).
  std::vector<std::pair<ByteSpan, ByteSpan>> blocks_;
};

} // namespace brevis
