#pragma once
// Which ways of cutting a word into bit fields (merge's children) are worth scoring for a
// stream. Layouts come from the dtype (IEEE sign / exponent / mantissa, the exponent together
// with the top mantissa bits, byte planes) and from the data: bits that never change across
// the stream become fields of their own, which the search then closes as constants (an F32
// tensor of F16-origin values has 13 zero low mantissa bits; an up-cast BF16 has 16).
#include "lang/DType.h"
#include "runtime/common/Words.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace brevis {

/// Field widths, most significant first; they sum to the word's width.
using FieldLayout = std::vector<unsigned>;

/// Which bits of `width`-bit words take one value in every word (bit i set: constant).
uint64_t constantBits(WordsView words, unsigned width);

/// A layout and the family it comes from ("ieee", "exp+2", "signexp+1", "halves", "bytes",
/// "word"; with "/const" when cut at constant bits): the production the prior counts.
struct ProposedLayout {
  FieldLayout widths;
  std::string kind;
};

/// The layouts worth scoring, without duplicates, the IEEE template first for float dtypes.
/// `floatType` is the words' dtype when they are a float tensor's words, else null. The sign
/// joins the exponent in a field of its own ("signexp+k") only `withSignJoined`.
std::vector<ProposedLayout> proposeFieldLayouts(unsigned width, const DTypeInfo *floatType, uint64_t constantMask,
                                                bool withSignJoined);

/// Whether a float's sign may code smaller together with its exponent than as a bit of its own:
/// in `words` (a sample of the stream) the sign is not a fair coin, or it tells something of
/// the exponent. Where neither holds, a field joining them costs about the sign's bit more
/// (context models learn each exponent twice; only Huffman's rounding of code lengths can favour
/// the wider field), and scoring those layouts was a tenth of level 5's time on the corpus, for
/// 294 bytes of its 50 MB of archives.
bool signMayJoinExponent(WordsView words, const DTypeInfo &floatType);

/// A readable name for the field of bits [lo, lo + w) of a `width`-bit word: its IEEE parts for
/// float words ("sign", "exp", "mant", "exp_mant", "mant_lo"), else "bits15_8".
std::string fieldName(unsigned width, const DTypeInfo *floatType, unsigned lo, unsigned w);

} // namespace brevis
