#include "runtime/codecs/rans/RansX32Decode.h"

// GCC 12's AVX-512 intrinsics pass an uninitialized vector as the unused merge source.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <algorithm>
#include <cstring>
#include <immintrin.h>
#include <memory>
#include <optional>

namespace brevis {

namespace {

// The frame (htscodecs' rANS 4x16, order 0, 32-way):
//   byte 0x04 (order 0 | X32), big-endian 7-bit varint: the decoded size
//   alphabet: symbol bytes in increasing order, a symbol s followed by the byte s+1 starting a
//     run (then a count of further consecutive symbols), ended by a 0 byte
//   per symbol present, a big-endian varint frequency; their sum is a power of two up to 4096
//     and is scaled to 4096
//   32 little-endian u32 states, each at least 2^15
//   little-endian u16 renormalization words
// Symbol i comes from state i % 32; a state x gives the symbol s whose cumulative range holds
// x mod 4096, becomes freq(s) * (x >> 12) + (x mod 4096 - cum(s)), and while below 2^15 takes
// the next word: x = x << 16 | word (states in order 0..31 within a round). The last
// size % 32 symbols are read from the states without updating them.
constexpr unsigned kShift = 12;
constexpr uint32_t kTotal = 1u << kShift, kMask = kTotal - 1;
constexpr uint32_t kLow = 1u << 15;
constexpr uint8_t kOrder0X32 = 0x04;
constexpr unsigned kStates = 32;

using Status = RansX32Frame::Status;

class Reader {
public:
  Reader(const uint8_t *p, const uint8_t *end) : p_(p), end_(end) {}
  std::optional<uint8_t> byte() {
    if (p_ == end_) return std::nullopt;
    return *p_++;
  }
  std::optional<uint32_t> bigEndianVarint() {
    uint64_t v = 0;
    for (int i = 0; i < 5; ++i) {
      auto b = byte();
      if (!b) return std::nullopt;
      v = v << 7 | (*b & 0x7fu);
      if (!(*b & 0x80)) return v > UINT32_MAX ? std::nullopt : std::optional<uint32_t>(static_cast<uint32_t>(v));
    }
    return std::nullopt;
  }
  const uint8_t *position() const { return p_; }

private:
  const uint8_t *p_, *end_;
};

bool readAlphabet(Reader &in, bool present[256]) {
  auto first = in.byte();
  if (!first) return false;
  unsigned s = *first, run = 0;
  while (true) {
    present[s] = true;
    if (run) {
      --run;
      if (++s > 255) return false;
      continue;
    }
    auto next = in.byte();
    if (!next) return false;
    if (*next == s + 1) { // a run: this next symbol, then `count` more after it
      auto count = in.byte();
      if (!count) return false;
      s = *next;
      run = *count;
      continue;
    }
    if (*next == 0) return true;
    s = *next;
  }
}

// How a round can find each state's slot's symbol: by permutes of small tables held in registers
// (permuteRound()), or only by gathers from the 4096-entry table (gatherRound()), which every
// frame has: frames of more than 64 symbols or more than kListedShared shared buckets, or
// where the CPU has no VBMI.
enum class Lookup { Permute, Gather };

constexpr unsigned kBucketSlots = 32, kBuckets = kTotal / kBucketSlots, kMaxRanks = 64;
/// Parsed::startInBucket of a bucket where two or more symbols start (a frame's rarest ones):
/// kSharedBucket | i, the ranks of its slots listed in Parsed::rankOfSharedSlot from 32 i.
constexpr uint8_t kSharedBucket = 0x80;
constexpr unsigned kListedShared = 8;

struct Parsed {
  alignas(64) uint32_t table[kTotal]; ///< per slot: its symbol's freq << 20 | cum << 8 | symbol
  alignas(64) uint32_t state[kStates];
  // The same table by permutes: the symbols with a slot ranked by their cum, and per bucket of
  // 32 slots the rank of its first slot's symbol and where the next one starts in it.
  alignas(64) uint16_t freqOfRank[kMaxRanks];
  alignas(64) uint16_t cumOfRank[kMaxRanks];
  alignas(64) uint8_t symbolOfRank[kMaxRanks];
  alignas(64) uint8_t rankOfBucket[kBuckets];  ///< the rank of slot 32 j's symbol
  alignas(64) uint8_t startInBucket[kBuckets]; ///< 1..31, 32 where none starts, or shared
  alignas(64) uint8_t rankOfSharedSlot[kListedShared * kBucketSlots];
  Lookup lookup = Lookup::Gather;
  unsigned ranks = 0, sharedBuckets = 0; ///< symbols with a slot; buckets where several start
  const uint8_t *words = nullptr, *end = nullptr;
  int onlySymbol = -1;
  uint8_t symbolsOr = 0; ///< of the symbols with a slot
};

/// The permute tables of `p` from its ranks' starts (ranks > 1) and its count of shared
/// buckets; Lookup::Gather where the tables cannot hold the frame's or the CPU has no AVX-512
/// VBMI.
void rankBuckets(Parsed &p, const uint32_t *start, unsigned ranks) {
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi");
  p.lookup = Lookup::Gather;
  p.ranks = ranks;
  p.sharedBuckets = 0;
  unsigned r = 0;
  for (unsigned j = 0; j < kBuckets; ++j) {
    const uint32_t first = j * kBucketSlots, next = first + kBucketSlots;
    while (r + 1 < ranks && start[r + 1] <= first) ++r;
    p.rankOfBucket[j] = static_cast<uint8_t>(r);
    unsigned inside = 0, at = kBucketSlots;
    for (unsigned k = r + 1; k < ranks && start[k] < next; ++k, ++inside) at = start[k] - first;
    if (inside <= 1) {
      p.startInBucket[j] = static_cast<uint8_t>(at);
      continue;
    }
    const unsigned shared = p.sharedBuckets++;
    if (shared >= kListedShared) continue; // counted, not listed: the frame is gathered
    p.startInBucket[j] = static_cast<uint8_t>(kSharedBucket | shared);
    for (unsigned y = 0, k = r; y < kBucketSlots; ++y) {
      while (k + 1 < ranks && start[k + 1] <= first + y) ++k;
      p.rankOfSharedSlot[shared * kBucketSlots + y] = static_cast<uint8_t>(k);
    }
  }
  if (!vbmi || ranks > kMaxRanks || p.sharedBuckets > kListedShared) return;
  // Entries past the frame's are read by lanes whose result is not taken: zeros, not garbage.
  std::fill(p.freqOfRank + ranks, p.freqOfRank + kMaxRanks, uint16_t{0});
  std::fill(p.cumOfRank + ranks, p.cumOfRank + kMaxRanks, uint16_t{0});
  std::fill(p.symbolOfRank + ranks, p.symbolOfRank + kMaxRanks, uint8_t{0});
  std::fill(p.rankOfSharedSlot + p.sharedBuckets * kBucketSlots, std::end(p.rankOfSharedSlot), uint8_t{0});
  p.lookup = Lookup::Permute;
}

Status parse(const RansX32Frame &f, Parsed &p) {
  // A frame that does not go on to be decoded (one symbol, or corrupt) leaves its Parsed to the
  // next frame: nothing of it may carry over.
  p.onlySymbol = -1;
  p.symbolsOr = 0;
  p.lookup = Lookup::Gather;
  Reader in(f.frame.data(), f.frame.data() + f.frame.size());
  auto flags = in.byte();
  if (!flags || *flags != kOrder0X32 || f.length == 0) return Status::NotHandled;
  auto size = in.bigEndianVarint();
  if (!size || *size != f.length) return Status::Corrupt;
  bool present[256] = {};
  if (!readAlphabet(in, present)) return Status::Corrupt;
  uint32_t freq[256] = {};
  uint64_t sum = 0;
  unsigned symbols = 0;
  for (unsigned s = 0; s < 256; ++s)
    if (present[s]) {
      auto v = in.bigEndianVarint();
      if (!v) return Status::Corrupt;
      freq[s] = *v;
      sum += *v;
      symbols += *v != 0;
    }
  if (sum == 0 || sum > kTotal || (sum & (sum - 1)) != 0) return Status::Corrupt;
  const unsigned scale = static_cast<unsigned>(__builtin_ctzll(kTotal / sum));
  uint32_t cum = 0, start[256];
  unsigned ranks = 0;
  for (unsigned s = 0; s < 256; ++s) {
    const uint32_t fs = freq[s] << scale;
    // (A frequency of 4096 does not fit above bit 20: that frame is one symbol, never decoded.)
    const uint32_t entry = fs << 20 | cum << 8 | s;
    std::fill_n(p.table + cum, fs, entry);
    if (fs) {
      p.onlySymbol = symbols == 1 ? static_cast<int>(s) : -1;
      p.symbolsOr |= static_cast<uint8_t>(s);
      if (ranks < kMaxRanks) {
        p.freqOfRank[ranks] = static_cast<uint16_t>(fs);
        p.cumOfRank[ranks] = static_cast<uint16_t>(cum);
        p.symbolOfRank[ranks] = static_cast<uint8_t>(s);
      }
      start[ranks++] = cum;
    }
    cum += fs;
  }
  if (p.onlySymbol < 0) rankBuckets(p, start, ranks);
  const uint8_t *at = in.position(), *end = f.frame.data() + f.frame.size();
  if (end - at < static_cast<ptrdiff_t>(4 * kStates)) return Status::Corrupt;
  for (unsigned z = 0; z < kStates; ++z, at += 4) {
    std::memcpy(&p.state[z], at, 4); // little-endian host
    if (p.state[z] < kLow) return Status::Corrupt;
  }
  p.words = at;
  p.end = end;
  return Status::Pending;
}

/// One frame's decoding in progress.
struct Stream {
  Parsed *parsed;
  uint8_t *out;
  size_t rounds; ///< whole rounds of 32 symbols left
  const uint8_t *words, *end;
  __m512i r1, r2;
};

/// The renormalization of one round: each state below 2^15 takes the next word.
[[gnu::target("avx512f,avx512bw,popcnt"), gnu::always_inline]] inline void renormalize(Stream &s) {
  const __m512i low = _mm512_set1_epi32(kLow);
  const __mmask16 m1 = _mm512_cmplt_epu32_mask(s.r1, low);
  const __m512i w1 = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(s.words)));
  s.words += 2 * _mm_popcnt_u32(m1);
  const __mmask16 m2 = _mm512_cmplt_epu32_mask(s.r2, low);
  const __m512i w2 = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(s.words)));
  s.words += 2 * _mm_popcnt_u32(m2);
  s.r1 = _mm512_or_si512(_mm512_mask_slli_epi32(s.r1, m1, s.r1, 16), _mm512_maskz_expand_epi32(m1, w1));
  s.r2 = _mm512_or_si512(_mm512_mask_slli_epi32(s.r2, m2, s.r2, 16), _mm512_maskz_expand_epi32(m2, w2));
  s.out += kStates;
  --s.rounds;
}

/// One round on every state of `s`: 32 symbols out, 0..32 words in. The caller checked that 64
/// bytes of words remain (two 16-word loads, the second from up to 16 words further on).
[[gnu::target("avx512f,avx512bw,popcnt"), gnu::always_inline]] inline void gatherRound(Stream &s) {
  const __m512i mask = _mm512_set1_epi32(kMask);
  // (The masked forms with every lane on: GCC 12's plain ones warn about their pass-through.)
  const __mmask16 all = 0xffff;
  const __m512i zero = _mm512_setzero_si512();
  const __m512i s1 = _mm512_and_si512(s.r1, mask), s2 = _mm512_and_si512(s.r2, mask);
  const __m512i e1 = _mm512_mask_i32gather_epi32(zero, all, s1, s.parsed->table, 4);
  const __m512i e2 = _mm512_mask_i32gather_epi32(zero, all, s2, s.parsed->table, 4);
  _mm_storeu_si128(reinterpret_cast<__m128i *>(s.out), _mm512_maskz_cvtepi32_epi8(all, e1));
  _mm_storeu_si128(reinterpret_cast<__m128i *>(s.out + 16), _mm512_maskz_cvtepi32_epi8(all, e2));
  // x = freq * (x >> 12) + slot - cum
  s.r1 = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_srli_epi32(s.r1, kShift), _mm512_srli_epi32(e1, 20)),
                          _mm512_sub_epi32(s1, _mm512_and_si512(_mm512_srli_epi32(e1, 8), mask)));
  s.r2 = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_srli_epi32(s.r2, kShift), _mm512_srli_epi32(e2, 20)),
                          _mm512_sub_epi32(s2, _mm512_and_si512(_mm512_srli_epi32(e2, 8), mask)));
  renormalize(s);
}

/// The word indices that put 16-bit lanes i of a and b side by side (permutex2var_epi16).
struct WordIndices {
  alignas(64) uint16_t lowOfStates[32]; ///< word 0 of each 32-bit lane of a, then of b
  alignas(64) uint16_t pairs[2][32];    ///< a[i] | b[i] << 16 in 32-bit lane i, then i + 16
  constexpr WordIndices() : lowOfStates(), pairs() {
    for (uint16_t i = 0; i < 16; ++i) {
      lowOfStates[i] = static_cast<uint16_t>(2 * i);
      lowOfStates[16 + i] = static_cast<uint16_t>(32 + 2 * i);
      for (uint16_t h = 0; h < 2; ++h) {
        pairs[h][2 * i] = static_cast<uint16_t>(16 * h + i);
        pairs[h][2 * i + 1] = static_cast<uint16_t>(32 + 16 * h + i);
      }
    }
  }
};
constexpr WordIndices kWordIndices;

/// The k-th 64 bytes of a table.
[[gnu::target("avx512f"), gnu::always_inline]] inline __m512i table(const void *at, int k = 0) {
  return _mm512_load_si512(static_cast<const __m512i *>(at) + k);
}

/// A round by permutes: the 32 slots as 16-bit words; each slot's bucket gives the rank of its
/// first symbol, one more from where the next symbol starts in it, or where several start (a
/// frame's rarest symbols, about 1% of slots in BF16 exponents) the rank listed for the slot;
/// the rank gives the symbol, its freq and its cum. Only the states' update is 32-bit.
[[gnu::target("avx512f,avx512bw,avx512vbmi,popcnt"), gnu::always_inline]] inline void permuteRound(Stream &s) {
  const Parsed &p = *s.parsed;
  const __mmask64 low = 0x5555555555555555; // the low byte of each 16-bit lane
  const __m512i slots = _mm512_and_si512(_mm512_permutex2var_epi16(s.r1, table(kWordIndices.lowOfStates), s.r2),
                                         _mm512_set1_epi16(kMask));
  const __m512i bucket = _mm512_srli_epi16(slots, 5);
  const __m512i start =
      _mm512_maskz_permutex2var_epi8(low, table(p.startInBucket, 0), bucket, table(p.startInBucket, 1));
  __m512i rank = _mm512_maskz_permutex2var_epi8(low, table(p.rankOfBucket, 0), bucket, table(p.rankOfBucket, 1));
  const __m512i inBucket = _mm512_and_si512(slots, _mm512_set1_epi16(kBucketSlots - 1));
  rank = _mm512_mask_add_epi16(rank, _mm512_cmpge_epu16_mask(inBucket, start), rank, _mm512_set1_epi16(1));
  // Shared bucket i (the low bits of its start): the rank listed at 32 i + the slot's place,
  // in the first 128 entries or (bit 7) the next.
  const __m512i listed = _mm512_or_si512(_mm512_slli_epi16(start, 5), inBucket);
  const __m512i listedRank = _mm512_mask_blend_epi16(
      _mm512_test_epi16_mask(listed, _mm512_set1_epi16(0x80)),
      _mm512_maskz_permutex2var_epi8(low, table(p.rankOfSharedSlot, 0), listed, table(p.rankOfSharedSlot, 1)),
      _mm512_maskz_permutex2var_epi8(low, table(p.rankOfSharedSlot, 2), listed, table(p.rankOfSharedSlot, 3)));
  rank = _mm512_mask_blend_epi16(_mm512_test_epi16_mask(start, _mm512_set1_epi16(kSharedBucket)), rank, listedRank);
  const __m512i symbols = _mm512_permutexvar_epi8(rank, table(p.symbolOfRank, 0));
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(s.out), _mm512_cvtepi16_epi8(symbols));
  const __m512i freq = _mm512_permutex2var_epi16(table(p.freqOfRank, 0), rank, table(p.freqOfRank, 1));
  const __m512i bias = _mm512_sub_epi16(slots, _mm512_permutex2var_epi16(table(p.cumOfRank, 0), rank, table(p.cumOfRank, 1)));
  // x = freq * (x >> 12) + slot - cum, from slot - cum | freq << 16 in each 32-bit lane
  const __m512i low16 = _mm512_set1_epi32(0xffff);
  const __m512i d1 = _mm512_permutex2var_epi16(bias, table(kWordIndices.pairs[0]), freq);
  const __m512i d2 = _mm512_permutex2var_epi16(bias, table(kWordIndices.pairs[1]), freq);
  s.r1 = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_srli_epi32(s.r1, kShift), _mm512_srli_epi32(d1, 16)),
                          _mm512_and_si512(d1, low16));
  s.r2 = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_srli_epi32(s.r2, kShift), _mm512_srli_epi32(d2, 16)),
                          _mm512_and_si512(d2, low16));
  renormalize(s);
}

/// Rounds that may run with no check: each takes at most 32 words, and needs 64 bytes left.
inline size_t safeRounds(const Stream &s) {
  const size_t left = static_cast<size_t>(s.end - s.words);
  return left < 64 ? 0 : std::min(s.rounds, (left - 64) / 64 + 1);
}

// Rounds on N streams together (the same work, interleaved in registers, so that each one's
// chain of latencies overlaps the others') while every one can take one; N = 1 is a stream
// alone. Once per lookup, each compiled for its own instruction sets: a frame is gathered where
// the CPU has no VBMI, and code compiled for VBMI may use it anywhere.
#define BREVIS_ROUNDS_TOGETHER(NAME, TARGET, ROUND)                                                                    \
  template <size_t N> [[gnu::target(TARGET)]] void NAME(Stream *streams) {                                             \
    Stream s[N];                                                                                                       \
    std::copy_n(streams, N, s);                                                                                        \
    for (;;) {                                                                                                         \
      size_t n = safeRounds(s[0]);                                                                                     \
      for (size_t k = 1; k < N; ++k) n = std::min(n, safeRounds(s[k]));                                               \
      if (n == 0) break;                                                                                               \
      while (n--)                                                                                                      \
        for (size_t k = 0; k < N; ++k) ROUND(s[k]);                                                                    \
    }                                                                                                                  \
    std::copy_n(s, N, streams);                                                                                        \
  }
BREVIS_ROUNDS_TOGETHER(permuteTogether, "avx512f,avx512bw,avx512vbmi,popcnt", permuteRound)
BREVIS_ROUNDS_TOGETHER(gatherTogether, "avx512f,avx512bw,popcnt", gatherRound)
#undef BREVIS_ROUNDS_TOGETHER

/// Frames decoded together. A permute round's chain of latencies (from the states through the
/// lookups and the update to the next words) is several times its instructions' throughput:
/// three or four frames fill it (1.3 and 1.5 times the speed of two frames' gathers), two by
/// permutes are no faster than by gathers, and one alone is slower (1.25 G symbols a second
/// against 1.7). Gathered frames go two at a time: four were no faster (the gathers' throughput
/// is their limit), and two tables of 16 KiB fit the L1 cache.
constexpr size_t kTogether = 4;

/// The rounds of n <= kTogether streams, those that permute first: three or four of those
/// together, else all in pairs by gathers (every frame has its whole table); then each alone.
void rounds(Stream *streams, size_t n) {
  size_t permuted = 0;
  while (permuted < n && streams[permuted].parsed->lookup == Lookup::Permute) ++permuted;
  static_assert(kTogether == 4);
  size_t done = 0; // streams whose rounds together are over
  if (permuted == 4) {
    permuteTogether<4>(streams);
    done = 4;
  } else if (permuted == 3) {
    permuteTogether<3>(streams);
    done = 3;
  }
  for (; done + 1 < n; done += 2) gatherTogether<2>(streams + done);
  for (size_t k = 0; k < n; ++k) gatherTogether<1>(streams + k);
}

[[gnu::target("avx512f,avx512bw,popcnt")]] void load(Stream &s) {
  s.r1 = _mm512_load_si512(s.parsed->state);
  s.r2 = _mm512_load_si512(s.parsed->state + 16);
}

[[gnu::target("avx512f,avx512bw,popcnt")]] void store(Stream &s) {
  _mm512_store_si512(s.parsed->state, s.r1);
  _mm512_store_si512(s.parsed->state + 16, s.r2);
}

/// The rounds left where fewer than 64 bytes of words remain, which safeRounds does not run (a
/// frame of nearly one symbol has few words for its length: m128's level-5 archive had eight
/// frames of 720,896 symbols decoded a state at a time, 7% of its decoding): on a copy of the
/// words followed by zeros, a round at a time by gathers, each checked to have taken no more
/// words than there are (where one did, the frame is corrupt, as finish would find). Returns
/// false for a corrupt frame.
[[gnu::target("avx512f,avx512bw,popcnt")]] bool tailRounds(Stream &s) {
  const size_t left = static_cast<size_t>(s.end - s.words);
  if (s.rounds == 0 || left >= 64) return true;
  alignas(64) uint8_t tail[128] = {}; // a round reads at most 64 bytes from where it starts
  std::memcpy(tail, s.words, left);
  const uint8_t *const words = s.words;
  s.words = tail;
  s.end = tail + left;
  while (s.rounds && s.words <= s.end) gatherRound(s);
  const bool intact = s.words <= s.end;
  s.words = words + (s.words - tail);
  s.end = words + left;
  return intact;
}

/// The rounds the vector loop left (near the end of the words), one state at a time, every
/// word read checked; then the last length % 32 symbols.
Status finish(Stream &s, uint32_t length) {
  Parsed &p = *s.parsed;
  for (; s.rounds; --s.rounds, s.out += kStates)
    for (unsigned z = 0; z < kStates; ++z) {
      const uint32_t slot = p.state[z] & kMask, e = p.table[slot];
      s.out[z] = static_cast<uint8_t>(e);
      uint32_t x = (e >> 20) * (p.state[z] >> kShift) + slot - ((e >> 8) & kMask);
      if (x < kLow) {
        if (s.end - s.words < 2) return Status::Corrupt;
        uint16_t w;
        std::memcpy(&w, s.words, 2);
        s.words += 2;
        x = x << 16 | w;
      }
      p.state[z] = x;
    }
  for (unsigned z = 0; z < length % kStates; ++z) s.out[z] = static_cast<uint8_t>(p.table[p.state[z] & kMask]);
  return Status::Done;
}

} // namespace

std::optional<RansX32Lookup> ransX32LookupOf(const RansX32Frame &frame) {
  auto p = std::make_unique<Parsed>();
  if (parse(frame, *p) != Status::Pending || p->onlySymbol >= 0) return std::nullopt;
  return RansX32Lookup{p->lookup == Lookup::Permute, p->ranks, p->sharedBuckets};
}

bool ransX32DecoderAvailable() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return yes;
}

void decodeRansX32Frames(std::span<RansX32Frame> frames) {
  for (size_t first = 0; first < frames.size(); first += kTogether) {
    Parsed parsed[kTogether];
    Stream streams[kTogether];
    RansX32Frame *live[kTogether];
    size_t n = 0;
    for (size_t i = first; i < std::min(frames.size(), first + kTogether); ++i) {
      RansX32Frame &f = frames[i];
      f.status = parse(f, parsed[n]);
      if (f.status != Status::Pending) continue;
      f.symbolsOr = parsed[n].symbolsOr;
      if (parsed[n].onlySymbol >= 0) { // every slot is one symbol: so is every output byte
        std::memset(f.out, parsed[n].onlySymbol, f.length);
        f.status = Status::Done;
        continue;
      }
      streams[n] = Stream{&parsed[n], f.out, f.length / kStates, parsed[n].words, parsed[n].end, {}, {}};
      live[n++] = &f;
    }
    // Permuted frames first (rounds()).
    for (size_t k = 0, permuted = 0; k < n; ++k)
      if (streams[k].parsed->lookup == Lookup::Permute) {
        std::swap(streams[k], streams[permuted]);
        std::swap(live[k], live[permuted++]);
      }
    for (size_t k = 0; k < n; ++k) load(streams[k]);
    rounds(streams, n);
    for (size_t k = 0; k < n; ++k) {
      const bool intact = tailRounds(streams[k]);
      store(streams[k]);
      live[k]->status = intact ? finish(streams[k], live[k]->length) : Status::Corrupt;
    }
  }
}

} // namespace brevis
