#pragma once
// What a literal costs and which encoding it gets. The synthesizer compares programs by size
// before encoding any of them, so size estimates from histograms live here, beside the choice
// of encoding and the compression levels that bias that choice towards faster decoding.
// Decoders never need any of it: runtime/codecs keeps encoding, decoding and exact sizes.
#include "lang/Ast.h"
#include "runtime/codecs/LitEncode.h"
#include "runtime/common/Bytes.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <span>

namespace brevis {

/// How much smaller a slower-decoding encoding must be to be chosen over a faster one, and how
/// hard zstd works. Decoding speed ranks raw and bitpack first, then huffman, rans, zstd,
/// rans_o1: an entropy coder that saves 0.3% of a mantissa stream would halve that tensor's
/// decoding speed for nothing a user sees.
struct EncodePolicy {
  /// Relative size reduction required; 0 keeps the exact smallest. It is also how much larger
  /// a `context` literal may be for storing more low bits raw (ContextCodec.h).
  double minGain = 0.0;
  /// libzstd's compression level of zstd literals (1..22); 0: zstd is not tried.
  int zstdLevel = kDefaultZstdLevel;
  /// The gain `context` must bring over the best faster encoding: it decodes one range-coder
  /// step per bit, ten times slower than rans_o1 (0 keeps it wherever it is smallest).
  double contextMinGain = 0.0;
  /// The share of minGain asked of rans over huffman on words of at most 8 bits, where it
  /// decodes within a tenth of huffman's speed (docs/benchmarks.md, "Literal codecs"): a
  /// quarter; wider, its tables cost more to build. Level 1 asks the whole margin: there
  /// huffman's encoder, at twice rans' speed, decides as much as the decoders do.
  double ransByteShare = 0.25;
  /// The gain encoding `e` must bring over the best faster one on words of `width` bits.
  double gainFor(Encoding e, unsigned width) const {
    if (e == Encoding::Context) return contextMinGain;
    return e == Encoding::Rans && width <= 8 ? minGain * ransByteShare : minGain;
  }
  /// Whether rans_o1 is tried: level 1 keeps to the faster decoders, and its probes and
  /// estimates (order-1 counts of every field) were a fifteenth of level 1's time.
  bool triesOrder1 = true;
  /// Whether `e` is tried at all: a gain of 100% or more can never be had.
  bool tries(Encoding e) const {
    if (e == Encoding::RansO1 && !triesOrder1) return false;
    return (e == Encoding::Context ? contextMinGain : minGain) < 1;
  }
  /// The level for streams of at most kZstdSmallStreamBytes, where zstd's time is small against
  /// the search's: a structured tensor of 66 KB words (a filter bank) came out 7% smaller at 15
  /// than at 9, which runs four times as fast on large streams.
  int zstdSmallLevel = kDefaultZstdLevel;
  /// On byte streams of 2^16 words or more, whose huffman and rans estimates come within 0.1%
  /// of the exact sizes, the estimates pick which of the two is encoded, unless they put the
  /// choice within this fraction of the policy's threshold: then both are, and the exact sizes
  /// pick. Level 1 leaves the choice to the estimates (0): encoding both was a third of its time.
  double estimateRoom = 0.005;
  /// From this size of the best encoding so far, a slower candidate is encoded only where its
  /// estimate promises the policy's gain; below it, every one whose estimate comes near is.
  /// Level 1 asks the promise of every literal: on a checkpoint of small tensors, encoding
  /// `rans` and `huffman` where bitpack or the other kept the field was a quarter of its time
  /// (the corpus' level-1 archives came out 0.003% larger).
  uint64_t promiseMinBytes = uint64_t{1} << 13;
  /// Threads a literal's independently coded blocks may be coded on (a large field of a large
  /// tensor, whose merge has fewer fields than threads, or fields of unequal work).
  unsigned threads = 1;
  static constexpr uint64_t kZstdSmallStreamBytes = uint64_t{1} << 20;
  /// The zstd level for a stream of `bytes`.
  int zstdLevelFor(uint64_t bytes) const {
    return bytes <= kZstdSmallStreamBytes && zstdLevel > 0 ? std::max(zstdLevel, zstdSmallLevel) : zstdLevel;
  }
};

/// Compression levels (brevisc --level): 9 keeps the exact smallest encoding; lower levels ask
/// slower encodings for a larger gain (level 5, the default: 1%; level 1: 5%; `rans` of bytes a
/// quarter of that; `context` five times that, and 1% at least; level 1 tries neither `context`
/// nor `rans_o1`)
/// and code zstd literals at lower zstd levels (9: zstd 15, 19 up to 1 MiB; 5: zstd 9, 15 up to
/// 1 MiB; 1: zstd 1).
inline constexpr int kDefaultLevel = 5;
EncodePolicy policyForLevel(int level);

/// Estimated encoded size from the words' statistics, without encoding; nullopt where the
/// encoding does not apply. Raw and bitpack are exact; the entropy coders' estimates are the
/// empirical entropy (order 0, or order 1 for rans_o1) plus modelled table and framing costs,
/// within kEstimateRelative and kEstimateAbsolute of the exact size (tested on real and
/// synthetic streams). No statistic of the words predicts LZ matches: zstd's estimate is its
/// exact size at kDefaultZstdLevel, found by encoding (encodeSmallest does not ask for it).
std::optional<uint64_t> estimateSize(Encoding encoding, WordsView words, unsigned width);

/// The estimated size of the encoding encodeSmallest would pick for `words` under `policy`, and
/// that encoding in `chosen` where given: estimateSize of each encoding the policy tries, in
/// decreasing decoding speed, a slower one kept where it wins by the policy's margin (zstd only
/// where its probe says it may). The words are counted once for every order-0 estimate; 0 and
/// Raw for no words.
uint64_t estimateSmallest(WordsView words, unsigned width, const EncodePolicy &policy, Encoding *chosen = nullptr);

/// The order-1 entropy of `words` in bits: each word coded by the statistics of the words that
/// follow the same previous word (the first follows 0), summed with no table cost; `used`
/// receives the number of distinct (previous, word) pairs. Words of at most 8 bits.
double order1EntropyBits(WordsView words, unsigned width, uint64_t &used);

/// |estimate - exact| <= kEstimateRelative * exact + kEstimateAbsolute bytes.
inline constexpr double kEstimateRelative = 0.03;
inline constexpr uint64_t kEstimateAbsolute = 600;

/// Whether a zstd literal of `words` may beat `bestSize` bytes by the policy's gain, judged by
/// zstd's fastest level on a sample: zstd has no estimate from statistics, and encoding every
/// byte stream the search scores with it would be most of the search's time.
bool zstdWorthTrying(WordsView words, unsigned width, uint64_t bestSize, const EncodePolicy &policy);

/// Which one of huffman and rans encodeSmallest prefers on a byte stream without encoding the
/// other, taking bitpack's size as the best before them (encodeSmallest takes the smaller of raw
/// and bitpack, and first rules both coders out on near-uniform streams): the one the estimates
/// pick with policy.estimateRoom to spare, or else, on streams of four rans blocks or more that
/// huffman may code smaller than bitpack, the one rans' middle block coded alone shows (its
/// size against its estimate, applied to every block's); nullopt where neither tells, and the
/// exact sizes of those encoded pick. rans is still tried where huffman, preferred, loses to
/// bitpack.
std::optional<Encoding> byteCoderByEstimates(WordsView words, unsigned width, const EncodePolicy &policy);

/// Whether mantissa bits look like noise, so that neither `context` nor rans_o1 can gain on
/// them (the search scores neither there): their order-0
/// entropy within 1% of their width, and their top (up to 3) bits telling less than 0.01 bits
/// of the next word's. A float's low mantissa bits were a third of the steps the search
/// simulated the context coder for on the corpus, and context won none of them in the end; a
/// ramp or a smooth signal, whose mantissas follow their neighbours', is still tried.
bool mantissaLooksRandom(WordsView words, unsigned width);

/// Whether no encoding with a table of symbols (huffman, rans) can be smaller than bitpack for
/// `words`: they are wider than 12 bits and three quarters of a fixed probe of them occur once in
/// it, so a table entry per symbol costs more than coding saves (a wide mantissa, near uniform).
/// Estimating those coders on such a stream (a histogram of every word, a code for each) is
/// most of the time spent choosing literals; encodeSmallest and the search skip them.
bool tableCodersCannotPay(WordsView words, unsigned width);

/// Appends the chosen encoding of `words` to `out` and returns which one it is: the smallest by
/// exact size (tables and framing included), except that a slower encoding must beat the best
/// faster one by policy.minGain. Estimates decide which entropy coders are worth encoding, and
/// zstd at level 1 on a sample whether zstd is.
Encoding encodeSmallest(WordsView words, unsigned width, Bytes &out, EncodePolicy policy = {});

/// Appends the encoding of `words` that is smallest by exact size among `encodings` (of equal
/// sizes, the earlier) and returns which one it is; raw where none of them applies. For fixed
/// pipelines that allow only some encodings (synth/strategies/ZipNN, DFloat11).
Encoding encodeSmallestOf(WordsView words, unsigned width, Bytes &out,
                          std::initializer_list<Encoding> encodings);

} // namespace brevis
