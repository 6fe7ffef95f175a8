#include "runtime/codecs/rans/RansX32Encode.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

namespace brevis {

namespace {

constexpr unsigned kShift = 12; // frequencies are scaled to 2^12 for coding
constexpr unsigned kMaxTableBits = 12;
constexpr uint32_t kLow = 1u << 15; // a state stays in [2^15, 2^31)
constexpr unsigned kStates = 32;
constexpr uint8_t kOrder0X32 = 0x04, kCat = 0x20;

void putBigEndianVarint(Bytes &out, uint32_t v) {
  uint8_t groups[5];
  int n = 0;
  do {
    groups[n++] = static_cast<uint8_t>(v & 0x7f);
    v >>= 7;
  } while (v);
  while (n-- > 1) out.push_back(groups[n] | 0x80);
  out.push_back(groups[0]);
}

/// Frequencies summing to `total` (a power of two), each present symbol at least 1: rounded
/// shares, the remainder given to the most frequent symbol; where the ones forced up leave it too
/// little, the others give up one at a time, those it costs least first.
void normalize(const uint64_t counts[256], uint64_t n, uint32_t total, uint32_t freq[256]) {
  int64_t sum = 0;
  unsigned largest = 0;
  for (unsigned s = 0; s < 256; ++s) {
    freq[s] = counts[s] ? std::max<uint32_t>(1, static_cast<uint32_t>(std::llround(static_cast<double>(counts[s]) *
                                                                                   total / static_cast<double>(n))))
                        : 0;
    sum += freq[s];
    if (counts[s] > counts[largest]) largest = s;
  }
  const int64_t largestFreq = static_cast<int64_t>(freq[largest]) + static_cast<int64_t>(total) - sum;
  if (largestFreq >= 1) {
    freq[largest] = static_cast<uint32_t>(largestFreq);
    return;
  }
  // Too many rare symbols for the table: take the excess from those that lose least by it.
  for (int64_t excess = sum - total; excess > 0; --excess) {
    unsigned cheapest = 256;
    double cheapestCost = 0;
    for (unsigned s = 0; s < 256; ++s) {
      if (freq[s] <= 1) continue;
      const double cost = static_cast<double>(counts[s]) * std::log2(static_cast<double>(freq[s]) / (freq[s] - 1));
      if (cheapest == 256 || cost < cheapestCost) cheapest = s, cheapestCost = cost;
    }
    assert(cheapest != 256 && "total is at least the number of symbols");
    --freq[cheapest];
  }
}

/// The alphabet as htscodecs writes it: symbols in increasing order, a symbol following its
/// predecessor starting a run (the symbol, then how many more follow it), ended by a 0.
void putAlphabet(Bytes &out, const uint32_t freq[256]) {
  unsigned symbols[256], count = 0;
  for (unsigned s = 0; s < 256; ++s)
    if (freq[s]) symbols[count++] = s;
  out.push_back(static_cast<uint8_t>(symbols[0]));
  unsigned last = symbols[0];
  for (unsigned k = 1; k < count;) {
    const unsigned s = symbols[k];
    out.push_back(static_cast<uint8_t>(s));
    if (s != last + 1) {
      last = s;
      ++k;
      continue;
    }
    unsigned more = 0;
    while (k + 1 + more < count && symbols[k + 1 + more] == s + 1 + more && more < 255) ++more;
    out.push_back(static_cast<uint8_t>(more));
    last = s + more;
    k += 1 + more;
  }
  out.push_back(0);
}

/// A symbol's coding step without a division (Alverson's reciprocal, as in Giesen's rans_byte):
/// x -> (x / f) << 12 | (x mod f) + cum is x + bias + q * (4096 - f), q = x / f from a multiply.
struct EncodeStep {
  uint32_t limit = 0; ///< renormalize below it: f << 19
  uint32_t reciprocal = 0;
  uint32_t bias = 0;
  uint16_t complement = 0;
  uint8_t shift = 0;
};

EncodeStep stepFor(uint32_t f, uint32_t cum) {
  EncodeStep e;
  e.limit = f << (31 - kShift);
  e.complement = static_cast<uint16_t>((1u << kShift) - f);
  if (f == 1) { // q = x: the reciprocal gives x - 1, the bias adds the rest
    e.reciprocal = ~0u;
    e.shift = 0;
    e.bias = cum + (1u << kShift) - 1;
  } else {
    const unsigned bits = static_cast<unsigned>(std::bit_width(f - 1)); // ceil(log2 f)
    e.reciprocal = static_cast<uint32_t>(((uint64_t{1} << (bits + 31)) + f - 1) / f);
    e.shift = static_cast<uint8_t>(bits - 1);
    e.bias = cum;
  }
  return e;
}

} // namespace

void encodeRansX32Frame(std::span<const uint8_t> block, const uint64_t counts[256], Bytes &frame) {
  const size_t n = block.size();
  assert(n >= kRansX32MinBytes && n <= UINT32_MAX);
  const size_t start = frame.size();
  frame.push_back(kOrder0X32);
  putBigEndianVarint(frame, static_cast<uint32_t>(n));
  const size_t meta = frame.size() - start;

  const unsigned tableBits = std::min<unsigned>(kMaxTableBits, static_cast<unsigned>(std::bit_width(n - 1)));
  uint32_t freq[256];
  normalize(counts, n, 1u << tableBits, freq);
  putAlphabet(frame, freq);
  for (unsigned s = 0; s < 256; ++s)
    if (freq[s]) putBigEndianVarint(frame, freq[s]);

  EncodeStep steps[256];
  for (unsigned s = 0, cum = 0; s < 256; ++s)
    if (freq[s]) {
      const uint32_t scaled = freq[s] << (kShift - tableBits);
      steps[s] = stepFor(scaled, cum);
      cum += scaled;
    }
  // Backwards: the decoder reads the last symbols first off the states, and the words in the
  // reverse of the order they are written here.
  // A word is written at every step and kept where the state gives one up: whether it does is
  // as good as random, and a branch on it cost a misprediction every other symbol.
  thread_local std::vector<uint16_t> words;
  words.resize(n + 1);
  size_t w = n; // words[w + 1 .. n] are written
  uint32_t state[kStates];
  std::fill(std::begin(state), std::end(state), kLow);
  for (size_t i = n; i-- > 0;) {
    const EncodeStep &e = steps[block[i]];
    uint32_t &x = state[i % kStates];
    const bool flush = x >= e.limit;
    words[w] = static_cast<uint16_t>(x);
    w -= flush;
    const uint32_t y = flush ? x >> 16 : x;
    const uint32_t q = static_cast<uint32_t>((uint64_t{y} * e.reciprocal) >> 32) >> e.shift;
    x = y + e.bias + q * e.complement;
  }
  ++w; // the first word kept
  const size_t coded = (frame.size() - start - meta) + 4 * kStates + 2 * (n + 1 - w);
  if (coded >= n) { // as htscodecs does: stored, the order byte marked as such
    frame.resize(start);
    frame.push_back(kOrder0X32 | kCat);
    putBigEndianVarint(frame, static_cast<uint32_t>(n));
    frame.insert(frame.end(), block.begin(), block.end());
    return;
  }
  const size_t at = frame.size();
  frame.resize(at + 4 * kStates + 2 * (n + 1 - w));
  std::memcpy(frame.data() + at, state, 4 * kStates); // little-endian, as every target here
  std::memcpy(frame.data() + at + 4 * kStates, words.data() + w, 2 * (n + 1 - w));
}

} // namespace brevis
