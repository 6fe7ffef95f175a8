#include "runtime/codecs/LitDecode.h"

#include "runtime/codecs/huffman/HuffmanDecode.h"
#include "runtime/codecs/rans/Rans16.h"
#include "runtime/codecs/rans/RansCodec.h"

#include <fmt/format.h>

#include <cstring>
#include <immintrin.h>
#include <iterator>
#include <array>
#include <utility>

namespace brevis {

namespace {

uint64_t loadLE(const uint8_t *p, unsigned bytes) {
  uint64_t v = 0;
  std::memcpy(&v, p, bytes); // x86-64 and every target we build for are little-endian
  return v;
}

/// Bits [bit, bit + b) of the little-endian bit stream at `base`, for b in 1..64.
inline uint64_t extractBits(const uint8_t *base, uint64_t bit, unsigned b) {
  const uint8_t *p = base + (bit >> 3);
  unsigned shift = bit & 7;
  uint64_t v = loadLE(p, 8) >> shift;
  if (shift + b > 64) v |= uint64_t{p[8]} << (64 - shift);
  return v & widthMask(b);
}

} // namespace

namespace {
Result<std::unique_ptr<LitCursor>> openEntropyDecoder(const Lit &lit, const Payload &payload, bool buildTables);
} // namespace

Result<void> validateLit(const Lit &lit, const Payload &payload) {
  if (lit.isInline()) return {};
  const ByteRange r = lit.payload();
  const StreamType t = lit.type;
  auto where = [&] { return fmt::format("{} literal {} at payload @{}+{}", encodingName(lit.encoding), toString(t), r.offset, r.size); };
  if (!payload.contains(r)) return Error{fmt::format("{} lies outside the payload of {} bytes", where(), payload.size())};
  ByteSpan bytes = payload.slice(r);

  if (lit.encoding == Encoding::Raw) {
    unsigned cb = containerBytes(t.width);
    if (static_cast<unsigned __int128>(t.length) * cb != r.size)
      return Error{fmt::format("{} has the wrong size for its type", where())};
    if (t.width == 8 * cb) return {}; // every container value is a valid word
    uint64_t seen = 0;
    for (uint64_t i = 0; i < t.length; ++i) seen |= loadLE(bytes.data() + i * cb, cb);
    if (seen & ~widthMask(t.width))
      return Error{fmt::format("{} holds words wider than {} bits", where(), t.width)};
    return {};
  }

  if (lit.encoding == Encoding::Huffman || lit.encoding == Encoding::Rans || lit.encoding == Encoding::RansO1) {
    // The layout is checked here; the decoding tables are built when a cursor opens it.
    auto parsed = openEntropyDecoder(lit, payload, /*buildTables=*/false);
    if (!parsed) return Error{fmt::format("{}: {}", where(), parsed.error().message)};
    return {};
  }

  if (r.size < 1) return Error{fmt::format("{} is missing its bit-count byte", where())};
  unsigned b = bytes[0];
  if (b > t.width) return Error{fmt::format("{} declares {} bits per word, more than the width {}", where(), b, t.width)};
  uint64_t need = bitpackPayloadSize(t.length, b);
  if (r.size != need)
    return Error{fmt::format("{} needs {} bytes for {} bits per word, but has {}", where(), need, b, r.size)};
  uint64_t usedBits = t.length * b; // cannot overflow: body bytes fit in the payload
  if (usedBits % 8 != 0 && (bytes[r.size - 1] >> (usedBits % 8)) != 0)
    return Error{fmt::format("{} has non-zero padding bits", where())};
  return {};
}

bool isRandomAccess(const Lit &lit) {
  return lit.isInline() || lit.encoding == Encoding::Raw || lit.encoding == Encoding::Bitpack;
}

void decodeLitWords(const Lit &lit, const Payload &payload, uint64_t first, size_t count, uint64_t *out) {
  // Empty literals have no words to point at (null data) and readers may pass a null `out`:
  // memcpy and memset are undefined on null even for zero bytes.
  if (count == 0) return;
  if (lit.isInline()) {
    std::memcpy(out, lit.words().data() + first, count * sizeof(uint64_t));
    return;
  }
  const uint8_t *base = payload.data() + lit.payload().offset;
  if (lit.encoding == Encoding::Raw) {
    unsigned cb = containerBytes(lit.type.width);
    const uint8_t *p = base + first * cb;
    switch (cb) {
    case 1: for (size_t i = 0; i < count; ++i) out[i] = p[i]; break;
    case 2: for (size_t i = 0; i < count; ++i) out[i] = loadLE(p + 2 * i, 2); break;
    case 4: for (size_t i = 0; i < count; ++i) out[i] = loadLE(p + 4 * i, 4); break;
    default: for (size_t i = 0; i < count; ++i) out[i] = loadLE(p + 8 * i, 8); break;
    }
    return;
  }
  unsigned b = base[0];
  if (b == 0) {
    std::memset(out, 0, count * sizeof(uint64_t));
    return;
  }
  const uint8_t *bits = base + 1;
  uint64_t bit = first * b;
  for (size_t i = 0; i < count; ++i, bit += b) out[i] = extractBits(bits, bit, b);
}

Result<void> LitCursor::skip(uint64_t n) {
  uint64_t scratch[256];
  while (n) {
    size_t take = static_cast<size_t>(std::min<uint64_t>(n, std::size(scratch)));
    BREVIS_TRY(read(scratch, take));
    n -= take;
  }
  return {};
}

namespace {

/// read() in pieces, narrowed.
template <typename T> Result<void> readNarrowed(LitCursor &c, T *out, size_t n) {
  uint64_t scratch[256];
  while (n) {
    size_t take = std::min(n, std::size(scratch));
    BREVIS_TRY(c.read(scratch, take));
    for (size_t i = 0; i < take; ++i) out[i] = static_cast<T>(scratch[i]);
    out += take;
    n -= take;
  }
  return {};
}

uint64_t load64(const uint8_t *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

/// Eight B-bit words per group of B bytes, from group `g0` on; one (or, past 8 bits, one
/// 16-byte) load per group. Reads up to 16 - B bytes past a group: within the payload slack.
template <unsigned B, typename T> void unpackGroups(const uint8_t *bits, uint64_t g0, size_t groups, T *out) {
  constexpr uint64_t mask = (uint64_t{1} << B) - 1;
  const uint8_t *p = bits + g0 * B;
  for (size_t g = 0; g < groups; ++g, p += B, out += 8) {
    if constexpr (B <= 8) {
      const uint64_t v = load64(p);
      for (unsigned j = 0; j < 8; ++j) out[j] = static_cast<T>((v >> (j * B)) & mask);
    } else {
      unsigned __int128 v;
      std::memcpy(&v, p, 16);
      for (unsigned j = 0; j < 8; ++j) out[j] = static_cast<T>(static_cast<uint64_t>(v >> (j * B)) & mask);
    }
  }
}

template <typename T, unsigned... B>
constexpr auto makeUnpackTable(std::integer_sequence<unsigned, B...>) {
  using Fn = void (*)(const uint8_t *, uint64_t, size_t, T *);
  return std::array<Fn, sizeof...(B)>{&unpackGroups<B + 1, T>...};
}

/// The same with BMI2's pdep, which deposits a group's bits into byte (B <= 8) or 16-bit lanes
/// (B <= 16) in one instruction per four or eight words; any B, chosen at run time.
template <typename T>
[[gnu::target("bmi2")]] void unpackGroupsPdep(const uint8_t *bits, unsigned B, uint64_t g0, size_t groups, T *out) {
  const uint8_t *p = bits + g0 * B;
  if (B <= 8) {
    const uint64_t spread = ((uint64_t{1} << B) - 1) * 0x0101010101010101ull;
    for (size_t g = 0; g < groups; ++g, p += B, out += 8) {
      uint64_t lanes = _pdep_u64(load64(p), spread);
      uint8_t b[8];
      std::memcpy(b, &lanes, 8);
      for (unsigned j = 0; j < 8; ++j) out[j] = b[j];
    }
  } else {
    const uint64_t spread = ((uint64_t{1} << B) - 1) * 0x0001000100010001ull;
    for (size_t g = 0; g < groups; ++g, p += B, out += 8) {
      unsigned __int128 v;
      std::memcpy(&v, p, 16);
      uint64_t lanes[2] = {_pdep_u64(static_cast<uint64_t>(v), spread),
                           _pdep_u64(static_cast<uint64_t>(v >> (4 * B)), spread)};
      uint16_t h[8];
      std::memcpy(h, lanes, 16);
      for (unsigned j = 0; j < 8; ++j) out[j] = static_cast<T>(h[j]);
    }
  }
}

#if defined(__x86_64__)
/// Eight groups (64 words of B <= 8 bits, 8B bytes) per step with AVX-512 VBMI: a byte permute
/// gives each 64-bit lane its group's bytes, a multishift takes 8 bits at each word's offset,
/// a mask keeps B. Returns the groups done (a multiple of eight); the rest is left to pdep.
template <typename T>
[[gnu::target("avx512f,avx512bw,avx512vbmi")]] size_t unpackGroupsVbmi(const uint8_t *bits, unsigned B, uint64_t g0,
                                                                         size_t groups, T *out) {
  alignas(64) uint8_t index[64], shift[64];
  for (unsigned lane = 0; lane < 8; ++lane)
    for (unsigned k = 0; k < 8; ++k) {
      index[8 * lane + k] = static_cast<uint8_t>(lane * B + k);
      shift[8 * lane + k] = static_cast<uint8_t>(k * B);
    }
  const __m512i idx = _mm512_load_si512(index), shifts = _mm512_load_si512(shift);
  const __m512i mask = _mm512_set1_epi8(static_cast<char>((1u << B) - 1));
  // Load exactly the 8B bytes of the eight groups: masked-off bytes are not read.
  const __mmask64 load = B == 8 ? ~__mmask64{0} : (__mmask64{1} << (8 * B)) - 1;
  const uint8_t *p = bits + g0 * B;
  const size_t steps = groups / 8;
  for (size_t s = 0; s < steps; ++s, p += 8 * B, out += 64) {
    __m512i src = _mm512_maskz_loadu_epi8(load, p);
    // (The maskz forms: GCC 12's unmasked ones warn about their undefined pass-through.)
    const __mmask64 all = ~__mmask64{0};
    __m512i lanes = _mm512_maskz_permutexvar_epi8(all, idx, src);
    __m512i words = _mm512_and_si512(_mm512_maskz_multishift_epi64_epi8(all, shifts, lanes), mask);
    if constexpr (sizeof(T) == 1) {
      _mm512_storeu_si512(out, words);
    } else {
      alignas(64) uint8_t narrow[64];
      _mm512_store_si512(narrow, words);
      for (unsigned half = 0; half < 2; ++half) {
        __m256i bytes = _mm256_load_si256(reinterpret_cast<const __m256i *>(narrow + 32 * half));
        _mm512_storeu_si512(out + 32 * half, _mm512_maskz_cvtepu8_epi16(~__mmask32{0}, bytes));
      }
    }
  }
  return steps * 8;
}
#endif

} // namespace

template <typename T>
void decodeLitNarrow(const Lit &lit, const Payload &payload, uint64_t first, size_t count, T *out) {
  if (count == 0) return; // as in decodeLitWords: no null pointers to memcpy or memset
  if (lit.isInline()) {
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<T>(lit.words()[first + i]);
    return;
  }
  const uint8_t *base = payload.data() + lit.payload().offset;
  if (lit.encoding == Encoding::Raw) {
    const unsigned cb = containerBytes(lit.type.width);
    const uint8_t *p = base + first * cb;
    if (cb == sizeof(T)) {
      std::memcpy(out, p, count * sizeof(T));
    } else {
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<T>(loadLE(p + i * cb, cb));
    }
    return;
  }
  const unsigned b = base[0];
  if (b == 0) {
    std::memset(out, 0, count * sizeof(T));
    return;
  }
  const uint8_t *bits = base + 1;
  // Words before the first whole group of eight, the groups, then the words after.
  size_t i = 0;
  for (; i < count && (first + i) % 8 != 0; ++i) out[i] = static_cast<T>(extractBits(bits, (first + i) * b, b));
  const size_t groups = (count - i) / 8;
  if (b <= 16 && groups) {
    static const bool bmi2 = __builtin_cpu_supports("bmi2");
    static constexpr auto table = makeUnpackTable<T>(std::make_integer_sequence<unsigned, 16>{});
    size_t done = 0;
#if defined(__x86_64__)
    static const bool vbmi = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
    if constexpr (sizeof(T) <= 2)
      if (vbmi && b <= 8) done = unpackGroupsVbmi(bits, b, (first + i) / 8, groups, out + i);
#endif
    if (done < groups) {
      const uint64_t g = (first + i) / 8 + done;
      if (bmi2 && (b <= 8 || sizeof(T) >= 2)) unpackGroupsPdep(bits, b, g, groups - done, out + i + 8 * done);
      else table[b - 1](bits, g, groups - done, out + i + 8 * done);
    }
    i += groups * 8;
  }
  for (; i < count; ++i) out[i] = static_cast<T>(extractBits(bits, (first + i) * b, b));
}

template void decodeLitNarrow<uint8_t>(const Lit &, const Payload &, uint64_t, size_t, uint8_t *);
template void decodeLitNarrow<uint16_t>(const Lit &, const Payload &, uint64_t, size_t, uint16_t *);
template void decodeLitNarrow<uint32_t>(const Lit &, const Payload &, uint64_t, size_t, uint32_t *);

Result<void> LitCursor::read8(uint8_t *out, size_t n) { return readNarrowed(*this, out, n); }
Result<void> LitCursor::read16(uint16_t *out, size_t n) { return readNarrowed(*this, out, n); }
Result<void> LitCursor::read32(uint32_t *out, size_t n) { return readNarrowed(*this, out, n); }

namespace {

class RandomAccessCursor final : public LitCursor {
public:
  RandomAccessCursor(const Lit &lit, const Payload &payload) : lit_(lit), payload_(payload) {}
  Result<void> read(uint64_t *out, size_t n) override {
    decodeLitWords(lit_, payload_, pos_, n, out);
    pos_ += n;
    return {};
  }
  void reset() override { pos_ = 0; }
  Result<void> skip(uint64_t n) override {
    pos_ += n;
    return {};
  }
  Result<void> read8(uint8_t *out, size_t n) override { return narrow(out, n); }
  Result<void> read16(uint16_t *out, size_t n) override { return narrow(out, n); }
  Result<void> read32(uint32_t *out, size_t n) override { return narrow(out, n); }

private:
  template <typename T> Result<void> narrow(T *out, size_t n) {
    decodeLitNarrow(lit_, payload_, pos_, n, out);
    pos_ += n;
    return {};
  }
  const Lit &lit_;
  const Payload &payload_;
  uint64_t pos_ = 0;
};

/// Serves words from decoded blocks, one block at a time or, for decoders that decode several
/// faster than one (Decoder::kBlocksTogether), that many. Decoder: HuffmanDecoder, RansDecoder or
/// Rans16Decoder; Symbol: what it writes; with MapsAlphabet, symbols index decoder.alphabet().
template <typename Decoder, typename Symbol, bool MapsAlphabet> class BlockCursor final : public LitCursor {
public:
  explicit BlockCursor(std::unique_ptr<Decoder> d) : decoder_(std::move(d)) {}
  Result<void> read(uint64_t *out, size_t n) override { return serve(out, n); }
  Result<void> read8(uint8_t *out, size_t n) override { return serve(out, n); }
  Result<void> read16(uint16_t *out, size_t n) override { return serve(out, n); }
  Result<void> read32(uint32_t *out, size_t n) override { return serve(out, n); }

  Result<const uint8_t *> readInPlace8(size_t n) override {
    if constexpr (MapsAlphabet || sizeof(Symbol) != 1) {
      return nullptr;
    } else {
      if (n == 0) return nullptr;
      if (pos_ == length_) BREVIS_TRY(load(next_));
      if (n > length_ - pos_) return nullptr;
      const uint8_t *at = symbols_.data() + pos_;
      pos_ += n;
      return at;
    }
  }

  template <typename Out> Result<void> serve(Out *out, size_t n) {
    while (n) {
      if (pos_ == length_) BREVIS_TRY(load(next_));
      size_t take = static_cast<size_t>(std::min<uint64_t>(n, length_ - pos_));
      const Symbol *s = symbols_.data() + pos_;
      if constexpr (MapsAlphabet) {
        const uint64_t *alphabet = decoder_->alphabet().data();
        for (size_t i = 0; i < take; ++i) out[i] = static_cast<Out>(alphabet[s[i]]);
      } else if constexpr (sizeof(Out) == sizeof(Symbol)) {
        std::memcpy(out, s, take * sizeof(Symbol));
      } else {
        for (size_t i = 0; i < take; ++i) out[i] = static_cast<Out>(s[i]);
      }
      out += take;
      n -= take;
      pos_ += take;
    }
    // The last block is served: its buffer goes, so that finished literals hold no memory.
    if (pos_ == length_ && next_ == decoder_->blockCount()) std::vector<Symbol>().swap(symbols_);
    return {};
  }
  void reset() override {
    next_ = first_ = 0;
    pos_ = length_ = 0;
  }
  Result<void> skip(uint64_t n) override {
    if (n == 0) return {};
    // Blocks all hold blockWords() words but the last; blocks [first_, next_) are loaded.
    const uint64_t blockWords = decoder_->blockWords();
    const uint64_t target = first_ * blockWords + pos_ + n;
    if (target < first_ * blockWords + length_) {
      pos_ = target - first_ * blockWords;
      return {};
    }
    size_t b = static_cast<size_t>(target / blockWords);
    if (b >= decoder_->blockCount()) { // at the very end
      next_ = first_ = decoder_->blockCount();
      pos_ = length_ = 0;
      return {};
    }
    BREVIS_TRY(load(b));
    pos_ = target - b * blockWords;
    return {};
  }

private:
  static constexpr size_t together() {
    if constexpr (requires { Decoder::kBlocksTogether; }) return Decoder::kBlocksTogether;
    else return 1;
  }
  /// Loads blocks from b on (as many as decode together, if there are).
  Result<void> load(size_t b) {
    if (b >= decoder_->blockCount()) return Error{"literal read past its end"};
    const size_t n = std::min(together(), decoder_->blockCount() - b);
    length_ = 0;
    for (size_t k = 0; k < n; ++k) length_ += decoder_->blockLength(b + k);
    symbols_.resize(static_cast<size_t>(length_));
    pos_ = 0;
    first_ = b;
    next_ = b + n;
    if constexpr (together() > 1) return decoder_->decodeBlocks(b, n, symbols_.data());
    else return decoder_->decodeBlock(b, symbols_.data());
  }

  std::unique_ptr<Decoder> decoder_;
  std::vector<Symbol> symbols_;
  size_t first_ = 0, next_ = 0; ///< blocks [first_, next_) are in symbols_
  uint64_t pos_ = 0, length_ = 0;
};

} // namespace

namespace {

/// Parses an entropy-coded literal and returns its cursor (tables built), or with
/// buildTables false only checks it (returning null).
Result<std::unique_ptr<LitCursor>> openEntropyDecoder(const Lit &lit, const Payload &payload, bool buildTables) {
  if (!payload.contains(lit.payload())) return Error{"literal range lies outside the payload"};
  ByteSpan bytes = payload.slice(lit.payload());
  if (lit.encoding == Encoding::Huffman) {
    auto d = HuffmanDecoder::create(bytes, lit.type.width, lit.type.length, buildTables);
    if (!d) return d.error();
    if ((*d)->blockWords() > kMaxLitBlockWords && (*d)->blockCount() > 0)
      return Error{"huffman literal has blocks larger than any encoder writes"};
    if (!buildTables) return std::unique_ptr<LitCursor>();
    if ((*d)->alphabet().size() <= 256)
      return std::unique_ptr<LitCursor>(new BlockCursor<HuffmanDecoder, uint8_t, true>(std::move(*d)));
    return std::unique_ptr<LitCursor>(new BlockCursor<HuffmanDecoder, uint16_t, true>(std::move(*d)));
  }
  if (lit.encoding == Encoding::Rans && lit.type.width > kRansMaxWidth && lit.type.width <= 16) {
    auto d = Rans16Decoder::create(bytes, lit.type.width, lit.type.length, buildTables);
    if (!d) return d.error();
    if ((*d)->blockWords() > kMaxLitBlockWords && (*d)->blockCount() > 0)
      return Error{"rans literal has blocks larger than any encoder writes"};
    if (!buildTables) return std::unique_ptr<LitCursor>();
    return std::unique_ptr<LitCursor>(new BlockCursor<Rans16Decoder, uint16_t, true>(std::move(*d)));
  }
  if (lit.type.width > kRansMaxWidth) return Error{"rans_o1 literals hold words of at most 8 bits"};
  auto d = RansDecoder::create(bytes, lit.type.width, lit.type.length);
  if (!d) return d.error();
  if ((*d)->blockWords() > kMaxLitBlockWords && (*d)->blockCount() > 0)
    return Error{"rans literal has blocks larger than any encoder writes"};
  if (!buildTables) return std::unique_ptr<LitCursor>();
  return std::unique_ptr<LitCursor>(new BlockCursor<RansDecoder, uint8_t, false>(std::move(*d)));
}

} // namespace

Result<std::unique_ptr<LitCursor>> LitCursor::open(const Lit &lit, const Payload &payload) {
  if (isRandomAccess(lit)) return std::unique_ptr<LitCursor>(new RandomAccessCursor(lit, payload));
  return openEntropyDecoder(lit, payload, /*buildTables=*/true);
}

Result<std::vector<uint64_t>> decodeLit(const Lit &lit, const Payload &payload) {
  auto cursor = LitCursor::open(lit, payload);
  if (!cursor) return cursor.error();
  std::vector<uint64_t> words(lit.type.length);
  BREVIS_TRY((*cursor)->read(words.data(), words.size()));
  return words;
}

} // namespace brevis
