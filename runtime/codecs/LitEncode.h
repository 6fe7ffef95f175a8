#pragma once
// Encoding of literal payloads; the inverse of LitDecode. The encoder keeps the smallest
// encoding by exact encoded size (tables and framing included); of equal sizes, the earlier
// in kAllEncodings wins. Size estimators, computed from histograms without encoding, let the
// synthesizer compare programs cheaply and let the encoder skip hopeless candidates.
#include "lang/Ast.h"
#include "runtime/common/Bytes.h"

#include <optional>
#include <span>

namespace brevis {

/// Whether `encoding` can hold these words (huffman: at most 65,536 distinct; rans: W <= 8).
bool encodingApplies(Encoding encoding, std::span<const uint64_t> words, unsigned width);

/// Appends the encoding of `words` (each < 2^width) to `out`; false, with nothing appended,
/// if the encoding does not apply.
bool encodeLit(Encoding encoding, std::span<const uint64_t> words, unsigned width, Bytes &out);

/// Exact size of a raw or bitpack encoding (cheap, no encoding); only those two.
uint64_t encodedSize(Encoding encoding, std::span<const uint64_t> words, unsigned width);

/// How much smaller a slower-decoding encoding must be to be chosen over a faster one. Decoding
/// speed ranks raw and bitpack first, then huffman, rans, rans_o1: an entropy coder that saves
/// 0.3% of a mantissa stream would halve that tensor's decoding speed for nothing a user sees.
struct EncodePolicy {
  double minGain = 0.0; ///< relative size reduction required; 0 keeps the exact smallest
};

/// Compression levels (brevisc --level): 9 keeps the exact smallest encoding; lower levels ask
/// slower encodings for a larger gain (level 5, the default: 1%; level 1: 5%).
inline constexpr int kDefaultLevel = 5;
EncodePolicy policyForLevel(int level);

/// Appends the chosen encoding of `words` to `out` and returns which one it is: the smallest by
/// exact size, except that a slower encoding must beat the best faster one by policy.minGain.
Encoding encodeSmallest(std::span<const uint64_t> words, unsigned width, Bytes &out, EncodePolicy policy = {});

/// Estimated encoded size from the words' statistics, without encoding; nullopt where the
/// encoding does not apply. Raw and bitpack are exact; the entropy coders' estimates are the
/// empirical entropy (order 0, or order 1 for rans_o1) plus modelled table and framing costs,
/// within kEstimateTolerance of the exact size (tested on real and synthetic streams).
std::optional<uint64_t> estimateSize(Encoding encoding, std::span<const uint64_t> words, unsigned width);

/// |estimate - exact| <= kEstimateRelative * exact + kEstimateAbsolute bytes.
inline constexpr double kEstimateRelative = 0.03;
inline constexpr uint64_t kEstimateAbsolute = 600;

} // namespace brevis
