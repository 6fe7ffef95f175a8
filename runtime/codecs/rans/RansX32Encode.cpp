#include "runtime/codecs/rans/RansX32Encode.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

/// One step of the coder on state x with symbol step e; the word x gave up, if it gave one up,
/// is words[w] and w moves below it. (A word is written at every step and kept where the state
/// gives one up: whether it does is as good as random, and a branch on it cost a misprediction
/// every other symbol.)
inline void encodeStep(uint32_t &x, const EncodeStep &e, uint16_t *words, size_t &w) {
  const bool flush = x >= e.limit;
  words[w] = static_cast<uint16_t>(x);
  w -= flush;
  const uint32_t y = flush ? x >> 16 : x;
  const uint32_t q = static_cast<uint32_t>((uint64_t{y} * e.reciprocal) >> 32) >> e.shift;
  x = y + e.bias + q * e.complement;
}

#if defined(__x86_64__)
/// Alphabets the vector loop takes: a symbol's rank among those present indexes tables of 64.
constexpr unsigned kVectorMaxSymbols = 64;

bool vectorEncoderAvailable() {
  static const bool available = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi");
  return available;
}

/// Entry `rank` of a table of 64 32-bit values held in four registers.
[[gnu::target("avx512f"), gnu::always_inline]] inline __m512i lookup64(const __m512i t[4], __m512i rank,
                                                                        bool upper) {
  const __m512i low = _mm512_permutex2var_epi32(t[0], rank, t[1]);
  if (!upper) return low;
  const __m512i high = _mm512_permutex2var_epi32(t[2], rank, t[3]);
  return _mm512_mask_blend_epi32(_mm512_test_epi32_mask(rank, _mm512_set1_epi32(32)), low, high);
}

/// The coding loop on the whole rounds of 32 symbols of block[0, 32 * rounds), backwards, 32
/// states at once: what encodeStep does a symbol at a time. A symbol's step comes from tables
/// held in registers, indexed by its rank among the alphabet's symbols (a gather of sixteen
/// takes ~17 cycles on this machine's cores, a permute one): the state's limit, the
/// frequency's complement, shift and bias packed in one entry, the reciprocal in another. The
/// words the states give up in a round are stored below w in the order of their states, as the
/// step by step loop leaves them. Returns the new w.
[[gnu::target("avx512f,avx512bw,avx512vl,avx512vbmi,popcnt")]] size_t
encodeRoundsAvx512(const uint8_t *block, size_t rounds, const uint8_t rankOf[256], const uint32_t packed[64],
                   const uint32_t reciprocals[64], bool upper, uint32_t state[kStates], uint16_t *words, size_t w) {
  __m512i ranks[4], packedTable[4], reciprocalTable[4];
  for (int k = 0; k < 4; ++k) {
    ranks[k] = _mm512_loadu_si512(rankOf + 64 * k);
    packedTable[k] = _mm512_loadu_si512(packed + 16 * k);
    reciprocalTable[k] = _mm512_loadu_si512(reciprocals + 16 * k);
  }
  __m512i x[2] = {_mm512_loadu_si512(state), _mm512_loadu_si512(state + 16)};
  const __m512i frequencyMask = _mm512_set1_epi32(0x1fff), shiftMask = _mm512_set1_epi32(0xf);
  const __m512i one = _mm512_set1_epi32(1 << kShift);
  // (The maskz forms with every lane on: GCC 12's plain ones warn about their pass-through.)
  const __mmask16 all16 = 0xffff;
  const __mmask8 all8 = 0xff;
  for (size_t r = rounds; r-- > 0;) {
    const __m512i symbols = _mm512_maskz_loadu_epi8(0xffffffffu, block + 32 * r);
    const __m512i low = _mm512_permutex2var_epi8(ranks[0], symbols, ranks[1]);
    const __m512i high = _mm512_permutex2var_epi8(ranks[2], symbols, ranks[3]);
    const __m512i rank = _mm512_mask_blend_epi8(_mm512_movepi8_mask(symbols), low, high);
    const __m512i laneRanks[2] = {_mm512_maskz_cvtepu8_epi32(all16, _mm512_maskz_extracti32x4_epi32(0xf, rank, 0)),
                                  _mm512_maskz_cvtepu8_epi32(all16, _mm512_maskz_extracti32x4_epi32(0xf, rank, 1))};
    __m256i given[2];
    unsigned count[2];
    for (int h = 0; h < 2; ++h) {
      const __m512i entry = lookup64(packedTable, laneRanks[h], upper);
      const __m512i reciprocal = lookup64(reciprocalTable, laneRanks[h], upper);
      const __m512i frequency = _mm512_and_si512(entry, frequencyMask);
      const __m512i shift = _mm512_and_si512(_mm512_maskz_srli_epi32(all16, entry, 13), shiftMask);
      const __m512i bias = _mm512_maskz_srli_epi32(all16, entry, 17);
      const __mmask16 flush = _mm512_cmpge_epu32_mask(x[h], _mm512_maskz_slli_epi32(all16, frequency, 31 - kShift));
      given[h] = _mm512_maskz_cvtepi32_epi16(all16, _mm512_maskz_compress_epi32(flush, x[h]));
      count[h] = static_cast<unsigned>(__builtin_popcount(flush));
      const __m512i y = _mm512_mask_srli_epi32(x[h], flush, x[h], 16);
      // q = (y * reciprocal) >> 32 >> shift: the products of the even lanes, then of the odd.
      const __m512i even = _mm512_maskz_srli_epi64(all8, _mm512_maskz_mul_epu32(all8, y, reciprocal), 32);
      const __m512i odd = _mm512_maskz_mul_epu32(all8, _mm512_maskz_srli_epi64(all8, y, 32),
                                                    _mm512_maskz_srli_epi64(all8, reciprocal, 32));
      const __m512i q = _mm512_maskz_srlv_epi32(all16, _mm512_mask_blend_epi32(0xAAAA, even, odd), shift);
      const __m512i complement = _mm512_sub_epi32(one, frequency);
      x[h] = _mm512_add_epi32(_mm512_add_epi32(y, bias), _mm512_maskz_mullo_epi32(all16, q, complement));
    }
    // States 0..15's words, then 16..31's, ending at w.
    uint16_t *const at = words + w + 1 - count[0] - count[1];
    _mm256_mask_storeu_epi16(at, static_cast<__mmask16>((1u << count[0]) - 1), given[0]);
    _mm256_mask_storeu_epi16(at + count[0], static_cast<__mmask16>((1u << count[1]) - 1), given[1]);
    w -= count[0] + count[1];
  }
  _mm512_storeu_si512(state, x[0]);
  _mm512_storeu_si512(state + 16, x[1]);
  return w;
}
#endif

/// The whole rounds of block (its first `rounds` * 32 symbols), backwards, by the vector loop
/// where the CPU and the alphabet allow; false where they do not (nothing is coded then).
bool encodeRoundsVectorized(std::span<const uint8_t> block, size_t rounds, const uint32_t freq[256],
                            const EncodeStep steps[256], uint32_t state[kStates], uint16_t *words, size_t &w) {
#if defined(__x86_64__)
  if (!vectorEncoderAvailable() || rounds == 0) return false;
  alignas(64) uint8_t rankOf[256] = {};
  alignas(64) uint32_t packed[kVectorMaxSymbols] = {}, reciprocals[kVectorMaxSymbols] = {};
  unsigned symbols = 0;
  for (unsigned s = 0; s < 256; ++s) {
    if (!freq[s]) continue;
    if (symbols == kVectorMaxSymbols) return false;
    const EncodeStep &e = steps[s];
    rankOf[s] = static_cast<uint8_t>(symbols);
    // The scaled frequency (at most 2^12), the shift (below 12) and the bias (below 2^13).
    packed[symbols] = (e.limit >> (31 - kShift)) | uint32_t{e.shift} << 13 | e.bias << 17;
    reciprocals[symbols] = e.reciprocal;
    ++symbols;
  }
  w = encodeRoundsAvx512(block.data(), rounds, rankOf, packed, reciprocals, symbols > 32, state, words, w);
  return true;
#else
  (void)block, (void)rounds, (void)freq, (void)steps, (void)state, (void)words, (void)w;
  return false;
#endif
}

} // namespace

void encodeRansX32Frame(std::span<const uint8_t> block, const uint64_t counts[256], Bytes &frame, bool vectorized) {
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
  thread_local std::vector<uint16_t> words;
  words.resize(n + 1);
  size_t w = n; // words[w + 1 .. n] are written
  uint32_t state[kStates];
  std::fill(std::begin(state), std::end(state), kLow);
  const size_t rounds = n / kStates;
  for (size_t i = n; i-- > rounds * kStates;) encodeStep(state[i % kStates], steps[block[i]], words.data(), w);
  if (!vectorized || !encodeRoundsVectorized(block, rounds, freq, steps, state, words.data(), w))
    for (size_t i = rounds * kStates; i-- > 0;) encodeStep(state[i % kStates], steps[block[i]], words.data(), w);
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
