#include "runtime/codecs/LitDecode.h"

#include "runtime/codecs/SymbolMap.h"
#include "runtime/codecs/bitpack/BitpackDecode.h"
#include "runtime/codecs/context/ContextCodec.h"
#include "runtime/codecs/huffman/HuffmanDecode.h"
#include "runtime/codecs/rans/Rans16.h"
#include "runtime/codecs/rans/RansCodec.h"
#include "runtime/codecs/zstd/ZstdCodec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <type_traits>

namespace brevis {

namespace {
Result<std::unique_ptr<LitCursor>> openEntropyDecoder(const Lit &lit, const Payload &payload, bool buildTables);
} // namespace

Result<void> validateLit(const Lit &lit, const Payload &payload) {
  if (lit.isInline()) return {};
  const ByteRange r = lit.payload();
  auto where = [&] {
    return fmt::format("{} literal {} at payload @{}+{}", encodingName(lit.encoding), toString(lit.type), r.offset,
                       r.size);
  };
  if (!payload.contains(r)) return Error{fmt::format("{} lies outside the payload of {} bytes", where(), payload.size())};
  ByteSpan bytes = payload.slice(r);
  Result<void> valid;
  switch (lit.encoding) {
  case Encoding::Raw: valid = validateRaw(bytes, lit.type); break;
  case Encoding::Bitpack: valid = validateBitpack(bytes, lit.type); break;
  case Encoding::Huffman:
  case Encoding::Rans:
  case Encoding::RansO1:
  case Encoding::Zstd:
  case Encoding::Context: {
    // The layout is checked here; the decoding tables are built when a cursor opens it.
    auto parsed = openEntropyDecoder(lit, payload, /*buildTables=*/false);
    if (!parsed) return Error{fmt::format("{}: {}", where(), parsed.error().message)};
    return {};
  }
  }
  if (!valid) return Error{fmt::format("{} {}", where(), valid.error().message)};
  return {};
}

bool isRandomAccess(const Lit &lit) {
  if (lit.isInline()) return true;
  switch (lit.encoding) {
  case Encoding::Raw:
  case Encoding::Bitpack: return true;
  case Encoding::Huffman:
  case Encoding::Rans:
  case Encoding::RansO1:
  case Encoding::Zstd:
  case Encoding::Context: return false;
  }
  __builtin_trap(); // not an Encoding
}

namespace {

/// Words [first, first + count) of an inline literal (a word list or a text's bytes) into `out`.
template <typename T> void copyInlineWords(const Lit &lit, uint64_t first, size_t count, T *out) {
  if (lit.isText()) {
    const auto *bytes = reinterpret_cast<const unsigned char *>(lit.textBytes().data()) + first;
    std::copy(bytes, bytes + count, out);
  } else {
    const uint64_t *words = lit.words().data() + first;
    std::transform(words, words + count, out, [](uint64_t w) { return static_cast<T>(w); });
  }
}

} // namespace

void decodeLitWords(const Lit &lit, const Payload &payload, uint64_t first, size_t count, uint64_t *out) {
  // Empty literals have no words to point at (null data) and readers may pass a null `out`:
  // memcpy and memset are undefined on null even for zero bytes.
  if (count == 0) return;
  if (lit.isInline()) return copyInlineWords(lit, first, count, out);
  const uint8_t *base = payload.data() + lit.payload().offset;
  switch (lit.encoding) {
  case Encoding::Raw: return decodeRaw(base, lit.type.width, first, count, out);
  case Encoding::Bitpack: return decodeBitpack(base, first, count, out);
  case Encoding::Huffman:
  case Encoding::Rans:
  case Encoding::RansO1:
  case Encoding::Zstd:
  case Encoding::Context: break;
  }
  __builtin_trap(); // entropy-coded literals are decoded by a LitCursor
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

} // namespace

template <typename T>
void decodeLitNarrow(const Lit &lit, const Payload &payload, uint64_t first, size_t count, T *out) {
  if (count == 0) return; // as in decodeLitWords: no null pointers to memcpy or memset
  if (lit.isInline()) return copyInlineWords(lit, first, count, out);
  const uint8_t *base = payload.data() + lit.payload().offset;
  switch (lit.encoding) {
  case Encoding::Raw: return decodeRawNarrow(base, lit.type.width, first, count, out);
  case Encoding::Bitpack: return decodeBitpackNarrow(base, first, count, out);
  case Encoding::Huffman:
  case Encoding::Rans:
  case Encoding::RansO1:
  case Encoding::Zstd:
  case Encoding::Context: break;
  }
  __builtin_trap(); // entropy-coded literals are decoded by a LitCursor
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
/// faster than one (Decoder::kBlocksTogether), that many. Decoder: HuffmanDecoder, RansDecoder,
/// Rans16Decoder or ZstdDecoder; Symbol: what it writes; with MapsAlphabet, symbols index decoder.alphabet().
template <typename Decoder, typename Symbol, bool MapsAlphabet> class BlockCursor final : public LitCursor {
public:
  /// `lit` names the literal in errors (its fields are copied: the cursor may outlive it).
  BlockCursor(std::unique_ptr<Decoder> d, const Lit &lit)
      : decoder_(std::move(d)), encoding_(lit.encoding), type_(lit.type), range_(lit.payload()), loc_(lit.loc) {
    if constexpr (MapsAlphabet && sizeof(Symbol) == 1) {
      const auto &alphabet = decoder_->alphabet();
      if (alphabet.size() <= kSymbolMapEntries &&
          std::all_of(alphabet.begin(), alphabet.end(), [](uint64_t w) { return w <= 0xffff; })) {
        smallAlphabet_.assign(kSymbolMapEntries, 0);
        std::copy(alphabet.begin(), alphabet.end(), smallAlphabet_.begin());
      }
    }
  }
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
      const uint8_t *at = symbols_.get() + pos_;
      pos_ += n;
      return at;
    }
  }

  template <typename Out> Result<void> serve(Out *out, size_t n) {
    while (n) {
      if (pos_ == length_) BREVIS_TRY(load(next_));
      size_t take = static_cast<size_t>(std::min<uint64_t>(n, length_ - pos_));
      const Symbol *s = symbols_.get() + pos_;
      if constexpr (MapsAlphabet) {
        constexpr bool mappable = sizeof(Symbol) == 1 && (std::is_same_v<Out, uint8_t> ||
                                                          std::is_same_v<Out, uint16_t> || std::is_same_v<Out, uint32_t>);
        if constexpr (mappable) {
          if (!smallAlphabet_.empty()) mapByteSymbols(s, take, smallAlphabet_.data(), out);
        }
        if (!mappable || smallAlphabet_.empty()) {
          const uint64_t *alphabet = decoder_->alphabet().data();
          for (size_t i = 0; i < take; ++i) out[i] = static_cast<Out>(alphabet[s[i]]);
        }
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
    if (pos_ == length_ && next_ == decoder_->blockCount()) {
      symbols_.reset();
      capacity_ = 0;
    }
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
    if (length_ > capacity_) { // not zeroed: the decoder writes every word
      symbols_ = std::make_unique_for_overwrite<Symbol[]>(static_cast<size_t>(length_));
      capacity_ = static_cast<size_t>(length_);
    }
    pos_ = 0;
    first_ = b;
    next_ = b + n;
    Result<void> decoded;
    if constexpr (together() > 1) decoded = decoder_->decodeBlocks(b, n, symbols_.get());
    else decoded = decoder_->decodeBlock(b, symbols_.get());
    // Which literal, for a program of several literals coded alike (a merge of two fields).
    if (!decoded)
      return Error{fmt::format("{} literal {} at payload @{}+{}: {}", encodingName(encoding_), toString(type_),
                               range_.offset, range_.size, decoded.error().message),
                   loc_};
    return {};
  }

  std::unique_ptr<Decoder> decoder_;
  Encoding encoding_;
  StreamType type_;
  ByteRange range_;
  SourceLoc loc_; ///< where the literal is written: errors in its blocks are reported there
  /// Byte symbols' alphabet as a mapByteSymbols table, where it has at most kSymbolMapEntries
  /// words of 16 bits (else empty).
  std::vector<uint16_t> smallAlphabet_;
  std::unique_ptr<Symbol[]> symbols_; ///< capacity_ words, the loaded blocks' first
  size_t capacity_ = 0;
  size_t first_ = 0, next_ = 0; ///< blocks [first_, next_) are in symbols_
  uint64_t pos_ = 0, length_ = 0;
};

} // namespace

namespace {

/// A cursor over a byte literal coded in blocks by `Decoder` (htscodecs rANS frames of `rans`
/// and `rans_o1`, zstd frames): `what` names the encoding in errors.
template <typename Decoder>
Result<std::unique_ptr<LitCursor>> openByteBlocks(const Lit &lit, ByteSpan bytes, bool buildTables, const char *what) {
  if (lit.type.width > 8) return Error{std::string(what) + " literals hold words of at most 8 bits"};
  auto d = Decoder::create(bytes, lit.type.width, lit.type.length);
  if (!d) return d.error();
  if ((*d)->blockWords() > kMaxLitBlockWords && (*d)->blockCount() > 0)
    return Error{std::string(what) + " literal has blocks larger than any encoder writes"};
  if (!buildTables) return std::unique_ptr<LitCursor>();
  return std::unique_ptr<LitCursor>(new BlockCursor<Decoder, uint8_t, false>(std::move(*d), lit));
}

/// The htscodecs rANS frames of `rans` (order 0) and `rans_o1` literals of bytes.
Result<std::unique_ptr<LitCursor>> openHtscodecs(const Lit &lit, ByteSpan bytes, bool buildTables) {
  static_assert(kRansMaxWidth == 8);
  return openByteBlocks<RansDecoder>(lit, bytes, buildTables, lit.encoding == Encoding::RansO1 ? "rans_o1" : "rans");
}

/// Parses an entropy-coded literal and returns its cursor (tables built), or with
/// buildTables false only checks it (returning null).
Result<std::unique_ptr<LitCursor>> openEntropyDecoder(const Lit &lit, const Payload &payload, bool buildTables) {
  if (!payload.contains(lit.payload())) return Error{"literal range lies outside the payload"};
  ByteSpan bytes = payload.slice(lit.payload());
  switch (lit.encoding) {
  case Encoding::Huffman: {
    auto d = HuffmanDecoder::create(bytes, lit.type.width, lit.type.length, buildTables);
    if (!d) return d.error();
    if ((*d)->blockWords() > kMaxLitBlockWords && (*d)->blockCount() > 0)
      return Error{"huffman literal has blocks larger than any encoder writes"};
    if (!buildTables) return std::unique_ptr<LitCursor>();
    if ((*d)->alphabet().size() <= 256)
      return std::unique_ptr<LitCursor>(new BlockCursor<HuffmanDecoder, uint8_t, true>(std::move(*d), lit));
    return std::unique_ptr<LitCursor>(new BlockCursor<HuffmanDecoder, uint16_t, true>(std::move(*d), lit));
  }
  case Encoding::Rans: {
    if (lit.type.width <= kRansMaxWidth || lit.type.width > maxEncodingWidth(Encoding::Rans)) return openHtscodecs(lit, bytes, buildTables);
    // 9..16 bits: our own coder.
    auto d = Rans16Decoder::create(bytes, lit.type.width, lit.type.length, buildTables);
    if (!d) return d.error();
    if ((*d)->blockWords() > kMaxLitBlockWords && (*d)->blockCount() > 0)
      return Error{"rans literal has blocks larger than any encoder writes"};
    if (!buildTables) return std::unique_ptr<LitCursor>();
    return std::unique_ptr<LitCursor>(new BlockCursor<Rans16Decoder, uint16_t, false>(std::move(*d), lit));
  }
  case Encoding::RansO1: return openHtscodecs(lit, bytes, buildTables);
  case Encoding::Zstd:
    static_assert(kZstdMaxWidth == 8);
    return openByteBlocks<ZstdDecoder>(lit, bytes, buildTables, "zstd");
  case Encoding::Context: {
    auto d = ContextDecoder::create(bytes, lit.type.width, lit.type.length);
    if (!d) return d.error();
    if ((*d)->blockWords() > kMaxLitBlockWords && (*d)->blockCount() > 0)
      return Error{"context literal has blocks larger than any encoder writes"};
    if (!buildTables) return std::unique_ptr<LitCursor>();
    const unsigned width = lit.type.width;
    if (width <= 8) return std::unique_ptr<LitCursor>(new BlockCursor<ContextDecoder, uint8_t, false>(std::move(*d), lit));
    if (width <= 16) return std::unique_ptr<LitCursor>(new BlockCursor<ContextDecoder, uint16_t, false>(std::move(*d), lit));
    return std::unique_ptr<LitCursor>(new BlockCursor<ContextDecoder, uint32_t, false>(std::move(*d), lit));
  }
  case Encoding::Raw:
  case Encoding::Bitpack: break;
  }
  __builtin_trap(); // random-access literals have no entropy decoder
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
