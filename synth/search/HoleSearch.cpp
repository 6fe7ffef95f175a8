#include "synth/search/HoleSearch.h"

#include "lang/MergeLayout.h"
#include "runtime/common/BitWidthSum.h"
#include "runtime/common/MapConstants.h"
#include "runtime/common/WordOps.h"
#include "runtime/execution/ThreadPool.h"
#include "synth/Literals.h"
#include "runtime/codecs/LitEncode.h"
#include "synth/search/FieldLayouts.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <functional>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace brevis {

namespace {

// What a node adds to the program text after the program section's compression: a keyword, a
// type and parentheses compress to a few bytes, a literal's payload range to about eight. (On
// facemesh, efficientpose.bf16 and stories260K.bf16, 8 per literal and 3 per operator come to
// 72-84% of each program's `zstd -19` size; the rest is the region lines, the same for every
// candidate.)
constexpr double kNodeTextBytes = 3;
constexpr double kLitTextBytes = 8;
// Literals this short are written inline, as words in the program text.
constexpr size_t kInlineMaxWords = 4;
constexpr double kInlineWordBytes = 3;

// Streams longer than kSearchSampleThreshold (HoleSearch.h) are scored on a sample: kSampleRuns
// runs of kSampleRunWords words at evenly spaced fixed positions. Structural checks (const,
// repeat, runs, constant bits) always read the whole stream.
constexpr size_t kSampleThreshold = kSearchSampleThreshold;
// (16 runs took twice the time for the same corpus archives.)
constexpr size_t kSampleRuns = 8;
constexpr size_t kSampleRunWords = 4096;

// concat at runs of one word: the shortest run worth a piece of its own, tried longest first,
// and the most pieces a concat may have.
constexpr uint64_t kMinRunLengths[] = {4096, 256};
constexpr size_t kMaxPieces = 4096;

// concat where statistics change: windows of this many words, a stream of at least this many
// windows, and the least shift of the mean statistic (exponent, or bit width for integers)
// between the two sides worth a cut.
constexpr uint64_t kShiftWindowWords = 4096;
constexpr uint64_t kShiftMinWindows = 4;
constexpr double kShiftMinDifference = 0.75;

// A merge of at least this many words emits its fields on several threads (emitOnThreads):
// below it, handing the fields out costs more than it saves.
constexpr uint64_t kParallelFieldsMinWords = uint64_t{1} << 20;

// repeat: the longest period looked for beyond the shape's trailing dimensions.
constexpr uint64_t kMaxSmallPeriod = 64;

// Column offsets of an exponent field (`map add [c0, …]`): the fewest rows, the most columns, the
// rows whose words give each column's median (evenly spaced), and what each constant adds to
// the program text after its compression.
constexpr uint64_t kColumnOffsetsMinRows = 16;
constexpr uint64_t kColumnOffsetsMaxColumns = uint64_t{1} << 16;
constexpr uint64_t kColumnOffsetsSampleRows = 256;
constexpr uint64_t kColumnOffsetsMaxCells = uint64_t{1} << 21;
constexpr double kPeriodicWordBytes = 1.5;
constexpr double kColumnOffsetsMinGain = 0.02;

/// Each column's median exponent and the whole stream's, of a row-major tensor's words (on up
/// to kColumnOffsetsSampleRows evenly spaced rows); empty medians where the shape does not allow.
struct ColumnExponents {
  std::vector<uint16_t> medians;
  uint16_t overall = 0;
  /// Order-0 entropy of the sampled exponents less that of them less their column's median
  /// difference, in bits per word: what the constants can gain, at most about.
  double gainBits = 0;
};

/// The least and the greatest of n values below 2^15 (eight at a time where SSE2 is: the
/// comparisons, a chain of conditional moves a value, took as long as counting the values).
std::pair<uint16_t, uint16_t> rangeOf(const uint16_t *v, size_t n) {
  uint16_t lo = 0x7fff, hi = 0;
  size_t i = 0;
#if defined(__SSE2__)
  if (n >= 8) {
    __m128i vlo = _mm_set1_epi16(0x7fff), vhi = _mm_setzero_si128();
    for (; i + 8 <= n; i += 8) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i *>(v + i));
      vlo = _mm_min_epi16(vlo, x); // signed lanes: every value is below 2^15
      vhi = _mm_max_epi16(vhi, x);
    }
    alignas(16) uint16_t los[8], his[8];
    _mm_store_si128(reinterpret_cast<__m128i *>(los), vlo);
    _mm_store_si128(reinterpret_cast<__m128i *>(his), vhi);
    lo = *std::min_element(los, los + 8);
    hi = *std::max_element(his, his + 8);
  }
#endif
  for (; i < n; ++i) {
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
  }
  return {lo, hi};
}

/// The medians and gain of `cells`: the exponents of `channels` channels, `taken` of each, one
/// channel after another.
ColumnExponents channelExponents(const std::vector<uint16_t> &cells, uint64_t channels, uint64_t taken, uint64_t mask) {
  assert(mask < (uint64_t{1} << 15) && taken > 0);
  ColumnExponents out;
  // Medians by counting: exponents take few values, on which selection and sorting are slow.
  // Counted in four tables, a word in each in turn: neighbouring words often have the same
  // exponent, and incrementing one counter again waits for its last increment (a chain of
  // store-forwarded increments was three quarters of the time). A channel's counts are summed
  // over the values between its lowest and highest, then cleared there.
  constexpr size_t kTables = 4; // as many as the loop below unrolls
  std::vector<uint32_t> counts(kTables * (mask + 1)), all(mask + 1);
  uint32_t *const table[kTables] = {&counts[0], &counts[mask + 1], &counts[2 * (mask + 1)], &counts[3 * (mask + 1)]};
  // The exponents less their channel's median, counted at difference + mask: shifted by the
  // overall median once it is known, these are the counts of each exponent less its channel's
  // median difference, without a second pass over the cells.
  std::vector<uint32_t> fromMedian(2 * mask + 1);
  auto median = [](const uint32_t *histogram, uint64_t lo, uint64_t total) {
    uint64_t v = lo, seen = histogram[lo];
    while (seen * 2 <= total) seen += histogram[++v];
    return static_cast<uint16_t>(v);
  };
  out.medians.resize(channels);
  for (uint64_t c = 0; c < channels; ++c) {
    const uint16_t *const begin = &cells[c * taken];
    const auto [lo, hi] = rangeOf(begin, taken);
    size_t k = 0;
    for (; k + kTables <= taken; k += kTables) {
      ++table[0][begin[k]];
      ++table[1][begin[k + 1]];
      ++table[2][begin[k + 2]];
      ++table[3][begin[k + 3]];
    }
    for (; k < taken; ++k) ++table[k % kTables][begin[k]];
    for (uint64_t v = lo; v <= hi; ++v) {
      for (size_t t = 1; t < kTables; ++t) {
        table[0][v] += table[t][v];
        table[t][v] = 0;
      }
      all[v] += table[0][v];
    }
    const uint16_t m = median(table[0], lo, taken);
    out.medians[c] = m;
    for (uint64_t v = lo; v <= hi; ++v) fromMedian[v + mask - m] += table[0][v];
    std::fill(table[0] + lo, table[0] + hi + 1, 0);
  }
  out.overall = median(all.data(), 0, cells.size());
  // Each exponent less its channel's median difference (overall - median), at the field's
  // width: (v + overall - median) mod 2^width.
  std::vector<uint32_t> lessMedian(mask + 1);
  for (uint64_t d = 0; d <= 2 * mask; ++d) lessMedian[(out.overall + d - mask) & mask] += fromMedian[d];
  auto entropyBits = [&](const uint32_t *histogram) {
    double bits = 0;
    for (uint64_t v = 0; v <= mask; ++v)
      if (const uint32_t n = histogram[v]) bits -= n * std::log2(static_cast<double>(n) / static_cast<double>(cells.size()));
    return bits / static_cast<double>(cells.size());
  };
  out.gainBits = entropyBits(all.data()) - entropyBits(lessMedian.data());
  return out;
}

/// Each channel's median exponent and the whole stream's, of a tensor whose `channels`
/// channels are its columns (word i in channel i mod channels: TensorFlow's `[…, out]`) or, with
/// `rows`, its rows (PyTorch's and Paddle's `[out, …]`), on up to kColumnOffsetsSampleRows evenly
/// spaced words of each channel; empty medians where the shape does not allow.
ColumnExponents exponentsByChannel(WordsView words, const DTypeInfo &f, uint64_t channels, bool rows) {
  if (channels < 2 || channels > kColumnOffsetsMaxColumns || words.size() % channels ||
      words.size() / channels < kColumnOffsetsMinRows)
    return {};
  const uint64_t length = words.size() / channels; // words of a channel
  const uint64_t taken = std::min({length, kColumnOffsetsSampleRows, kColumnOffsetsMaxCells / channels});
  if (taken < kColumnOffsetsMinRows) return {};
  // The sampled words, in memory order, into one channel after another.
  const uint64_t mask = widthMask(f.exponentBits);
  auto exponent = [&](uint64_t w) { return static_cast<uint16_t>((w >> f.mantissaBits) & mask); };
  std::vector<uint16_t> cells(channels * taken);
  if (rows) {
    // The same evenly spaced words of every row (a division for every cell was most of the time).
    std::vector<uint64_t> at(taken);
    for (uint64_t k = 0; k < taken; ++k) at[k] = k * length / taken;
    for (uint64_t r = 0; r < channels; ++r)
      words.subspan(r * length, length).visit([&](auto w) {
        for (uint64_t k = 0; k < taken; ++k) cells[r * taken + k] = exponent(w[at[k]]);
      });
  } else {
    // Sixteen sampled rows at a time, so that each channel gets sixteen cells in a row: a cell
    // at a time, writes `taken` cells apart fell on few of the cache's sets, and the
    // transposition missed the first-level cache on most writes (half of this function's time).
    constexpr uint64_t kRowsAtOnce = 16;
    words.visit([&](auto w) {
      for (uint64_t k0 = 0; k0 < taken; k0 += kRowsAtOnce) {
        const uint64_t n = std::min(kRowsAtOnce, taken - k0);
        decltype(w.data()) row[kRowsAtOnce];
        for (uint64_t j = 0; j < n; ++j) row[j] = w.data() + (k0 + j) * length / taken * channels;
        for (uint64_t c = 0; c < channels; ++c)
          for (uint64_t j = 0; j < n; ++j) cells[c * taken + k0 + j] = exponent(row[j][c]);
      }
    });
  }
  return channelExponents(cells, channels, taken, mask);
}

/// The constants of `map add` over a field whose bits from partShift up hold exponent bits
/// from `dropped` up: each column's median less the whole stream's, placed at partShift and
/// wrapped at the field's width (a negative difference borrows from the bits above the
/// exponent, a sign bit among them, as subtraction does, so they come back unchanged). Channels
/// of a convolution or a linear layer differ in scale, so their exponents differ by a constant
/// a column; subtracting it leaves exponents of one distribution. Empty if every column's is
/// the same.
std::vector<uint64_t> columnOffsets(const ColumnExponents &e, unsigned width, unsigned partShift, unsigned dropped) {
  std::vector<uint64_t> constants(e.medians.size());
  bool any = false;
  const auto overall = static_cast<int64_t>(e.overall >> dropped);
  for (size_t c = 0; c < e.medians.size(); ++c) {
    const int64_t difference = static_cast<int64_t>(e.medians[c] >> dropped) - overall;
    constants[c] = (static_cast<uint64_t>(difference) << partShift) & widthMask(width);
    any |= constants[c] != 0;
  }
  if (!any) constants.clear();
  return constants;
}

/// The position in its stream of each word of sampleOf(a stream of `size` words).
uint64_t samplePosition(size_t size, size_t i) {
  if (size <= kSampleThreshold) return i;
  const size_t stride = (size - kSampleRunWords) / (kSampleRuns - 1);
  return (i / kSampleRunWords) * stride + i % kSampleRunWords;
}

bool isUniform(WordsView words) {
  return words.visit([](auto w) { return std::all_of(w.begin(), w.end(), [&](auto x) { return x == w[0]; }); });
}

/// The stream to score candidates on, and how many of the whole stream's words each of its
/// words stands for.
struct Sample {
  std::vector<uint64_t> storage;
  WordsView words;
  double scale = 1;
};

Sample sampleOf(WordsView words) {
  Sample s;
  if (words.size() <= kSampleThreshold) {
    s.words = words;
    return s;
  }
  s.storage.reserve(kSampleRuns * kSampleRunWords);
  const size_t stride = (words.size() - kSampleRunWords) / (kSampleRuns - 1);
  for (size_t r = 0; r < kSampleRuns; ++r) {
    words.subspan(r * stride, kSampleRunWords).visit([&](auto run) { s.storage.insert(s.storage.end(), run.begin(), run.end()); });
  }
  s.words = s.storage;
  s.scale = static_cast<double>(words.size()) / static_cast<double>(s.storage.size());
  return s;
}

/// The smallest exact period of `words` among the shape's trailing dimensions and the periods
/// up to kMaxSmallPeriod; 0 if none.
template <typename W> uint64_t smallestPeriod(std::span<const W> words, std::span<const uint64_t> shape) {
  const uint64_t n = words.size();
  std::vector<uint64_t> candidates;
  for (uint64_t p = 2; p <= kMaxSmallPeriod && p < n; ++p) candidates.push_back(p);
  uint64_t product = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0 || product > n / shape[i]) break;
    product *= shape[i];
    if (product > kMaxSmallPeriod && product < n) candidates.push_back(product);
  }
  for (uint64_t p : candidates) {
    if (n % p != 0) continue;
    bool periodic = true;
    for (uint64_t i = p; i < n && periodic; ++i) periodic = words[i] == words[i - p];
    if (periodic) return p;
  }
  return 0;
}

/// Pieces of `words` alternating between runs of at least `minRun` equal words and the stretches
/// between them, as (length, is a run). A run of minRun words covers a whole aligned block of
/// minRun / 2, so only blocks are looked at, each by its two ends first: a dense stream is
/// passed over at two reads a block, where comparing every word with the next was a twentieth
/// of level 5's time.
template <typename W> std::vector<std::pair<uint64_t, bool>> runPieces(std::span<const W> words, uint64_t minRun) {
  std::vector<std::pair<uint64_t, bool>> pieces;
  const uint64_t n = words.size(), block = std::max<uint64_t>(1, minRun / 2);
  uint64_t gapStart = 0;
  for (uint64_t k = 0; k + block <= n;) {
    const W v = words[k];
    const W *const first = words.data() + k;
    if (first[block - 1] != v || !std::all_of(first, first + block, [&](W w) { return w == v; })) {
      k += block;
      continue;
    }
    // The whole run: the one before ended at gapStart on another word, so it stops there.
    uint64_t begin = k, end = k + block;
    while (begin > gapStart && words[begin - 1] == v) --begin;
    while (end < n && words[end] == v) ++end;
    if (end - begin >= minRun) {
      if (begin > gapStart) pieces.emplace_back(begin - gapStart, false);
      pieces.emplace_back(end - begin, true);
      gapStart = end;
    }
    k = (end + block - 1) / block * block;
  }
  if (gapStart < n) pieces.emplace_back(n - gapStart, false);
  return pieces;
}

/// Where to cut `words` in two so that the halves' mean statistic differs most (a window
/// boundary), if that difference is at least kShiftMinDifference; 0 if none. The statistic is a
/// float's exponent field, or an integer's bit width: what the coders' tables depend on most.
template <typename W> uint64_t statisticsCut(std::span<const W> words, const DTypeInfo *floatType) {
  const uint64_t windows = words.size() / kShiftWindowWords;
  if (windows < kShiftMinWindows) return 0;
  std::vector<double> sums(windows + 1, 0); // prefix sums of the per-window totals
  for (uint64_t w = 0; w < windows; ++w) {
    // Summed as integers (exact, as the sum of so few small integers is in a double), which
    // vectorizes where a sum of doubles waits on each addition.
    uint64_t total = 0;
    const W *const window = words.data() + w * kShiftWindowWords;
    if (floatType) {
      const unsigned shift = floatType->mantissaBits;
      const uint64_t mask = widthMask(floatType->exponentBits);
      for (uint64_t i = 0; i < kShiftWindowWords; ++i) total += (uint64_t{window[i]} >> shift) & mask;
    } else if constexpr (std::is_same_v<W, uint8_t>) {
      total = bitWidthSum(window, kShiftWindowWords);
    } else {
      for (uint64_t i = 0; i < kShiftWindowWords; ++i) total += static_cast<uint64_t>(std::bit_width(window[i]));
    }
    sums[w + 1] = sums[w] + static_cast<double>(total) / kShiftWindowWords;
  }
  uint64_t best = 0;
  double bestDifference = kShiftMinDifference;
  for (uint64_t cut = 1; cut < windows; ++cut) {
    const double left = sums[cut] / static_cast<double>(cut);
    const double right = (sums[windows] - sums[cut]) / static_cast<double>(windows - cut);
    if (std::abs(left - right) > bestDifference) {
      bestDifference = std::abs(left - right);
      best = cut;
    }
  }
  return best * kShiftWindowWords;
}

/// A plan node of `op` counted by the prior as `production`, children and cost to be filled.
Plan planOf(PlanOp op, std::string production) {
  Plan p;
  p.op = op;
  p.production = std::move(production);
  return p;
}

/// `parent` over its one child: what the child costs and `overhead`.
Plan over(Plan parent, Plan child, double overhead) {
  parent.cost = overhead + child.cost;
  parent.children.push_back(std::move(child));
  return parent;
}

Plan constPlan() {
  Plan p;
  p.op = PlanOp::Const;
  p.cost = kNodeTextBytes + 3;
  p.production = "const";
  return p;
}

bool sameShape(const Plan &a, const Plan &b) {
  if (a.op != b.op || a.count != b.count || a.mapFn != b.mapFn || a.mapParam != b.mapParam ||
      a.mapPeriodic != b.mapPeriodic || a.mapPer != b.mapPer || a.scanOp != b.scanOp ||
      a.fieldWidths != b.fieldWidths || a.pieceLengths != b.pieceLengths || a.children.size() != b.children.size())
    return false;
  for (size_t i = 0; i < a.children.size(); ++i)
    if (!sameShape(a.children[i], b.children[i])) return false;
  return true;
}

} // namespace

struct HoleSearch::Hole {
  WordsView words;
  unsigned width = 0;
  uint64_t constant = 0; ///< bits equal in every word
  Sample sample;
  mutable std::optional<ColumnExponents> columns; ///< computed by the first field that asks
  mutable std::optional<ColumnExponents> rows;    ///< likewise, with the rows as the channels

  Hole(WordsView w, unsigned bits)
      : words(w), width(bits), constant(constantBits(w, bits)), sample(sampleOf(w)) {}
  bool uniform() const { return constant == widthMask(width); }
};

double estimateLitCost(WordsView words, unsigned width, EncodePolicy policy, Encoding *chosen) {
  if (chosen) *chosen = Encoding::Raw;
  if (words.empty()) return kLitTextBytes;
  if (words.size() <= kInlineMaxWords) return kNodeTextBytes + kInlineWordBytes * static_cast<double>(words.size());
  return static_cast<double>(estimateSmallest(words, width, policy, chosen)) + kLitTextBytes;
}

bool HoleSearch::spend() {
  if (expansions_ >= limits_.maxExpansions) return false;
  ++expansions_;
  return true;
}

void HoleSearch::scoreLit(Plan &lit, WordsView sample, unsigned width, double scale, bool mantissa,
                          bool contextLost) const {
  Encoding chosen = Encoding::Raw;
  EncodePolicy policy = policy_;
  // Candidates are scored without rans_o1, which the chosen program's literals still try
  // (encodeSmallest): it seldom decides between candidates (on the corpus it kept 5 literals at
  // level 5, where `context` models the previous word too), and its count of pairs was a
  // twentieth of level 5's time there. Scored without it, the corpus' archives came out 1 KB
  // smaller at level 5, 2.8 KB at level 3, the same at level 9.
  policy.triesOrder1 = false;
  // A mantissa whose bits look random gives `context`'s model nothing to predict.
  const bool randomMantissa = mantissa && policy.tries(Encoding::Context) && mantissaLooksRandom(sample, width);
  if (contextLost || randomMantissa) policy.contextMinGain = 1;
  lit.cost = estimateLitCost(sample, width, policy, &chosen) * scale;
  // Where context lost, emit does not try it (HoleSearch::emit). Scored whole (scale 1), the
  // stream's context estimate is the one emit would make (rans_o1, left out of the score, only
  // raises the bar context must clear there). A sample may misjudge it: levels that ask for a
  // gain accept that, level 9 (the smallest archive) does not (on the corpus it kept one file
  // 0.09% smaller).
  lit.contextLost = policy_.tries(Encoding::Context) && chosen != Encoding::Context &&
                    (scale == 1 || policy_.minGain > 0);
}

Plan HoleSearch::litPlan(const Hole &hole) const {
  Plan p;
  p.op = PlanOp::Lit;
  p.production = "lit";
  if (scoring_) scoreLit(p, hole.sample.words, hole.width, hole.sample.scale);
  return p;
}

Plan HoleSearch::mergePlan(const Hole &hole, const HoleContext &context, const std::vector<unsigned> &layout,
                           FieldCosts *memo) const {
  Plan p;
  p.op = PlanOp::Merge;
  p.fieldWidths = layout;
  p.cost = kNodeTextBytes;
  const std::vector<unsigned> shifts = mergeFieldShifts(layout);
  for (size_t k = 0; k < layout.size(); ++k) {
    p.fieldNames.push_back(fieldName(hole.width, context.floatType, shifts[k], layout[k]));
    Plan child;
    if (((hole.constant >> shifts[k]) & widthMask(layout[k])) == widthMask(layout[k])) {
      child = constPlan(); // every word has the same bits there
    } else {
      child.op = PlanOp::Lit;
      const uint64_t key = uint64_t{shifts[k]} << 8 | layout[k];
      const FieldVerdict *const verdict = verdictFor(key);
      auto known = memo ? std::find_if(memo->begin(), memo->end(), [&](const auto &e) { return e.first == key; })
                        : FieldCosts::iterator{};
      if (memo && known != memo->end()) {
        child = known->second;
      } else if (scoring_) {
        const bool mantissa = context.floatType && shifts[k] + layout[k] <= context.floatType->mantissaBits;
        PooledFieldBuffers buffers; // the field in its narrowest words, in pages already touched
        const WordsView field = extractField(hole.sample.words, shifts[k], layout[k], *buffers);
        scoreLit(child, field, layout[k], hole.sample.scale, mantissa, verdict && verdict->contextLost);
        if (memo) memo->emplace_back(key, child);
      }
      if (columnOffsets_ && scoring_ && context.floatType) {
        for (const bool rows : {false, true}) {
          Plan map = channelPlan(hole, context, shifts[k], layout[k], rows, memo);
          // Kept only where it wins by more than the estimates err: scored on a sample of words
          // at their channels, the constants' literal can look cheaper than it encodes.
          if (map.op == PlanOp::Map && map.cost < child.cost * (1 - kColumnOffsetsMinGain)) child = std::move(map);
        }
      }
    }
    p.cost += child.cost + 1; // the field's name
    p.children.push_back(std::move(child));
  }
  return p;
}

Plan HoleSearch::channelPlan(const Hole &hole, const HoleContext &context, unsigned shift, unsigned width, bool rows,
                             FieldCosts *memo) const {
  const uint64_t key = (uint64_t{shift} << 8 | width) | uint64_t{1} << (rows ? 33 : 32);
  if (memo) {
    auto known = std::find_if(memo->begin(), memo->end(), [&](const auto &e) { return e.first == key; });
    if (known != memo->end()) return known->second;
  }
  Plan map = channelOffsetsPlan(hole, context, shift, width, rows);
  if (memo) memo->emplace_back(key, map);
  return map;
}

Plan HoleSearch::channelOffsetsPlan(const Hole &hole, const HoleContext &context, unsigned shift, unsigned width,
                                    bool rows) const {
  const DTypeInfo &f = *context.floatType;
  // The exponent's bits within the field.
  const unsigned lo = std::max(shift, f.mantissaBits), hi = std::min(shift + width, f.mantissaBits + f.exponentBits);
  if (lo >= hi || context.shape.size() < 2) return {};
  std::optional<ColumnExponents> &channels = rows ? hole.rows : hole.columns;
  if (!channels) {
    // Dimensions of 1 aside: a depthwise kernel [3, 3, C, 1] has C columns, a [1, 1, in, out]
    // one `in` rows.
    auto unit = [](uint64_t d) { return d == 1; };
    auto first = std::find_if_not(context.shape.begin(), context.shape.end(), unit);
    auto last = std::find_if_not(context.shape.rbegin(), context.shape.rend(), unit);
    channels = first == context.shape.end() ? ColumnExponents{}
                                            : exponentsByChannel(hole.words, f, rows ? *first : *last, rows);
  }
  // Scored only where the exponents' order-0 entropy promises at least half the constants' text.
  const double promised = channels->gainBits * static_cast<double>(hole.words.size()) / 8;
  if (promised < kPeriodicWordBytes * static_cast<double>(channels->medians.size()) / 2) return {};
  std::vector<uint64_t> constants = columnOffsets(*channels, width, lo - shift, lo - f.mantissaBits);
  if (constants.empty()) return {};
  // Each constant holds for a row's words, or for one word of each row.
  const uint64_t per = rows ? hole.words.size() / constants.size() : 1;
  // The field's sample, less each word's channel constant, a run of the sample at a time (the
  // sample's runs are contiguous stretches of the stream).
  std::vector<uint64_t> sample = extractField(hole.sample.words, shift, width);
  const std::vector<uint64_t> inverse = inverseMapConstants(MapFn::Add, constants, width);
  for (size_t i = 0; i < sample.size(); i += kSampleRunWords)
    applyMapConstants(MapFn::Add, std::span<const uint64_t>(inverse), per, width, samplePosition(hole.words.size(), i),
                      sample.data() + i, std::min(kSampleRunWords, sample.size() - i));
  Plan lit;
  lit.op = PlanOp::Lit;
  lit.production = "lit";
  const FieldVerdict *const verdict = verdictFor(uint64_t{shift} << 8 | width);
  scoreLit(lit, sample, width, hole.sample.scale, false, verdict && verdict->contextLost);
  // The text's cost first: an argument moved from may be evaluated before the others.
  const double text = kNodeTextBytes + kPeriodicWordBytes * static_cast<double>(constants.size());
  Plan map = planOf(PlanOp::Map, rows ? "map:rows" : "map:columns");
  map.mapFn = MapFn::Add;
  map.mapPeriodic = std::move(constants);
  map.mapPer = per;
  return over(std::move(map), std::move(lit), text);
}

Plan HoleSearch::templatePlan(const Hole &hole, const HoleContext &context, FieldCosts *memo) const {
  if (context.floatType && !hole.words.empty()) {
    const DTypeInfo &f = *context.floatType;
    const bool offsets = std::exchange(columnOffsets_, false); // the template is the plain IEEE split
    Plan p = mergePlan(hole, context, {f.signBits, f.exponentBits, f.mantissaBits}, memo);
    columnOffsets_ = offsets;
    p.production = "merge:ieee";
    return p;
  }
  return litPlan(hole);
}

Plan HoleSearch::templatePlan(WordsView words, unsigned width, const HoleContext &context) {
  return templatePlan(Hole(words, width), context);
}

Plan HoleSearch::solve(WordsView words, unsigned width, const HoleContext &context) {
  expansions_ = 0;
  // With no candidate to compare (budget 0) and no one to show or learn costs to, the
  // template's plan needs no scores: estimating its fields was a third of level 1's time.
  scoring_ = limits_.maxExpansions > 0 || trace_ || learner_;
  solvedTemplate_.reset();
  Plan best = solveHole(words, width, context, limits_.maxDepth);
  scoring_ = true;
  return best;
}

Plan HoleSearch::solveHole(WordsView words, unsigned width, const HoleContext &context,
                           unsigned depth) {
  const Hole hole(words, width);
  const bool top = depth == limits_.maxDepth;
  std::vector<Candidate> *trace = top ? trace_ : nullptr;
  auto record = [&](const Plan &p) {
    if (trace) trace->push_back(Candidate{p, p.cost});
  };
  if (words.empty()) return litPlan(hole);
  if (hole.uniform()) {
    record(constPlan());
    return constPlan();
  }
  const std::string priorKey =
      prior_ || learner_ ? priorContext(words, width, context.floatType, top) : std::string();
  FieldCosts memo;
  Plan best = templatePlan(hole, context, &memo);
  if (top && scoring_) solvedTemplate_ = best;
  record(best);
  tryStructural(hole, context, depth, best, trace, priorKey, memo);
  if (learner_) learner_->count(priorKey, best.production);
  return best;
}

void HoleSearch::collectVerdicts(const Plan &plan, FieldVerdicts &out) {
  if (plan.op != PlanOp::Merge || plan.children.size() != plan.fieldWidths.size()) return;
  const std::vector<unsigned> shifts = mergeFieldShifts(plan.fieldWidths);
  for (size_t k = 0; k < plan.children.size(); ++k) {
    const Plan &field = plan.children[k];
    const Plan *lit = field.op == PlanOp::Map && field.children.size() == 1 ? &field.children[0] : &field;
    if (lit->op != PlanOp::Lit) continue; // a constant field tells nothing of literals
    const uint64_t key = uint64_t{shifts[k]} << 8 | plan.fieldWidths[k];
    auto it = std::find_if(out.begin(), out.end(), [&](const auto &e) { return e.first == key; });
    if (it == out.end()) it = out.insert(out.end(), {key, FieldVerdict{}});
    // A field several of the leader's plans have: context is skipped only where it lost in all.
    it->second.contextLost = it->second.contextLost && lit->contextLost;
  }
}

const HoleSearch::FieldVerdict *HoleSearch::verdictFor(uint64_t key) const {
  if (!verdicts_) return nullptr;
  auto it = std::find_if(verdicts_->begin(), verdicts_->end(), [&](const auto &e) { return e.first == key; });
  return it == verdicts_->end() ? nullptr : &it->second;
}

Plan HoleSearch::solveLike(std::span<const Plan> shortlist, WordsView words, unsigned width, const HoleContext &context,
                           const Plan *leaderTemplate) {
  expansions_ = 0;
  scoring_ = true;
  solvedTemplate_.reset();
  const Hole hole(words, width);
  // Long runs of one word (a pruned layer among dense ones) are a structure of this stream's
  // own: the search looks for them.
  const bool runs = !words.empty() && words.visit([&](auto w) { return runPieces(w, kMinRunLengths[0]).size() >= 2; });
  if (words.empty() || hole.uniform() || runs) return solve(words, width, context);
  FieldVerdicts verdicts;
  for (const Plan &leader : shortlist) collectVerdicts(leader, verdicts);
  if (leaderTemplate) collectVerdicts(*leaderTemplate, verdicts);
  verdicts_ = &verdicts;
  FieldCosts memo;
  Plan best = templatePlan(hole, context, &memo);
  solvedTemplate_ = best;
  std::optional<Plan> refit;
  for (const Plan &leader : shortlist)
    if (std::optional<Plan> p = refitPlan(leader, hole, context, memo); p && (!refit || p->cost < refit->cost))
      refit = std::move(p);
  verdicts_ = nullptr;
  if (refit && refit->cost <= best.cost) return std::move(*refit);
  // A miss: the structures cost more here than the template. The search, with what it scored
  // so far (fields scored by the leader's verdicts among them).
  const std::string priorKey = prior_ ? priorContext(words, width, context.floatType, true) : std::string();
  tryStructural(hole, context, limits_.maxDepth, best, trace_, priorKey, memo);
  return best;
}

std::optional<Plan> HoleSearch::refitPlan(const Plan &leader, const Hole &hole, const HoleContext &context,
                                          FieldCosts &memo) const {
  switch (leader.op) {
  case PlanOp::Lit: return litPlan(hole);
  case PlanOp::Merge: {
    unsigned total = 0;
    for (unsigned w : leader.fieldWidths) total += w;
    if (total != hole.width || leader.children.size() != leader.fieldWidths.size()) return std::nullopt;
    // The leader's layout, its fields closed as the search closes them: constant where these
    // words' bits are, else a literal, or one under channel constants where these words'
    // channels differ enough (a layer's scales are its own). Where the leader's field had
    // channel constants, these words' are kept if they cost less at all: the leader's search
    // found them worth it for this role.
    Plan p = mergePlan(hole, context, leader.fieldWidths, &memo);
    const std::vector<unsigned> shifts = mergeFieldShifts(leader.fieldWidths);
    for (size_t k = 0; k < p.children.size(); ++k) {
      const Plan &was = leader.children[k];
      if (p.children[k].op != PlanOp::Lit || was.op != PlanOp::Map || was.mapPeriodic.empty() || !context.floatType)
        continue;
      Plan map = channelPlan(hole, context, shifts[k], leader.fieldWidths[k], was.mapPer > 1, &memo);
      if (map.op == PlanOp::Map && map.cost < p.children[k].cost) {
        p.cost += map.cost - p.children[k].cost;
        p.children[k] = std::move(map);
      }
    }
    p.production = leader.production;
    return p;
  }
  case PlanOp::Const:
  case PlanOp::Repeat:
  case PlanOp::Concat:
  case PlanOp::Map:
  case PlanOp::Scan: return std::nullopt;
  }
  return std::nullopt;
}

void HoleSearch::tryStructural(const Hole &hole, const HoleContext &context, unsigned depth, Plan &best,
                               std::vector<Candidate> *trace, const std::string &priorKey, FieldCosts &memo) {
  // With no expansions to spend (level 1) nothing below would be tried: skip finding runs,
  // periods and cuts, each a pass over the words.
  if (expansions_ >= limits_.maxExpansions) return;
  const WordsView words = hole.words;
  const unsigned width = hole.width;
  const HoleContext pieceContext{context.floatType, {}};

  // The candidates that apply, in the fixed order; each expands into a plan (or nothing).
  struct Production {
    std::string key;
    std::function<std::optional<Plan>()> expand;
  };
  std::vector<Production> productions;

  // A float tensor as one literal of whole words: few distinct values code well so.
  if (context.floatType && width <= 16) productions.push_back({"lit", [&]() -> std::optional<Plan> { return litPlan(hole); }});

  // merge: every proposed field layout (the template's is `best` already).
  if (depth > 0 && width > 1) {
    // Level 9 (no gain asked) scores them anyway: where Huffman codes the fields, rounding its
    // code lengths costs a narrow field more than a joined one (a synthetic F16 checkpoint of
    // independent signs: 0.11% smaller joined).
    const bool signJoins = context.floatType && (policy_.minGain <= 0 ||
                                                 signMayJoinExponent(hole.sample.words, *context.floatType));
    std::vector<ProposedLayout> layouts = proposeFieldLayouts(width, context.floatType, hole.constant, signJoins);
    for (size_t i = context.floatType ? 1 : 0; i < layouts.size(); ++i)
      productions.push_back({"merge:" + layouts[i].kind, [&, widths = layouts[i].widths, kind = layouts[i].kind] {
                               Plan p = mergePlan(hole, context, widths, &memo);
                               p.production = "merge:" + kind;
                               return std::optional<Plan>(std::move(p));
                             }});
  }

  // concat at long runs of one word (zero runs of pruned tensors): the longest runs that give
  // pieces (shorter ones only add pieces).
  std::vector<std::pair<uint64_t, bool>> pieces;
  for (uint64_t minRun : kMinRunLengths) {
    if (depth == 0) break;
    pieces = words.visit([&](auto w) { return runPieces(w, minRun); });
    if (pieces.size() >= 2 && pieces.size() <= kMaxPieces) break;
    pieces.clear();
  }
  if (!pieces.empty())
    productions.push_back({"concat:runs", [&]() -> std::optional<Plan> {
                             Plan concat = planOf(PlanOp::Concat, "concat:runs");
                             concat.cost = kNodeTextBytes;
                             uint64_t offset = 0;
                             for (const auto &[length, isRun] : pieces) {
                               concat.pieceLengths.push_back(length);
                               Plan piece = isRun ? constPlan()
                                                  : solveHole(words.subspan(offset, length), width, pieceContext, depth - 1);
                               concat.cost += piece.cost + 1;
                               concat.children.push_back(std::move(piece));
                               offset += length;
                               if (concat.cost >= best.cost) return std::nullopt; // it cannot win any more
                             }
                             return concat;
                           }});

  // concat where the statistics change (regions of different scale joined in one tensor).
  if (const uint64_t cut = depth > 0 ? words.visit([&](auto w) { return statisticsCut(w, context.floatType); }) : 0)
    productions.push_back({"concat:shift", [&, cut]() -> std::optional<Plan> {
                             Plan concat = planOf(PlanOp::Concat, "concat:shift");
                             concat.pieceLengths = {cut, words.size() - cut};
                             concat.cost = kNodeTextBytes + 2;
                             for (auto piece : {words.first(cut), words.subspan(cut)}) {
                               concat.children.push_back(solveHole(piece, width, pieceContext, depth - 1));
                               concat.cost += concat.children.back().cost;
                             }
                             return concat;
                           }});

  // repeat at the smallest exact period.
  if (const uint64_t period = depth > 0 ? words.visit([&](auto w) { return smallestPeriod(w, context.shape); }) : 0)
    productions.push_back({"repeat", [&, period]() -> std::optional<Plan> {
                             Plan repeat = planOf(PlanOp::Repeat, "repeat");
                             repeat.count = words.size() / period;
                             return over(std::move(repeat), solveHole(words.first(period), width, pieceContext, depth - 1),
                                         kNodeTextBytes + 2);
                           }});

  if (depth > 0 && !context.floatType && width >= 2 && words.size() >= 2) {
    // scan: differences (ramps, sorted indices, smooth integer sequences).
    for (ScanOp op : {ScanOp::Add, ScanOp::Xor})
      productions.push_back({"scan:" + std::string(scanOpName(op)), [&, op]() -> std::optional<Plan> {
                               const WordBuffer steps = scanDifferences(op, width, words);
                               Plan scan = planOf(PlanOp::Scan, "scan:" + std::string(scanOpName(op)));
                               scan.scanOp = op;
                               return over(std::move(scan), solveHole(steps.view(), width, {}, depth - 1),
                                           kNodeTextBytes + 3);
                             }});
    // map add: words offset from a minimum pack into fewer bits.
    // A plain reduction from the first word (there are two at least, above), which vectorizes:
    // std::minmax_element's pairwise compares and conditional moves, a value at a time, were
    // 2.5% of level 5's instructions on a U8 model.
    const auto [lowest, highest] = words.visit([](auto w) {
      using W = typename decltype(w)::value_type;
      W lo = w[0], hi = w[0];
      for (const W x : w) {
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
      return std::pair<uint64_t, uint64_t>(lo, hi);
    });
    if (lowest > 0 && std::bit_width(highest - lowest) < std::bit_width(highest))
      productions.push_back({"map:add", [&, low = lowest]() -> std::optional<Plan> {
                               // In the words' own container, as scanDifferences' steps.
                               const WordBuffer offsets = words.visit([&](auto w) {
                                 using W = typename decltype(w)::value_type;
                                 std::vector<W> out(w.size());
                                 for (size_t i = 0; i < w.size(); ++i) out[i] = static_cast<W>(w[i] - low);
                                 return WordBuffer(std::move(out));
                               });
                               Plan map = planOf(PlanOp::Map, "map:add");
                               map.mapFn = MapFn::Add;
                               map.mapParam = low;
                               return over(std::move(map), solveHole(offsets.view(), width, {}, depth - 1),
                                           kNodeTextBytes + 3);
                             }});
  }

  // The likely ones first where a prior is given; ties keep the fixed order.
  if (prior_) {
    std::vector<double> p(productions.size());
    for (size_t i = 0; i < productions.size(); ++i) p[i] = prior_->probability(priorKey, productions[i].key);
    std::vector<size_t> order(productions.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
    std::vector<Production> sorted;
    for (size_t i : order) sorted.push_back(std::move(productions[i]));
    productions = std::move(sorted);
  }
  for (Production &production : productions) {
    if (!spend()) return;
    std::optional<Plan> candidate = production.expand();
    if (!candidate) continue;
    if (trace) trace->push_back(Candidate{*candidate, candidate->cost});
    if (candidate->cost < best.cost) best = std::move(*candidate);
  }
}

ExprPtr HoleSearch::emit(const Plan &plan, WordsView words, unsigned width, Bytes &payload) const {
  return emitAt(plan, words, width, payload, 0);
}

namespace {

/// Whether emitAt codes `plan` on a run of its stream as it would that part of the whole.
bool emitsOnRuns(const Plan &plan) {
  if (plan.op == PlanOp::Concat || plan.op == PlanOp::Repeat) return false;
  return std::all_of(plan.children.begin(), plan.children.end(), emitsOnRuns);
}

} // namespace

std::optional<double> HoleSearch::slicedPayloadBytes(const Plan &plan, WordsView words, unsigned width) const {
  constexpr uint64_t kSliceRuns = 4, kMaxRunWords = uint64_t{1} << 18, kRunsPerStream = 16;
  const uint64_t n = words.size();
  if (n < kSliceRuns * kRunsPerStream || !emitsOnRuns(plan)) return std::nullopt;
  const uint64_t run = std::min(kMaxRunWords, n / kRunsPerStream);
  const uint64_t stride = (n - run) / (kSliceRuns - 1);
  Bytes payload;
  for (size_t r = 0; r < kSliceRuns; ++r) emitAt(plan, words.subspan(r * stride, run), width, payload, r * stride);
  return static_cast<double>(payload.size()) * static_cast<double>(n) / static_cast<double>(kSliceRuns * run);
}

ExprPtr HoleSearch::emitAt(const Plan &plan, WordsView words, unsigned width, Bytes &payload,
                           uint64_t position) const {
  const uint64_t n = words.size();
  auto literal = [&]() -> ExprPtr {
    if (n > 0 && n <= kInlineMaxWords)
      return Lit::make(StreamType{width, n}, words.widened());
    EncodePolicy policy = policy_;
    if (plan.op == PlanOp::Lit && plan.contextLost) policy.contextMinGain = 1; // not tried
    // A literal of several blocks codes them on the threads the merge's fields were given: a
    // tensor's exponents are most of its work, its other fields little.
    if (emitThreads_ > 1 && n >= kParallelFieldsMinWords) policy.threads = emitThreads_;
    return makeLit(words, width, payload, policy);
  };
  switch (plan.op) {
  case PlanOp::Lit: return literal();
  case PlanOp::Const:
    if (n == 0 || !isUniform(words)) return literal();
    return Const::make(StreamType{width, n}, words[0]);
  case PlanOp::Repeat: {
    if (plan.count < 2 || n % plan.count != 0 || plan.children.size() != 1) return literal();
    const uint64_t period = n / plan.count;
    const bool periodic = words.visit([&](auto w) {
      for (uint64_t i = period; i < n; ++i)
        if (w[i] != w[i - period]) return false;
      return true;
    });
    if (!periodic) return literal();
    return Repeat::make(plan.count, emit(plan.children[0], words.first(period), width, payload));
  }
  case PlanOp::Concat: {
    uint64_t total = 0;
    for (uint64_t length : plan.pieceLengths) total += length;
    if (total != n || plan.children.size() != plan.pieceLengths.size() || plan.children.empty()) return literal();
    std::vector<ExprPtr> parts;
    uint64_t offset = 0;
    for (size_t i = 0; i < plan.children.size(); ++i) {
      // Each piece is a stream of its own, its map constants applied from its start.
      parts.push_back(emit(plan.children[i], words.subspan(offset, plan.pieceLengths[i]), width, payload));
      offset += plan.pieceLengths[i];
    }
    return Concat::make(std::move(parts));
  }
  case PlanOp::Map: {
    if (plan.children.size() != 1) return literal();
    const std::vector<uint64_t> &periodic = plan.mapPeriodic;
    // The body in the words' own container: an exponent field of 46 M words held as 64-bit
    // words took 370 MB of fresh memory, its encoders eight times the loads.
    const WordBuffer body = words.visit([&](auto w) {
      using W = typename decltype(w)::value_type;
      std::vector<W> out(w.begin(), w.end());
      if (!periodic.empty())
        applyMapConstants(plan.mapFn, std::span<const uint64_t>(inverseMapConstants(plan.mapFn, periodic, width)),
                          plan.mapPer, width, position, out.data(), n);
      else
        for (W &x : out) x = static_cast<W>(inverseMap(plan.mapFn, plan.mapParam, width, x));
      return WordBuffer(std::move(out));
    });
    auto map = Map::make(plan.mapFn, plan.mapParam, emitAt(plan.children[0], body.view(), width, payload, position));
    map->periodic = periodic;
    map->per = plan.mapPer;
    return map;
  }
  case PlanOp::Scan: {
    if (n == 0 || plan.children.size() != 1) return literal();
    const WordBuffer differences = scanDifferences(plan.scanOp, width, words);
    return Scan::make(plan.scanOp, words[0], emitAt(plan.children[0], differences.view(), width, payload, position));
  }
  case PlanOp::Merge: {
    unsigned total = 0;
    for (unsigned w : plan.fieldWidths) total += w;
    if (total != width || plan.children.size() != plan.fieldWidths.size() || n == 0) return literal();
    const std::vector<unsigned> shifts = mergeFieldShifts(plan.fieldWidths);
    const size_t k = plan.fieldWidths.size();
    auto emitField = [&](size_t i, FieldBuffers &buffers, Bytes &into) {
      const WordsView field = extractField(words, shifts[i], plan.fieldWidths[i], buffers);
      std::string name = i < plan.fieldNames.size() ? plan.fieldNames[i] : std::string();
      return MergeField{std::move(name), emitAt(plan.children[i], field, plan.fieldWidths[i], into, position)};
    };
    std::vector<MergeField> fields(k);
    if (emitThreads_ > 1 && n >= kParallelFieldsMinWords) {
      // Field by field on several threads, each into a payload of its own, joined in order:
      // the same bytes as one after another, for a field's buffer more per thread.
      std::vector<Bytes> payloads(k);
      parallelFor(k, emitThreads_, [&](size_t i) {
        PooledFieldBuffers buffers;
        fields[i] = emitField(i, *buffers, payloads[i]);
      });
      for (size_t i = 0; i < k; ++i) {
        rebasePayload(*fields[i].expr, payload.size());
        payload.insert(payload.end(), payloads[i].begin(), payloads[i].end());
        Bytes().swap(payloads[i]);
      }
    } else {
      // One field at a time, in one buffer: a large tensor holds one field's words beside its
      // own at most, and the buffer's pages are touched once (a fresh one per field was a fifth
      // of level 1's time in page faults and zeroing).
      PooledFieldBuffers buffers;
      for (size_t i = 0; i < k; ++i) fields[i] = emitField(i, *buffers, payload);
    }
    return Merge::make(std::move(fields));
  }
  }
  return literal();
}

bool samePlanShape(const Plan &a, const Plan &b) { return sameShape(a, b); }

namespace {

// The lines describePlan and describeProgram make alike, so that a program is known by its plan's.
std::string describeMap(MapFn fn, size_t periodic, uint64_t per, uint64_t param, const std::string &body) {
  if (periodic)
    return "map " + std::string(mapFnName(fn)) + " [" + std::to_string(periodic) +
           (per > 1 ? " row constants] (" : " column constants] (") + body + ")";
  return "map " + std::string(mapFnName(fn)) + " " + std::to_string(param) + " (" + body + ")";
}
std::string describeConcat(size_t pieces, size_t constants) {
  return "concat of " + std::to_string(pieces) + " pieces (" + std::to_string(constants) + " const)";
}
/// "merge(" + fields + ")", field i `name: child uW` (`child uW` without a name).
template <typename Field> std::string describeMerge(size_t fields, Field field) {
  std::string out = "merge(";
  for (size_t i = 0; i < fields; ++i) {
    const auto [name, child, width] = field(i);
    out += (i ? ", " : "") + (name.empty() ? std::string() : name + ": ") + child + " u" + std::to_string(width);
  }
  return out + ")";
}

} // namespace

std::string describePlan(const Plan &plan) {
  auto child = [&](size_t i) { return i < plan.children.size() ? describePlan(plan.children[i]) : std::string("?"); };
  switch (plan.op) {
  case PlanOp::Lit: return "lit";
  case PlanOp::Const: return "const";
  case PlanOp::Repeat: return "repeat " + std::to_string(plan.count) + " (" + child(0) + ")";
  case PlanOp::Map: return describeMap(plan.mapFn, plan.mapPeriodic.size(), plan.mapPer, plan.mapParam, child(0));
  case PlanOp::Scan: return "scan " + std::string(scanOpName(plan.scanOp)) + " (" + child(0) + ")";
  case PlanOp::Concat: {
    size_t constants = 0;
    for (const Plan &c : plan.children) constants += c.op == PlanOp::Const;
    return describeConcat(plan.children.size(), constants);
  }
  case PlanOp::Merge:
    return describeMerge(plan.fieldWidths.size(), [&](size_t i) {
      return std::tuple{i < plan.fieldNames.size() ? plan.fieldNames[i] : std::string(), child(i), plan.fieldWidths[i]};
    });
  }
  return "?";
}

std::string describeProgram(const Expr &e) {
  switch (e.kind) {
  case NodeKind::Lit: return "lit";
  case NodeKind::Const: return "const";
  case NodeKind::Hole: return "?";
  case NodeKind::Repeat: {
    const Repeat &r = as<Repeat>(e);
    return "repeat " + std::to_string(r.count) + " (" + describeProgram(*r.body) + ")";
  }
  case NodeKind::Map: {
    const Map &m = as<Map>(e);
    return describeMap(m.fn, m.periodic.size(), m.per, m.param, describeProgram(*m.body));
  }
  case NodeKind::Scan:
    return "scan " + std::string(scanOpName(as<Scan>(e).op)) + " (" + describeProgram(*as<Scan>(e).body) + ")";
  case NodeKind::Concat: {
    const auto &parts = as<Concat>(e).parts;
    size_t constants = 0;
    for (const ExprPtr &p : parts) constants += p->kind == NodeKind::Const;
    return describeConcat(parts.size(), constants);
  }
  case NodeKind::Merge: {
    const auto &fields = as<Merge>(e).fields;
    return describeMerge(fields.size(), [&](size_t i) {
      return std::tuple{fields[i].name, describeProgram(*fields[i].expr), streamTypeOf(*fields[i].expr).width};
    });
  }
  }
  return "?";
}

double planTextBytes(const Plan &plan) {
  double bytes = plan.op == PlanOp::Lit ? kLitTextBytes : kNodeTextBytes;
  bytes += kPeriodicWordBytes * static_cast<double>(plan.mapPeriodic.size());
  for (const Plan &child : plan.children) bytes += planTextBytes(child);
  return bytes;
}

} // namespace brevis
