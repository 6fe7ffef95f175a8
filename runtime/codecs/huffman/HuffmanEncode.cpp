#include "runtime/codecs/huffman/HuffmanEncode.h"

#include "runtime/common/Histogram.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <queue>

namespace brevis {

namespace {

/// Writes bits LSB first into a buffer sized in advance (with 8 bytes of slack), storing the
/// accumulator 8 bytes at a time.
class BitWriter {
public:
  explicit BitWriter(uint8_t *out) : begin_(out), p_(out) {}
  void put(uint32_t bits, unsigned count) { // count <= 16
    acc_ |= uint64_t{bits} << filled_;
    filled_ += count;
    if (filled_ >= 48) flush();
  }
  /// Writes what remains and returns the bytes written in all.
  size_t finish() {
    flush();
    if (filled_) *p_++ = static_cast<uint8_t>(acc_);
    return static_cast<size_t>(p_ - begin_);
  }

private:
  void flush() {
    std::memcpy(p_, &acc_, 8); // little-endian host
    unsigned bytes = filled_ >> 3;
    p_ += bytes;
    acc_ = bytes == 8 ? 0 : acc_ >> (8 * bytes);
    filled_ &= 7;
  }
  uint8_t *begin_;
  uint8_t *p_;
  uint64_t acc_ = 0;
  unsigned filled_ = 0;
};

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
    for (size_t v = 0; v < (size_t{1} << width); ++v)
      if (counts[v]) {
        h.words.push_back(v);
        h.counts.push_back(counts[v]);
        counts[v] = 0;
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
  // Plain Huffman over a min-heap; parents recorded to read off depths.
  using Node = std::pair<uint64_t, uint32_t>; // (weight, node id)
  std::priority_queue<Node, std::vector<Node>, std::greater<>> heap;
  std::vector<uint32_t> parent(2 * k - 1, 0);
  for (uint32_t i = 0; i < k; ++i) heap.push({counts[i], i});
  uint32_t next = static_cast<uint32_t>(k);
  while (heap.size() > 1) {
    auto a = heap.top();
    heap.pop();
    auto b = heap.top();
    heap.pop();
    parent[a.second] = parent[b.second] = next;
    heap.push({a.first + b.first, next++});
  }
  const uint32_t root = next - 1;
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

/// Four runs' starts in a block and the bits before each, from every word's lookup weight and
/// code length: start s is the first word whose weights before it reach s/4 of the block's
/// (std::lower_bound over the running sums; the block's end where none does).
struct BlockSplit {
  uint64_t starts[kHuffmanStreams + 1];
  uint64_t bitsBefore[kHuffmanStreams + 1];
};

/// Alphabets of at most 2^kDirectWidth values code each word through tables indexed by the word
/// itself: two passes over the block to split it, one to write it. (Through symbol indices, a
/// table of running weights and a bit writer that tested for room after every code, a word took
/// thirty instructions.)
constexpr unsigned kDirectWidth = 12;

template <typename W>
void encodeBlocksDirect(std::span<const W> words, unsigned width, const HuffmanCode &code,
                        const std::vector<uint32_t> &codes, const std::vector<uint8_t> &weight, Bytes &out) {
  static_assert(kHuffmanStreams == 4);
  // Per value: the lookup weight over the code length, so that one sum gives both; and the code
  // beside its length.
  const size_t values = size_t{1} << width;
  std::vector<uint64_t> costOf(values, 0);
  std::vector<uint32_t> entryOf(values, 0);
  for (size_t s = 0; s < code.words.size(); ++s) {
    costOf[code.words[s]] = uint64_t{weight[s]} << 32 | code.lengths[s];
    entryOf[code.words[s]] = codes[s] | uint32_t{code.lengths[s]} << 16;
  }
  // Four codes of at most 14 bits and up to 7 bits left from the last store fit the 64-bit
  // accumulator; longer codes (alphabets of more than 2^14 values) never reach this path.
  if (code.maxLength > 14) __builtin_trap();
  constexpr uint64_t kLow = 0xffffffffu;
  constexpr uint64_t kSplitChunk = 64;
  std::vector<uint64_t> running;
  for (uint64_t begin = 0; begin < words.size(); begin += kHuffmanBlockWords) {
    const uint64_t m = std::min<uint64_t>(words.size() - begin, kHuffmanBlockWords);
    const W *w = words.data() + begin;
    // Running sums at every 64th word, then each run's start found between two of them.
    const uint64_t chunks = (m + kSplitChunk - 1) / kSplitChunk;
    running.resize(chunks + 1);
    running[0] = 0;
    for (uint64_t c = 0; c < chunks; ++c) {
      const uint64_t from = c * kSplitChunk, to = std::min(m, from + kSplitChunk);
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      uint64_t i = from;
      for (; i + 4 <= to; i += 4) {
        s0 += costOf[w[i]];
        s1 += costOf[w[i + 1]];
        s2 += costOf[w[i + 2]];
        s3 += costOf[w[i + 3]];
      }
      for (; i < to; ++i) s0 += costOf[w[i]];
      running[c + 1] = running[c] + s0 + s1 + s2 + s3;
    }
    const uint64_t sum = running[chunks];
    const uint64_t total = sum >> 32;
    BlockSplit split{{0, m, m, m, m}, {0, sum & kLow, sum & kLow, sum & kLow, sum & kLow}};
    for (unsigned r = 1; r < kHuffmanStreams; ++r) {
      const uint64_t bound = total * r / kHuffmanStreams << 32;
      const uint64_t c = static_cast<uint64_t>(std::lower_bound(running.begin(), running.end(), bound) - running.begin());
      if (c > chunks) continue; // past the block's weight: the run starts (empty) at its end
      uint64_t i = c == 0 ? 0 : (c - 1) * kSplitChunk;
      uint64_t before = c == 0 ? 0 : running[c - 1];
      while (i < m && before < bound) before += costOf[w[i++]];
      split.starts[r] = i;
      split.bitsBefore[r] = before & kLow;
    }
    for (unsigned r = 1; r < kHuffmanStreams; ++r) putVarint(out, split.starts[r] - split.starts[r - 1]);
    uint64_t streamBytes[kHuffmanStreams], all = 0;
    for (unsigned r = 0; r < kHuffmanStreams; ++r) {
      streamBytes[r] = (split.bitsBefore[r + 1] - split.bitsBefore[r] + 7) / 8;
      all += streamBytes[r];
      putVarint(out, streamBytes[r]);
    }
    // The runs one after another, straight into `out`: each store may spill up to 8 bytes past
    // its run, into the next run's place (written after it) or the slack trimmed at the end.
    const size_t at = out.size();
    out.resize(at + all + 8);
    uint8_t *p = out.data() + at;
    for (unsigned r = 0; r < kHuffmanStreams; ++r) {
      uint8_t *const runStart = p;
      uint64_t acc = 0;
      unsigned filled = 0;
      auto put = [&](W word) {
        const uint32_t e = entryOf[word];
        acc |= uint64_t{e & 0xffffu} << filled;
        filled += e >> 16;
      };
      auto store = [&] { // filled <= 7 + 4 * 14 < 64: the shift stays below the width
        std::memcpy(p, &acc, 8); // little-endian host
        p += filled >> 3;
        acc >>= filled & ~7u;
        filled &= 7;
      };
      uint64_t j = split.starts[r];
      const uint64_t to = split.starts[r + 1];
      for (; j + 4 <= to; j += 4) {
        put(w[j]);
        put(w[j + 1]);
        put(w[j + 2]);
        put(w[j + 3]);
        store();
      }
      for (; j < to; ++j) {
        put(w[j]);
        store();
      }
      if (filled) *p++ = static_cast<uint8_t>(acc);
      if (static_cast<uint64_t>(p - runStart) != streamBytes[r]) __builtin_trap(); // the split's bit counts disagree
    }
    out.resize(at + all);
  }
}

template <typename W> bool encodeHuffmanOf(std::span<const W> words, unsigned width, Bytes &out, const WordHistogram *counted) {
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
    encodeBlocksDirect(words, width, code, codes, weight, out);
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

  std::vector<uint16_t> symbols; // of the block being coded (K <= 65536)
  std::vector<uint32_t> cost;    // the weight of words [0, i)
  Bytes streams[kHuffmanStreams];
  for (uint64_t begin = 0; begin < words.size(); begin += kHuffmanBlockWords) {
    uint64_t end = std::min<uint64_t>(words.size(), begin + kHuffmanBlockWords);
    const uint64_t m = end - begin;
    symbols.resize(m);
    cost.resize(m + 1);
    uint32_t total = 0;
    for (uint64_t i = 0; i < m; ++i) {
      uint32_t sym = symbolOf(words[begin + i]);
      symbols[i] = static_cast<uint16_t>(sym);
      cost[i] = total;
      total += weight[sym];
    }
    cost[m] = total;
    uint64_t starts[kHuffmanStreams + 1] = {0, 0, 0, 0, m};
    for (unsigned s = 1; s < kHuffmanStreams; ++s) {
      uint32_t target = static_cast<uint32_t>(uint64_t{total} * s / kHuffmanStreams);
      starts[s] = static_cast<uint64_t>(std::lower_bound(cost.begin(), cost.end() - 1, target) - cost.begin());
    }
    for (unsigned s = 1; s < kHuffmanStreams; ++s) putVarint(out, starts[s] - starts[s - 1]);
    for (unsigned s = 0; s < kHuffmanStreams; ++s) {
      uint64_t from = starts[s], to = starts[s + 1];
      // At most L bits per word, plus the writer's 8 bytes of slack.
      streams[s].resize(static_cast<size_t>(((to - from) * code.maxLength + 7) / 8 + 8));
      BitWriter writer(streams[s].data());
      for (uint64_t i = from; i < to; ++i) {
        uint32_t sym = symbols[i];
        writer.put(codes[sym], code.lengths[sym]);
      }
      streams[s].resize(writer.finish());
    }
    for (const auto &s : streams) putVarint(out, s.size());
    for (const auto &s : streams) out.insert(out.end(), s.begin(), s.end());
  }
  return true;
}

} // namespace

bool encodeHuffman(WordsView words, unsigned width, Bytes &out, const WordHistogram &counted) {
  return words.visit([&](auto w) { return encodeHuffmanOf(w, width, out, &counted); });
}

bool encodeHuffman(WordsView words, unsigned width, Bytes &out, const uint64_t *byteCounts) {
  if (byteCounts && width <= 8) return encodeHuffman(words, width, out, histogramOfBytes(byteCounts));
  return words.visit([&](auto w) { return encodeHuffmanOf(w, width, out, nullptr); });
}

} // namespace brevis
