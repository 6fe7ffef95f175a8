#include "runtime/codecs/rans/RansX32Decode.h"

// GCC 12's AVX-512 intrinsics pass an uninitialized vector as the unused merge source.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <algorithm>
#include <cstring>
#include <immintrin.h>
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

struct Parsed {
  alignas(64) uint32_t table[kTotal]; ///< per slot: freq << 20 | (slot - cum) << 8 | symbol
  alignas(64) uint32_t state[kStates];
  const uint8_t *words = nullptr, *end = nullptr;
  int onlySymbol = -1;
  uint8_t symbolsOr = 0; ///< of the symbols with a slot
};

Status parse(const RansX32Frame &f, Parsed &p) {
  // A frame that does not go on to be decoded (one symbol, or corrupt) leaves its Parsed to the
  // next frame: nothing of it may carry over.
  p.onlySymbol = -1;
  p.symbolsOr = 0;
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
  uint32_t cum = 0;
  for (unsigned s = 0; s < 256; ++s) {
    const uint32_t fs = freq[s] << scale;
    for (uint32_t y = 0; y < fs; ++y) p.table[cum + y] = fs << 20 | y << 8 | s;
    if (fs) {
      p.onlySymbol = symbols == 1 ? static_cast<int>(s) : -1;
      p.symbolsOr |= static_cast<uint8_t>(s);
    }
    cum += fs;
  }
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

/// One round on every state of `s`: 32 symbols out, 0..32 words in. The caller checked that 64
/// bytes of words remain (two 16-word loads, the second from up to 16 words further on).
[[gnu::target("avx512f,avx512bw,popcnt"), gnu::always_inline]] inline void round(Stream &s) {
  const __m512i mask = _mm512_set1_epi32(kMask), low = _mm512_set1_epi32(kLow);
  // (The masked forms with every lane on: GCC 12's plain ones warn about their pass-through.)
  const __mmask16 all = 0xffff;
  const __m512i zero = _mm512_setzero_si512();
  const __m512i e1 = _mm512_mask_i32gather_epi32(zero, all, _mm512_and_si512(s.r1, mask), s.parsed->table, 4);
  const __m512i e2 = _mm512_mask_i32gather_epi32(zero, all, _mm512_and_si512(s.r2, mask), s.parsed->table, 4);
  _mm_storeu_si128(reinterpret_cast<__m128i *>(s.out), _mm512_maskz_cvtepi32_epi8(all, e1));
  _mm_storeu_si128(reinterpret_cast<__m128i *>(s.out + 16), _mm512_maskz_cvtepi32_epi8(all, e2));
  s.out += kStates;
  s.r1 = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_srli_epi32(s.r1, kShift), _mm512_srli_epi32(e1, 20)),
                          _mm512_and_si512(_mm512_srli_epi32(e1, 8), mask));
  s.r2 = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_srli_epi32(s.r2, kShift), _mm512_srli_epi32(e2, 20)),
                          _mm512_and_si512(_mm512_srli_epi32(e2, 8), mask));
  const __mmask16 m1 = _mm512_cmplt_epu32_mask(s.r1, low);
  const __m512i w1 = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(s.words)));
  s.words += 2 * _mm_popcnt_u32(m1);
  const __mmask16 m2 = _mm512_cmplt_epu32_mask(s.r2, low);
  const __m512i w2 = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(s.words)));
  s.words += 2 * _mm_popcnt_u32(m2);
  s.r1 = _mm512_or_si512(_mm512_mask_slli_epi32(s.r1, m1, s.r1, 16), _mm512_maskz_expand_epi32(m1, w1));
  s.r2 = _mm512_or_si512(_mm512_mask_slli_epi32(s.r2, m2, s.r2, 16), _mm512_maskz_expand_epi32(m2, w2));
  --s.rounds;
}

/// Rounds that may run with no check: each takes at most 32 words, and needs 64 bytes left.
inline size_t safeRounds(const Stream &s) {
  const size_t left = static_cast<size_t>(s.end - s.words);
  return left < 64 ? 0 : std::min(s.rounds, (left - 64) / 64 + 1);
}

/// Rounds on one stream, or on two together (the same work, in registers, interleaved) while
/// both can take one.
[[gnu::target("avx512f,avx512bw,popcnt")]] void roundsAlone(Stream &stream) {
  Stream s = stream;
  for (size_t n; (n = safeRounds(s)) != 0;)
    while (n--) round(s);
  stream = s;
}

[[gnu::target("avx512f,avx512bw,popcnt")]] void roundsTogether(Stream &first, Stream &second) {
  Stream a = first, b = second;
  for (size_t n; (n = std::min(safeRounds(a), safeRounds(b))) != 0;)
    while (n--) {
      round(a);
      round(b);
    }
  first = a;
  second = b;
}

[[gnu::target("avx512f,avx512bw,popcnt")]] void load(Stream &s) {
  s.r1 = _mm512_load_si512(s.parsed->state);
  s.r2 = _mm512_load_si512(s.parsed->state + 16);
}

[[gnu::target("avx512f,avx512bw,popcnt")]] void store(Stream &s) {
  _mm512_store_si512(s.parsed->state, s.r1);
  _mm512_store_si512(s.parsed->state + 16, s.r2);
}

/// The rounds the vector loop left (near the end of the words), one state at a time, every
/// word read checked; then the last length % 32 symbols.
Status finish(Stream &s, uint32_t length) {
  Parsed &p = *s.parsed;
  for (; s.rounds; --s.rounds, s.out += kStates)
    for (unsigned z = 0; z < kStates; ++z) {
      const uint32_t e = p.table[p.state[z] & kMask];
      s.out[z] = static_cast<uint8_t>(e);
      uint32_t x = (e >> 20) * (p.state[z] >> kShift) + ((e >> 8) & kMask);
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

bool ransX32DecoderAvailable() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return yes;
}

void decodeRansX32Frames(std::span<RansX32Frame> frames) {
  // Two at a time: enough to overlap the chains, and both frames' tables (16 KiB each) stay in
  // the L1 cache.
  constexpr size_t kTogether = 2;
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
    for (size_t k = 0; k < n; ++k) load(streams[k]);
    if (n == 2) roundsTogether(streams[0], streams[1]);
    for (size_t k = 0; k < n; ++k) {
      roundsAlone(streams[k]);
      store(streams[k]);
      live[k]->status = finish(streams[k], live[k]->length);
    }
  }
}

} // namespace brevis
