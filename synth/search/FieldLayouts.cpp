#include "synth/search/FieldLayouts.h"

#include "lang/StreamType.h"

#include <algorithm>
#include <cmath>

namespace brevis {

uint64_t constantBits(WordsView words, unsigned width) {
  if (words.empty()) return widthMask(width);
  const uint64_t differs = words.visit([](auto span) {
    using W = typename decltype(span)::value_type;
    W any = 0;
    for (W w : span) any |= static_cast<W>(w ^ span[0]);
    return uint64_t{any};
  });
  return ~differs & widthMask(width);
}

namespace {

/// Cuts each field where its bits change between constant and varying, so that constant runs
/// become fields of their own; a one-bit constant run inside a field stays in it (a field of
/// its own would cost more program than it saves).
FieldLayout splitAtConstantBits(const FieldLayout &layout, unsigned width, uint64_t constantMask) {
  FieldLayout out;
  unsigned top = width; // the field's bits are [top - w, top)
  for (unsigned w : layout) {
    const unsigned lo = top - w;
    // Runs from the most significant bit down: (is constant, length).
    std::vector<std::pair<bool, unsigned>> runs;
    for (unsigned bit = top; bit-- > lo;) {
      const bool constant = (constantMask >> bit) & 1;
      if (!runs.empty() && runs.back().first == constant)
        ++runs.back().second;
      else
        runs.emplace_back(constant, 1);
    }
    std::vector<std::pair<bool, unsigned>> merged;
    for (size_t i = 0; i < runs.size(); ++i) {
      bool constant = runs[i].first;
      const bool interior = i > 0 && i + 1 < runs.size();
      if (constant && runs[i].second == 1 && interior) constant = false;
      if (!merged.empty() && merged.back().first == constant)
        merged.back().second += runs[i].second;
      else
        merged.emplace_back(constant, runs[i].second);
    }
    for (const auto &[constant, length] : merged) out.push_back(length);
    top = lo;
  }
  return out;
}

} // namespace

std::vector<ProposedLayout> proposeFieldLayouts(unsigned width, const DTypeInfo *floatType, uint64_t constantMask,
                                                bool withSignJoined) {
  std::vector<ProposedLayout> layouts;
  auto add = [&](const FieldLayout &layout, const std::string &kind) {
    if (layout.size() >= 2 && std::none_of(layouts.begin(), layouts.end(), [&](const auto &l) { return l.widths == layout; }))
      layouts.push_back(ProposedLayout{layout, kind});
  };
  std::string kind;
  auto addWithConstantsSplit = [&](const FieldLayout &layout) {
    add(layout, kind);
    add(splitAtConstantBits(layout, width, constantMask), kind + "/const");
  };
  if (floatType) {
    const unsigned s = floatType->signBits, e = floatType->exponentBits, m = floatType->mantissaBits;
    kind = "ieee";
    addWithConstantsSplit({s, e, m}); // the template (strategies/FloatFields) first
    // The exponent with the top mantissa bits: their joint distribution is far from the product
    // of their own (the mantissa's top bits depend on where in its binade a value lies).
    for (unsigned k = 1; k <= 3 && k < m; ++k) {
      kind = "exp+" + std::to_string(k);
      addWithConstantsSplit({s, e + k, m - k});
    }
    // The sign with them too, where the joint symbol fits the entropy coders' 16 bits.
    for (unsigned k = 0; withSignJoined && k <= 3 && k < m && s + e + k <= 16; ++k) {
      kind = "signexp+" + std::to_string(k);
      addWithConstantsSplit({s + e + k, m - k});
    }
    // The halves of a 32-bit float (an up-cast BF16 is its top half).
    kind = "halves";
    if (width == 32 && m > 16) addWithConstantsSplit({s, e, m - 16, 16});
  } else {
    kind = "word";
    addWithConstantsSplit({width});
  }
  // Byte planes (ZipNN's layout).
  kind = "bytes";
  if (width >= 16 && width % 8 == 0) addWithConstantsSplit(FieldLayout(width / 8, 8));
  return layouts;
}

bool signMayJoinExponent(WordsView words, const DTypeInfo &floatType) {
  // A fair coin: at least this many bits of entropy; telling nothing: less than this many bits
  // of information shared with the exponent (mantissaLooksRandom's bound for a field's top bits).
  constexpr double kMinSignBits = 0.99, kMaxSharedBits = 0.01;
  const unsigned e = floatType.exponentBits, m = floatType.mantissaBits;
  if (floatType.signBits != 1 || e == 0 || e > 16 || words.empty()) return true;
  const size_t exponents = size_t{1} << e;
  std::vector<uint64_t> joint(2 * exponents); // [sign][exponent]
  words.visit([&](auto span) {
    for (const uint64_t w : span) ++joint[((w >> (m + e)) & 1) * exponents + ((w >> m) & (exponents - 1))];
  });
  const auto n = static_cast<double>(words.size());
  double sign[2] = {0, 0};
  std::vector<double> exponent(exponents);
  for (size_t i = 0; i < joint.size(); ++i) {
    sign[i / exponents] += static_cast<double>(joint[i]);
    exponent[i % exponents] += static_cast<double>(joint[i]);
  }
  double signBits = 0, shared = 0;
  for (const double c : sign)
    if (c > 0) signBits -= c / n * std::log2(c / n);
  for (size_t i = 0; i < joint.size(); ++i)
    if (joint[i]) {
      const auto c = static_cast<double>(joint[i]);
      shared += c / n * std::log2(c * n / (sign[i / exponents] * exponent[i % exponents]));
    }
  return signBits < kMinSignBits || shared >= kMaxSharedBits;
}

std::string fieldName(unsigned width, const DTypeInfo *floatType, unsigned lo, unsigned w) {
  const unsigned hi = lo + w; // bits [lo, hi)
  if (!floatType) return "bits" + std::to_string(hi - 1) + "_" + std::to_string(lo);
  const unsigned m = floatType->mantissaBits, e = floatType->exponentBits;
  struct Part {
    const char *name;
    unsigned lo, hi;
  };
  const Part parts[] = {{"sign", m + e, width}, {"exp", m, m + e}, {"mant", 0, m}};
  std::string name;
  for (const Part &p : parts) {
    const unsigned a = std::max(lo, p.lo), b = std::min(hi, p.hi);
    if (a >= b) continue;
    if (!name.empty()) name += "_";
    name += p.name;
    // A part of a field says which: its low bits, its high bits, or a range.
    if (a != p.lo || b != p.hi) {
      if (a == p.lo) name += "_lo";
      else if (b == p.hi) name += "_hi";
      else name += std::to_string(b - 1) + "_" + std::to_string(a);
    }
  }
  return name;
}

} // namespace brevis
