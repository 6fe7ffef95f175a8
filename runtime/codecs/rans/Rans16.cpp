#include "runtime/codecs/rans/Rans16.h"

#include "lang/StreamType.h"
#include "runtime/codecs/huffman/HuffmanEncode.h"
#include "runtime/common/Varint.h"

#include <fmt/format.h>

#include <algorithm>
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

template <typename W> bool encodeRans16Of(std::span<const W> words, unsigned width, Bytes &out, const WordHistogram *counted) {
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
  putVarint(out, kRans16BlockWords);

  std::vector<uint32_t> symbolOf;
  if (width <= 16) {
    symbolOf.assign(size_t{1} << width, 0);
    for (uint32_t s = 0; s < k; ++s) symbolOf[h->words[s]] = s;
  }
  std::vector<uint16_t> renorm; // written backwards, reversed at the end
  for (uint64_t begin = 0; begin < words.size(); begin += kRans16BlockWords) {
    const uint64_t end = std::min<uint64_t>(words.size(), begin + kRans16BlockWords);
    uint32_t state[kStates] = {kStateLow, kStateLow, kStateLow, kStateLow};
    renorm.clear();
    // rANS encodes backwards: the last word first, so that the decoder runs forwards.
    for (uint64_t i = end; i-- > begin;) {
      uint32_t &x = state[(i - begin) % kStates];
      uint32_t s = symbolOf[words[i]];
      uint32_t f = freq[s];
      uint64_t limit = (uint64_t{kStateLow} >> kRans16ScaleBits << 16) * f; // (L >> scale) << 16 * f
      if (x >= limit) {
        renorm.push_back(static_cast<uint16_t>(x));
        x >>= 16;
      }
      x = ((x / f) << kRans16ScaleBits) + (x % f) + start[s];
    }
    Bytes block;
    for (uint32_t x : state) putU32(block, x);
    for (auto it = renorm.rbegin(); it != renorm.rend(); ++it) {
      block.push_back(static_cast<uint8_t>(*it));
      block.push_back(static_cast<uint8_t>(*it >> 8));
    }
    putVarint(out, block.size());
    out.insert(out.end(), block.begin(), block.end());
  }
  return true;
}

} // namespace

bool encodeRans16(WordsView words, unsigned width, Bytes &out, const WordHistogram *counted) {
  return words.visit([&](auto w) { return encodeRans16Of(w, width, out, counted); });
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
  d->freq_.resize(*k);
  d->start_.resize(*k);
  uint64_t sum = 0;
  for (uint64_t i = 0; i < *k; ++i) {
    auto f = in.varint();
    if (!f || *f == 0 || *f > kTotal) return Error{"rans table has an invalid frequency"};
    d->start_[i] = static_cast<uint32_t>(sum);
    d->freq_[i] = static_cast<uint32_t>(*f);
    sum += *f;
    if (sum > kTotal) return Error{"rans frequencies sum to more than 2^16"};
  }
  if (sum != kTotal) return Error{"rans frequencies do not sum to 2^16"};
  if (buildTables) { // every slot is filled (the frequencies sum to 2^16): not cleared first
    d->slotSymbol_ = std::make_unique_for_overwrite<uint16_t[]>(kTotal);
    for (uint32_t s = 0; s < *k; ++s)
      std::fill_n(d->slotSymbol_.get() + d->start_[s], d->freq_[s], static_cast<uint16_t>(s));
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

Result<void> Rans16Decoder::decodeBlock(size_t b, uint16_t *out) const {
  const uint64_t n = blockLength(b);
  if (words_.size() == 1) {
    std::fill_n(out, n, uint16_t{0});
    return {};
  }
  ByteSpan block = blocks_[b];
  uint32_t state[kStates];
  std::memcpy(state, block.data(), sizeof state); // little-endian host
  // A state read from the block must lie in [2^16, 2^32); after that every step keeps it
  // there: it leaves x >= f * 1 + (slot - start) >= 1, and one 16-bit read restores 2^16.
  for (uint32_t x : state)
    if (x < kStateLow) return Error{fmt::format("rans block {} is corrupt", b)};
  const uint8_t *p = block.data() + sizeof state;
  const uint8_t *end = block.data() + block.size();
  const uint16_t *slots = slotSymbol_.get();
  const uint32_t *freq = freq_.data(), *start = start_.data();
  // One step of state x: its word, then a renormalizing read where it fell below 2^16,
  // without a branch on it (half of them went the other way on skewed words).
  auto step = [&](uint32_t &x, uint16_t *o) {
    const uint32_t slot = x & (kTotal - 1);
    const uint16_t sym = slots[slot];
    *o = sym;
    x = freq[sym] * (x >> kRans16ScaleBits) + slot - start[sym];
    const bool read = x < kStateLow;
    uint16_t next;
    std::memcpy(&next, p, 2); // little-endian host; the caller keeps 2 bytes in reach
    x = read ? (x << 16) | next : x;
    p += read ? 2 : 0;
  };
  // Four words at a time, the states in registers, while the block holds the 8 bytes they may
  // read; the rest word by word, checked.
  uint32_t x0 = state[0], x1 = state[1], x2 = state[2], x3 = state[3];
  uint64_t i = 0;
  for (; i + kStates <= n && end - p >= 8; i += kStates) {
    step(x0, out + i);
    step(x1, out + i + 1);
    step(x2, out + i + 2);
    step(x3, out + i + 3);
  }
  state[0] = x0, state[1] = x1, state[2] = x2, state[3] = x3;
  static_assert(kStates == 4, "the loop above holds four states");
  for (; i < n; ++i) {
    uint32_t &x = state[i % kStates];
    const uint32_t slot = x & (kTotal - 1);
    const uint16_t sym = slots[slot];
    out[i] = sym;
    x = freq[sym] * (x >> kRans16ScaleBits) + slot - start[sym];
    if (x < kStateLow) {
      if (p + 2 > end) return Error{fmt::format("rans block {} is truncated", b)};
      x = (x << 16) | uint32_t{p[0]} | (uint32_t{p[1]} << 8);
      p += 2;
    }
  }
  for (uint32_t x : state)
    if (x != kStateLow) return Error{fmt::format("rans block {} is corrupt: its final states are wrong", b)};
  if (p != end) return Error{fmt::format("rans block {} has unused bytes", b)};
  return {};
}

} // namespace brevis
