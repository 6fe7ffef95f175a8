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
  if (width <= 16) {
    std::vector<uint64_t> counts(size_t{1} << width, 0);
    countWords(words, width, counts.data());
    for (size_t v = 0; v < counts.size(); ++v)
      if (counts[v]) {
        h.words.push_back(v);
        h.counts.push_back(counts[v]);
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

template <typename W> bool encodeHuffmanOf(std::span<const W> words, unsigned width, Bytes &out, const uint64_t *byteCounts) {
  const std::optional<WordHistogram> h =
      byteCounts && width <= 8 ? histogramOfBytes(byteCounts) : histogram(words, width, kHuffmanMaxSymbols);
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

  // A block's m words are split into four runs that take the decoder about equally many table
  // lookups, so that its four streams end together. For byte alphabets a lookup takes up to
  // three codes within L bits (HuffmanDecode.cpp): a word costs about max(1/3, len/L) of one,
  // weighed here as max(L, 3 len) (an estimate; exact counting is a serial chain through every
  // word and halved the encoder's speed). Wider alphabets take one word per lookup.
  std::vector<uint8_t> weight(k);
  for (size_t s = 0; s < k; ++s) weight[s] = static_cast<uint8_t>(k > 256 ? 1 : std::max(code.maxLength, 3u * code.lengths[s]));
  static_assert(kHuffmanBlockWords * 48 < (uint64_t{1} << 32), "lookup weights of a block fit 32 bits");
  std::vector<uint16_t> symbols; // of the block being coded (K <= 65536)
  std::vector<uint32_t> cost;    // the weight of words [0, i)

  putVarint(out, kHuffmanBlockWords);
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

bool encodeHuffman(WordsView words, unsigned width, Bytes &out, const uint64_t *byteCounts) {
  return words.visit([&](auto w) { return encodeHuffmanOf(w, width, out, byteCounts); });
}

} // namespace brevis
