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
/// `floatType` is the words' dtype when they are a float tensor's words, else null.
std::vector<ProposedLayout> proposeFieldLayouts(unsigned width, const DTypeInfo *floatType, uint64_t constantMask);

/// A readable name for the field of bits [lo, lo + w) of a `width`-bit word: its IEEE parts for
/// float words ("sign", "exp", "mant", "exp_mant", "mant_lo"), else "bits15_8".
std::string fieldName(unsigned width, const DTypeInfo *floatType, unsigned lo, unsigned w);

} // namespace brevis
