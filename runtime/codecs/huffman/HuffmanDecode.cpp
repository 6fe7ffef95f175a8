#include "runtime/codecs/huffman/HuffmanDecode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace brevis {

/// The lookup table of a code whose longest code has L bits: 2^K primary entries indexed by the
/// stream's next K bits, each `symbol << 8 | length`. Where K < L, an entry of length 0 is the
/// prefix of longer codes: `base << 8`, and the next L - K bits index entries [base, ...) of the
/// same array, which hold the full lengths.
struct HuffmanLookupTable {
  const uint32_t *entries;
  uint64_t primaryMask; ///< 2^K - 1
  unsigned primaryBits; ///< K
  uint64_t secondaryMask; ///< 2^(L-K) - 1
};

namespace {

uint64_t load64(const uint8_t *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

/// One LSB-first bit stream. `bits` holds `count` valid bits; `next` is the next byte to load.
struct BitStream {
  const uint8_t *next;
  const uint8_t *end;
  uint64_t bits = 0;
  unsigned count = 0;

  /// Branch-free refill to at least 56 bits; reads 8 bytes at `next` (caller ensures next <= end,
  /// and the buffer has slack after end).
  void refillFast() {
    bits |= load64(next) << count;
    next += (63 - count) >> 3;
    count |= 56;
  }
  /// Refill that reads no byte past `end` (missing bytes read as 0).
  void refillSafe() {
    while (count <= 56) {
      uint64_t byte = next < end ? *next : 0;
      bits |= byte << count;
      ++next;
      count += 8;
    }
  }
};

/// One symbol from a stream holding at least L valid bits. TwoLevel: K < L.
template <typename Symbol, bool TwoLevel>
[[gnu::always_inline]] inline Symbol decodeSymbol(BitStream &st, const HuffmanLookupTable &t) {
  uint32_t e = t.entries[st.bits & t.primaryMask];
  if constexpr (TwoLevel) {
    if ((e & 0xff) == 0) [[unlikely]]
      e = t.entries[(e >> 8) + ((st.bits >> t.primaryBits) & t.secondaryMask)];
  }
  unsigned len = e & 0xff;
  st.bits >>= len;
  st.count -= len;
  return static_cast<Symbol>(e >> 8);
}

/// Rounds a stream whose next byte is `next` can run while every refill starts at or before
/// `end` (it reads 8 bytes: the payload's slack covers the last ones); a round consumes at most
/// 56 bits (7 bytes).
inline uint64_t inputRounds(const uint8_t *next, const uint8_t *end) {
  return next > end ? 0 : static_cast<uint64_t>(end - next) / 7 + 1;
}

// The fast loop: stream k decodes the words [at[k], limit[k]) of the block (its part); a
// round refills the four streams and decodes PerRefill words from each (PerRefill * L <= 56
// bits). Batches of rounds run while every stream's refills start within its bytes
// (inputRounds) and it has PerRefill words left per round; `at` returns where each stopped.
template <typename Symbol, unsigned PerRefill, bool TwoLevel>
[[gnu::always_inline]] inline void fastRounds(BitStream *streams, const HuffmanLookupTable &table, Symbol **at,
                                              Symbol *const *limit) {
  // The streams are copied into locals: stores of symbols (bytes may alias anything) would
  // otherwise force every stream's state through memory after each symbol.
  BitStream s0 = streams[0], s1 = streams[1], s2 = streams[2], s3 = streams[3];
  Symbol *p0 = at[0], *p1 = at[1], *p2 = at[2], *p3 = at[3];
  for (;;) {
    uint64_t rounds = std::min({static_cast<uint64_t>(limit[0] - p0), static_cast<uint64_t>(limit[1] - p1),
                                static_cast<uint64_t>(limit[2] - p2), static_cast<uint64_t>(limit[3] - p3)}) /
                      PerRefill;
    rounds = std::min({rounds, inputRounds(s0.next, s0.end), inputRounds(s1.next, s1.end),
                       inputRounds(s2.next, s2.end), inputRounds(s3.next, s3.end)});
    if (rounds == 0) break;
    do {
      s0.refillFast();
      s1.refillFast();
      s2.refillFast();
      s3.refillFast();
      for (unsigned r = 0; r < PerRefill; ++r) {
        *p0++ = decodeSymbol<Symbol, TwoLevel>(s0, table);
        *p1++ = decodeSymbol<Symbol, TwoLevel>(s1, table);
        *p2++ = decodeSymbol<Symbol, TwoLevel>(s2, table);
        *p3++ = decodeSymbol<Symbol, TwoLevel>(s3, table);
      }
    } while (--rounds);
  }
  streams[0] = s0;
  streams[1] = s1;
  streams[2] = s2;
  streams[3] = s3;
  at[0] = p0;
  at[1] = p1;
  at[2] = p2;
  at[3] = p3;
}

template <typename Symbol, bool TwoLevel>
[[gnu::always_inline]] inline void fastLoopBody(BitStream *s, const HuffmanLookupTable &t, unsigned L, Symbol **at,
                                                Symbol *const *limit) {
  switch (56 / L) { // code lengths 11..16: 5, 4 or 3 symbols per refill
  case 5: return fastRounds<Symbol, 5, TwoLevel>(s, t, at, limit);
  case 4: return fastRounds<Symbol, 4, TwoLevel>(s, t, at, limit);
  default: return fastRounds<Symbol, 3, TwoLevel>(s, t, at, limit);
  }
}

// The same loop compiled twice: for any x86-64, and with BMI2, whose one-uop variable shifts
// (shrx) shorten each stream's lookup -> shift dependency chain. Chosen once, at run time.
template <typename Symbol, bool TwoLevel>
void fastLoopPortable(BitStream *s, const HuffmanLookupTable &t, unsigned L, Symbol **at, Symbol *const *limit) {
  fastLoopBody<Symbol, TwoLevel>(s, t, L, at, limit);
}
#if defined(__x86_64__)
template <typename Symbol, bool TwoLevel>
[[gnu::target("bmi2")]] void fastLoopBmi2(BitStream *s, const HuffmanLookupTable &t, unsigned L, Symbol **at,
                                          Symbol *const *limit) {
  fastLoopBody<Symbol, TwoLevel>(s, t, L, at, limit);
}
#endif

template <typename Symbol, bool TwoLevel>
void fastLoopFor(BitStream *s, const HuffmanLookupTable &t, unsigned L, Symbol **at, Symbol *const *limit) {
#if defined(__x86_64__)
  static const bool bmi2 = __builtin_cpu_supports("bmi2");
  if (bmi2) return fastLoopBmi2<Symbol, TwoLevel>(s, t, L, at, limit);
#endif
  fastLoopPortable<Symbol, TwoLevel>(s, t, L, at, limit);
}

template <typename Symbol>
void fastLoop(BitStream *s, const HuffmanLookupTable &t, unsigned L, Symbol **at, Symbol *const *limit) {
  if (t.primaryBits < L) return fastLoopFor<Symbol, true>(s, t, L, at, limit);
  fastLoopFor<Symbol, false>(s, t, L, at, limit);
}

// Byte alphabets: each lookup yields one to three symbols of a stream (buildPairTable). Stream
// k writes its part of the block; a lookup stores four bytes (its symbols and whatever else
// the entry holds) and advances by the number of symbols, so later stores rewrite the rest.
//
// Register pressure decides this loop's speed: four streams' bits, byte positions and output
// positions already take twelve of the sixteen registers. So the number of valid bits is not
// kept beside the bits but marked by a sentinel bit above them (a lookup's shift moves it
// along), the index width L is a constant, and no stream end is compared per round: a batch
// runs as many rounds as the worst case (56 bits read, 3 symbols written per lookup) allows.
struct SentinelStream {
  uint64_t bits; ///< valid bits [0, c), a 1 at bit c, zeros above
  const uint8_t *next;

  static SentinelStream from(const BitStream &st) {
    return {st.bits | (uint64_t{1} << st.count), st.next};
  }
  void to(BitStream &st) const {
    unsigned c = 63 - static_cast<unsigned>(__builtin_clzll(bits));
    st.bits = bits ^ (uint64_t{1} << c);
    st.count = c;
    st.next = next;
  }
  /// Refill to 56..63 valid bits; reads 8 bytes at `next`.
  [[gnu::always_inline]] void refill() {
    unsigned z = static_cast<unsigned>(__builtin_clzll(bits));
    unsigned c = 63 ^ z;
    uint64_t data = (bits ^ (uint64_t{1} << c)) | (load64(next) << c);
    next += z >> 3;
    // Keep `filled` bits (the load brought up to 64 - c more) and put the sentinel above them.
    unsigned filled = c | 56;
    bits = (data & ((uint64_t{1} << filled) - 1)) | (uint64_t{1} << filled);
  }
};

// L: the longest code. K < L: the pair table has 2^K entries, and an entry of no symbols is the
// prefix of a longer code, whose block of single-code entries it points into.
template <unsigned L, unsigned K>
[[gnu::always_inline]] inline void pairRounds(BitStream *streams, uint8_t **at, uint8_t *const *limit,
                                              const uint32_t *pairs, const uint32_t *table) {
  constexpr unsigned perRefill = std::min(56 / L, 5u); // lookups of at most L bits per 56-bit refill
  constexpr uint64_t mask = (uint64_t{1} << K) - 1;
  // Worst case per round and stream: perRefill lookups of 3 symbols, the last store reaching
  // one byte further; 7 bytes read.
  constexpr uint64_t reach = 3 * perRefill;
  SentinelStream s0 = SentinelStream::from(streams[0]), s1 = SentinelStream::from(streams[1]),
                 s2 = SentinelStream::from(streams[2]), s3 = SentinelStream::from(streams[3]);
  uint8_t *p0 = at[0], *p1 = at[1], *p2 = at[2], *p3 = at[3];
  auto lookup = [&](SentinelStream &st, uint8_t *&p) {
    uint32_t e = pairs[st.bits & mask];
    if constexpr (K < L) {
      if ((e & 0xc0) == 0) [[unlikely]] {
        uint32_t code = table[(e >> 8) + ((st.bits >> K) & ((uint64_t{1} << (L - K)) - 1))];
        st.bits >>= code & 63;
        *p++ = static_cast<uint8_t>(code >> 8);
        return;
      }
    }
    st.bits >>= e & 63; // bit 5 is clear: x86 shifts mask their count to 6 bits, so no `and`
    uint32_t symbols = e >> 8;
    std::memcpy(p, &symbols, 4);
    p += (e >> 6) & 3;
  };
  auto outputRounds = [&](const uint8_t *p, unsigned k) -> uint64_t {
    uint64_t left = static_cast<uint64_t>(limit[k] - p);
    return left > reach ? (left - 1) / reach : 0;
  };
  for (;;) {
    uint64_t rounds = std::min({outputRounds(p0, 0), outputRounds(p1, 1), outputRounds(p2, 2), outputRounds(p3, 3)});
    rounds = std::min({rounds, inputRounds(s0.next, streams[0].end), inputRounds(s1.next, streams[1].end),
                       inputRounds(s2.next, streams[2].end), inputRounds(s3.next, streams[3].end)});
    if (rounds == 0) break;
    do {
      s0.refill();
      s1.refill();
      s2.refill();
      s3.refill();
      for (unsigned r = 0; r < perRefill; ++r) {
        lookup(s0, p0);
        lookup(s1, p1);
        lookup(s2, p2);
        lookup(s3, p3);
      }
    } while (--rounds);
  }
  s0.to(streams[0]);
  s1.to(streams[1]);
  s2.to(streams[2]);
  s3.to(streams[3]);
  at[0] = p0;
  at[1] = p1;
  at[2] = p2;
  at[3] = p3;
  // Encoders split blocks so that the streams need equal numbers of lookups, and they end
  // together; whatever a stream has left (any split is valid), it decodes alone.
  for (unsigned k = 0; k < kHuffmanStreams; ++k) {
    SentinelStream st = SentinelStream::from(streams[k]);
    uint8_t *p = at[k];
    for (;;) {
      uint64_t rounds = std::min(outputRounds(p, k), inputRounds(st.next, streams[k].end));
      if (rounds == 0) break;
      do {
        st.refill();
        for (unsigned r = 0; r < perRefill; ++r) lookup(st, p);
      } while (--rounds);
    }
    st.to(streams[k]);
    at[k] = p;
  }
}

[[gnu::always_inline]] inline void pairLoopBody(BitStream *s, uint8_t **at, uint8_t *const *limit,
                                                const uint32_t *pairs, const uint32_t *table, unsigned L, unsigned K) {
  constexpr unsigned P = kHuffmanPrimaryBits;
  if (K < L) {
    assert(K == P && "a partial table has kHuffmanPrimaryBits (huffmanPrimaryBits)");
    switch (L) {
#define BREVIS_PAIR_ROUNDS(l)                                                                                            \
  case l: return pairRounds<l, P>(s, at, limit, pairs, table);
      BREVIS_PAIR_ROUNDS(12) BREVIS_PAIR_ROUNDS(13) BREVIS_PAIR_ROUNDS(14) BREVIS_PAIR_ROUNDS(15) BREVIS_PAIR_ROUNDS(16)
#undef BREVIS_PAIR_ROUNDS
    default: return;
    }
  }
  switch (L) {
#define BREVIS_PAIR_ROUNDS(l)                                                                                            \
  case l: return pairRounds<l, l>(s, at, limit, pairs, table);
    BREVIS_PAIR_ROUNDS(1) BREVIS_PAIR_ROUNDS(2) BREVIS_PAIR_ROUNDS(3) BREVIS_PAIR_ROUNDS(4) BREVIS_PAIR_ROUNDS(5)
    BREVIS_PAIR_ROUNDS(6) BREVIS_PAIR_ROUNDS(7) BREVIS_PAIR_ROUNDS(8) BREVIS_PAIR_ROUNDS(9) BREVIS_PAIR_ROUNDS(10)
    BREVIS_PAIR_ROUNDS(11) BREVIS_PAIR_ROUNDS(12) BREVIS_PAIR_ROUNDS(13) BREVIS_PAIR_ROUNDS(14)
    BREVIS_PAIR_ROUNDS(15) BREVIS_PAIR_ROUNDS(16)
#undef BREVIS_PAIR_ROUNDS
  default: return; // lengths are 1..16 (readHuffmanCode); the tail loop decodes everything
  }
}

void pairLoopPortable(BitStream *s, uint8_t **at, uint8_t *const *limit, const uint32_t *pairs, const uint32_t *table,
                      unsigned L, unsigned K) {
  pairLoopBody(s, at, limit, pairs, table, L, K);
}
#if defined(__x86_64__)
[[gnu::target("bmi2")]] void pairLoopBmi2(BitStream *s, uint8_t **at, uint8_t *const *limit, const uint32_t *pairs,
                                           const uint32_t *table, unsigned L, unsigned K) {
  pairLoopBody(s, at, limit, pairs, table, L, K);
}
#endif

void pairLoop(BitStream *s, uint8_t **at, uint8_t *const *limit, const uint32_t *pairs, const uint32_t *table,
              unsigned L, unsigned K) {
#if defined(__x86_64__)
  static const bool bmi2 = __builtin_cpu_supports("bmi2");
  if (bmi2) return pairLoopBmi2(s, at, limit, pairs, table, L, K);
#endif
  pairLoopPortable(s, at, limit, pairs, table, L, K);
}

/// Decodes a block's four runs into `out`: `fast(s, at, limit)` (a fast loop for Symbol) as far
/// as it goes, then each stream's last words one symbol at a time. Leaves the streams' final
/// state in `s`, for the check that each was consumed exactly.
template <typename Symbol, typename FastLoop>
void decodeRuns(const uint8_t *const *streams, const uint64_t *sizes, const uint64_t *starts, unsigned L,
                const HuffmanLookupTable &table, Symbol *out, BitStream *s, FastLoop fast) {
  Symbol *at[kHuffmanStreams], *limit[kHuffmanStreams];
  for (unsigned k = 0; k < kHuffmanStreams; ++k) {
    s[k].next = streams[k];
    s[k].end = streams[k] + sizes[k];
    at[k] = out + starts[k];
    limit[k] = out + starts[k + 1];
  }
  fast(s, at, limit);
  for (unsigned k = 0; k < kHuffmanStreams; ++k) {
    BitStream &st = s[k];
    for (Symbol *p = at[k]; p < limit[k]; ++p) {
      if (st.count < L) st.refillSafe();
      *p = decodeSymbol<Symbol, true>(st, table);
    }
  }
}

} // namespace

Result<std::unique_ptr<HuffmanDecoder>> HuffmanDecoder::create(ByteSpan bytes, unsigned width, uint64_t count,
                                                               bool buildTables) {
  auto d = std::unique_ptr<HuffmanDecoder>(new HuffmanDecoder());
  d->count_ = count;
  ByteReader in(bytes);
  auto code = readHuffmanCode(in, width);
  if (!code) return code.error();
  d->code_ = std::move(*code);
  if (d->code_.words.size() == 1) {
    if (in.remaining() != 0) return Error{"huffman literal has trailing bytes"};
    d->blockWords_ = count ? count : 1;
    if (count) d->blocks_.push_back(Block{});
    return d;
  }
  auto blockWords = in.varint();
  if (!blockWords || *blockWords == 0) return Error{"huffman literal has an invalid block size"};
  d->blockWords_ = *blockWords;
  uint64_t blocks = count / *blockWords + (count % *blockWords != 0);
  // Every block has at least seven bytes of counts and sizes: a count beyond that is corrupt.
  if (blocks > in.remaining() / (2 * kHuffmanStreams - 1)) return Error{"huffman literal is truncated"};
  d->blocks_.resize(blocks);
  for (size_t i = 0; i < blocks; ++i) {
    Block &b = d->blocks_[i];
    const uint64_t length = d->blockLength(i);
    b.starts[0] = 0;
    for (unsigned k = 1; k < kHuffmanStreams; ++k) {
      auto words = in.varint();
      if (!words) return Error{"huffman literal is truncated"};
      if (*words > length - b.starts[k - 1])
        return Error{fmt::format("huffman block {} gives its streams more words than it has", i)};
      b.starts[k] = b.starts[k - 1] + *words;
    }
    b.starts[kHuffmanStreams] = length;
    for (auto &s : b.sizes) {
      auto size = in.varint();
      if (!size) return Error{"huffman literal is truncated"};
      s = *size;
    }
    for (unsigned s = 0; s < kHuffmanStreams; ++s) {
      b.streams[s] = in.take(b.sizes[s]);
      if (!b.streams[s]) return Error{"huffman literal is truncated"};
    }
  }
  if (in.remaining() != 0) return Error{"huffman literal has trailing bytes"};
  if (!buildTables) return d;

  d->buildLookupTables();
  return d;
}

unsigned huffmanPrimaryBits(unsigned maxLength, uint64_t count, size_t symbols) {
  // Filling a table of 2^L entries costs about as much as decoding 2^L words; a byte
  // alphabet's pair table about twenty times that, for decoding only a tenth faster than from a
  // pair table of kHuffmanPrimaryBits (codebench). A shorter literal gets the small table, and
  // its rare longer codes take a second lookup.
  const unsigned shift = symbols <= 256 ? kHuffmanFullPairTableShift : kHuffmanFullTableShift;
  if (maxLength <= kHuffmanPrimaryBits || count >= (uint64_t{1} << (maxLength + shift))) return maxLength;
  return kHuffmanPrimaryBits;
}

void HuffmanDecoder::buildLookupTables() {
  // Every K-bit pattern whose low bits are a code of at most K bits maps to that code; the
  // patterns that begin longer codes each get a block of 2^(L-K) entries after the primary ones.
  const unsigned L = code_.maxLength;
  const unsigned K = huffmanPrimaryBits(L, count_, code_.words.size());
  primaryBits_ = K;
  const std::vector<uint32_t> codes = canonicalCodesLsbFirst(code_);
  size_t prefixes = 0;
  if (K < L) {
    // Count the distinct K-bit prefixes of long codes first, to size the table once.
    std::vector<uint8_t> seen(size_t{1} << K, 0);
    for (uint32_t s = 0; s < codes.size(); ++s)
      if (code_.lengths[s] > K && !seen[codes[s] & ((1u << K) - 1)]++) ++prefixes;
  }
  const size_t primary = size_t{1} << K;
  table_.assign(primary + (prefixes << (L - K)), 0);
  size_t nextBlock = primary;
  for (uint32_t s = 0; s < codes.size(); ++s) {
    const unsigned len = code_.lengths[s];
    const uint32_t entry = (s << 8) | len;
    if (len <= K) {
      for (uint32_t hi = 0; hi < (1u << (K - len)); ++hi) table_[codes[s] | (hi << len)] = entry;
      continue;
    }
    uint32_t &head = table_[codes[s] & ((1u << K) - 1)];
    if (head == 0) {
      head = static_cast<uint32_t>(nextBlock << 8);
      nextBlock += size_t{1} << (L - K);
    }
    const size_t base = head >> 8;
    const uint32_t rest = codes[s] >> K;
    for (uint32_t hi = 0; hi < (1u << (L - len)); ++hi) table_[base + (rest | (hi << (len - K)))] = entry;
  }
  // Several symbols per lookup pay off when each entry is used a few times.
  if (code_.words.size() <= 256 && count_ >= (uint64_t{1} << (K + kHuffmanPairTableShift))) buildPairTable();
}

uint64_t HuffmanDecoder::blockLength(size_t b) const {
  uint64_t begin = b * blockWords_;
  return std::min(blockWords_, count_ - begin);
}

namespace detail {

namespace {

// Entry for a K-bit pattern: as many whole codes (up to three) as its bits hold. Bits 0-4: their
// total length; 5: zero; 6-7: how many; 8-15, 16-23, 24-31: the symbols. A pattern that begins a
// code longer than K bits keeps its primary entry (no symbols: the block of the longer codes).
void pairEntriesScalar(const uint32_t *t, unsigned K, uint32_t end, uint32_t *out) {
  // Three lookups per pattern, without branches on what they find: which codes fit is as good
  // as random from one pattern to the next, and mispredicted branches cost more than the lookups.
  for (uint32_t p = 0; p < end; ++p) {
    const uint32_t e1 = t[p];
    const unsigned l1 = e1 & 0xff;
    if (l1 == 0) { // the prefix of a longer code (K < L)
      out[p] = e1;
      continue;
    }
    const uint32_t e2 = t[p >> l1];
    const unsigned l2 = e2 & 0xff;
    const bool two = l2 != 0 && l1 + l2 <= K;
    const unsigned used2 = l1 + (two ? l2 : 0);
    const uint32_t e3 = t[p >> used2];
    const unsigned l3 = e3 & 0xff;
    const bool three = two && l3 != 0 && used2 + l3 <= K;
    const unsigned used = used2 + (three ? l3 : 0);
    const unsigned count = 1u + two + three;
    out[p] = ((e1 >> 8) << 8) | (two ? (e2 >> 8) << 16 : 0) | (three ? (e3 >> 8) << 24 : 0) | used | (count << 6);
  }
}

#if defined(__x86_64__)
/// The same, sixteen patterns at a time: the three lookups are gathers (building a small
/// literal's pair table was 5% of decoding a checkpoint of small tensors, at ~25 instructions
/// a pattern).
[[gnu::target("avx512f")]] void pairEntriesAvx512(const uint32_t *t, unsigned K, uint32_t end, uint32_t *out) {
  const __m512i lengthMask = _mm512_set1_epi32(0xff), limit = _mm512_set1_epi32(static_cast<int>(K));
  const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi32(1 << 6);
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __mmask16 all = 0xffff;
  for (uint32_t first = 0; first < end; first += 16) {
    const __m512i p = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(first)), lanes);
    const __m512i e1 = _mm512_mask_i32gather_epi32(zero, all, p, t, 4);
    const __m512i l1 = _mm512_and_si512(e1, lengthMask);
    const __m512i e2 = _mm512_mask_i32gather_epi32(zero, all, _mm512_srlv_epi32(p, l1), t, 4);
    const __m512i l2 = _mm512_and_si512(e2, lengthMask);
    const __mmask16 two = _mm512_test_epi32_mask(l2, l2) & _mm512_cmple_epu32_mask(_mm512_add_epi32(l1, l2), limit);
    const __m512i used2 = _mm512_mask_add_epi32(l1, two, l1, l2);
    const __m512i e3 = _mm512_mask_i32gather_epi32(zero, all, _mm512_srlv_epi32(p, used2), t, 4);
    const __m512i l3 = _mm512_and_si512(e3, lengthMask);
    const __mmask16 three =
        two & _mm512_test_epi32_mask(l3, l3) & _mm512_cmple_epu32_mask(_mm512_add_epi32(used2, l3), limit);
    const __m512i used = _mm512_mask_add_epi32(used2, three, used2, l3);
    __m512i entry = _mm512_or_si512(_mm512_andnot_si512(lengthMask, e1), _mm512_or_si512(used, one));
    entry = _mm512_mask_add_epi32(entry, two, entry, one);
    entry = _mm512_mask_add_epi32(entry, three, entry, one);
    entry = _mm512_mask_or_epi32(entry, two, entry, _mm512_slli_epi32(_mm512_srli_epi32(e2, 8), 16));
    entry = _mm512_mask_or_epi32(entry, three, entry, _mm512_slli_epi32(_mm512_srli_epi32(e3, 8), 24));
    // A prefix of a longer code keeps its primary entry.
    entry = _mm512_mask_blend_epi32(_mm512_testn_epi32_mask(l1, l1), entry, e1);
    _mm512_storeu_si512(out + first, entry);
  }
}
#endif

} // namespace

void huffmanPairEntries(const uint32_t *table, unsigned K, uint32_t *out, bool vector) {
  const uint32_t entries = uint32_t{1} << K;
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (vector && avx512 && entries >= 16) return pairEntriesAvx512(table, K, entries, out);
#endif
  (void)vector;
  pairEntriesScalar(table, K, entries, out);
}

} // namespace detail

void HuffmanDecoder::buildPairTable() {
  pairTable_.resize(size_t{1} << primaryBits_);
  detail::huffmanPairEntries(table_.data(), primaryBits_, pairTable_.data(), /*vector=*/true);
}

HuffmanLookupTable HuffmanDecoder::lookupTable() const {
  const unsigned L = code_.maxLength, K = primaryBits_;
  return {table_.data(), (uint64_t{1} << K) - 1, K, (uint64_t{1} << (L - K)) - 1};
}

Result<void> HuffmanDecoder::decodeBlock(size_t b, uint8_t *out) const {
  if (code_.words.size() > 256) return Error{"huffman alphabet does not fit in bytes"};
  const uint64_t n = blockLength(b);
  if (code_.words.size() == 1) {
    std::memset(out, 0, n);
    return {};
  }
  const Block &block = blocks_[b];
  const unsigned L = code_.maxLength;
  BitStream s[kHuffmanStreams];
  const HuffmanLookupTable t = lookupTable();
  if (pairTable_.empty())
    decodeRuns(block.streams, block.sizes, block.starts, L, t, out, s,
               [&](BitStream *st, uint8_t **at, uint8_t *const *limit) { fastLoop(st, t, L, at, limit); });
  else
    decodeRuns(block.streams, block.sizes, block.starts, L, t, out, s,
               [&](BitStream *st, uint8_t **at, uint8_t *const *limit) {
                 pairLoop(st, at, limit, pairTable_.data(), table_.data(), L, primaryBits_);
               });
  return checkStreamsConsumed(b, s);
}

Result<void> HuffmanDecoder::checkStreamsConsumed(size_t b, const void *streams) const {
  const BitStream *s = static_cast<const BitStream *>(streams);
  const Block &block = blocks_[b];
  for (unsigned k = 0; k < kHuffmanStreams; ++k) {
    // Exactly the stream's bytes were used, and the unused bits of its last byte are zero.
    uint64_t size = block.sizes[k];
    uint64_t consumed = static_cast<uint64_t>(s[k].next - block.streams[k]) * 8 - s[k].count;
    if (consumed > size * 8 || (consumed + 7) / 8 != size)
      return Error{fmt::format("huffman block {} stream {} is corrupt: {} bits decoded from {} bytes", b, k, consumed,
                               size)};
    if (consumed % 8 && (block.streams[k][size - 1] >> (consumed % 8)) != 0)
      return Error{fmt::format("huffman block {} stream {} has non-zero padding bits", b, k)};
  }
  return {};
}

Result<void> HuffmanDecoder::decodeBlock(size_t b, uint16_t *out) const {
  const uint64_t n = blockLength(b);
  if (code_.words.size() == 1) {
    std::memset(out, 0, n * sizeof(uint16_t));
    return {};
  }
  const Block &block = blocks_[b];
  const unsigned L = code_.maxLength;
  BitStream s[kHuffmanStreams];
  const HuffmanLookupTable t = lookupTable();
  decodeRuns(block.streams, block.sizes, block.starts, L, t, out, s,
             [&](BitStream *st, uint16_t **at, uint16_t *const *limit) { fastLoop(st, t, L, at, limit); });
  return checkStreamsConsumed(b, s);
}

} // namespace brevis
