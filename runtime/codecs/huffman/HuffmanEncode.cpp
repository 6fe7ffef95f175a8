#include "runtime/codecs/huffman/HuffmanEncode.h"

// GCC 12's AVX-512 intrinsics pass an uninitialized vector as the unused merge source.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "runtime/common/Histogram.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace brevis {

namespace {

unsigned ceilLog2(uint64_t n) { return n <= 1 ? 0 : 64 - static_cast<unsigned>(__builtin_clzll(n - 1)); }

} // namespace

namespace {

template <typename W> void countWordsOf(std::span<const W> words, unsigned width, uint64_t *counts) {
  if (width == 1) {
    // Ones are the sum of the words: a loop that vectorizes, where counting into tables does not.
    uint64_t ones = 0;
    for (size_t at = 0; at < words.size(); at += size_t{1} << 24) {
      uint32_t part = 0; // 2^24 words of at most 1 each
      for (W w : words.subspan(at, std::min(words.size() - at, size_t{1} << 24))) part += static_cast<uint32_t>(w);
      ones += part;
    }
    counts[0] += words.size() - ones;
    counts[1] += ones;
    return;
  }
  if (width <= 8) {
    uint64_t small[256] = {};
    countSmallValues(words, small);
    for (size_t v = 0; v < (size_t{1} << width); ++v) counts[v] += small[v];
    return;
  }
  for (uint64_t w : words) ++counts[w];
}

} // namespace

void countWords(WordsView words, unsigned width, uint64_t *counts) {
  return words.visit([&](auto w) { return countWordsOf(w, width, counts); });
}

namespace {

template <typename W> std::optional<WordHistogram> histogramOf(std::span<const W> words, unsigned width, uint64_t maxSymbols) {
  WordHistogram h;
  if (width <= 8) {
    uint64_t counts[256] = {};
    countWords(words, width, counts);
    for (size_t v = 0; v < (size_t{1} << width); ++v)
      if (counts[v]) {
        h.words.push_back(v);
        h.counts.push_back(counts[v]);
      }
  } else if (width <= 16) {
    // A table of every word, kept zero between calls (read back and cleared in one pass): a
    // fresh one of 2^16 counters for every stream, the search's samples of 2^15 words among
    // them, was cleared at more cost than counting.
    thread_local std::vector<uint64_t> table;
    if (table.size() < (size_t{1} << 16)) table.assign(size_t{1} << 16, 0);
    uint64_t *const counts = table.data();
    for (W w : words) ++counts[w];
    // Read back eight counters at a time, passing over the eight where all are zero: a short
    // stream of wide words leaves most of the table zero, and a test per counter was half of
    // the histogram's time on a checkpoint of small tensors.
    const size_t values = size_t{1} << width;
    for (size_t base = 0; base < values; base += 8) {
      const uint64_t *c = counts + base;
      if (!(c[0] | c[1] | c[2] | c[3] | c[4] | c[5] | c[6] | c[7])) continue;
      for (size_t v = base; v < base + 8; ++v)
        if (counts[v]) {
          h.words.push_back(v);
          h.counts.push_back(counts[v]);
          counts[v] = 0;
        }
    }
  } else {
    std::vector<uint64_t> sorted(words.begin(), words.end());
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size();) {
      size_t j = i;
      while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
      if (h.words.size() == maxSymbols) return std::nullopt;
      h.words.push_back(sorted[i]);
      h.counts.push_back(j - i);
      i = j;
    }
  }
  if (h.words.size() > maxSymbols) return std::nullopt;
  return h;
}

} // namespace

std::optional<WordHistogram> histogram(WordsView words, unsigned width, uint64_t maxSymbols) {
  return words.visit([&](auto w) { return histogramOf(w, width, maxSymbols); });
}

WordHistogram histogramOfBytes(const uint64_t *counts) {
  WordHistogram h;
  for (unsigned v = 0; v < 256; ++v)
    if (counts[v]) {
      h.words.push_back(v);
      h.counts.push_back(counts[v]);
    }
  return h;
}

std::vector<uint8_t> huffmanLengths(std::span<const uint64_t> counts, unsigned limit) {
  const size_t k = counts.size();
  // Huffman's merges, smallest (weight, node id) first, from two queues: the leaves by count
  // (ties by symbol), and the merged nodes in the order they are made, whose weights never
  // decrease. The same tree a min-heap of (weight, id) makes (leaves, ids 0..k-1, before merged
  // nodes of equal weight), without a heap: on 2^16 symbols the heap was a twentieth of the
  // search's time. Parents recorded to read off depths.
  std::vector<uint32_t> leaves(k);
  std::iota(leaves.begin(), leaves.end(), 0);
  std::stable_sort(leaves.begin(), leaves.end(), [&](uint32_t a, uint32_t b) { return counts[a] < counts[b]; });
  std::vector<uint64_t> merged(k - 1); // weight of node k + i
  std::vector<uint32_t> parent(2 * k - 1, 0);
  size_t leaf = 0, made = 0, taken = 0;
  auto smallest = [&]() -> std::pair<uint64_t, uint32_t> {
    if (leaf < k && (taken == made || counts[leaves[leaf]] <= merged[taken])) {
      const uint32_t s = leaves[leaf++];
      return {counts[s], s};
    }
    const auto id = static_cast<uint32_t>(k + taken);
    return {merged[taken++], id};
  };
  for (; made + 1 < k; ++made) {
    const auto a = smallest(), b = smallest();
    parent[a.second] = parent[b.second] = static_cast<uint32_t>(k + made);
    merged[made] = a.first + b.first;
  }
  const uint32_t root = static_cast<uint32_t>(2 * k - 2);
  std::vector<unsigned> depth(2 * k - 1, 0);
  for (uint32_t n = root; n-- > 0;) depth[n] = depth[parent[n]] + 1; // parents have larger ids
  unsigned maxDepth = 0;
  for (size_t i = 0; i < k; ++i) maxDepth = std::max(maxDepth, depth[i]);

  // Count codes per length, then push long codes up to `limit` (JPEG, ITU T.81 Annex K.3):
  // each step replaces two codes of length i by one of length i-1 and splits a shorter leaf,
  // which keeps the Kraft sum at exactly 1.
  std::vector<uint64_t> bits(std::max(maxDepth, limit) + 1, 0);
  for (size_t i = 0; i < k; ++i) ++bits[depth[i]];
  for (unsigned i = maxDepth; i > limit; --i) {
    while (bits[i] > 0) {
      unsigned j = i - 2;
      while (bits[j] == 0) --j;
      bits[i] -= 2;
      bits[i - 1] += 1;
      bits[j + 1] += 2;
      bits[j] -= 1;
    }
  }
  // Shortest codes to the most frequent symbols; ties by symbol index, for determinism.
  std::vector<uint32_t> order(k);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return counts[a] > counts[b]; });
  std::vector<uint8_t> lengths(k);
  size_t at = 0;
  for (unsigned len = 1; len <= limit; ++len)
    for (uint64_t c = 0; c < bits[len]; ++c) lengths[order[at++]] = static_cast<uint8_t>(len);
  return lengths;
}

namespace {

/// Alphabets of at most 2^kDirectWidth values code each word through tables indexed by the word
/// itself: two passes over the block to split it, one to write it. (Through symbol indices, a
/// table of running weights and a bit writer that tested for room after every code, a word took
/// thirty instructions.)
constexpr unsigned kDirectWidth = 12;

/// One run's bit writer: codes go into `acc` LSB first, whole bytes are stored 8 at a time.
struct RunWriter {
  uint8_t *p = nullptr;
  uint64_t acc = 0;
  unsigned filled = 0;
  /// Adds a table entry: the code in the low 16 bits, its length above.
  [[gnu::always_inline]] void put(uint32_t entry) {
    acc |= uint64_t{entry & 0xffffu} << filled;
    filled += entry >> 16;
  }
  /// Adds a code of `length` bits (up to 16), storing once 48 bits are held: for alphabets whose
  /// codes may pass 14 bits, four to a store no longer fit.
  void putCode(uint32_t code, unsigned length) {
    acc |= uint64_t{code} << filled;
    filled += length;
    if (filled >= 48) store();
  }
  /// Stores the whole bytes (filled <= 63 between stores: the shift stays below 64).
  [[gnu::always_inline]] void store() {
    std::memcpy(p, &acc, 8); // little-endian host
    p += filled >> 3;
    acc >>= filled & ~7u;
    filled &= 7;
  }
  /// Writes the last partial byte; returns the run's size from `begin`.
  uint64_t finish(const uint8_t *begin) {
    if (filled) *p++ = static_cast<uint8_t>(acc);
    return static_cast<uint64_t>(p - begin);
  }
};

/// Codes `count` words (a multiple of 4) of each of two runs, a group of four of each in turn
/// (two runs' state and sources fit the registers; four spilled).
template <typename W>
void writeTwoRuns(const W *w0, const W *w1, uint64_t count, const uint32_t *entryOf, RunWriter &run0, RunWriter &run1) {
  RunWriter r0 = run0, r1 = run1;
  for (uint64_t j = 0; j < count; j += 4) {
    r0.put(entryOf[w0[j]]);
    r1.put(entryOf[w1[j]]);
    r0.put(entryOf[w0[j + 1]]);
    r1.put(entryOf[w1[j + 1]]);
    r0.put(entryOf[w0[j + 2]]);
    r1.put(entryOf[w1[j + 2]]);
    r0.put(entryOf[w0[j + 3]]);
    r1.put(entryOf[w1[j + 3]]);
    r0.store();
    r1.store();
  }
  run0 = r0;
  run1 = r1;
}

/// Codes `count` words of one run.
template <typename W> void writeRun(const W *from, uint64_t count, const uint32_t *entryOf, RunWriter &run) {
  uint64_t j = 0;
  for (; j + 4 <= count; j += 4) {
    run.put(entryOf[from[j]]);
    run.put(entryOf[from[j + 1]]);
    run.put(entryOf[from[j + 2]]);
    run.put(entryOf[from[j + 3]]);
    run.store();
  }
  for (; j < count; ++j) {
    run.put(entryOf[from[j]]);
    run.store();
  }
}

#if defined(__x86_64__)
/// A byte alphabet's table entries as three tables of 256 bytes, four registers each: the code's
/// length, its low byte and its high byte, looked up 64 words at a time by byte permutes.
struct ByteCodeTables {
  __m512i length[4], low[4], high[4];
};

[[gnu::target("avx512f,avx512bw")]] ByteCodeTables byteCodeTables(const std::vector<uint32_t> &entryOf) {
  alignas(64) uint8_t length[256] = {}, low[256] = {}, high[256] = {};
  for (size_t v = 0; v < entryOf.size() && v < 256; ++v) {
    length[v] = static_cast<uint8_t>(entryOf[v] >> 16);
    low[v] = static_cast<uint8_t>(entryOf[v]);
    high[v] = static_cast<uint8_t>(entryOf[v] >> 8);
  }
  ByteCodeTables t;
  for (unsigned k = 0; k < 4; ++k) {
    t.length[k] = _mm512_load_si512(length + 64 * k);
    t.low[k] = _mm512_load_si512(low + 64 * k);
    t.high[k] = _mm512_load_si512(high + 64 * k);
  }
  return t;
}

/// Entry `w` (0..255) of a 256-byte table held in four registers: two permutes over 128 bytes
/// each, chosen by the word's top bit.
[[gnu::target("avx512f,avx512bw,avx512vbmi"), gnu::always_inline]] inline __m512i lookupBytes(const __m512i *table,
                                                                                               __m512i w,
                                                                                               __mmask64 top) {
  return _mm512_mask_blend_epi8(top, _mm512_permutex2var_epi8(table[0], w, table[1]),
                                _mm512_permutex2var_epi8(table[2], w, table[3]));
}

/// Codes in the even and odd `Bits`-bit halves of each 2·Bits-bit lane joined (the odd one's
/// shifted past the even one's length), with their lengths summed: the bits of the two codes
/// one after another.
template <unsigned Bits>
[[gnu::target("avx512f,avx512bw"), gnu::always_inline]] inline void joinHalves(__m512i &codes, __m512i &lengths) {
  if constexpr (Bits == 16) {
    const __m512i low = _mm512_set1_epi32(0xffff);
    const __m512i first = _mm512_and_si512(lengths, low);
    codes = _mm512_or_si512(_mm512_and_si512(codes, low), _mm512_sllv_epi32(_mm512_srli_epi32(codes, 16), first));
    lengths = _mm512_add_epi32(first, _mm512_srli_epi32(lengths, 16));
  } else {
    const __m512i low = _mm512_set1_epi64(0xffffffff);
    const __m512i first = _mm512_and_si512(lengths, low);
    codes = _mm512_or_si512(_mm512_and_si512(codes, low), _mm512_sllv_epi64(_mm512_srli_epi64(codes, 32), first));
    lengths = _mm512_add_epi64(first, _mm512_srli_epi64(lengths, 32));
  }
}

/// Sixty-four byte words' codes (lengths at most 14) joined four by four into sixteen codes of up
/// to 56 bits, codes[k] of words 4k..4k+3, in order.
[[gnu::target("avx512f,avx512bw,avx512vbmi"), gnu::always_inline]] inline void
joinSixtyFourCodes(const uint8_t *from, const ByteCodeTables &t, uint64_t *codes, uint64_t *lengths) {
  const __m512i w = _mm512_loadu_si512(from);
  const __mmask64 top = _mm512_movepi8_mask(w);
  const __m512i length = lookupBytes(t.length, w, top);
  const __m512i low = lookupBytes(t.low, w, top), high = lookupBytes(t.high, w, top);
  for (unsigned half = 0; half < 2; ++half) { // words 0..31, then 32..63, as 16-bit lanes
    const __m256i l = half ? _mm512_extracti64x4_epi64(low, 1) : _mm512_castsi512_si256(low);
    const __m256i h = half ? _mm512_extracti64x4_epi64(high, 1) : _mm512_castsi512_si256(high);
    const __m256i n = half ? _mm512_extracti64x4_epi64(length, 1) : _mm512_castsi512_si256(length);
    __m512i c = _mm512_or_si512(_mm512_cvtepu8_epi16(l), _mm512_slli_epi16(_mm512_cvtepu8_epi16(h), 8));
    __m512i s = _mm512_cvtepu8_epi16(n);
    joinHalves<16>(c, s); // pairs, in 32-bit lanes
    joinHalves<32>(c, s); // fours, in 64-bit lanes
    _mm512_storeu_si512(codes + 8 * half, c);
    _mm512_storeu_si512(lengths + 8 * half, s);
  }
}

/// writeTwoRuns for byte words with AVX-512 VBMI, 64 words of each run a step (`count` a
/// multiple of 64): codes looked up by byte permutes (a gather of their table entries was slower
/// than the scalar lookups) and joined in registers, so that sixteen codes of four words each
/// reach each bit writer instead of sixty-four. The bits are the same.
[[gnu::target("avx512f,avx512bw,avx512vbmi")]] void writeTwoByteRunsVbmi(const uint8_t *w0, const uint8_t *w1,
                                                                           uint64_t count, const ByteCodeTables &t,
                                                                           RunWriter &run0, RunWriter &run1) {
  RunWriter r0 = run0, r1 = run1;
  alignas(64) uint64_t codes0[16], lengths0[16], codes1[16], lengths1[16];
  for (uint64_t j = 0; j < count; j += 64) {
    joinSixtyFourCodes(w0 + j, t, codes0, lengths0);
    joinSixtyFourCodes(w1 + j, t, codes1, lengths1);
    for (unsigned k = 0; k < 16; ++k) {
      // At most 7 bits held after a store, and 56 added: within the 64-bit accumulator.
      r0.acc |= codes0[k] << r0.filled;
      r0.filled += static_cast<unsigned>(lengths0[k]);
      r1.acc |= codes1[k] << r1.filled;
      r1.filled += static_cast<unsigned>(lengths1[k]);
      r0.store();
      r1.store();
    }
  }
  run0 = r0;
  run1 = r1;
}
#endif

/// The four runs' starts in a block of m words whose word i weighs weightAt(i) lookups: the
/// runs take about equally many lookups, so that the decoder's four streams end together. The
/// starts are written in the block, so they need not split its weight exactly: they fall on
/// chunks of kSplitChunk words, weighed by every kSplitStride-th word (a lookup for every word,
/// in one chain of sums, took a third of the encoder's time).
template <typename WeightAt>
void splitBlock(uint64_t m, WeightAt weightAt, std::vector<uint64_t> &running, uint64_t (&starts)[kHuffmanStreams + 1]) {
  constexpr uint64_t kSplitChunk = 64, kSplitStride = 4;
  const uint64_t chunks = (m + kSplitChunk - 1) / kSplitChunk;
  running.resize(chunks + 1);
  running[0] = 0;
  for (uint64_t c = 0; c < chunks; ++c) {
    const uint64_t from = c * kSplitChunk, to = std::min(m, from + kSplitChunk);
    uint32_t sum = 0;
    for (uint64_t i = from; i < to; i += kSplitStride) sum += weightAt(i);
    running[c + 1] = running[c] + sum;
  }
  const uint64_t total = running[chunks];
  starts[0] = 0;
  starts[kHuffmanStreams] = m;
  for (unsigned r = 1; r < kHuffmanStreams; ++r) {
    const uint64_t bound = total * r / kHuffmanStreams;
    const auto c = static_cast<uint64_t>(std::lower_bound(running.begin(), running.end(), bound) - running.begin());
    starts[r] = std::max(starts[r - 1], std::min(m, c * kSplitChunk));
  }
}

/// Codes the blocks of `words`, block b by codeBlock(b, out), one after another into `out`,
/// or each into a buffer of its own by `run` and then into `out` in order: the same bytes.
template <typename CodeBlock> void codeBlocks(uint64_t n, Bytes &out, const RunBlocks *run, CodeBlock codeBlock) {
  const size_t blocks = static_cast<size_t>((n + kHuffmanBlockWords - 1) / kHuffmanBlockWords);
  if (!run || blocks < 2) {
    for (size_t b = 0; b < blocks; ++b) codeBlock(b, out);
    return;
  }
  std::vector<Bytes> coded(blocks);
  (*run)(blocks, [&](size_t b) { codeBlock(b, coded[b]); });
  for (const Bytes &c : coded) out.insert(out.end(), c.begin(), c.end());
}

template <typename W>
void encodeBlocksDirect(std::span<const W> words, unsigned width, const HuffmanCode &code,
                        const std::vector<uint32_t> &codes, const std::vector<uint8_t> &weight, Bytes &out,
                        const RunBlocks *run) {
  static_assert(kHuffmanStreams == 4);
  // Per value: its lookup weight, and its code beside its length.
  const size_t values = size_t{1} << width;
  std::vector<uint8_t> weightOf(values, 0);
  std::vector<uint32_t> entryOf(values, 0);
  for (size_t s = 0; s < code.words.size(); ++s) {
    weightOf[code.words[s]] = weight[s];
    entryOf[code.words[s]] = codes[s] | uint32_t{code.lengths[s]} << 16;
  }
  // Four codes of at most 14 bits and up to 7 bits left from the last store fit the 64-bit
  // accumulator; longer codes (alphabets of more than 2^14 values) never reach this path.
  if (code.maxLength > 14) __builtin_trap();
#if defined(__x86_64__)
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
  std::optional<ByteCodeTables> byteTables;
  if (sizeof(W) == 1 && vbmi) byteTables = byteCodeTables(entryOf);
#endif
  codeBlocks(words.size(), out, run, [&](size_t b, Bytes &into) {
    thread_local std::vector<uint64_t> running;
    thread_local std::vector<uint8_t> runBytes[kHuffmanStreams];
    const uint64_t begin = b * kHuffmanBlockWords;
    const uint64_t m = std::min<uint64_t>(words.size() - begin, kHuffmanBlockWords);
    const W *w = words.data() + begin;
    uint64_t starts[kHuffmanStreams + 1];
    splitBlock(m, [&](uint64_t i) { return weightOf[w[i]]; }, running, starts);
    // The runs are written two together, a word of each in turn, so that two chains of shifts
    // and additions overlap (one run after another, each word waited on the last one's bit
    // count). Each run goes into a buffer of its own, as a store may spill up to 8 bytes
    // past its end, and then into `out`.
    RunWriter runs[kHuffmanStreams];
    uint64_t left[kHuffmanStreams];
    const W *from[kHuffmanStreams];
    for (unsigned r = 0; r < kHuffmanStreams; ++r) {
      left[r] = starts[r + 1] - starts[r];
      from[r] = w + starts[r];
      // At most 14 bits a word, and the last store's 8 bytes.
      const size_t room = (left[r] * 14 + 7) / 8 + 8;
      if (runBytes[r].size() < room) runBytes[r].resize(room);
      runs[r].p = runBytes[r].data();
    }
    uint64_t sizes[kHuffmanStreams];
    for (unsigned r = 0; r < kHuffmanStreams; r += 2) {
      const uint64_t together = std::min(left[r], left[r + 1]) / 4 * 4;
      uint64_t done = 0; // of `together`, by the vector loop
#if defined(__x86_64__)
      if constexpr (sizeof(W) == 1)
        if (byteTables) {
          done = together / 64 * 64;
          writeTwoByteRunsVbmi(from[r], from[r + 1], done, *byteTables, runs[r], runs[r + 1]);
        }
#endif
      writeTwoRuns(from[r] + done, from[r + 1] + done, together - done, entryOf.data(), runs[r], runs[r + 1]);
      for (unsigned k = r; k < r + 2; ++k) {
        writeRun(from[k] + together, left[k] - together, entryOf.data(), runs[k]);
        sizes[k] = runs[k].finish(runBytes[k].data());
      }
    }
    for (unsigned r = 1; r < kHuffmanStreams; ++r) putVarint(into, left[r - 1]);
    for (unsigned r = 0; r < kHuffmanStreams; ++r) putVarint(into, sizes[r]);
    for (unsigned r = 0; r < kHuffmanStreams; ++r)
      into.insert(into.end(), runBytes[r].data(), runBytes[r].data() + sizes[r]);
  });
}

template <typename W>
bool encodeHuffmanOf(std::span<const W> words, unsigned width, Bytes &out, const WordHistogram *counted,
                     const RunBlocks *run) {
  std::optional<WordHistogram> made;
  if (!counted && (made = histogram(words, width, kHuffmanMaxSymbols))) counted = &*made;
  const WordHistogram *const h = counted;
  if (!h || h->words.empty()) return false;
  HuffmanCode code;
  code.words = h->words;
  const size_t k = code.words.size();
  if (k >= 2) {
    // 14 bits: on BF16 exponents a tighter limit costs size (11 bits: +3.5%) for no speed, and
    // longer ones make the decoding tables outgrow the L1 cache (measured in docs/benchmarks.md).
    unsigned limit = std::max(14u, ceilLog2(k));
    code.lengths = huffmanLengths(h->counts, limit);
    code.maxLength = *std::max_element(code.lengths.begin(), code.lengths.end());
  }
  writeHuffmanCode(code, out);
  if (k == 1) return true; // every word is the one symbol

  std::vector<uint32_t> codes = canonicalCodesLsbFirst(code);
  // A block's m words are split into four runs that take the decoder about equally many table
  // lookups, so that its four streams end together. For byte alphabets a lookup takes up to
  // three codes within L bits (HuffmanDecode.cpp): a word costs about max(1/3, len/L) of one,
  // weighed here as max(L, 3 len) (an estimate; exact counting is a serial chain through every
  // word and halved the encoder's speed). Wider alphabets take one word per lookup.
  std::vector<uint8_t> weight(k);
  for (size_t s = 0; s < k; ++s) weight[s] = static_cast<uint8_t>(k > 256 ? 1 : std::max(code.maxLength, 3u * code.lengths[s]));
  static_assert(kHuffmanBlockWords * 48 < (uint64_t{1} << 32), "lookup weights of a block fit 32 bits");

  putVarint(out, kHuffmanBlockWords);
  if (width <= kDirectWidth) {
    encodeBlocksDirect(words, width, code, codes, weight, out, run);
    return true;
  }
  // Symbol of each word: a direct table for narrow words, binary search otherwise.
  std::vector<uint32_t> direct;
  if (width <= 16) {
    direct.assign(size_t{1} << width, 0);
    for (uint32_t s = 0; s < k; ++s) direct[code.words[s]] = s;
  }
  auto symbolOf = [&](uint64_t w) -> uint32_t {
    if (!direct.empty()) return direct[w];
    return static_cast<uint32_t>(std::lower_bound(code.words.begin(), code.words.end(), w) - code.words.begin());
  };

  codeBlocks(words.size(), out, run, [&](size_t b, Bytes &into) {
    thread_local std::vector<uint16_t> symbols; // of the block being coded (K <= 65536)
    thread_local std::vector<uint64_t> running;
    thread_local Bytes streams[kHuffmanStreams];
    const uint64_t begin = b * kHuffmanBlockWords;
    const uint64_t m = std::min<uint64_t>(words.size() - begin, kHuffmanBlockWords);
    symbols.resize(m);
    for (uint64_t i = 0; i < m; ++i) symbols[i] = static_cast<uint16_t>(symbolOf(words[begin + i]));
    uint64_t starts[kHuffmanStreams + 1];
    splitBlock(m, [&](uint64_t i) { return weight[symbols[i]]; }, running, starts);
    for (unsigned s = 1; s < kHuffmanStreams; ++s) putVarint(into, starts[s] - starts[s - 1]);
    for (unsigned s = 0; s < kHuffmanStreams; ++s) {
      uint64_t from = starts[s], to = starts[s + 1];
      // At most L bits per word, plus the writer's 8 bytes of slack.
      streams[s].resize(static_cast<size_t>(((to - from) * code.maxLength + 7) / 8 + 8));
      RunWriter writer{streams[s].data()};
      for (uint64_t i = from; i < to; ++i) {
        uint32_t sym = symbols[i];
        writer.putCode(codes[sym], code.lengths[sym]);
      }
      writer.store();
      streams[s].resize(writer.finish(streams[s].data()));
    }
    for (const auto &s : streams) putVarint(into, s.size());
    for (const auto &s : streams) into.insert(into.end(), s.begin(), s.end());
  });
  return true;
}

} // namespace

bool encodeHuffman(WordsView words, unsigned width, Bytes &out, const WordHistogram &counted, const RunBlocks *run) {
  return words.visit([&](auto w) { return encodeHuffmanOf(w, width, out, &counted, run); });
}

bool encodeHuffman(WordsView words, unsigned width, Bytes &out, const uint64_t *byteCounts, const RunBlocks *run) {
  if (byteCounts && width <= 8) return encodeHuffman(words, width, out, histogramOfBytes(byteCounts), run);
  return words.visit([&](auto w) { return encodeHuffmanOf(w, width, out, nullptr, run); });
}

} // namespace brevis
