#include "synth/CostModel.h"

#include "lang/BitpackFormat.h"
#include "runtime/codecs/LitEncode.h"
#include "runtime/codecs/bitpack/BitpackEncode.h"
#include "runtime/codecs/context/ContextCodec.h"
#include "runtime/codecs/huffman/HuffmanEncode.h"
#include "runtime/codecs/rans/Rans16.h"
#include "runtime/codecs/rans/RansCodec.h"
#include "runtime/codecs/zstd/ZstdCodec.h"
#include "runtime/common/Histogram.h"
#include "runtime/execution/ThreadPool.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

namespace brevis {

namespace {

double entropyBits(std::span<const uint64_t> counts, uint64_t total) {
  double bits = 0;
  for (uint64_t c : counts)
    if (c) bits -= static_cast<double>(c) * std::log2(static_cast<double>(c) / static_cast<double>(total));
  return bits;
}

uint64_t blocksOf(uint64_t n, uint64_t blockWords) { return n / blockWords + (n % blockWords != 0); }

/// zstd's promise is measured on at most this many words: the whole of a shorter stream, else
/// kZstdProbeChunks evenly spaced runs (compressed as one frame, so that repeats across them
/// count). Probing costs about as much per byte as the level-1 encoding it is; on the corpus,
/// samples of 16 or 32 KiB found no more literals that zstd wins.
constexpr uint64_t kZstdProbeWords = 8192;
/// Counting rans_o1's pairs over a block's worth of words was two fifths of level 1's time on
/// a checkpoint of 1 MB tensors: a stream of at least kOrder1ProbeMinWords is first probed on
/// a run of kOrder1ProbeWords (worthEncoding). Shorter runs make the probe useless on 7-bit
/// mantissas: the plug-in entropy of 16 K cells from 16 K words comes out 0.7 bits too low.
constexpr uint64_t kOrder1ProbeWords = uint64_t{1} << 16, kOrder1ProbeMinWords = uint64_t{1} << 18;
/// rans_o1's estimate of a longer stream counts the pairs of one block's worth from its middle
/// and scales them (its tables are per block, so the scaled table cost stays per block).
constexpr uint64_t kOrder1EstimateWords = kRansBlockWords;
/// The context coder's estimate simulates it on at most this many words: a run split in a
/// learning half and a steady half (estimateWith), so that learning, which takes tens of
/// thousands of words, is counted once per block and not for every run's length. The search
/// estimates every field of every layout it scores on a sample of 2^16 words, which this
/// simulates whole. At 2^18, these simulations were most of level 5's time on a checkpoint of
/// 1 MB tensors (6.9 s there against 3.0 s now), for archives of the same size pooled over the
/// corpus; at 2^15, a tensor with zero rows was judged by the rows in its middle.
constexpr uint64_t kContextEstimateWords = uint64_t{1} << 16;
constexpr uint64_t kZstdProbeChunks = 4;
constexpr int kZstdProbeLevel = 1;
/// How far above the size zstd must reach its probe may come out for zstd to be encoded, where
/// the probe finds matches (codes its sample below the sample's order-0 entropy): a sample
/// misjudges its stream a little, and higher levels find matches level 1 misses. Where it finds
/// none, higher levels code the same literals (within 0.3% on the corpus' mantissa fields, which
/// took two thirds of zstd's encoding time for nothing kept), and the probe must promise the win
/// itself. Float fields that only the optimal parsers code well probe 20-50% above: a slack of
/// 1.5 would make level 9's zstd time twelve times as long for a tenth more of its gain
/// (docs/benchmarks.md).
constexpr double kZstdProbeSlack = 1.05;
/// Byte streams of at least this many rans blocks are judged by coding one block before all
/// (ransProbeBytes, for ransBlockLoses and byteCoderVerdict): one block in four, at most, is
/// coded for nothing.
constexpr uint64_t kRansProbeMinBlocks = 4;
/// How much more than the gain the probe must show: blocks differ a little, and a stream that
/// wins by less saves at most this much of itself for a slower decoder.
constexpr double kRansProbeRoom = 0.001;
/// Past this much more than the gain, rans' estimate alone is believed (ransBlockLoses).
constexpr double kRansSureRoom = 0.01;
/// The room either way a verdict between huffman and rans by rans' probe and huffman's
/// estimate keeps (byteCoderVerdict): huffman's estimate came within 0.05% of its size,
/// the probe within 0.002% (a 7-bit field of 65 M words: 37,587,807 against 37,587,283).
constexpr double kProbeVerdictRoom = 0.0005;
/// No zstd literal of one word or more is smaller: 3 bytes of block size, 1 of frame size and a
/// frame of at least 10.
constexpr uint64_t kZstdMinBytes = 14;

/// c log2 c, from a table for the counts below 2^16: a logarithm for every used pair was a sixth
/// of level 1's time. A row of counts c (T their sum) codes in T log2 T - sum of c log2 c bits.
/// Built on first use: before main, its 65,536 logarithms were two fifths of the user time of
/// every command's start-up (`brevisc --version`), which decoding a small file pays.
const std::vector<double> &xLog2xTable() {
  static const std::vector<double> table = [] {
    std::vector<double> t(size_t{1} << 16, 0.0);
    for (size_t x = 1; x < t.size(); ++x) t[x] = static_cast<double>(x) * std::log2(static_cast<double>(x));
    return t;
  }();
  return table;
}
inline double xLog2x(uint64_t c) {
  const std::vector<double> &table = xLog2xTable();
  return c < table.size() ? table[c] : static_cast<double>(c) * std::log2(static_cast<double>(c));
}

/// Streams up to this many words list the (previous, word) pairs they touch (order1EntropyBits).
constexpr uint64_t kListedPairsMaxWords = 4096;

} // namespace

double order1EntropyBits(WordsView words, unsigned width, uint64_t &used) {
  double bits = 0;
  used = 0;
  if (words.size() <= kListedPairsMaxWords) {
    // Counters of every (previous, word) pair, kept zero between calls: the pairs this stream
    // touched are listed, then read and cleared, and the rows' totals summed from them (a
    // table cleared for each literal was most of the synthesis time of a checkpoint of many
    // small tensors; sorting the pairs instead, a twentieth of the search's time on the corpus).
    thread_local std::vector<uint32_t> cells(size_t{1} << 16);
    thread_local std::array<uint64_t, 256> rows{};
    thread_local std::vector<uint16_t> touched;
    touched.clear();
    uint64_t previous = 0;
    words.visit([&](auto span) {
      for (uint64_t w : span) {
        const auto pair = static_cast<uint16_t>(previous << 8 | w);
        if (cells[pair]++ == 0) touched.push_back(pair);
        previous = w;
      }
    });
    double sum = 0;
    for (const uint16_t pair : touched) {
      sum += xLog2x(cells[pair]);
      rows[pair >> 8] += cells[pair];
      cells[pair] = 0;
    }
    for (uint64_t &total : rows)
      if (total) {
        bits += xLog2x(total);
        total = 0;
      }
    used = touched.size();
    return bits - sum;
  }
  // A longer stream: a row per previous word, a column per word, 2^width of each (a 7-bit
  // field's table is a quarter of a byte stream's, a sign's four counters), kept zero between
  // calls; only the rows the stream used are read and cleared (an exponent uses a few dozen of
  // 256; clearing and reading the whole table was most of a probe's time). Listing the touched
  // pairs here, a test for every word, doubled level 1's time in its probes.
  const size_t side = size_t{1} << width;
  thread_local std::vector<uint32_t> pairs;
  thread_local std::vector<uint8_t> rowUsed;
  if (pairs.size() < side * side + 1) pairs.assign(side * side + 1, 0); // + 1: rows are read in pairs
  rowUsed.assign(side, 0);
  uint32_t *const cells = pairs.data();
  uint8_t *const used8 = rowUsed.data();
  words.visit([&](auto span) {
    // Two runs counted in one loop (the first half and the second): runs of one repeated pair
    // (an exponent's common value after itself) make each count wait for the one before.
    const size_t n = span.size(), half = n / 2;
    uint64_t a = 0, b = half ? span[half - 1] : 0;
    for (size_t i = 0; i < half; ++i) {
      const uint64_t x = span[i], y = span[half + i];
      ++cells[a * side + x];
      ++cells[b * side + y];
      used8[a] = 1; // a store only: a count of each row too was a third of the time
      used8[b] = 1;
      a = x;
      b = y;
    }
    if (n % 2) {
      ++cells[b * side + span[n - 1]];
      used8[b] = 1;
    }
  });
  const double *const table = xLog2xTable().data();
  const size_t tableSize = xLog2xTable().size();
  for (size_t c = 0; c < side; ++c) {
    if (!used8[c]) continue;
    uint32_t *const row = cells + c * side;
    double sum = 0;
    uint64_t total = 0;
    // Two counters at a time: a row of an exponent's pairs is mostly zeros.
    for (size_t x = 0; x < side; x += 2) {
      uint64_t two;
      std::memcpy(&two, row + x, sizeof two);
      if (two == 0) continue;
      auto add = [&](uint32_t count) {
        used += count != 0;
        total += count;
        sum += count < tableSize ? table[count] : xLog2x(count); // table[0] is 0
      };
      add(row[x]);
      add(row[x + 1]);
      std::memset(row + x, 0, sizeof two);
    }
    bits += xLog2x(total) - sum;
  }
  return bits;
}

namespace {

/// Bitpack's bit count of the bytes counted in counts[0..256): the largest value present's width.
unsigned bitpackBitsOfCounts(const uint64_t *counts) {
  for (unsigned v = 256; v-- > 0;)
    if (counts[v]) return static_cast<unsigned>(std::bit_width(v));
  return 0;
}

/// Whether zstd at policy.zstdLevel may beat `bestSize` by the policy's gain, judged by zstd at
/// the probe level on (a sample of) the stream.
bool zstdMayWin(WordsView words, uint64_t bestSize, const EncodePolicy &policy) {
  if (policy.zstdLevel <= 0 || bestSize <= kZstdMinBytes) return false;
  const uint64_t n = words.size();
  thread_local Bytes sample;
  sample.clear();
  if (n <= kZstdProbeWords) {
    words.visit([&](auto w) { sample.assign(w.begin(), w.end()); });
  } else {
    const uint64_t chunk = kZstdProbeWords / kZstdProbeChunks;
    const uint64_t stride = (n - chunk) / (kZstdProbeChunks - 1);
    for (uint64_t k = 0; k < kZstdProbeChunks; ++k)
      words.subspan(k * stride, chunk).visit([&](auto w) { sample.insert(sample.end(), w.begin(), w.end()); });
  }
  const uint64_t probe = zstdFrameSize(sample, kZstdProbeLevel);
  uint64_t counts[256] = {};
  countSmallValues(std::span<const uint8_t>(sample), counts);
  const bool matches = static_cast<double>(probe) * 8 < entropyBits(counts, sample.size());
  return static_cast<double>(probe) * static_cast<double>(n) / static_cast<double>(sample.size()) <
         static_cast<double>(bestSize) * (1 - policy.minGain) * (matches ? kZstdProbeSlack : 1.0);
}

/// What encodeSmallest counted of a stream once, for every estimate and encoder after it: a
/// byte stream's counts, or the histogram of a stream of 9 to 16 bits (null: not counted).
struct Counted {
  const uint64_t *bytes = nullptr;
  const WordHistogram *words = nullptr;
};

/// estimateSize, given what the caller counted of the words: the order-0 estimates then need
/// no pass over them.
std::optional<uint64_t> estimateWith(Encoding encoding, WordsView words, unsigned width, Counted counted);

std::optional<double> ransProbeBytes(WordsView words, unsigned width, std::span<const ByteCounts> blockCounts,
                                     Counted counted);

/// Which of Huffman and rANS wins on a byte stream by the policy's rule, where the estimates
/// tell it without encoding both: on streams of 2^16 words or more both estimates came within
/// 0.1% of the exact sizes (every literal of that size at level 1 on the corpus and on a 134 MB
/// BF16 checkpoint: Huffman −0.001% to +0.05%, rANS −0.06% to +38%, over only where it stores
/// blocks as they are), so a verdict with policy.estimateRoom to spare either way is kept.
/// Huffman coding the exponents that rANS then replaced was a tenth of level 1's time, and
/// rANS coding exponents it came within the margin of, another. Within that room, a stream of
/// kRansProbeMinBlocks rans blocks or more, which Huffman may code smaller than `bestSize`,
/// has rans' middle block coded alone (ransProbeBytes), and is judged on that with
/// kProbeVerdictRoom to spare: a 7-bit field of a 131 MB tensor (rans 0.4% under the
/// threshold by its estimate and by its exact size) was Huffman coded whole for nothing, 6%
/// of level 5's time. The probe's size, where one was coded, goes to `probedOut`.
std::optional<Encoding> byteCoderVerdict(WordsView words, unsigned width, const uint64_t *byteCounts,
                                            std::span<const ByteCounts> blockCounts, uint64_t bestSize,
                                            const EncodePolicy &policy, std::optional<double> *probedOut = nullptr) {
  constexpr uint64_t kMinWords = uint64_t{1} << 16;
  if (words.size() < kMinWords || !policy.tries(Encoding::Huffman) || !policy.tries(Encoding::Rans)) return std::nullopt;
  const auto huffman = estimateWith(Encoding::Huffman, words, width, Counted{byteCounts});
  const auto rans = estimateWith(Encoding::Rans, words, width, Counted{byteCounts});
  if (!huffman || !rans) return std::nullopt;
  const double threshold = static_cast<double>(*huffman) * (1 - policy.gainFor(Encoding::Rans, width));
  auto verdict = [&](double ransBytes, double room) -> std::optional<Encoding> {
    if (ransBytes * (1 + room) < threshold * (1 - room)) return Encoding::Rans;
    if (ransBytes * (1 - room) >= threshold * (1 + room)) return Encoding::Huffman;
    return std::nullopt;
  };
  if (const auto byEstimates = verdict(static_cast<double>(*rans), policy.estimateRoom)) return byEstimates;
  const bool huffmanMayWin = static_cast<double>(*huffman) < static_cast<double>(bestSize) *
                                                                (1 - policy.gainFor(Encoding::Huffman, width));
  if (policy.estimateRoom <= 0 || !huffmanMayWin) return std::nullopt;
  const auto probed = ransProbeBytes(words, width, blockCounts, Counted{byteCounts});
  if (probedOut) *probedOut = probed;
  return probed ? verdict(*probed, kProbeVerdictRoom) : std::nullopt;
}

/// Whether a large byte stream's sample shows that neither order-0 coder (huffman, rans) can
/// beat bitpack of the field's full width by the policy's gain, so that the stream need not be
/// counted whole: its sample (kRuns runs of kRunWords at evenly spaced positions) uses the
/// field's top bit and its order-0 entropy comes within the gain of
/// the width. Near-uniform mantissa fields are most of a float checkpoint's words; counting each
/// whole to find that was a seventh of level 1's time. (A sample's plug-in entropy comes out
/// below the stream's, and the coders' codes and tables above the entropy, so what the sample
/// rules out the full count would too, unless the sample is unlike the rest of its stream.)
bool orderZeroCodersCannotWin(WordsView words, unsigned width, const EncodePolicy &policy) {
  constexpr uint64_t kMinWords = uint64_t{1} << 18;
  constexpr size_t kRuns = 8, kRunWords = 4096;
  const double gain = std::min(policy.gainFor(Encoding::Huffman, width), policy.gainFor(Encoding::Rans, width));
  if (width > 8 || width < 2 || words.size() < kMinWords || gain <= 0) return false;
  uint64_t counts[256] = {};
  const size_t stride = (words.size() - kRunWords) / (kRuns - 1);
  for (size_t r = 0; r < kRuns; ++r) countWords(words.subspan(r * stride, kRunWords), width, counts);
  const uint64_t *const topHalf = counts + (size_t{1} << (width - 1));
  if (std::all_of(topHalf, topHalf + (size_t{1} << (width - 1)), [](uint64_t c) { return c == 0; })) return false;
  const double perWord = entropyBits(std::span<const uint64_t>(counts, size_t{1} << width), kRuns * kRunWords) /
                         static_cast<double>(kRuns * kRunWords);
  return perWord >= static_cast<double>(width) * (1 - gain);
}

/// Whether a candidate that is known only by encoding may beat `bestSize` by the policy's gain:
/// an entropy coder by its estimate, zstd by a probe.
bool worthEncoding(Encoding e, WordsView words, unsigned width, uint64_t bestSize,
                   const EncodePolicy &policy, Counted counted) {
  if (!policy.tries(e)) return false;
  if (e == Encoding::Zstd) return encodingApplies(e, words, width) && zstdMayWin(words, bestSize, policy);
  auto ruledOut = [&](double estimate) {
    // Only encode a candidate whose estimate comes near the best so far.
    if (estimate > static_cast<double>(bestSize) * (1 + kEstimateRelative) + kEstimateAbsolute) return true;
    // On large literals, a policy asking for a gain encodes only candidates whose estimate
    // promises it: near-uniform mantissa bytes come within a fraction of a percent of bitpack
    // in every coder, and trying all three took half of the compression time for nothing kept.
    // (There the estimates are within ~0.1%: tables and framing, which they model least well,
    // are a small part. Smaller literals are tried whatever their estimate, but at level 1.)
    return policy.gainFor(e, width) > 0 && bestSize >= policy.promiseMinBytes &&
           estimate >= static_cast<double>(bestSize) * (1 - policy.gainFor(e, width));
  };
  const uint64_t n = words.size();
  if (e == Encoding::RansO1 && n >= kOrder1ProbeMinWords && width <= kRansMaxWidth) {
    // Probes first: the order-1 entropy of a run from the middle, with no tables, scaled.
    // A short run's plug-in entropy comes out lower than a long one's, so what it rules out
    // the full estimate would too, unless the run is unlike the rest of its stream; a quarter
    // of the run first (an exponent's few dozen symbols make few pairs, and the short run
    // rules it out already), the whole run where that does not.
    for (const uint64_t probeWords : {kOrder1ProbeWords / 4, kOrder1ProbeWords}) {
      uint64_t used = 0;
      const double bits = order1EntropyBits(words.subspan((n - probeWords) / 2, probeWords), width, used);
      if (ruledOut(bits / 8 * static_cast<double>(n) / static_cast<double>(probeWords))) return false;
    }
  }
  auto estimate = estimateWith(e, words, width, counted);
  return estimate && !ruledOut(static_cast<double>(*estimate));
}

/// Whether rans, on a byte stream of kRansProbeMinBlocks blocks or more, loses to `bestSize`
/// by the gain `gain` asked of it, as judged by coding its middle block alone (ransProbeBytes): its
/// blocks are coded independently, each with a table of its own, so that one block shows what
/// its estimate misses (on near-uniform 7-bit mantissas its frequency tables, coarser than the
/// counts, cost ~0.1% more than the entropy). At level 5, which asks rans a quarter of 1% over
/// bitpack, BF16 mantissas whose estimate came just past that were coded whole and then lost by
/// a few bytes: three times the rans bytes kept were coded on a checkpoint of 90 MB tensors.
/// Streams whose estimate promises the gain with kRansSureRoom to spare (exponents) are not
/// probed. A stream of 9 to 16 bits (`counted.words`, its histogram) is judged the same way by
/// one block of its 16-bit coder, whose one table is counted once: that coder's estimate is
/// ~0.1% low too (its states' rounding), and 10-bit fields of exponent and mantissa bits were
/// coded whole to lose to huffman by 0.06%. `probedBefore`: the probe, where byteCoderVerdict
/// coded it already.
bool ransBlockLoses(WordsView words, unsigned width, std::span<const ByteCounts> blockCounts, Counted counted,
                    uint64_t bestSize, double gain, std::optional<double> probedBefore) {
  if (gain <= 0) return false;
  const auto estimate = estimateWith(Encoding::Rans, words, width, counted);
  if (estimate && static_cast<double>(*estimate) < static_cast<double>(bestSize) * (1 - gain - kRansSureRoom))
    return false;
  const auto probed = probedBefore ? probedBefore : ransProbeBytes(words, width, blockCounts, counted);
  return probed && *probed >= static_cast<double>(bestSize) * (1 - gain - kRansProbeRoom);
}

/// rans' size of a byte stream's block from its counts: htscodecs codes each block with a
/// frequency table of its own (about 2 bytes a symbol) and 32 final states of 4 bytes, at about
/// the entropy of the block's counts, or stores it as it is where that is smaller.
double ransBlockEstimate(const ByteCounts &counts, uint64_t n) {
  unsigned distinct = 0;
  for (uint64_t c : counts) distinct += c != 0;
  const double coded = entropyBits(counts, n) / 8 + distinct * 2 + 140;
  return std::min(coded, static_cast<double>(n + 16));
}

/// rans' size of the stream as its middle block, coded alone, shows it, where the stream has
/// kRansProbeMinBlocks blocks or more and the caller counted it (a byte stream's counts per
/// block; a wider one's histogram, `counted.words`); nullopt elsewhere. A byte stream's blocks
/// are coded with tables of their own: each block's estimate from its counts, times what the
/// middle block's coding came to against its own estimate (htscodecs' tables round the
/// frequencies, which costs near-uniform 7-bit mantissas ~0.1% past the entropy; blocks of one
/// stream differ from each other by about as much, which the estimates of each see). A wider
/// stream has one table, coded once, and its middle block is scaled to the stream.
std::optional<double> ransProbeBytes(WordsView words, unsigned width, std::span<const ByteCounts> blockCounts,
                                     Counted counted) {
  const bool wide = width > 8;
  const uint64_t blockWords = wide ? kRans16BlockWords : kRansBlockWords;
  const uint64_t blocks = blocksOf(words.size(), blockWords);
  const bool countsGiven = wide ? counted.words != nullptr : blockCounts.size() == blocks;
  if (blocks < kRansProbeMinBlocks || !countsGiven) return std::nullopt;
  const uint64_t middle = blocks / 2; // a whole block: only the last may be shorter
  const WordsView block = words.subspan(middle * blockWords, blockWords);
  thread_local Bytes probe, table;
  probe.clear();
  table.clear();
  if (!wide) {
    encodeRans(block, 0, probe, blockCounts.subspan(middle, 1));
    double estimated = 0;
    for (uint64_t b = 0; b < blocks; ++b)
      estimated += ransBlockEstimate(blockCounts[b], std::min(blockWords, words.size() - b * blockWords));
    return estimated * static_cast<double>(probe.size()) / ransBlockEstimate(blockCounts[middle], blockWords);
  }
  encodeRans16(block, width, probe, counted.words);
  encodeRans16(words.first(0), width, table, counted.words);
  const auto fixed = static_cast<double>(table.size());
  const double blocksWhole = static_cast<double>(words.size()) / static_cast<double>(blockWords);
  return fixed + (static_cast<double>(probe.size()) - fixed) * blocksWhole;
}

/// Counts a byte stream a rans block at a time (`blockCounts`, one per block) and whole (`counts`).
void countRansBlocks(WordsView words, unsigned width, std::vector<ByteCounts> &blockCounts, uint64_t *counts) {
  blockCounts.resize(blocksOf(words.size(), kRansBlockWords));
  for (size_t b = 0; b < blockCounts.size(); ++b) {
    blockCounts[b].fill(0);
    const uint64_t begin = b * kRansBlockWords;
    const uint64_t n = std::min<uint64_t>(kRansBlockWords, words.size() - begin);
    countWords(words.subspan(begin, n), width, blockCounts[b].data());
    for (size_t v = 0; v < 256; ++v) counts[v] += blockCounts[b][v];
  }
}

} // namespace

bool zstdWorthTrying(WordsView words, unsigned width, uint64_t bestSize, const EncodePolicy &policy) {
  return encodingApplies(Encoding::Zstd, words, width) && zstdMayWin(words, bestSize, policy);
}

std::optional<Encoding> byteCoderByEstimates(WordsView words, unsigned width, const EncodePolicy &policy) {
  if (width > 8 || words.empty()) return std::nullopt;
  std::vector<ByteCounts> blockCounts;
  uint64_t counts[256] = {};
  countRansBlocks(words, width, blockCounts, counts);
  const uint64_t bitpack = bitpackPayloadSize(words.size(), bitpackBitsOfCounts(counts));
  return byteCoderVerdict(words, width, counts, blockCounts, bitpack, policy);
}

bool mantissaLooksRandom(WordsView words, unsigned width) {
  constexpr double kMinEntropyRatio = 0.99, kMaxMutualBits = 0.01;
  if (width > 16 || words.size() < 2) return false;
  const auto n = static_cast<double>(words.size());
  const std::optional<WordHistogram> h = histogram(words, width, kHuffmanMaxSymbols);
  if (!h || entropyBits(h->counts, words.size()) / n < kMinEntropyRatio * width) return false;
  const unsigned topBits = std::min(width, 3u), shift = width - topBits, side = 1u << topBits;
  uint64_t pairs[8][8] = {}, previous = 0;
  words.visit([&](auto w) {
    for (size_t i = 0; i < w.size(); ++i) {
      const uint64_t top = w[i] >> shift;
      if (i) ++pairs[previous][top];
      previous = top;
    }
  });
  double rows[8] = {}, columns[8] = {};
  for (unsigned a = 0; a < side; ++a)
    for (unsigned b = 0; b < side; ++b) {
      rows[a] += static_cast<double>(pairs[a][b]);
      columns[b] += static_cast<double>(pairs[a][b]);
    }
  const double m = n - 1;
  double mutual = 0;
  for (unsigned a = 0; a < side; ++a)
    for (unsigned b = 0; b < side; ++b)
      if (pairs[a][b]) {
        const double p = static_cast<double>(pairs[a][b]) / m;
        mutual += p * std::log2(p * m * m / (rows[a] * columns[b]));
      }
  return mutual < kMaxMutualBits;
}

EncodePolicy policyForLevel(int level) {
  constexpr double kContextGainFactor = 5.0, kContextMinGain = 0.01;
  static constexpr double kMinGain[] = {0.05, 0.04, 0.03, 0.02, 0.01, 0.005, 0.002, 0.001, 0.0};
  // zstd's levels, measured on the corpus with the probe (docs/benchmarks.md): against what 19
  // gains, 1 gains four fifths in a hundredth of its time, 9 over nine tenths in a twentieth,
  // 15 all but 0.2 KB in a third.
  static constexpr int kZstdLevel[] = {1, 1, 3, 6, 9, 12, 13, 14, 15};
  static constexpr int kZstdSmallLevel[] = {1, 1, 3, 6, 15, 16, 17, 18, 19};
  const size_t row = static_cast<size_t>(std::clamp(level, 1, 9) - 1);
  // context decodes at a tenth of rans_o1's speed: it must save five times the level's
  // margin (5% at the default). Pooled over the corpus at level 5, archives came out
  // 0.96%, 1.05% and 1.03% below the best peers with factors 1, 3 and 5: on small gains the
  // search's estimate (on a sample, learning counted in full) and the truth disagree.
  // Level 9 too asks 1% of it: kept for any gain, a 131 MB embedding tensor saved 0.4% and
  // decoded 20 times slower (0.17 s -> 3.5 s), its compression four times slower.
  // Level 1 does not try context: its estimate (a simulation of the models) was two thirds of
  // level 1's time on a checkpoint of 1 MB tensors, for a gain of 25% that it never reached.
  const double contextGain = level <= 1 ? 1.0 : std::max(kMinGain[row] * kContextGainFactor, kContextMinGain);
  EncodePolicy policy{kMinGain[row], kZstdLevel[row], contextGain};
  policy.zstdSmallLevel = kZstdSmallLevel[row];
  if (level <= 1) {
    policy.estimateRoom = 0;
    policy.promiseMinBytes = 0;
    policy.ransByteShare = 1;
    policy.triesOrder1 = false;
  }
  return policy;
}

bool tableCodersCannotPay(WordsView words, unsigned width) {
  constexpr size_t kProbeWords = 1024;
  if (width <= 12 || words.size() < 64) return false;
  // The probe's words counted in a table of twice as many slots, open addressing (sorting the
  // probe, once for every wide stream scored, was 1.5% of level 5 on the corpus), and those seen
  // exactly once kept track of as they come.
  constexpr size_t kSlots = 2 * kProbeWords;
  static_assert(std::has_single_bit(kSlots));
  std::array<uint64_t, kSlots> keys;
  std::array<uint16_t, kSlots> counts{};
  size_t probed = 0, once = 0;
  const size_t step = std::max<size_t>(1, words.size() / kProbeWords);
  words.visit([&](auto w) {
    for (size_t i = 0; i < w.size() && probed < kProbeWords; i += step, ++probed) {
      const uint64_t word = w[i];
      size_t slot = (word * 0x9e3779b97f4a7c15u) >> (64 - std::countr_zero(kSlots));
      while (counts[slot] != 0 && keys[slot] != word) slot = (slot + 1) % kSlots;
      if (counts[slot] == 0) {
        keys[slot] = word;
        ++once;
      } else if (counts[slot] == 1) {
        --once;
      }
      ++counts[slot];
    }
  });
  return once * 4 >= probed * 3;
}

Encoding encodeSmallest(WordsView words, unsigned width, Bytes &out, EncodePolicy policy) {
  // kAllEncodings lists the encodings in decreasing decoding speed. Those whose size is known
  // without encoding compete first, exactly; the others are encoded where estimates (or zstd's
  // probe) say they may win.
  Encoding best = Encoding::Raw;
  uint64_t bestSize = UINT64_MAX;
  // One histogram of a byte stream for every order-0 estimate (one pass each was a sixth of
  // level 1's time), and bitpack's bit count read off it: the largest value present.
  uint64_t counts[256] = {};
  const uint64_t *byteCounts = nullptr;
  // Not the thread's: while this thread waits for the blocks its rans encoding hands out, it
  // may code another literal.
  std::vector<ByteCounts> blockCounts;
  unsigned bits = 0;
  const bool orderZeroCodersLose = orderZeroCodersCannotWin(words, width, policy);
  if (orderZeroCodersLose) {
    bits = width; // the sample's largest word has the field's top bit: so has the stream's
  } else if (width <= 8 && !words.empty()) {
    countRansBlocks(words, width, blockCounts, counts); // the rans encoder takes each block's counts
    byteCounts = counts;
    bits = bitpackBitsOfCounts(counts);
  } else {
    bits = bitpackBits(words); // one pass, for bitpack's size and its encoding
  }
  for (Encoding e : kAllEncodings) {
    if (!hasCheapExactSize(e)) continue;
    const uint64_t size = e == Encoding::Bitpack ? bitpackPayloadSize(words.size(), bits) : encodedSize(e, words, width);
    if (size < bestSize) {
      best = e;
      bestSize = size;
    }
  }
  const size_t base = out.size();
  bool bestInOut = false; // the best so far is encoded: out's bytes from base
  Bytes candidate;
  const bool skipTableCoders = tableCodersCannotPay(words, width);
  // A stream of 9 to 16 bits is counted once for the table coders' estimates and encoders.
  std::optional<WordHistogram> wideHistogram;
  if (width > 8 && width <= 16 && !words.empty() && !skipTableCoders &&
      (policy.tries(Encoding::Huffman) || policy.tries(Encoding::Rans)))
    wideHistogram = histogram(words, width, kHuffmanMaxSymbols);
  const Counted counted{byteCounts, wideHistogram ? &*wideHistogram : nullptr};
  const RunBlocks onThreads = [&](size_t blocks, const std::function<void(size_t)> &codeBlock) {
    parallelFor(blocks, policy.threads, codeBlock);
  };
  const RunBlocks *const runBlocks = policy.threads > 1 ? &onThreads : nullptr;
  std::optional<double> probed;
  const std::optional<Encoding> byteCoder =
      byteCounts ? byteCoderVerdict(words, width, byteCounts, blockCounts, bestSize, policy, &probed) : std::nullopt;
  for (Encoding e : kAllEncodings) {
    // context needs no table, but on such streams it cannot win either: no bit of a
    // near-uniform mantissa is predictable from the lane above it.
    const bool orderZero = e == Encoding::Huffman || e == Encoding::Rans;
    // rans is skipped for huffman only where huffman was kept: judged on estimates, it may
    // still lose to bitpack, and rans then gets its own chance.
    const bool otherByteCoderWins =
        byteCoder && orderZero && e != *byteCoder && (e != Encoding::Rans || best == Encoding::Huffman);
    if (hasCheapExactSize(e) || (skipTableCoders && e != Encoding::Zstd) || otherByteCoderWins ||
        (orderZero && orderZeroCodersLose) ||
        !worthEncoding(e, words, width, bestSize, policy, counted) ||
        (e == Encoding::Rans &&
         ransBlockLoses(words, width, blockCounts, counted, bestSize, policy.gainFor(e, width), probed)))
      continue;
    // The first candidate encoded goes straight into `out`, after what it held (`base`): on a
    // large literal it is mostly the one encoded, and coding it into a buffer of its own, then
    // copying it, took twice its bytes of fresh pages (a 37 MB field of a 131 MB tensor: 16% of
    // level 5's time in the kernel zeroing pages). Where one is there, the next goes into
    // `candidate`, and into `out` if it wins.
    Bytes &into = bestInOut ? candidate : out;
    const size_t from = bestInOut ? 0 : base;
    into.resize(from);
    // Room for a candidate that can win (no larger than the best so far), reserved and touched
    // only as written: grown by doubling, a 22 MB literal was copied five times into fresh pages.
    // `out` keeps growing by doubling, so that literals appended one by one are not each a copy.
    const size_t room = from + bestSize + 1024;
    if (into.capacity() < room) into.reserve(std::max<size_t>(room, 2 * into.capacity()));
    // Candidates come in decreasing decoding speed: a slower one must win by the policy's margin.
    // The coders that count the words take the counts made above.
    bool encoded;
    if (e == Encoding::Huffman && counted.words) encoded = encodeHuffman(words, width, into, *counted.words, runBlocks);
    else if (e == Encoding::Huffman)
      encoded = !words.empty() && encodeHuffman(words, width, into, byteCounts, runBlocks);
    else if (e == Encoding::Rans && byteCounts) encoded = (encodeRans(words, 0, into, blockCounts, runBlocks), true);
    else if (e == Encoding::Rans && counted.words) encoded = encodeRans16(words, width, into, counted.words);
    else encoded = encodeLit(e, words, width, into, policy.zstdLevelFor(words.size()), policy.minGain);
    const size_t size = into.size() - from;
    if (!encoded || static_cast<double>(size) >= static_cast<double>(bestSize) * (1 - policy.gainFor(e, width)) ||
        size >= bestSize) {
      into.resize(from);
      continue;
    }
    best = e;
    bestSize = size;
    if (bestInOut) {
      out.resize(base);
      out.insert(out.end(), candidate.begin(), candidate.end());
    }
    bestInOut = true;
  }
  if (bestInOut) return best;
  if (best == Encoding::Bitpack)
    encodeBitpack(words, bits, out);
  else
    encodeLit(best, words, width, out);
  return best;
}

Encoding encodeSmallestOf(WordsView words, unsigned width, Bytes &out,
                          std::initializer_list<Encoding> encodings) {
  Bytes best, candidate;
  Encoding chosen = Encoding::Raw;
  bool have = false;
  for (Encoding e : encodings) {
    candidate.clear();
    if (!encodeLit(e, words, width, candidate)) continue;
    if (!have || candidate.size() < best.size()) {
      std::swap(best, candidate);
      chosen = e;
      have = true;
    }
  }
  if (!have) encodeLit(chosen = Encoding::Raw, words, width, best);
  out.insert(out.end(), best.begin(), best.end());
  return chosen;
}

std::optional<uint64_t> estimateSize(Encoding encoding, WordsView words, unsigned width) {
  return estimateWith(encoding, words, width, Counted{});
}

uint64_t estimateSmallest(WordsView words, unsigned width, const EncodePolicy &policy, Encoding *chosen) {
  if (chosen) *chosen = Encoding::Raw;
  if (words.empty()) return 0;
  // Counted once, as encodeSmallest does: a byte stream's counts, or a 9- to 16-bit stream's
  // histogram, serve huffman's, rans' and bitpack's estimates (a pass each was most of the
  // cost of scoring a field).
  uint64_t counts[256] = {};
  std::optional<WordHistogram> wideHistogram;
  Counted counted;
  const bool manySymbols = tableCodersCannotPay(words, width);
  if (width <= 8) {
    countWords(words, width, counts);
    counted.bytes = counts;
  } else if (width <= 16 && !manySymbols) {
    wideHistogram = histogram(words, width, kHuffmanMaxSymbols);
    if (wideHistogram) counted.words = &*wideHistogram;
  }
  double best = -1;
  for (Encoding e : kAllEncodings) {
    if (!policy.tries(e) || (manySymbols && !hasCheapExactSize(e) && e != Encoding::Zstd)) continue;
    // zstd is scored only where a probe says it may win (its estimate is an encoding).
    if (e == Encoding::Zstd && (best < 0 || !zstdWorthTrying(words, width, static_cast<uint64_t>(best), policy)))
      continue;
    std::optional<uint64_t> estimate;
    if (e == Encoding::Bitpack && counted.bytes) {
      estimate = bitpackPayloadSize(words.size(), bitpackBitsOfCounts(counts));
    } else if (e == Encoding::Bitpack && counted.words) {
      estimate = bitpackPayloadSize(words.size(), static_cast<unsigned>(std::bit_width(counted.words->words.back())));
    } else {
      estimate = estimateWith(e, words, width, counted);
    }
    if (!estimate) continue;
    const auto size = static_cast<double>(*estimate);
    if (best < 0 || (size < best * (1 - policy.gainFor(e, width)) && size < best)) {
      best = size;
      if (chosen) *chosen = e;
    }
  }
  return static_cast<uint64_t>(best);
}

namespace {

std::optional<uint64_t> estimateWith(Encoding encoding, WordsView words, unsigned width, Counted counted) {
  const uint64_t *const byteCounts = counted.bytes;
  const uint64_t n = words.size();
  switch (encoding) {
  case Encoding::Raw:
  case Encoding::Bitpack: return encodedSize(encoding, words, width);
  case Encoding::Huffman: {
    if (n == 0) return std::nullopt;
    std::optional<WordHistogram> made;
    const WordHistogram *h = counted.words;
    if (!h && (made = byteCounts ? histogramOfBytes(byteCounts) : histogram(words, width, kHuffmanMaxSymbols))) h = &*made;
    if (!h) return std::nullopt;
    const size_t k = h->words.size();
    HuffmanCode code;
    code.words = h->words;
    uint64_t bits = 0;
    if (k >= 2) {
      unsigned limit = std::max(14u, k <= 1 ? 0u : 64 - static_cast<unsigned>(__builtin_clzll(k - 1)));
      code.lengths = huffmanLengths(h->counts, limit);
      for (size_t i = 0; i < k; ++i) bits += h->counts[i] * code.lengths[i];
    }
    uint64_t blocks = k >= 2 ? blocksOf(n, kHuffmanBlockWords) : 0;
    // Per block: three word counts and four stream sizes (about 3 bytes each) and half a byte
    // of padding per stream.
    return huffmanCodeSize(code) + (k >= 2 ? 4 : 0) + bits / 8 + blocks * ((2 * kHuffmanStreams - 1) * 3 + 2);
  }
  case Encoding::Rans: {
    if (n == 0 || width > maxEncodingWidth(encoding)) return std::nullopt;
    if (width > kRansMaxWidth) {
      std::optional<WordHistogram> made;
      const WordHistogram *h = counted.words;
      if (!h) h = &*(made = histogram(words, width, uint64_t{1} << 16)); // never more than 2^16 words
      // The table: each word's gap and frequency as varints (about 2 + 2 bytes); per block, four
      // final states; the coded bits at the entropy.
      uint64_t blocks = blocksOf(n, kRans16BlockWords);
      return static_cast<uint64_t>(entropyBits(h->counts, n) / 8) + h->words.size() * 4 + blocks * 20 + 8;
    }
    uint64_t counts[256] = {};
    if (byteCounts) std::copy(byteCounts, byteCounts + 256, counts);
    else countWords(words, width, counts);
    unsigned distinct = 0;
    for (uint64_t c : counts) distinct += c != 0;
    uint64_t blocks = blocksOf(n, kRansBlockWords);
    // htscodecs: a frequency table of about 2 bytes per symbol, 32 final states of 4 bytes; it
    // stores a block as is when coding would not make it smaller.
    uint64_t coded = static_cast<uint64_t>(entropyBits(counts, n) / 8) + blocks * (distinct * 2 + 140);
    return std::min(coded, n + blocks * 16) + 4;
  }
  case Encoding::Zstd: {
    Bytes bytes;
    if (!encodeLit(encoding, words, width, bytes, kDefaultZstdLevel)) return std::nullopt;
    return bytes.size();
  }
  case Encoding::Context: {
    if (n == 0 || width > maxEncodingWidth(encoding)) return std::nullopt;
    // The code length at kContextEstimateRate (encodeLit tries that rate and another),
    // simulated without a coder: on the whole of a stream up to kContextEstimateWords. Of a
    // longer stream, a run of that many words from its middle is simulated in halves: the
    // second half, coded by models that learnt on the first, gives the cost per word once
    // learnt; the first half, less that, what learning costs (once per block). Scaling the whole
    // run would count the learning again for every run's length. With and without an escape
    // word where the stream has a common one, as encodeLit tries (both find it in the run they
    // simulate).
    const WordsView run = n <= kContextEstimateWords ? words : words.subspan((n - kContextEstimateWords) / 2, kContextEstimateWords);
    double bits = DBL_MAX;
    for (const std::optional<uint64_t> &escape : contextEscapesToTry(run, width)) {
      if (n <= kContextEstimateWords) {
        bits = std::min(bits, contextEstimateBits(words, width, n, escape)[0]);
      } else {
        const uint64_t half = kContextEstimateWords / 2;
        const auto parts = contextEstimateBits(run, width, half, escape);
        const auto blocks = static_cast<double>(blocksOf(n, kContextBlockWords));
        const double perWord = parts[1] / static_cast<double>(half);
        bits = std::min(bits, perWord * static_cast<double>(n) + blocks * std::max(0.0, parts[0] - parts[1]));
      }
    }
    // The block size and mode (and escape word); per block its size and the coder's flush.
    return static_cast<uint64_t>(bits / 8) + 5 + blocksOf(n, kContextBlockWords) * 8;
  }
  case Encoding::RansO1: {
    if (n == 0 || width > kRansMaxWidth) return std::nullopt;
    if (n > kOrder1EstimateWords) {
      // A run from the middle, scaled: counting every pair of a long stream in a table of 64 K
      // counters was a tenth of level 1's time, for a coder that seldom wins on such streams.
      auto sample = estimateWith(encoding, words.subspan((n - kOrder1EstimateWords) / 2, kOrder1EstimateWords),
                                 width, Counted{});
      if (!sample) return std::nullopt;
      return static_cast<uint64_t>(static_cast<double>(*sample) * static_cast<double>(n) /
                                    static_cast<double>(kOrder1EstimateWords));
    }
    uint64_t used = 0;
    const double bits = order1EntropyBits(words, width, used);
    uint64_t blocks = blocksOf(n, kRansBlockWords);
    // Order-1 tables: about 0.55 bytes per used (context, symbol) pair (measured on real
    // exponent and mantissa streams); stored as is when coding would not help.
    uint64_t coded = static_cast<uint64_t>(bits / 8) + blocks * (used * 55 / 100 + 300);
    return std::min(coded, n + blocks * 16) + 4;
  }
  }
  return std::nullopt;
}

} // namespace

} // namespace brevis
