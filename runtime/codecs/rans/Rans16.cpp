#include "runtime/codecs/rans/Rans16.h"

#include "lang/StreamType.h"
#include "runtime/codecs/huffman/HuffmanEncode.h"
#include "runtime/common/Varint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <numeric>

namespace brevis {

namespace {

constexpr uint32_t kStateLow = uint32_t{1} << 16; // states live in [2^16, 2^32)
constexpr uint32_t kTotal = uint32_t{1} << kRans16ScaleBits;
constexpr unsigned kStates = 4;

/// Frequencies summing to 2^16 with every symbol at least 1: proportional rounding, then the
/// difference taken from (or given to) the largest frequencies, deterministically.
std::vector<uint32_t> normalize(const std::vector<uint64_t> &counts, uint64_t total) {
  const size_t k = counts.size();
  std::vector<uint32_t> f(k);
  int64_t sum = 0;
  for (size_t i = 0; i < k; ++i) {
    uint64_t scaled = (counts[i] * kTotal + total / 2) / total;
    f[i] = static_cast<uint32_t>(std::max<uint64_t>(1, scaled));
    sum += f[i];
  }
  std::vector<uint32_t> order(k);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return counts[a] > counts[b]; });
  for (size_t at = 0; sum != kTotal; at = (at + 1) % k) {
    uint32_t s = order[at];
    if (sum > kTotal) {
      uint32_t take = static_cast<uint32_t>(std::min<int64_t>(sum - kTotal, f[s] - 1));
      // Take at most a quarter of a symbol's share per pass, so the cost spreads.
      take = std::min(take, std::max(1u, f[s] / 4));
      if (f[s] > 1) {
        f[s] -= take;
        sum -= take;
      }
    } else {
      f[s] += static_cast<uint32_t>(kTotal - sum);
      sum = kTotal;
    }
  }
  return f;
}

void putU32(Bytes &out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

} // namespace

namespace {

template <typename W>
bool encodeRans16Of(std::span<const W> words, unsigned width, Bytes &out, const WordHistogram *counted,
                    uint64_t blockWords) {
  if (width > 16) return false; // a table indexed by the word: 9 to 16 bits (Rans16.h)
  std::optional<WordHistogram> made;
  if (!counted && (made = histogram(words, width, uint64_t{1} << 16))) counted = &*made;
  const WordHistogram *const h = counted;
  if (!h || h->words.empty()) return false;
  const size_t k = h->words.size();
  putVarint(out, k);
  for (size_t i = 0; i < k; ++i) putVarint(out, i == 0 ? h->words[0] : h->words[i] - h->words[i - 1] - 1);
  if (k == 1) return true;
  // Normalized over the histogram's words, which may be a whole stream of which `words` is a
  // part (the cost model codes one block of a long stream with its table).
  std::vector<uint32_t> freq =
      normalize(h->counts, std::accumulate(h->counts.begin(), h->counts.end(), uint64_t{0}));
  std::vector<uint32_t> start(k, 0);
  for (size_t i = 1; i < k; ++i) start[i] = start[i - 1] + freq[i - 1];
  for (uint32_t f : freq) putVarint(out, f);
  putVarint(out, blockWords);

  if (words.empty()) return true; // the table alone (the cost model's measure of it)
  // Per word of the alphabet, what a step needs without a division (x / f by a multiply-high
  // with ceil(2^64 / f), exact for every 32-bit x and f >= 2): the state becomes
  // x + bias + q * (2^16 - f), which is ((x / f) << 16) + (x % f) + start. A frequency of 1 takes
  // 2^64 - 1, whose q is x - 1 (x >= 1), and a bias 2^16 - 1 larger to make up for it. Indexed by
  // the word, the thread's table reused, only the alphabet's entries set: the words are among
  // them.
  struct Step {
    uint64_t reciprocal;
    uint32_t bias, freq;
  };
  thread_local std::vector<Step> stepOf;
  if (stepOf.size() < (size_t{1} << width)) stepOf.resize(size_t{1} << width);
  for (uint32_t s = 0; s < k; ++s) {
    const uint32_t f = freq[s];
    stepOf[h->words[s]] =
        f == 1 ? Step{~uint64_t{0}, start[s] + kTotal - 1, f} : Step{~uint64_t{0} / f + 1, start[s], f};
  }
  // Renormalizing words, filled from the back: read forwards from the last one written, they
  // are in decoding order. A step writes one unconditionally and keeps it where the state
  // renormalizes (a branch there went either way on skewed words); at most one a word.
  std::vector<uint16_t> renorm;
  for (uint64_t begin = 0; begin < words.size(); begin += blockWords) {
    const uint64_t end = std::min<uint64_t>(words.size(), begin + blockWords);
    renorm.resize(end - begin + 1);
    size_t pos = renorm.size();
    auto step = [&](uint32_t &x, uint64_t word) {
      const Step &st = stepOf[word];
      const uint32_t emit = x >= st.freq << 16; // (L >> scale) << 16 * f, L = 2^16 and scale 16
      renorm[pos - 1] = static_cast<uint16_t>(x);
      pos -= emit;
      x >>= 16 * emit;
      const auto q = static_cast<uint32_t>((static_cast<unsigned __int128>(st.reciprocal) * x) >> 64);
      x += st.bias + q * (kTotal - st.freq);
    };
    // rANS encodes backwards: the last word first, so that the decoder runs forwards. Word i
    // belongs to state (i - begin) % 4: the words past the last whole four first, then four at a
    // time with the states in registers.
    uint32_t x0 = kStateLow, x1 = kStateLow, x2 = kStateLow, x3 = kStateLow;
    uint64_t i = end;
    while ((i - begin) % kStates) {
      --i;
      switch ((i - begin) % kStates) {
      case 0: step(x0, words[i]); break;
      case 1: step(x1, words[i]); break;
      case 2: step(x2, words[i]); break;
      default: step(x3, words[i]); break;
      }
    }
    for (; i > begin; i -= kStates) {
      step(x3, words[i - 1]);
      step(x2, words[i - 2]);
      step(x1, words[i - 3]);
      step(x0, words[i - 4]);
    }
    static_assert(kStates == 4, "the loop above holds four states");
    const size_t renormBytes = 2 * (renorm.size() - pos);
    putVarint(out, 4 * kStates + renormBytes);
    for (uint32_t x : {x0, x1, x2, x3}) putU32(out, x);
    const auto *bytes = reinterpret_cast<const uint8_t *>(renorm.data() + pos); // little-endian host
    out.insert(out.end(), bytes, bytes + renormBytes);
  }
  return true;
}

} // namespace

bool encodeRans16(WordsView words, unsigned width, Bytes &out, const WordHistogram *counted, uint64_t blockWords) {
  assert(blockWords >= 1);
  return words.visit([&](auto w) { return encodeRans16Of(w, width, out, counted, blockWords); });
}

Result<std::unique_ptr<Rans16Decoder>> Rans16Decoder::create(ByteSpan bytes, unsigned width, uint64_t count,
                                                             bool buildTables) {
  auto d = std::unique_ptr<Rans16Decoder>(new Rans16Decoder());
  d->count_ = count;
  ByteReader in(bytes);
  auto k = in.varint();
  if (!k || *k == 0 || *k > (uint64_t{1} << 16)) return Error{"rans table has an invalid symbol count"};
  if (*k > in.remaining()) return Error{"rans table is truncated"};
  d->words_.resize(*k);
  for (uint64_t i = 0; i < *k; ++i) {
    auto v = in.varint();
    if (!v) return Error{"rans table is truncated"};
    uint64_t w = *v;
    if (i > 0 && (__builtin_add_overflow(d->words_[i - 1], *v, &w) || __builtin_add_overflow(w, 1, &w)))
      return Error{"rans table symbols overflow 64 bits"};
    if (w & ~widthMask(width)) return Error{fmt::format("rans table symbol {} does not fit in {} bits", w, width)};
    d->words_[i] = w;
  }
  if (*k == 1) {
    if (in.remaining()) return Error{"rans literal has trailing bytes"};
    d->blockWords_ = std::max<uint64_t>(count, 1);
    if (count) d->blocks_.push_back(ByteSpan());
    return d;
  }
  std::vector<uint32_t> freq(*k), start(*k);
  uint64_t sum = 0;
  for (uint64_t i = 0; i < *k; ++i) {
    auto f = in.varint();
    if (!f || *f == 0 || *f > kTotal) return Error{"rans table has an invalid frequency"};
    start[i] = static_cast<uint32_t>(sum);
    freq[i] = static_cast<uint32_t>(*f);
    sum += *f;
    if (sum > kTotal) return Error{"rans frequencies sum to more than 2^16"};
  }
  if (sum != kTotal) return Error{"rans frequencies do not sum to 2^16"};
  if (buildTables) { // every slot is filled (the frequencies sum to 2^16): not cleared first
    d->slotStep_ = std::make_unique_for_overwrite<uint32_t[]>(kTotal);
    d->slotWord_ = std::make_unique_for_overwrite<uint16_t[]>(kTotal);
    for (uint32_t s = 0; s < *k; ++s) {
      // k >= 2: every frequency is below 2^16, and so is every offset within one.
      uint32_t *step = d->slotStep_.get() + start[s];
      for (uint32_t y = 0; y < freq[s]; ++y) step[y] = freq[s] << 16 | y;
      std::fill_n(d->slotWord_.get() + start[s], freq[s], static_cast<uint16_t>(d->words_[s]));
    }
  }
  auto blockWords = in.varint();
  if (!blockWords || *blockWords == 0) return Error{"rans literal has an invalid block size"};
  d->blockWords_ = *blockWords;
  uint64_t blocks = count / *blockWords + (count % *blockWords != 0);
  if (blocks > in.remaining() / (1 + 4 * kStates)) return Error{"rans literal is truncated"};
  for (uint64_t b = 0; b < blocks; ++b) {
    auto size = in.varint();
    const uint8_t *p = size ? in.take(*size) : nullptr;
    if (!p || *size < 4 * kStates || (*size - 4 * kStates) % 2) return Error{"rans literal is truncated"};
    d->blocks_.push_back(ByteSpan(p, *size));
  }
  if (in.remaining()) return Error{"rans literal has trailing bytes"};
  return d;
}

uint64_t Rans16Decoder::blockLength(size_t b) const { return std::min(blockWords_, count_ - b * blockWords_); }

/// One block's decoding in progress.
struct Rans16Decoder::Lane {
  size_t block;
  uint32_t x[kStates];
  const uint8_t *p, *end;
  uint16_t *out;
  uint64_t i, n; ///< words written, words in the block
};

namespace {

/// One step of state x: its word, then a renormalizing read where it fell below 2^16, without a
/// branch on it (half of them would go the other way on skewed words). The caller keeps 2 bytes
/// in reach of p.
inline void rans16Step(uint32_t &x, uint16_t *o, const uint8_t *&p, const uint32_t *steps, const uint16_t *words) {
  const uint32_t slot = x & (kTotal - 1);
  const uint32_t e = steps[slot];
  *o = words[slot];
  x = (e >> 16) * (x >> kRans16ScaleBits) + (e & 0xffff);
  // In arithmetic: GCC made the conditional form of this a branch.
  const uint32_t read = x < kStateLow;
  uint16_t next;
  std::memcpy(&next, p, 2); // little-endian host
  x = x << (16 * read) | (next & (0u - read));
  p += 2 * read;
}

/// Rounds of four words that a lane may take unchecked: each reads at most 8 bytes.
inline uint64_t safeRounds(uint64_t i, uint64_t n, const uint8_t *p, const uint8_t *end) {
  return std::min((n - i) / kStates, static_cast<uint64_t>(end - p) / 8);
}

} // namespace

Result<void> Rans16Decoder::finishLane(Lane &l) const {
  const uint32_t *steps = slotStep_.get();
  const uint16_t *words = slotWord_.get();
  uint32_t x0 = l.x[0], x1 = l.x[1], x2 = l.x[2], x3 = l.x[3];
  for (uint64_t r; (r = safeRounds(l.i, l.n, l.p, l.end)) != 0;)
    for (; r; --r, l.i += kStates) {
      rans16Step(x0, l.out + l.i, l.p, steps, words);
      rans16Step(x1, l.out + l.i + 1, l.p, steps, words);
      rans16Step(x2, l.out + l.i + 2, l.p, steps, words);
      rans16Step(x3, l.out + l.i + 3, l.p, steps, words);
    }
  l.x[0] = x0, l.x[1] = x1, l.x[2] = x2, l.x[3] = x3;
  static_assert(kStates == 4, "the loops hold four states");
  // The rest word by word, every read checked.
  for (; l.i < l.n; ++l.i) {
    uint32_t &x = l.x[l.i % kStates];
    const uint32_t slot = x & (kTotal - 1);
    const uint32_t e = steps[slot];
    l.out[l.i] = words[slot];
    x = (e >> 16) * (x >> kRans16ScaleBits) + (e & 0xffff);
    if (x < kStateLow) {
      if (l.end - l.p < 2) return Error{fmt::format("rans block {} is truncated", l.block)};
      x = (x << 16) | uint32_t{l.p[0]} | (uint32_t{l.p[1]} << 8);
      l.p += 2;
    }
  }
  for (uint32_t x : l.x)
    if (x != kStateLow) return Error{fmt::format("rans block {} is corrupt: its final states are wrong", l.block)};
  if (l.p != l.end) return Error{fmt::format("rans block {} has unused bytes", l.block)};
  return {};
}

Result<void> Rans16Decoder::decodeBlocks(size_t first, size_t n, uint16_t *out) const {
  if (words_.size() == 1) {
    for (size_t b = first; b < first + n; ++b) out = std::fill_n(out, blockLength(b), static_cast<uint16_t>(words_[0]));
    return {};
  }
  for (size_t group = first; group < first + n; group += kBlocksTogether) {
    Lane lanes[kBlocksTogether];
    const size_t live = std::min(kBlocksTogether, first + n - group);
    for (size_t k = 0; k < live; ++k) {
      Lane &l = lanes[k];
      const ByteSpan block = blocks_[group + k];
      l.block = group + k;
      std::memcpy(l.x, block.data(), sizeof l.x); // little-endian host
      // A state read from the block must lie in [2^16, 2^32); after that every step keeps it
      // there: it leaves x >= f * 1 + (slot - start) >= 1, and one 16-bit read restores 2^16.
      for (uint32_t x : l.x)
        if (x < kStateLow) return Error{fmt::format("rans block {} is corrupt", l.block)};
      l.p = block.data() + sizeof l.x;
      l.end = block.data() + block.size();
      l.out = out;
      l.i = 0;
      l.n = blockLength(l.block);
      out += l.n;
    }
    if (live == 2) {
      // Two blocks' eight states in registers: each step waits for a table load and a
      // multiply, and four chains left the core idle for most of that.
      static_assert(kBlocksTogether == 2);
      const uint32_t *steps = slotStep_.get();
      const uint16_t *words = slotWord_.get();
      Lane &a = lanes[0], &c = lanes[1];
      uint32_t a0 = a.x[0], a1 = a.x[1], a2 = a.x[2], a3 = a.x[3];
      uint32_t c0 = c.x[0], c1 = c.x[1], c2 = c.x[2], c3 = c.x[3];
      for (uint64_t r; (r = std::min(safeRounds(a.i, a.n, a.p, a.end), safeRounds(c.i, c.n, c.p, c.end))) != 0;)
        for (; r; --r, a.i += kStates, c.i += kStates) {
          // Step by step in turn: two rounds one after the other took 1.6x as long.
          rans16Step(a0, a.out + a.i, a.p, steps, words);
          rans16Step(c0, c.out + c.i, c.p, steps, words);
          rans16Step(a1, a.out + a.i + 1, a.p, steps, words);
          rans16Step(c1, c.out + c.i + 1, c.p, steps, words);
          rans16Step(a2, a.out + a.i + 2, a.p, steps, words);
          rans16Step(c2, c.out + c.i + 2, c.p, steps, words);
          rans16Step(a3, a.out + a.i + 3, a.p, steps, words);
          rans16Step(c3, c.out + c.i + 3, c.p, steps, words);
        }
      a.x[0] = a0, a.x[1] = a1, a.x[2] = a2, a.x[3] = a3;
      c.x[0] = c0, c.x[1] = c1, c.x[2] = c2, c.x[3] = c3;
    }
    for (size_t k = 0; k < live; ++k) BREVIS_TRY(finishLane(lanes[k]));
  }
  return {};
}

} // namespace brevis
