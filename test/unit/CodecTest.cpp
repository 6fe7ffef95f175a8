// Literal codecs: round trips of every encoding over widths, sizes and distributions (empty,
// one symbol, uniform, skewed, full 16-bit alphabets, repeated strings, block boundaries),
// rejection of truncated, corrupt and hostile payloads, Huffman code construction.
#include "runtime/containers/FileIO.h"
#include "runtime/codecs/context/ContextCodec.h"
#include "runtime/codecs/huffman/HuffmanDecode.h"
#include "runtime/codecs/huffman/HuffmanEncode.h"
#include "runtime/codecs/LitDecode.h"
#include "runtime/codecs/LitEncode.h"
#include "runtime/common/OrOfWords.h"
#include "runtime/codecs/SymbolMap.h"
#include "runtime/codecs/rans/RansCodec.h"
#include "runtime/codecs/rans/Rans16.h"
#include "runtime/codecs/rans/RansX32Decode.h"
#include "runtime/codecs/rans/RansX32Encode.h"
#include "runtime/codecs/zstd/ZstdCodec.h"
#include "runtime/common/Varint.h"

#include <htscodecs/rANS_static4x16.h>
#include <zstd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <cfloat>
#include <optional>
#include <numeric>
#include <random>
#include <set>
#include <tuple>

#include "WordShapes.h"

using namespace brevis;

namespace {

/// Decodes `bytes` (three bytes, so offsets are non-zero, then the literal) as a literal of
/// `enc` through validateLit and a LitCursor, in uneven reads, reset and skipped into, and
/// expects `words`; skips land around the codecs' block boundaries and those of `blockWords`.
void expectDecodes(Encoding enc, const std::vector<uint64_t> &words, unsigned width, const Bytes &bytes,
                   const std::string &what, uint64_t blockWords = 0) {
  Payload payload = Payload::fromBytes(bytes);
  auto lit = Lit::make(StreamType{width, words.size()}, enc, ByteRange{3, bytes.size() - 3});
  ASSERT_TRUE(validateLit(*lit, payload)) << what;
  auto cursor = LitCursor::open(*lit, payload);
  ASSERT_TRUE(cursor) << what << ": " << cursor.error().message;
  std::vector<uint64_t> back(words.size());
  for (size_t at = 0, step = 1; at < back.size(); at += step, step = step * 3 + 1) {
    size_t n = std::min(step, back.size() - at);
    auto r = (*cursor)->read(back.data() + at, n);
    ASSERT_TRUE(r) << what << ": " << r.error().message;
  }
  EXPECT_EQ(back, words) << what;
  // After reset the literal decodes again from the start.
  (*cursor)->reset();
  if (!words.empty()) {
    uint64_t firstWord = ~uint64_t{0};
    ASSERT_TRUE((*cursor)->read(&firstWord, 1));
    EXPECT_EQ(firstWord, words[0]) << what;
  }
  // skip() lands on the right word anywhere: within the block being served, across blocks
  // (block-coded literals jump), exactly at block boundaries and at the very end.
  (*cursor)->reset();
  const uint64_t n = words.size();
  std::vector<uint64_t> targets = {0, 1, 7, n / 3, n / 2, n / 2 + 1};
  for (uint64_t b : {kHuffmanBlockWords, kRansBlockWords, kRans16BlockWords, kZstdBlockWords, kContextBlockWords,
                     blockWords})
    for (uint64_t k = 1; b && k * b <= n && k < 7; ++k) targets.insert(targets.end(), {k * b - 1, k * b, k * b + 3});
  targets.push_back(n > 2 ? n - 2 : 0);
  targets.push_back(n);
  std::sort(targets.begin(), targets.end());
  uint64_t at = 0;
  for (uint64_t target : targets) {
    if (target < at || target > n) continue;
    auto skipped = (*cursor)->skip(target - at);
    ASSERT_TRUE(skipped) << what << ": " << skipped.error().message;
    size_t take = static_cast<size_t>(std::min<uint64_t>(2, n - target));
    uint64_t got[2] = {};
    ASSERT_TRUE((*cursor)->read(got, take)) << what;
    for (size_t i = 0; i < take; ++i) EXPECT_EQ(got[i], words[target + i]) << what << " at word " << target + i;
    at = target + take;
  }
}

/// Encodes `words` as `enc` into a payload after a 3-byte prefix and decodes them back
/// (expectDecodes).
void expectRoundTrip(Encoding enc, const std::vector<uint64_t> &words, unsigned width, const std::string &what,
                     int zstdLevel = kDefaultZstdLevel) {
  Bytes bytes = {1, 2, 3};
  ASSERT_TRUE(encodeLit(enc, words, width, bytes, zstdLevel)) << what;
  expectDecodes(enc, words, width, bytes, what);
}

} // namespace

TEST(Codec, EveryEncodingRoundTripsEveryWidthAndShape) {
  std::mt19937_64 rng(42);
  std::vector<unsigned> widths;
  for (unsigned w = 1; w <= 16; ++w) widths.push_back(w);
  widths.push_back(32);
  widths.push_back(64);
  for (Encoding enc : kAllEncodings) {
    for (unsigned width : widths) {
      if (width > maxEncodingWidth(enc)) continue;
      for (Shape shape : {Shape::Uniform, Shape::Skewed, Shape::OneSymbol, Shape::FewSymbols}) {
        for (size_t n : {size_t{1}, size_t{2}, size_t{5}, size_t{1000}, size_t{4099}}) {
          auto words = makeWords(rng, n, width, shape);
          if (!encodingApplies(enc, words, width)) continue;
          expectRoundTrip(enc, words, width,
                          fmt::format("{} u{}[{}] shape {}", encodingName(enc), width, n, static_cast<int>(shape)));
        }
      }
    }
  }
}

TEST(Codec, EntropyCodersDoNotApplyToEmptyStreamsAndBitpackRoundTripsOne) {
  std::vector<uint64_t> none;
  EXPECT_FALSE(encodingApplies(Encoding::Huffman, none, 8));
  EXPECT_FALSE(encodingApplies(Encoding::Rans, none, 8));
  expectRoundTrip(Encoding::Bitpack, none, 12, "empty bitpack");
}

// Empty literals have no words to point at: decoding none of them must not hand a null pointer
// to memcpy or memset (undefined even for zero bytes; UBSan's nonnull-attribute check).
TEST(Codec, EmptyLiteralsDecodeNothingFromNullPointers) {
  Payload payload = Payload::fromBytes(Bytes{0}); // bitpack's bit-count byte: 0 bits per word
  auto inlined = Lit::make(StreamType{8, 0}, std::vector<uint64_t>{});
  auto raw = Lit::make(StreamType{16, 0}, Encoding::Raw, ByteRange{0, 0});
  auto packed = Lit::make(StreamType{12, 0}, Encoding::Bitpack, ByteRange{0, 1});
  for (const Lit *lit : {inlined.get(), raw.get(), packed.get()}) {
    ASSERT_TRUE(validateLit(*lit, payload));
    decodeLitWords(*lit, payload, 0, 0, nullptr);
    decodeLitNarrow<uint8_t>(*lit, payload, 0, 0, nullptr);
    decodeLitNarrow<uint16_t>(*lit, payload, 0, 0, nullptr);
    decodeLitNarrow<uint32_t>(*lit, payload, 0, 0, nullptr);
    auto words = decodeLit(*lit, payload);
    ASSERT_TRUE(words);
    EXPECT_TRUE(words->empty());
  }
}

// htscodecs 1.3's AVX-512 order-1 encoder reads a byte before its input and two after, from
// about 3000 bytes on; the encoder hands it a buffer with slack on both sides. Under ASan, the
// encoder reads that slack itself (the library is not instrumented), so an unpadded buffer is
// reported here as the overflow it is. Lengths around the 32-way frame's 4 KiB and a block.
TEST(Codec, RansEncodersHandHtscodecsBuffersWithSlack) {
  std::mt19937_64 rng(5000);
  for (uint64_t n : {uint64_t{5000}, uint64_t{3000}, uint64_t{4096}, uint64_t{4097}, kRansBlockWords + 4001}) {
    std::vector<uint64_t> words = makeWords(rng, n, 8, Shape::Skewed);
    for (Encoding e : {Encoding::RansO1, Encoding::Rans}) expectRoundTrip(e, words, 8, fmt::format("{} bytes", n));
  }
}

TEST(Codec, HuffmanHandlesAFull16BitAlphabetAndWideSparseWords) {
  std::vector<uint64_t> all(65536 * 2);
  for (size_t i = 0; i < all.size(); ++i) all[i] = (i * 40503) & 0xffff;
  expectRoundTrip(Encoding::Huffman, all, 16, "full 16-bit alphabet");

  std::mt19937_64 rng(9);
  std::vector<uint64_t> sparse(20000);
  std::vector<uint64_t> pool(300);
  for (auto &p : pool) p = rng();
  for (auto &x : sparse) x = pool[rng() % pool.size()] >> (rng() % 2 ? 0 : 40);
  expectRoundTrip(Encoding::Huffman, sparse, 64, "sparse 64-bit words");

  std::vector<uint64_t> tooMany(70000);
  for (size_t i = 0; i < tooMany.size(); ++i) tooMany[i] = i * 977;
  EXPECT_FALSE(encodingApplies(Encoding::Huffman, tooMany, 32));
  Bytes out;
  EXPECT_FALSE(encodeLit(Encoding::Huffman, tooMany, 32, out));
  EXPECT_TRUE(out.empty());
}

// The byte-alphabet Huffman decoder has one fast loop per longest code length (1..16): long
// skewed streams of every alphabet size reach each of them.
TEST(Codec, HuffmanByteAlphabetsOfEveryCodeLengthRoundTrip) {
  std::mt19937_64 rng(11);
  std::set<unsigned> lengthsSeen;
  for (unsigned width = 1; width <= 8; ++width) {
    for (double p : {0.5, 0.2, 0.05, 0.01}) {
      std::geometric_distribution<uint64_t> geometric(p);
      std::vector<uint64_t> words(50001);
      for (auto &x : words) x = geometric(rng) & widthMask(width);
      if (!encodingApplies(Encoding::Huffman, words, width)) continue;
      Bytes bytes;
      ASSERT_TRUE(encodeLit(Encoding::Huffman, words, width, bytes));
      ByteReader in(bytes);
      auto code = readHuffmanCode(in, width);
      ASSERT_TRUE(code);
      lengthsSeen.insert(code->maxLength);
      expectRoundTrip(Encoding::Huffman, words, width, fmt::format("huffman u{} geometric({})", width, p));
    }
  }
  EXPECT_GE(lengthsSeen.size(), 8u);
}

// A literal too short to pay for a table of 2^L entries (L its longest code) decodes through a
// table of kHuffmanPrimaryBits bits and a second lookup for longer codes; byte alphabets decode
// several symbols per lookup from either table, or one at a time when the literal is shorter
// than twice the table. Every combination decodes the same words, at every code length.
TEST(Codec, HuffmanSmallAndFullTablesDecodeTheSameWords) {
  std::mt19937_64 rng(13);
  std::set<std::pair<bool, bool>> seen; // (byte alphabet, full table)
  std::set<unsigned> longest;
  for (unsigned width : {8u, 12u}) {
    // Geometric words have a few frequent values and a tail of rare ones with long codes.
    std::geometric_distribution<uint64_t> geometric(width == 8 ? 0.03 : 0.004);
    std::vector<uint64_t> stream((size_t{1} << 21) + 123);
    for (auto &x : stream) x = std::min<uint64_t>(geometric(rng), widthMask(width));
    for (size_t n : {size_t{300}, size_t{3000}, size_t{20000}, size_t{150000}, stream.size()}) {
      std::vector<uint64_t> words(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(n));
      Bytes bytes;
      ASSERT_TRUE(encodeLit(Encoding::Huffman, words, width, bytes));
      ByteReader in(bytes);
      auto code = readHuffmanCode(in, width);
      ASSERT_TRUE(code);
      const unsigned K = huffmanPrimaryBits(code->maxLength, n, code->words.size());
      if (code->maxLength > kHuffmanPrimaryBits) seen.insert({code->words.size() <= 256, K == code->maxLength});
      longest.insert(code->maxLength);
      expectRoundTrip(Encoding::Huffman, words, width, fmt::format("huffman u{} of {} words, L {}, K {}", width, n,
                                                                   code->maxLength, K));
    }
  }
  // Both tables were used for both kinds of alphabet, with codes longer than the small table.
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_GE(*longest.rbegin(), 14u);
}

// Byte symbols of alphabets of up to 128 16-bit words are mapped to words 32 at a time where
// the CPU has AVX-512 (either half of the table, picked by bit 6): every length, both halves,
// and the literal's 16- and 32-bit reads, which go through that mapping, against the words coded.
TEST(Codec, ByteSymbolsMapToTheirWordsThroughTheSmallAlphabetTable) {
  std::mt19937_64 rng(14);
  std::array<uint16_t, kSymbolMapEntries> table{};
  for (auto &w : table) w = static_cast<uint16_t>(rng());
  std::vector<uint8_t> symbols(301);
  for (auto &x : symbols) x = static_cast<uint8_t>(rng() % kSymbolMapEntries);
  symbols[0] = 0, symbols[1] = 63, symbols[2] = 64, symbols[3] = 127;
  std::array<uint16_t, kSymbolMapEntries> byteTable{}; // words of at most 8 bits
  for (auto &w : byteTable) w = static_cast<uint16_t>(rng() & 0xff);
  for (size_t n = 0; n <= symbols.size(); n += n < 70 ? 1 : 29) {
    std::vector<uint16_t> out(n + 1, 0xbeef);
    mapByteSymbols(symbols.data(), n, table.data(), out.data());
    std::vector<uint32_t> wide(n + 1, 0xbeefbeef);
    mapByteSymbols(symbols.data(), n, table.data(), wide.data());
    std::vector<uint8_t> narrow(n + 1, 0xbe);
    mapByteSymbols(symbols.data(), n, byteTable.data(), narrow.data());
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], table[symbols[i]]) << "n " << n << " at " << i;
      ASSERT_EQ(wide[i], table[symbols[i]]) << "n " << n << " at " << i;
      ASSERT_EQ(narrow[i], byteTable[symbols[i]]) << "n " << n << " at " << i;
    }
    EXPECT_EQ(out[n], 0xbeef) << "n " << n; // nothing written past the end
    EXPECT_EQ(wide[n], 0xbeefbeefu) << "n " << n;
    EXPECT_EQ(narrow[n], 0xbe) << "n " << n;
  }
  for (size_t distinct : {2u, 40u, 64u, 65u, 128u, 129u}) {
    std::vector<uint64_t> alphabet(distinct);
    for (auto &w : alphabet) w = rng() & 0xfff;
    std::vector<uint64_t> words(5000);
    for (auto &w : words) w = alphabet[std::min<size_t>(distinct - 1, rng() % distinct)];
    Bytes bytes = {1, 2, 3};
    ASSERT_TRUE(encodeLit(Encoding::Huffman, words, 12, bytes));
    Payload payload = Payload::fromBytes(bytes);
    auto lit = Lit::make(StreamType{12, words.size()}, Encoding::Huffman, ByteRange{3, bytes.size() - 3});
    ASSERT_TRUE(validateLit(*lit, payload));
    auto cursor = LitCursor::open(*lit, payload);
    ASSERT_TRUE(cursor);
    std::vector<uint16_t> back(words.size());
    for (size_t at = 0, step = 1; at < back.size(); at += step, step = step * 2 + 1)
      ASSERT_TRUE((*cursor)->read16(back.data() + at, std::min(step, back.size() - at)));
    (*cursor)->reset();
    std::vector<uint32_t> wide(words.size());
    for (size_t at = 0, step = 1; at < wide.size(); at += step, step = step * 2 + 1)
      ASSERT_TRUE((*cursor)->read32(wide.data() + at, std::min(step, wide.size() - at)));
    for (size_t i = 0; i < words.size(); ++i) {
      ASSERT_EQ(back[i], words[i]) << distinct << " words, at " << i;
      ASSERT_EQ(wide[i], words[i]) << distinct << " words, at " << i;
    }
  }
  // Byte fields (an exponent): read8 maps through the byte table.
  for (size_t distinct : {2u, 64u, 65u, 128u, 129u}) {
    std::vector<uint64_t> alphabet(distinct);
    for (auto &w : alphabet) w = rng() & 0xff;
    std::vector<uint64_t> words(5000);
    for (auto &w : words) w = alphabet[std::min<size_t>(distinct - 1, rng() % distinct)];
    Bytes bytes;
    ASSERT_TRUE(encodeLit(Encoding::Huffman, words, 8, bytes));
    Payload payload = Payload::fromBytes(bytes);
    auto lit = Lit::make(StreamType{8, words.size()}, Encoding::Huffman, ByteRange{0, bytes.size()});
    ASSERT_TRUE(validateLit(*lit, payload));
    auto cursor = LitCursor::open(*lit, payload);
    ASSERT_TRUE(cursor);
    std::vector<uint8_t> back(words.size());
    for (size_t at = 0, step = 1; at < back.size(); at += step, step = step * 2 + 1)
      ASSERT_TRUE((*cursor)->read8(back.data() + at, std::min(step, back.size() - at)));
    for (size_t i = 0; i < words.size(); ++i) ASSERT_EQ(back[i], words[i]) << distinct << " bytes, at " << i;
  }
}

// Alphabets of up to 12 bits are coded through tables indexed by the word, wider ones through
// symbol indices: given the same code, both must write the same blocks (the same runs, split at
// the same words), for streams shorter than four words, of one block, and of several.
TEST(Codec, HuffmanNarrowAndWideAlphabetsWriteTheSameBlocks) {
  std::mt19937_64 rng(12);
  for (uint64_t n : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{5}, uint64_t{64}, uint64_t{65}, uint64_t{4099},
                     kHuffmanBlockWords, kHuffmanBlockWords * 2 + 7}) {
    for (double p : {0.5, 0.05}) {
      std::geometric_distribution<uint64_t> geometric(p);
      std::vector<uint64_t> words(n);
      for (auto &x : words) x = std::min<uint64_t>(geometric(rng), 4095);
      words[0] = 1; // at least two symbols, so that there are blocks
      if (n > 1) words[1] = 0;
      Bytes narrow, wide;
      ASSERT_TRUE(encodeHuffman(words, 12, narrow));
      ASSERT_TRUE(encodeHuffman(words, 13, wide));
      ByteReader narrowIn(narrow), wideIn(wide);
      ASSERT_TRUE(readHuffmanCode(narrowIn, 12));
      ASSERT_TRUE(readHuffmanCode(wideIn, 13));
      const Bytes narrowBlocks(narrow.end() - static_cast<ptrdiff_t>(narrowIn.remaining()), narrow.end());
      const Bytes wideBlocks(wide.end() - static_cast<ptrdiff_t>(wideIn.remaining()), wide.end());
      EXPECT_EQ(narrowBlocks, wideBlocks) << n << " words, geometric(" << p << ")";
      expectRoundTrip(Encoding::Huffman, words, 12, fmt::format("huffman u12, {} words", n));
    }
  }
}

// Words in byte containers are coded 64 at a time where the CPU has AVX-512 VBMI, and in
// 16- and 64-bit containers by the scalar writer: the same blocks, for every code length up to
// 14, run lengths around the vector step, and several blocks.
TEST(Codec, HuffmanByteWordsWriteTheSameBlocksInEveryContainer) {
  std::mt19937_64 rng(13);
  size_t lengthsSeen = 0;
  for (uint64_t n : {uint64_t{63}, uint64_t{64}, uint64_t{255}, uint64_t{256}, uint64_t{257}, uint64_t{4099},
                     kHuffmanBlockWords + 1000}) {
    for (double p : {0.6, 0.2, 0.02}) {
      for (unsigned width : {3u, 8u}) {
        std::geometric_distribution<uint64_t> geometric(p);
        std::vector<uint8_t> bytes(n);
        for (auto &x : bytes) x = static_cast<uint8_t>(std::min<uint64_t>(geometric(rng), widthMask(width)));
        bytes[0] = 1, bytes[1] = 0;
        if (width == 8) bytes[2] = 255; // a word whose codes are looked up in the tables' top half
        const std::vector<uint16_t> halves(bytes.begin(), bytes.end());
        const std::vector<uint64_t> wide(bytes.begin(), bytes.end());
        Bytes fromBytes, fromHalves, fromWide;
        ASSERT_TRUE(encodeHuffman(WordsView(std::span<const uint8_t>(bytes)), width, fromBytes));
        ASSERT_TRUE(encodeHuffman(WordsView(std::span<const uint16_t>(halves)), width, fromHalves));
        ASSERT_TRUE(encodeHuffman(wide, width, fromWide));
        const std::string where = fmt::format("u{}, {} words, geometric({})", width, n, p);
        EXPECT_EQ(fromBytes, fromWide) << where;
        EXPECT_EQ(fromHalves, fromWide) << where;
        ByteReader in(fromBytes);
        auto code = readHuffmanCode(in, width);
        ASSERT_TRUE(code) << where;
        if (code->maxLength == 14) ++lengthsSeen;
      }
    }
  }
  EXPECT_GT(lengthsSeen, 0u); // codes as long as the writer takes
}

// The interpreter's narrow kernels (decodeLitNarrow: AVX-512 VBMI, pdep or portable, chosen at
// run time) agree with the 64-bit word kernel for every bit count, any start and length.
template <typename T> void expectNarrowMatchesWords(unsigned width, std::mt19937_64 &rng) {
  for (unsigned b = 1; b <= width; ++b) {
    std::vector<uint64_t> words(3000);
    for (auto &w : words) w = rng() & widthMask(b);
    words[17] = widthMask(b); // uses all b bits
    for (Encoding enc : {Encoding::Raw, Encoding::Bitpack}) {
      Bytes bytes;
      ASSERT_TRUE(encodeLit(enc, words, width, bytes));
      Payload payload = Payload::fromBytes(bytes);
      auto lit = Lit::make(StreamType{width, words.size()}, enc, ByteRange{0, bytes.size()});
      for (auto [first, count] : {std::pair<uint64_t, size_t>{0, 3000}, {8, 1024}, {3, 700}, {517, 64}, {2999, 1},
                                  {64, 0}, {rng() % 1500, 1 + rng() % 1500}}) {
        std::vector<T> narrow(count + 1, T{0x5a});
        decodeLitNarrow<T>(*lit, payload, first, count, narrow.data());
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(narrow[i], static_cast<T>(words[first + i]))
              << encodingName(enc) << " u" << width << " b=" << b << " into " << 8 * sizeof(T) << " bits, word "
              << first + i;
        EXPECT_EQ(narrow[count], T{0x5a}) << "wrote past the end";
      }
    }
  }
}

TEST(Codec, NarrowKernelsMatchTheWordKernel) {
  std::mt19937_64 rng(8);
  expectNarrowMatchesWords<uint8_t>(8, rng);
  expectNarrowMatchesWords<uint16_t>(8, rng);
  expectNarrowMatchesWords<uint16_t>(16, rng);
  expectNarrowMatchesWords<uint32_t>(32, rng);
}

TEST(Codec, BlockBoundariesRoundTrip) {
  std::mt19937_64 rng(3);
  auto words = makeWords(rng, kHuffmanBlockWords * 2 + 7, 8, Shape::Skewed);
  expectRoundTrip(Encoding::Huffman, words, 8, "huffman, three blocks");
  auto bytes = makeWords(rng, kRansBlockWords + 3, 8, Shape::Skewed);
  expectRoundTrip(Encoding::Rans, bytes, 8, "rans, two blocks");
  expectRoundTrip(Encoding::RansO1, bytes, 8, "rans_o1, two blocks");
  auto halves = makeWords(rng, kContextBlockWords + 3, 16, Shape::Skewed);
  expectRoundTrip(Encoding::Context, halves, 16, "context, two blocks");
  // rans blocks are decoded four at a time: skips land in any block of a group, or past it,
  // and the last group is short.
  auto nine = makeWords(rng, kRansBlockWords * 8 + 3, 8, Shape::Skewed);
  expectRoundTrip(Encoding::Rans, nine, 8, "rans, nine blocks");
}

TEST(Codec, HuffmanLengthsAreCompleteAndLimited) {
  // Fibonacci counts force the deepest unlimited tree: the limit must bind and keep the code complete.
  std::vector<uint64_t> counts = {1, 1};
  while (counts.size() < 40) counts.push_back(counts[counts.size() - 1] + counts[counts.size() - 2]);
  for (unsigned limit : {11u, 12u, 16u}) {
    auto lengths = huffmanLengths(counts, limit);
    uint64_t kraft = 0;
    for (uint8_t len : lengths) {
      EXPECT_GE(len, 1);
      EXPECT_LE(len, limit);
      kraft += uint64_t{1} << (32 - len);
    }
    EXPECT_EQ(kraft, uint64_t{1} << 32) << "limit " << limit;
    // More frequent symbols never get longer codes.
    for (size_t i = 1; i < counts.size(); ++i) EXPECT_LE(lengths[i], lengths[i - 1]);
  }
}

TEST(Codec, HuffmanCanonicalCodesAreThoseOfSymbolsSortedByLengthThenIndex) {
  // The definition: symbols in order of (length, index), each code the last one plus one,
  // shifted left by the difference in length, then bit-reversed.
  auto reference = [](const HuffmanCode &code) {
    std::vector<uint32_t> order(code.lengths.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return code.lengths[a] < code.lengths[b]; });
    std::vector<uint32_t> codes(order.size());
    uint32_t next = 0;
    unsigned len = order.empty() ? 0 : code.lengths[order[0]];
    for (uint32_t s : order) {
      next <<= code.lengths[s] - len;
      len = code.lengths[s];
      uint32_t reversed = 0;
      for (unsigned b = 0; b < len; ++b) reversed |= ((next >> b) & 1u) << (len - 1 - b);
      codes[s] = reversed;
      ++next;
    }
    return codes;
  };
  std::mt19937_64 rng(5);
  for (int round = 0; round < 200; ++round) {
    // Complete codes from random counts (every limit), and a code of one length.
    std::vector<uint64_t> counts(2 + rng() % 300);
    for (uint64_t &c : counts) c = 1 + (rng() % 4 == 0 ? rng() % 100000 : rng() % 10);
    HuffmanCode code;
    const unsigned limit = 9 + static_cast<unsigned>(rng() % 8);
    if (round % 10 == 0) code.lengths.assign(256, 8);
    else code.lengths = huffmanLengths(counts, limit);
    const std::vector<uint32_t> codes = canonicalCodesLsbFirst(code);
    ASSERT_EQ(codes, reference(code)) << round;
  }
  EXPECT_TRUE(canonicalCodesLsbFirst(HuffmanCode{}).empty());
}

TEST(Codec, HuffmanPairTablesAreTheSameSixteenPatternsAtATime) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512: both calls take the scalar path";
#else
  GTEST_SKIP() << "the vector path is x86-64's";
#endif
  // Any primary table: each entry a symbol and a length up to K (0: the prefix of a longer code).
  std::mt19937_64 rng(9);
  for (unsigned K = 1; K <= kHuffmanMaxLength; ++K)
    for (int round = 0; round < 4; ++round) {
      std::vector<uint32_t> table(size_t{1} << K);
      for (uint32_t &e : table) {
        const unsigned len = round == 0 ? 1 + static_cast<unsigned>(rng() % std::min(K, 3u)) // many per pattern
                                        : static_cast<unsigned>(rng() % (K + 1));
        e = static_cast<uint32_t>(rng() % 256) << 8 | len;
      }
      std::vector<uint32_t> vector(table.size()), scalar(table.size());
      detail::huffmanPairEntries(table.data(), K, vector.data(), /*vector=*/true);
      detail::huffmanPairEntries(table.data(), K, scalar.data(), /*vector=*/false);
      ASSERT_EQ(vector, scalar) << "K " << K << " round " << round;
      // Spot checks of the definition: a prefix keeps its entry; a pattern holds at least its first code.
      for (uint32_t p = 0; p < table.size(); p += 37) {
        if ((table[p] & 0xff) == 0) {
          EXPECT_EQ(scalar[p], table[p]);
        } else {
          EXPECT_EQ(scalar[p] >> 8 & 0xff, table[p] >> 8 & 0xff);
          EXPECT_GE(scalar[p] & 0x1f, table[p] & 0xff);
          EXPECT_LE(scalar[p] & 0x1f, K);
        }
      }
    }
}

TEST(Codec, TruncatedAndCorruptPayloadsAreRejectedSafely) {
  std::mt19937_64 rng(77);
  // zstd twice: on skewed bytes (literals, few matches) and on a header (mostly matches).
  for (auto [enc, header] : {std::pair{Encoding::Huffman, false}, std::pair{Encoding::Rans, false},
                             std::pair{Encoding::RansO1, false}, std::pair{Encoding::Zstd, false},
                             std::pair{Encoding::Zstd, true}, std::pair{Encoding::Context, false}}) {
    auto words = header ? jsonHeaderBytes(5000) : makeWords(rng, 5000, 8, Shape::Skewed);
    Bytes good;
    ASSERT_TRUE(encodeLit(enc, words, 8, good));
    // Every truncation is an error: the framing accounts for every byte.
    for (size_t cut = 0; cut < good.size(); cut += std::max<size_t>(1, good.size() / 97)) {
      Bytes bytes(good.begin(), good.begin() + cut);
      Payload payload = Payload::fromBytes(bytes);
      auto lit = Lit::make(StreamType{8, words.size()}, enc, ByteRange{0, cut});
      auto valid = validateLit(*lit, payload);
      if (!valid) continue;
      auto decoded = decodeLit(*lit, payload);
      EXPECT_FALSE(decoded) << encodingName(enc) << " truncated to " << cut << " bytes decoded";
    }
    // Random corruption: never a crash or an out-of-bounds read (run under ASan to see), and
    // what decodes has the literal's length.
    for (int round = 0; round < 300; ++round) {
      Bytes bytes = good;
      for (int k = 0; k < 1 + round % 4; ++k) bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
      Payload payload = Payload::fromBytes(bytes);
      auto lit = Lit::make(StreamType{8, words.size()}, enc, ByteRange{0, bytes.size()});
      if (!validateLit(*lit, payload)) continue;
      auto decoded = decodeLit(*lit, payload);
      if (decoded) {
        EXPECT_EQ(decoded->size(), words.size());
      }
    }
  }
}

TEST(Codec, ZstdRoundTripsEmptyOneWordEveryWidthAndLongStreams) {
  std::mt19937_64 rng(31);
  const std::vector<uint64_t> none;
  EXPECT_TRUE(encodingApplies(Encoding::Zstd, none, 8));
  expectRoundTrip(Encoding::Zstd, none, 8, "empty zstd");
  for (unsigned width = 1; width <= 8; ++width) {
    expectRoundTrip(Encoding::Zstd, std::vector<uint64_t>{widthMask(width)}, width, fmt::format("zstd u{}[1]", width));
    expectRoundTrip(Encoding::Zstd, makeWords(rng, 5000, width, Shape::Uniform), width,
                    fmt::format("zstd u{} random", width));
    // Repeated strings: a random phrase of 40 words, repeated with a word changed now and then.
    std::vector<uint64_t> phrase = makeWords(rng, 40, width, Shape::Uniform), repetitive;
    while (repetitive.size() < 5000) {
      repetitive.insert(repetitive.end(), phrase.begin(), phrase.end());
      phrase[rng() % phrase.size()] = rng() & widthMask(width);
    }
    expectRoundTrip(Encoding::Zstd, repetitive, width, fmt::format("zstd u{} repetitive", width));
  }
  // Wider words do not apply.
  Bytes out;
  const std::vector<uint64_t> wide = {1, 2};
  EXPECT_FALSE(encodingApplies(Encoding::Zstd, wide, 9));
  EXPECT_FALSE(encodeLit(Encoding::Zstd, wide, 9, out));
  EXPECT_TRUE(out.empty());
  // Every level decodes alike; a header codes to a small fraction of its bytes.
  const auto header = jsonHeaderBytes(20000);
  for (int level : {1, 3, kDefaultZstdLevel, 19}) {
    expectRoundTrip(Encoding::Zstd, header, 8, fmt::format("zstd header, level {}", level), level);
    Bytes coded;
    ASSERT_TRUE(encodeLit(Encoding::Zstd, header, 8, coded, level));
    EXPECT_LT(coded.size(), header.size() / 5) << "level " << level;
  }
  // Long streams in several blocks, random and repetitive: skips jump to the block that holds
  // their target.
  expectRoundTrip(Encoding::Zstd, makeWords(rng, kZstdBlockWords * 2 + 7, 8, Shape::Uniform), 8,
                  "zstd random, three blocks", 1);
  expectRoundTrip(Encoding::Zstd, jsonHeaderBytes(kZstdBlockWords + 1000), 8, "zstd header, two blocks", 1);
}

namespace {

/// A zstd literal of `words` built from frames made here (docs/format/literals.md): the block
/// size, then per block its frame's size and the frame; `frame` makes each block's frame.
template <typename MakeFrame>
Bytes zstdLiteral(uint64_t blockWords, const std::vector<Bytes> &blocks, MakeFrame frame) {
  Bytes out;
  putVarint(out, blockWords);
  for (const Bytes &block : blocks) {
    Bytes f = frame(block);
    putVarint(out, f.size());
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

Bytes zstdFrame(const Bytes &content, bool recordSize = true, bool checksum = false) {
  ZSTD_CCtx *c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, recordSize ? 1 : 0);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum ? 1 : 0);
  Bytes frame(ZSTD_compressBound(content.size()));
  size_t size = 0;
  if (recordSize) {
    size = ZSTD_compress2(c, frame.data(), frame.size(), content.data(), content.size());
  } else {
    // Streaming without a pledged size: the frame does not record its content size.
    ZSTD_outBuffer out{frame.data(), frame.size(), 0};
    ZSTD_inBuffer in{content.data(), content.size(), 0};
    while (ZSTD_compressStream2(c, &out, &in, ZSTD_e_end) != 0) {
    }
    size = out.pos;
  }
  ZSTD_freeCCtx(c);
  frame.resize(size);
  return frame;
}

std::string zstdError(const Bytes &bytes, unsigned width, uint64_t count) {
  Payload payload = Payload::fromBytes(bytes);
  auto lit = Lit::make(StreamType{width, count}, Encoding::Zstd, ByteRange{0, bytes.size()});
  if (auto valid = validateLit(*lit, payload); !valid) return valid.error().message;
  auto decoded = decodeLit(*lit, payload);
  return decoded ? std::string("decoded") : decoded.error().message;
}

} // namespace

// What a hostile payload can put in a zstd literal is refused with a plain message, before any
// buffer is sized by it.
TEST(Codec, ZstdRefusesFramesThatDisagreeWithTheLiteral) {
  const Bytes content(100, 7);
  const auto plain = [](const Bytes &b) { return zstdFrame(b); };
  EXPECT_EQ(zstdError(zstdLiteral(1 << 20, {content}, plain), 8, 100), "decoded");
  // The recorded content size must be the block's length.
  EXPECT_NE(zstdError(zstdLiteral(1 << 20, {content}, plain), 8, 99).find("records 100 bytes, but the block holds 99"),
            std::string::npos);
  EXPECT_NE(zstdError(zstdLiteral(1 << 20, {content}, plain), 8, 101).find("records 100 bytes"), std::string::npos);
  // A frame claiming far more than the literal holds is refused before decoding: the check
  // happens on its header.
  EXPECT_NE(zstdError(zstdLiteral(1 << 20, {Bytes(1 << 22, 0)}, plain), 8, 1000).find("records 4194304 bytes"),
            std::string::npos);
  // A frame must record its size.
  EXPECT_NE(zstdError(zstdLiteral(1 << 20, {content}, [](const Bytes &b) { return zstdFrame(b, false); }), 8, 100)
                .find("does not record its size"),
            std::string::npos);
  // A checksum, where a frame has one, is checked.
  Bytes summed = zstdLiteral(1 << 20, {content}, [](const Bytes &b) { return zstdFrame(b, true, true); });
  EXPECT_EQ(zstdError(summed, 8, 100), "decoded");
  summed[summed.size() - 1] ^= 1;
  EXPECT_NE(zstdError(summed, 8, 100).find("is corrupt"), std::string::npos);
  // Exactly one frame per block: no skippable frames, nothing after the frame, no dictionary.
  const auto skippable = [](const Bytes &b) {
    Bytes f = {0x50, 0x2a, 0x4d, 0x18, static_cast<uint8_t>(b.size()), 0, 0, 0};
    f.insert(f.end(), b.begin(), b.end());
    return f;
  };
  EXPECT_NE(zstdError(zstdLiteral(1 << 20, {content}, skippable), 8, 100).find("is not a zstd frame"),
            std::string::npos);
  const auto twice = [](const Bytes &b) {
    Bytes f = zstdFrame(b), g = zstdFrame(b);
    f.insert(f.end(), g.begin(), g.end());
    return f;
  };
  EXPECT_NE(zstdError(zstdLiteral(1 << 20, {content}, twice), 8, 100).find("bytes after its frame"), std::string::npos);
  const auto withDictionary = [](const Bytes &b) {
    // A dictionary ID in the frame header: Dictionary_ID_flag 1 in the descriptor (byte 4), and
    // one ID byte after the window descriptor, which single-segment frames do not have.
    Bytes f = zstdFrame(b);
    f[4] = static_cast<uint8_t>(f[4] | 1);
    f.insert(f.begin() + 5 + ((f[4] & 0x20) ? 0 : 1), 42);
    return f;
  };
  EXPECT_NE(zstdError(zstdLiteral(1 << 20, {content}, withDictionary), 8, 100).find("dictionary"), std::string::npos);
  // Framing: the block size, truncation, bytes after the last block.
  EXPECT_NE(zstdError(zstdLiteral(0, {content}, plain), 8, 100).find("invalid block size"), std::string::npos);
  EXPECT_NE(zstdError(zstdLiteral(uint64_t{1} << 27, {content}, plain), 8, 100).find("larger than any encoder writes"),
            std::string::npos);
  Bytes good = zstdLiteral(1 << 20, {content}, plain);
  for (size_t cut = 0; cut < good.size(); ++cut)
    EXPECT_NE(zstdError(Bytes(good.begin(), good.begin() + cut), 8, 100), "decoded") << "cut to " << cut;
  Bytes trailing = good;
  trailing.push_back(0);
  EXPECT_NE(zstdError(trailing, 8, 100).find("trailing bytes"), std::string::npos);
  // A count no payload could hold is refused from the block count alone.
  EXPECT_NE(zstdError(good, 8, uint64_t{1} << 50).find("truncated"), std::string::npos);
  // Two blocks: each frame has its block's length.
  EXPECT_EQ(zstdError(zstdLiteral(60, {Bytes(60, 1), Bytes(40, 2)}, plain), 8, 100), "decoded");
  EXPECT_NE(zstdError(zstdLiteral(60, {Bytes(50, 1), Bytes(50, 2)}, plain), 8, 100).find("block 0 records 50 bytes"),
            std::string::npos);
  // Decoded bytes must fit the literal's width.
  EXPECT_NE(zstdError(zstdLiteral(1 << 20, {Bytes(100, 0x10)}, plain), 4, 100).find("wider than 4 bits"),
            std::string::npos);
  EXPECT_EQ(zstdError(zstdLiteral(1 << 20, {Bytes(100, 0x0f)}, plain), 4, 100), "decoded");
}

TEST(Codec, OrOfWordsIsThatOfEveryWordWhereverItsBitsAre) {
  // The check decoders make of their words' width reads eight bytes at a time: against a plain
  // loop over the words, for every container size, lengths around its 32-byte steps, and one set
  // bit at positions spread over a zeroed buffer (a third of them, at random).
  std::mt19937_64 rng(48);
  for (unsigned cb : {1u, 2u, 4u, 8u}) {
    auto plain = [&](const Bytes &b) {
      uint64_t all = 0;
      for (size_t i = 0; i < b.size(); i += cb) {
        uint64_t w = 0;
        std::memcpy(&w, b.data() + i, cb);
        all |= w;
      }
      return all;
    };
    for (size_t words : {0, 1, 3, 31, 32, 33, 100, 1000}) {
      const size_t n = words * cb;
      Bytes sparse(n, 0);
      for (size_t bit = 0; bit < 8 * n; bit += 1 + rng() % 5) {
        std::fill(sparse.begin(), sparse.end(), 0);
        sparse[bit / 8] = static_cast<uint8_t>(1u << (bit % 8));
        ASSERT_EQ(orOfWords(sparse.data(), n, cb), plain(sparse))
            << cb << "-byte words, " << n << " bytes, bit " << bit;
      }
      Bytes dense(n);
      for (uint8_t &b : dense) b = static_cast<uint8_t>(rng() & rng() & rng());
      EXPECT_EQ(orOfWords(dense.data(), n, cb), plain(dense)) << cb << "-byte words, " << n << " bytes";
    }
  }
}

TEST(Codec, RansRejectsBytesWiderThanTheLiteral) {
  // Four words, and enough for 32-way frames (whose width is checked from their tables), with
  // the wide words common enough to have slots of their own rather than patches.
  std::mt19937_64 rng(5);
  for (size_t n : {4, 100000}) {
    std::vector<uint64_t> wide(n);
    for (uint64_t &w : wide) w = rng() % 10 == 0 ? 200 : rng() % 16;
    Bytes bytes;
    ASSERT_TRUE(encodeLit(Encoding::Rans, wide, 8, bytes));
    Payload payload = Payload::fromBytes(bytes);
    auto narrow = Lit::make(StreamType{4, wide.size()}, Encoding::Rans, ByteRange{0, bytes.size()});
    auto decoded = decodeLit(*narrow, payload);
    ASSERT_FALSE(decoded) << n << " words";
    EXPECT_NE(decoded.error().message.find("wider than 4 bits"), std::string::npos) << decoded.error().message;
    // The same words within 4 bits decode.
    for (uint64_t &w : wide) w &= 15;
    bytes.clear();
    ASSERT_TRUE(encodeLit(Encoding::Rans, wide, 4, bytes));
    Payload fitting = Payload::fromBytes(bytes);
    auto again = decodeLit(*Lit::make(StreamType{4, wide.size()}, Encoding::Rans, ByteRange{0, bytes.size()}), fitting);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_TRUE(*again == wide) << n << " words";
  }
}

// Any split of a block into the four streams' runs decodes (encoders choose theirs), and
// word counts beyond the block are refused. A hand-made literal: words {3, 9}, 1-bit codes.
TEST(Codec, HuffmanStreamsMayCodeRunsOfAnyLength) {
  std::vector<uint64_t> words(20);
  for (size_t i = 0; i < words.size(); ++i) words[i] = (i * 7) % 3 == 0 ? 9 : 3;
  auto literal = [&](uint64_t c0, uint64_t c1, uint64_t c2) {
    Bytes b = {2, 3, 5, 0x00, 20, static_cast<uint8_t>(c0), static_cast<uint8_t>(c1), static_cast<uint8_t>(c2)};
    uint64_t starts[5] = {0, c0, c0 + c1, c0 + c1 + c2, words.size()};
    std::vector<Bytes> streams(4);
    for (unsigned k = 0; k < 4; ++k) {
      for (uint64_t i = starts[k]; i < std::min<uint64_t>(starts[k + 1], words.size()); ++i) {
        uint64_t bit = i - starts[k];
        if (bit % 8 == 0) streams[k].push_back(0);
        if (words[i] == 9) streams[k].back() |= static_cast<uint8_t>(1u << (bit % 8)); // symbol 1: code 1
      }
    }
    for (const Bytes &s : streams) b.push_back(static_cast<uint8_t>(s.size()));
    for (const Bytes &s : streams) b.insert(b.end(), s.begin(), s.end());
    return b;
  };
  auto decode = [&](const Bytes &bytes) {
    Payload payload = Payload::fromBytes(bytes);
    auto lit = Lit::make(StreamType{4, words.size()}, Encoding::Huffman, ByteRange{0, bytes.size()});
    return decodeLit(*lit, payload);
  };
  for (auto [c0, c1, c2] : {std::tuple{5, 5, 5}, std::tuple{0, 0, 0}, std::tuple{20, 0, 0}, std::tuple{0, 7, 13},
                            std::tuple{1, 0, 18}}) {
    auto decoded = decode(literal(c0, c1, c2));
    ASSERT_TRUE(decoded) << c0 << " " << c1 << " " << c2 << ": " << decoded.error().message;
    EXPECT_EQ(*decoded, words) << c0 << " " << c1 << " " << c2;
  }
  auto tooMany = decode(literal(10, 10, 1));
  ASSERT_FALSE(tooMany);
  EXPECT_NE(tooMany.error().message.find("more words than it has"), std::string::npos);
}

// Rare bytes of a block travel as patches beside the rANS frame (RansCodec.h).
TEST(Codec, RansPatchesTheRarestBytesAndRoundTrips) {
  std::mt19937_64 rng(21);
  std::geometric_distribution<uint64_t> geometric(0.4);
  std::vector<uint64_t> words(300000);
  for (auto &w : words) w = std::min<uint64_t>(geometric(rng), 20);
  std::set<uint64_t> planted;
  for (uint64_t s = 100; s < 140; ++s) {
    words[rng() % words.size()] = s;
    planted.insert(s);
  }
  uint64_t counts[256] = {};
  for (uint64_t w : words) ++counts[w];
  RarePlan plan = planRarePatches(counts, words.size());
  for (uint64_t s : planted) EXPECT_TRUE(plan.rare[s]) << "symbol " << s << " seen once is not patched";
  EXPECT_FALSE(plan.rare[0]);
  EXPECT_FALSE(plan.rare[plan.replacement]);
  EXPECT_GE(plan.patches, planted.size());
  expectRoundTrip(Encoding::Rans, words, 8, "rans with patches");
  // Two blocks: patches are per block.
  std::vector<uint64_t> two(words.begin(), words.end());
  while (two.size() < kRansBlockWords + 1000) two.insert(two.end(), words.begin(), words.end());
  two.resize(kRansBlockWords + 1000);
  expectRoundTrip(Encoding::Rans, two, 8, "rans with patches, two blocks");
  // Blocks coded out of order (as on threads) and with the counts given a block at a time are
  // the same bytes, at order 0 and 1.
  std::vector<uint64_t> three(two);
  three.insert(three.end(), words.begin(), words.begin() + 5000);
  three.insert(three.end(), two.begin(), two.end());
  std::vector<ByteCounts> blockCounts((three.size() + kRansBlockWords - 1) / kRansBlockWords);
  for (size_t i = 0; i < three.size(); ++i) ++blockCounts[i / kRansBlockWords][three[i]];
  const RunBlocks backwards = [](size_t blocks, const std::function<void(size_t)> &codeBlock) {
    for (size_t b = blocks; b-- > 0;) codeBlock(b);
  };
  for (unsigned order : {0u, 1u}) {
    Bytes inOrder, outOfOrder, counted;
    encodeRans(three, order, inOrder);
    encodeRans(three, order, outOfOrder, {}, &backwards);
    encodeRans(three, order, counted, order == 0 ? std::span<const ByteCounts>(blockCounts) : std::span<const ByteCounts>{},
               &backwards);
    EXPECT_EQ(outOfOrder, inOrder) << "order " << order;
    EXPECT_EQ(counted, inOrder) << "order " << order;
  }
  // A block without rare bytes has none.
  uint64_t flat[256] = {};
  for (unsigned s = 0; s < 16; ++s) flat[s] = 1000;
  EXPECT_EQ(planRarePatches(flat, 16000).patches, 0u);
}

// Huffman's blocks coded out of order (as on threads) are the same bytes, for the narrow
// alphabets' path and the wide one's.
TEST(Codec, HuffmanBlocksCodedInAnyOrderAreTheSameBytes) {
  std::mt19937_64 rng(31);
  const RunBlocks backwards = [](size_t blocks, const std::function<void(size_t)> &codeBlock) {
    for (size_t b = blocks; b-- > 0;) codeBlock(b);
  };
  std::geometric_distribution<uint64_t> geometric(0.2);
  for (unsigned width : {8u, 16u}) {
    std::vector<uint64_t> words(kHuffmanBlockWords * 2 + 777);
    for (auto &x : words) x = (geometric(rng) * 0x9e37u) & widthMask(width);
    Bytes inOrder, outOfOrder;
    ASSERT_TRUE(encodeHuffman(words, width, inOrder));
    ASSERT_TRUE(encodeHuffman(words, width, outOfOrder, nullptr, &backwards));
    EXPECT_EQ(outOfOrder, inOrder) << "u" << width;
    expectRoundTrip(Encoding::Huffman, words, width, fmt::format("huffman u{}, three blocks", width));
  }
}

TEST(Codec, RansPatchListsAreChecked) {
  std::vector<uint64_t> words(100);
  for (size_t i = 0; i < words.size(); ++i) words[i] = i % 3;
  Bytes base;
  encodeRans(words, 0, base);
  ASSERT_EQ(base.back(), 0) << "a three-symbol block needs no patches";
  base.pop_back();
  auto decodeWith = [&](Bytes tail, unsigned width) {
    Bytes bytes = base;
    bytes.insert(bytes.end(), tail.begin(), tail.end());
    Payload payload = Payload::fromBytes(bytes);
    auto lit = Lit::make(StreamType{width, words.size()}, Encoding::Rans, ByteRange{0, bytes.size()});
    return decodeLit(*lit, payload);
  };
  auto patched = decodeWith({2, 5, 7, 93, 6}, 8); // word 5 := 7, word 99 := 6
  ASSERT_TRUE(patched) << patched.error().message;
  auto expected = words;
  expected[5] = 7;
  expected[99] = 6;
  EXPECT_EQ(*patched, expected);
  auto message = [&](Bytes tail, unsigned width) {
    auto r = decodeWith(std::move(tail), width);
    return r ? std::string("decoded") : r.error().message;
  };
  EXPECT_NE(message({1, 100, 7}, 8).find("past its end"), std::string::npos);
  EXPECT_NE(message({2, 5, 7, 94, 6}, 8).find("past its end"), std::string::npos);
  EXPECT_NE(message({1, 0, 0x10}, 4).find("wider than 4 bits"), std::string::npos);
  EXPECT_NE(message({101}, 8).find("more patches than words"), std::string::npos);
  EXPECT_NE(message({2, 5, 7}, 8).find("truncated"), std::string::npos);
  EXPECT_NE(message({}, 8).find("truncated"), std::string::npos);
  EXPECT_NE(message({0, 0}, 8).find("trailing"), std::string::npos);
}

TEST(Codec, RawRejectsContainerBitsAboveTheWidth) {
  // u24 words live in 4-byte containers: the top byte must be zero (found by fuzz_literal).
  Bytes bytes = {0x01, 0x02, 0x03, 0x00, 0x01, 0x02, 0x03, 0x04};
  Payload payload = Payload::fromBytes(bytes);
  auto lit = Lit::make(StreamType{24, 2}, Encoding::Raw, ByteRange{0, 8});
  auto valid = validateLit(*lit, payload);
  ASSERT_FALSE(valid);
  EXPECT_NE(valid.error().message.find("wider than 24 bits"), std::string::npos);
}

TEST(Codec, BitpackWireFormatIsLsbFirst) {
  // docs/format/literals.md: b = 3, word i in bits [3i, 3i + 3) of an LSB-first stream.
  std::vector<uint64_t> words = {1, 5, 3, 0};
  Bytes bytes;
  ASSERT_TRUE(encodeLit(Encoding::Bitpack, words, 8, bytes));
  EXPECT_EQ(bytes, (Bytes{0x03, 0xe9, 0x00}));
  Bytes raw;
  ASSERT_TRUE(encodeLit(Encoding::Raw, std::vector<uint64_t>{0x0102, 0xa0b}, 12, raw));
  EXPECT_EQ(raw, (Bytes{0x02, 0x01, 0x0b, 0x0a}));
}

TEST(Codec, Rans16DecodesEveryLengthThroughItsFourStateLoopAndItsTail) {
  // The decoder takes four words at a time while the block holds 8 more bytes, then the rest one
  // at a time: every length mod 4, streams that end inside the fast loop's reach, and words
  // whose states read often (uniform) or seldom (skewed).
  std::mt19937_64 rng(21);
  for (unsigned width : {9u, 16u})
    for (Shape shape : {Shape::Uniform, Shape::Skewed})
      for (size_t n : {2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 13u, 31u, 64u, 65u, 66u, 67u, 1001u, 4099u}) {
        auto words = makeWords(rng, n, width, shape);
        words[0] = 0, words[1] = 1; // two distinct words at least: the states are used
        expectRoundTrip(Encoding::Rans, words, width,
                        fmt::format("rans u{} shape {} n {}", width, static_cast<int>(shape), n));
      }
}

TEST(Codec, Rans16DecodesBlocksTwoAtATime) {
  // Blocks are decoded in pairs with their states interleaved: pairs that end together, a pair
  // whose second block is short, and an odd block left alone; words of 9 and 16 bits.
  std::mt19937_64 rng(22);
  const uint64_t b = kRans16BlockWords;
  for (unsigned width : {9u, 16u})
    for (uint64_t n : {b + 1, b + 4099, 2 * b, 3 * b + 7}) {
      auto words = makeWords(rng, n, width, width == 9 ? Shape::Skewed : Shape::Uniform);
      words[n - 1] = 3; // the last block holds two distinct words at least
      expectRoundTrip(Encoding::Rans, words, width, fmt::format("rans u{} n {}", width, n));
    }
}

TEST(Codec, Rans16DecodesBlocksOfAnySize) {
  // The format takes any block size: archives written with blocks of 2^20 words (the encoder's
  // size before kRans16BlockWords) and odd sizes decode alike, blocks in pairs and alone.
  std::mt19937_64 rng(24);
  for (uint64_t b : {uint64_t{1}, uint64_t{3}, uint64_t{4099}, kRans16BlockWords + 1, uint64_t{1} << 20})
    for (uint64_t n : {b + 1, 2 * b, 3 * b + 2}) {
      auto words = makeWords(rng, n, 12, Shape::Skewed);
      words[0] = 0, words[n - 1] = 3; // two distinct words: the blocks are coded
      Bytes bytes = {1, 2, 3};
      ASSERT_TRUE(encodeRans16(words, 12, bytes, nullptr, b));
      expectDecodes(Encoding::Rans, words, 12, bytes, fmt::format("rans u12 blocks of {} n {}", b, n), b);
    }
}

// Each block of a literal damaged in turn, its size rewritten so that the literal's layout stays
// valid: the decoder itself must refuse it, naming the block, whether the block is the first or
// the second of a pair decoded together, or the one left alone.
TEST(Codec, Rans16RefusesADamagedBlockOfAPairOrAlone) {
  std::mt19937_64 rng(23);
  const unsigned width = 10;
  const auto words = makeWords(rng, 2 * kRans16BlockWords + 500, width, Shape::Skewed);
  Bytes good;
  ASSERT_TRUE(encodeLit(Encoding::Rans, words, width, good));
  // The layout (Rans16.h): K, K words, K frequencies, the block size, then each block's size and
  // bytes.
  ByteReader in(good);
  const uint64_t k = *in.varint();
  for (uint64_t i = 0; i < 2 * k + 1; ++i) ASSERT_TRUE(in.varint());
  const Bytes head(good.cbegin(), good.cbegin() + (in.position() - good.data()));
  std::vector<Bytes> blocks;
  while (in.remaining()) {
    const uint64_t size = *in.varint();
    const uint8_t *at = in.take(size);
    ASSERT_NE(at, nullptr);
    blocks.emplace_back(at, at + size);
  }
  ASSERT_EQ(blocks.size(), 3u);
  auto literal = [&](const std::vector<Bytes> &parts) {
    Bytes out = head;
    for (const Bytes &b : parts) {
      putVarint(out, b.size());
      out.insert(out.end(), b.begin(), b.end());
    }
    return out;
  };
  ASSERT_EQ(literal(blocks), good);
  for (size_t b = 0; b < blocks.size(); ++b)
    for (const char *damage : {"its last word cut", "two bytes more", "a state changed", "a word changed"}) {
      std::vector<Bytes> parts = blocks;
      Bytes &block = parts[b];
      const std::string what = damage;
      if (what == "its last word cut") block.resize(block.size() - 2);
      else if (what == "two bytes more") block.insert(block.end(), {0, 0});
      else if (what == "a state changed") block[5] ^= 0x10;
      else block[16 + (block.size() - 16) / 2] ^= 0x01;
      const Bytes bytes = literal(parts);
      Payload payload = Payload::fromBytes(bytes);
      auto lit = Lit::make(StreamType{width, words.size()}, Encoding::Rans, ByteRange{0, bytes.size()});
      ASSERT_TRUE(validateLit(*lit, payload)) << "block " << b << ", " << damage;
      auto decoded = decodeLit(*lit, payload);
      ASSERT_FALSE(decoded) << "block " << b << ", " << damage << ": decoded";
      EXPECT_NE(decoded.error().message.find(fmt::format("rans block {} ", b)), std::string::npos)
          << "block " << b << ", " << damage << ": " << decoded.error().message;
    }
}

TEST(Codec, Rans16RejectsTruncationAndSurvivesCorruption) {
  std::mt19937_64 rng(12);
  // One block, and three (a damaged pair decodes interleaved).
  const std::pair<unsigned, uint64_t> cases[] = {
      {9, 20000}, {12, 20000}, {16, 20000}, {10, 2 * kRans16BlockWords + 500}};
  for (auto [width, n] : cases) {
    auto words = makeWords(rng, n, width, Shape::Skewed);
    Bytes good;
    ASSERT_TRUE(encodeLit(Encoding::Rans, words, width, good));
    for (size_t cut = 0; cut < good.size(); cut += std::max<size_t>(1, good.size() / 61)) {
      Bytes bytes(good.begin(), good.begin() + cut);
      Payload payload = Payload::fromBytes(bytes);
      auto lit = Lit::make(StreamType{width, words.size()}, Encoding::Rans, ByteRange{0, cut});
      if (!validateLit(*lit, payload)) continue;
      EXPECT_FALSE(decodeLit(*lit, payload)) << "u" << width << " truncated to " << cut << " bytes decoded";
    }
    for (int round = 0; round < (n > 100000 ? 50 : 200); ++round) {
      Bytes bytes = good;
      bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
      Payload payload = Payload::fromBytes(bytes);
      auto lit = Lit::make(StreamType{width, words.size()}, Encoding::Rans, ByteRange{0, bytes.size()});
      if (!validateLit(*lit, payload)) continue;
      auto decoded = decodeLit(*lit, payload);
      if (decoded) {
        for (uint64_t w : *decoded) ASSERT_EQ(w & ~widthMask(width), 0u);
      }
    }
  }
}

namespace {

/// htscodecs' order-0, 32-way frame of `in`.
Bytes htscodecsFrame(const std::vector<uint8_t> &in) {
  unsigned size = rans_compress_bound_4x16(static_cast<unsigned>(in.size()), RANS_ORDER_X32);
  Bytes frame(size);
  EXPECT_NE(rans_compress_to_4x16(const_cast<uint8_t *>(in.data()), static_cast<unsigned>(in.size()), frame.data(),
                                  &size, RANS_ORDER_X32),
            nullptr);
  frame.resize(size);
  return frame;
}

/// htscodecs' decoding of `frame` into `length` bytes, or nullopt where it fails.
std::optional<Bytes> htscodecsDecode(const Bytes &frame, uint32_t length) {
  Bytes out(length);
  unsigned got = length;
  if (!rans_uncompress_to_4x16(const_cast<uint8_t *>(frame.data()), static_cast<unsigned>(frame.size()), out.data(),
                               &got) ||
      got != length)
    return std::nullopt;
  return out;
}

/// Weights of byte values for drawBytes: one symbol; the alphabet's two ends, very skewed; float
/// exponents (geometric around a mode); every other value (no runs in the alphabet); uniform
/// (incompressible).
std::vector<std::vector<double>> byteShapes() {
  std::vector<std::vector<double>> shapes(5, std::vector<double>(256, 0.0));
  shapes[0][77] = 1;
  shapes[1][0] = 999, shapes[1][255] = 1;
  for (int e = 100; e < 130; ++e) shapes[2][e] = std::pow(0.6, std::abs(e - 121));
  for (int s = 0; s < 256; s += 2) shapes[3][s] = 1 + s % 7;
  shapes[4].assign(256, 1.0);
  return shapes;
}

/// Bytes of n symbols drawn from `weights` (symbol s with weight weights[s]).
std::vector<uint8_t> drawBytes(std::mt19937_64 &rng, size_t n, const std::vector<double> &weights) {
  std::discrete_distribution<unsigned> pick(weights.begin(), weights.end());
  std::vector<uint8_t> out(n);
  for (auto &b : out) b = static_cast<uint8_t>(pick(rng));
  return out;
}

} // namespace

TEST(RansX32, DecodesWhatHtscodecsEncodesTwoFramesInOneCall) {
  if (!ransX32DecoderAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937_64 rng(31);
  const std::vector<std::vector<double>> shapes = byteShapes();
  // htscodecs writes 32-way frames from 4 KiB on (smaller ones are 4-way or stored).
  const size_t lengths[] = {1, 95, 4096 + 1, 4096 + 31, 4096 + 32, 4096 + 33, 65543, 100031, size_t{1} << 20};
  size_t decodedHere = 0;
  for (size_t shape = 0; shape < shapes.size(); ++shape)
    for (size_t li = 0; li < std::size(lengths); ++li) {
      // Two frames of different lengths decode together, and one finishes first.
      std::vector<uint8_t> in[2] = {drawBytes(rng, lengths[li], shapes[shape]),
                                    drawBytes(rng, lengths[(li + 3) % std::size(lengths)], shapes[(shape + 2) % shapes.size()])};
      Bytes frames[2] = {htscodecsFrame(in[0]), htscodecsFrame(in[1])};
      std::vector<uint8_t> out[2] = {std::vector<uint8_t>(in[0].size(), 0xEE), std::vector<uint8_t>(in[1].size(), 0xEE)};
      RansX32Frame jobs[2] = {{frames[0], out[0].data(), static_cast<uint32_t>(in[0].size())},
                              {frames[1], out[1].data(), static_cast<uint32_t>(in[1].size())}};
      decodeRansX32Frames(jobs);
      for (int k = 0; k < 2; ++k) {
        const bool ours = frames[k][0] == RANS_ORDER_X32; // order 0, 32-way, nothing else
        ASSERT_EQ(jobs[k].status, ours ? RansX32Frame::Status::Done : RansX32Frame::Status::NotHandled)
            << "shape " << shape << ", length " << in[k].size();
        if (ours) {
          EXPECT_TRUE(out[k] == in[k]) << "shape " << shape << ", length " << in[k].size();
          // htscodecs gives every byte present a slot, and nothing else one.
          uint8_t all = 0;
          for (uint8_t b : in[k]) all |= b;
          EXPECT_EQ(jobs[k].symbolsOr, all) << "shape " << shape << ", length " << in[k].size();
          ++decodedHere;
        }
      }
    }
  EXPECT_GT(decodedHere, 40u);
}

// A frame of one symbol is written out without decoding, and the frame decoded after it in the
// same pair reports only its own symbols.
TEST(RansX32, AFrameAfterAOneSymbolFrameReportsItsOwnSymbols) {
  if (!ransX32DecoderAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937_64 rng(43);
  const std::vector<uint8_t> constant(5000, 0x40);
  std::vector<uint8_t> small(5000);
  for (uint8_t &b : small) b = static_cast<uint8_t>(rng() % 4);
  uint64_t constantCounts[256] = {}, smallCounts[256] = {};
  constantCounts[0x40] = constant.size();
  for (uint8_t b : small) ++smallCounts[b];
  Bytes frames[2];
  encodeRansX32Frame(constant, constantCounts, frames[0]);
  encodeRansX32Frame(small, smallCounts, frames[1]);
  ASSERT_EQ(frames[0][0], RANS_ORDER_X32);
  ASSERT_EQ(frames[1][0], RANS_ORDER_X32);
  std::vector<uint8_t> out[2] = {std::vector<uint8_t>(5000), std::vector<uint8_t>(5000)};
  RansX32Frame jobs[2] = {{frames[0], out[0].data(), 5000}, {frames[1], out[1].data(), 5000}};
  decodeRansX32Frames(jobs);
  ASSERT_EQ(jobs[0].status, RansX32Frame::Status::Done);
  ASSERT_EQ(jobs[1].status, RansX32Frame::Status::Done);
  EXPECT_TRUE(out[0] == constant);
  EXPECT_TRUE(out[1] == small);
  EXPECT_EQ(jobs[0].symbolsOr, 0x40);
  EXPECT_EQ(jobs[1].symbolsOr, 0x03);
}

namespace {

/// `n` bytes whose symbols are, in increasing order, `common` frequent ones and after each of
/// the first `groups` of them `rare` seen once: each run of rare symbols puts several starts in
/// one bucket of the frame's table (RansX32Decode.h).
std::vector<uint8_t> clusteredBytes(std::mt19937_64 &rng, size_t n, unsigned common, unsigned groups, unsigned rare) {
  std::vector<uint8_t> out;
  std::vector<uint8_t> frequent;
  unsigned s = 0;
  for (unsigned i = 0; i < common; ++i) {
    frequent.push_back(static_cast<uint8_t>(s++));
    for (unsigned k = 0; i < groups && k < rare; ++k) out.push_back(static_cast<uint8_t>(s++));
  }
  std::vector<double> weights;
  for (size_t i = 0; i < frequent.size(); ++i) weights.push_back(1.0 + static_cast<double>(rng() % 8));
  std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
  while (out.size() < n) out.push_back(frequent[pick(rng)]);
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

} // namespace

// Tables of every kind the permutes hold (few symbols or up to 64, no bucket shared by several
// symbols or up to eight) and the kinds they do not (more symbols, more shared buckets), in
// groups of one to six frames that mix them, through the encoder's frames of every table size.
TEST(RansX32, DecodesByPermutesEveryTableTheyHoldAndGathersTheRest) {
  if (!ransX32DecoderAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937_64 rng(47);
  struct Case {
    std::vector<uint8_t> in;
    Bytes frame;
  };
  std::vector<Case> cases;
  auto add = [&](std::vector<uint8_t> in) {
    Case c{std::move(in), {}};
    uint64_t counts[256] = {};
    for (uint8_t b : c.in) ++counts[b];
    encodeRansX32Frame(c.in, counts, c.frame);
    if (c.frame[0] == RANS_ORDER_X32) cases.push_back(std::move(c));
  };
  // Tables summing to 1024, 2048 and 4096 (scaled to 4096).
  const size_t lengths[] = {kRansX32MinBytes, 1500, 3000, 4096 + 31, 20011, 65536};
  for (int trial = 0; trial < 240; ++trial) {
    const unsigned common = 2 + static_cast<unsigned>(rng() % 70), groups = static_cast<unsigned>(rng() % 12);
    const unsigned rare = 2 + static_cast<unsigned>(rng() % 3);
    auto in = clusteredBytes(rng, lengths[trial % std::size(lengths)], common, std::min(groups, common), rare);
    if (in.size() <= lengths[trial % std::size(lengths)]) add(std::move(in)); // else more rare symbols than room
  }
  // The edges of the rank tables: 2, 32, 33, 64 (the last that permutes) and 65 symbols.
  const size_t edgesFrom = cases.size();
  const unsigned edges[] = {2, 32, 33, 64, 65};
  for (const unsigned symbols : edges)
    for (const size_t n : {size_t{1500}, size_t{65536}}) add(clusteredBytes(rng, n, symbols, 0, 0));
  ASSERT_EQ(cases.size(), edgesFrom + 2 * std::size(edges));
  for (size_t i = edgesFrom; i < cases.size(); ++i) {
    auto lookup = ransX32LookupOf({cases[i].frame, nullptr, static_cast<uint32_t>(cases[i].in.size())});
    ASSERT_TRUE(lookup);
    const unsigned symbols = edges[(i - edgesFrom) / 2];
    ASSERT_EQ(lookup->symbols, symbols) << "case " << i;
    if (__builtin_cpu_supports("avx512vbmi")) {
      EXPECT_EQ(lookup->permutes, symbols <= 64) << "case " << i;
    }
  }
  // What the cases cover: permutes with no shared bucket, up to four, five to eight, more than
  // 32 symbols; gathers for more than eight shared buckets or more than 64 symbols.
  size_t unshared = 0, fewShared = 0, manyShared = 0, wide = 0, tooShared = 0, tooMany = 0;
  for (const Case &c : cases) {
    auto lookup = ransX32LookupOf({c.frame, nullptr, static_cast<uint32_t>(c.in.size())});
    ASSERT_TRUE(lookup);
    if (lookup->symbols > 64) {
      EXPECT_FALSE(lookup->permutes);
      ++tooMany;
    } else if (lookup->sharedBuckets > 8) {
      EXPECT_FALSE(lookup->permutes);
      ++tooShared;
    } else if (lookup->permutes) {
      unshared += lookup->sharedBuckets == 0;
      fewShared += lookup->sharedBuckets > 0 && lookup->sharedBuckets <= 4;
      manyShared += lookup->sharedBuckets > 4;
      wide += lookup->symbols > 32;
    }
  }
  if (__builtin_cpu_supports("avx512vbmi")) {
    EXPECT_GT(unshared, 3u);
    EXPECT_GT(fewShared, 3u);
    EXPECT_GT(manyShared, 3u);
    EXPECT_GT(wide, 3u);
  }
  EXPECT_GT(tooShared, 3u);
  EXPECT_GT(tooMany, 3u);
  std::vector<std::vector<uint8_t>> out(cases.size());
  std::vector<RansX32Frame> jobs;
  for (size_t i = 0; i < cases.size(); ++i) {
    out[i].assign(cases[i].in.size(), 0xEE);
    jobs.push_back({cases[i].frame, out[i].data(), static_cast<uint32_t>(cases[i].in.size())});
  }
  for (size_t at = 0, n = 1; at < jobs.size(); at += n, n = n % 6 + 1)
    decodeRansX32Frames(std::span(jobs).subspan(at, std::min(n, jobs.size() - at)));
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_EQ(jobs[i].status, RansX32Frame::Status::Done) << "case " << i;
    EXPECT_TRUE(out[i] == cases[i].in) << "case " << i;
    uint8_t all = 0;
    for (uint8_t b : cases[i].in) all |= b;
    EXPECT_EQ(jobs[i].symbolsOr, all) << "case " << i;
  }
}

TEST(RansX32, FramesOfFewWordsDecodeByVectorRoundsAsHtscodecsDecodesThem) {
  if (!ransX32DecoderAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU";
  // Nearly one symbol: tens of thousands of symbols in fewer than 64 bytes of words, which the
  // vector rounds take from a copy followed by zeros (tailRounds); alone and beside a frame of
  // many words, by gathers and by permutes.
  std::mt19937_64 rng(47);
  std::vector<double> nearlyOne(256, 0.0);
  nearlyOne[120] = 1, nearlyOne[119] = 1e-4, nearlyOne[200] = 2e-5;
  std::vector<double> exponent(256, 0.0);
  for (int e = 100; e < 130; ++e) exponent[e] = std::pow(0.6, std::abs(e - 121));
  const std::vector<uint8_t> otherIn = drawBytes(rng, 30000, exponent);
  const Bytes other = htscodecsFrame(otherIn);
  size_t decoded = 0, refused = 0, short_ = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const size_t n = 4096 + rng() % 60000;
    const std::vector<uint8_t> in = drawBytes(rng, n, nearlyOne);
    uint64_t counts[256] = {};
    for (uint8_t b : in) ++counts[b];
    Bytes frame;
    if (trial % 2) frame = htscodecsFrame(in);
    else encodeRansX32Frame(in, counts, frame);
    ASSERT_EQ(frame[0], RANS_ORDER_X32);
    // Whole, or with one bit flipped among its states and words (its last 160 bytes): states
    // that then ask for more words than there are must be refused, not read past the frame.
    const bool damaged = trial % 3 != 0;
    short_ += frame.size() < 4 * 32 + 64 + 40;
    if (damaged) {
      const size_t at = frame.size() - 1 - rng() % std::min<size_t>(160, frame.size() - 1);
      frame[at] ^= static_cast<uint8_t>(1u << rng() % 8);
    }
    std::vector<uint8_t> out(n, 0xEE), otherOut(otherIn.size(), 0xEE);
    std::vector<RansX32Frame> jobs = {{frame, out.data(), static_cast<uint32_t>(n)}};
    if (trial % 4 >= 2) jobs.push_back({other, otherOut.data(), static_cast<uint32_t>(otherIn.size())});
    decodeRansX32Frames(jobs);
    if (jobs.size() > 1) {
      ASSERT_EQ(jobs[1].status, RansX32Frame::Status::Done) << "trial " << trial;
      EXPECT_TRUE(otherOut == otherIn) << "trial " << trial;
    }
    ASSERT_NE(jobs[0].status, RansX32Frame::Status::NotHandled) << "trial " << trial;
    if (!damaged) {
      ASSERT_EQ(jobs[0].status, RansX32Frame::Status::Done) << "trial " << trial;
      EXPECT_TRUE(out == in) << "trial " << trial;
      ++decoded;
    } else if (jobs[0].status == RansX32Frame::Status::Corrupt) {
      ++refused;
    } else { // what the damage left decodes: as htscodecs decodes it
      auto theirs = htscodecsDecode(frame, static_cast<uint32_t>(n));
      ASSERT_TRUE(theirs) << "trial " << trial;
      EXPECT_TRUE(Bytes(out.begin(), out.end()) == *theirs) << "trial " << trial;
    }
  }
  EXPECT_EQ(short_, 120u); // every frame has fewer than 64 bytes of words
  EXPECT_EQ(decoded, 40u);
  EXPECT_GT(refused, 20u);
}

TEST(RansX32, DamagedFramesFailOrDecodeAsHtscodecsDoes) {
  if (!ransX32DecoderAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937_64 rng(37);
  std::vector<double> exponent(256, 0.0);
  for (int e = 100; e < 130; ++e) exponent[e] = std::pow(0.6, std::abs(e - 121));
  // Intact frames that a damaged one is decoded with, on odd trials: a group of four, which
  // goes by permutes where every frame of it can (RansX32Decode.h), the damaged one included.
  std::vector<uint8_t> intactIn[3];
  Bytes intact[3];
  for (int k = 0; k < 3; ++k) {
    intactIn[k] = drawBytes(rng, 20000 + 5000 * k, exponent);
    intact[k] = htscodecsFrame(intactIn[k]);
    auto lookup = ransX32LookupOf({intact[k], nullptr, static_cast<uint32_t>(intactIn[k].size())});
    ASSERT_TRUE(lookup);
    ASSERT_EQ(lookup->permutes, __builtin_cpu_supports("avx512vbmi") != 0);
  }
  size_t agreed = 0, refused = 0, permuted = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const size_t n = 4097 + rng() % 20000;
    auto in = drawBytes(rng, n, exponent);
    Bytes frame = htscodecsFrame(in);
    ASSERT_EQ(frame[0], RANS_ORDER_X32);
    switch (trial % 3) {
    case 0: frame[1 + rng() % (frame.size() - 1)] ^= static_cast<uint8_t>(1u << rng() % 8); break; // one bit
    case 1: frame.resize(1 + rng() % (frame.size() - 1)); break;                                    // truncated
    default: // table or states damaged
      frame[1 + rng() % std::min<size_t>(frame.size() - 1, 200)] = static_cast<uint8_t>(rng());
      break;
    }
    std::vector<uint8_t> out(n), intactOut[3];
    std::vector<RansX32Frame> jobs = {{frame, out.data(), static_cast<uint32_t>(n)}};
    if (trial % 2) {
      for (int k = 0; k < 3; ++k) {
        intactOut[k].assign(intactIn[k].size(), 0xEE);
        jobs.push_back({intact[k], intactOut[k].data(), static_cast<uint32_t>(intactIn[k].size())});
      }
      auto lookup = ransX32LookupOf(jobs[0]);
      permuted += lookup && lookup->permutes;
    }
    decodeRansX32Frames(jobs);
    for (int k = 0; k + 1 < static_cast<int>(jobs.size()); ++k) {
      ASSERT_EQ(jobs[k + 1].status, RansX32Frame::Status::Done) << "trial " << trial;
      EXPECT_TRUE(intactOut[k] == intactIn[k]) << "trial " << trial;
    }
    const RansX32Frame &job = jobs[0];
    ASSERT_NE(job.status, RansX32Frame::Status::NotHandled);
    if (job.status == RansX32Frame::Status::Corrupt) {
      ++refused;
      continue;
    }
    // Decoded: every read was inside the frame, so htscodecs computes the same bytes.
    auto theirs = htscodecsDecode(frame, static_cast<uint32_t>(n));
    ASSERT_TRUE(theirs) << "trial " << trial;
    EXPECT_TRUE(Bytes(out.begin(), out.end()) == *theirs) << "trial " << trial;
    ++agreed;
  }
  EXPECT_GT(refused, 100u);
  EXPECT_GT(agreed, 10u);
  if (__builtin_cpu_supports("avx512vbmi")) {
    EXPECT_GT(permuted, 100u);
  }
}

TEST(RansX32, OurFramesDecodeThroughBothDecodersNoLargerThanHtscodecs) {
  std::mt19937_64 rng(41);
  std::vector<std::vector<double>> shapes = byteShapes();
  std::vector<double> manyRare(256, 1.0); // 255 symbols forced up to 1
  manyRare[3] = 1e6;
  shapes.push_back(manyRare);
  // Each table size (1024, 2048, 4096) and its edges; lengths that leave 0 and 31 symbols after
  // the last whole round of 32.
  const size_t lengths[] = {kRansX32MinBytes, 1024, 1025, 2048, 2049, 4096 + 31, 4096 + 32, 65543, 300001};
  double ours = 0, theirs = 0;
  for (size_t shape = 0; shape < shapes.size(); ++shape)
    for (const size_t n : lengths) {
      const std::vector<uint8_t> in = drawBytes(rng, n, shapes[shape]);
      uint64_t counts[256] = {};
      for (uint8_t b : in) ++counts[b];
      Bytes frame{0xAB}; // appended after what the buffer holds
      encodeRansX32Frame(in, counts, frame);
      ASSERT_EQ(frame[0], 0xAB);
      frame.erase(frame.begin());
      const std::string where = "shape " + std::to_string(shape) + ", length " + std::to_string(n);
      auto decoded = htscodecsDecode(frame, static_cast<uint32_t>(n));
      ASSERT_TRUE(decoded) << where;
      EXPECT_TRUE(*decoded == Bytes(in.begin(), in.end())) << where;
      if (ransX32DecoderAvailable() && frame[0] == RANS_ORDER_X32) {
        std::vector<uint8_t> out(n, 0xEE);
        RansX32Frame job{frame, out.data(), static_cast<uint32_t>(n)};
        decodeRansX32Frames(std::span(&job, 1));
        ASSERT_EQ(job.status, RansX32Frame::Status::Done) << where;
        EXPECT_TRUE(out == in) << where;
      }
      // Stored where coding does not pay (random bytes), coded where it plainly does.
      if (shape == 4) {
        EXPECT_EQ(frame[0], RANS_ORDER_X32 | RANS_ORDER_CAT) << where;
      }
      if (shape < 3) {
        EXPECT_EQ(frame[0], RANS_ORDER_X32) << where;
      }
      const Bytes reference = htscodecsFrame(in);
      EXPECT_LE(frame.size(), reference.size() + reference.size() / 200 + 8) << where;
      ours += static_cast<double>(frame.size());
      theirs += static_cast<double>(reference.size());
    }
  EXPECT_LE(ours, theirs * 1.001);
}

TEST(RansX32, VectorEncoderWritesTheFramesOfTheStepByStepOne) {
  std::mt19937_64 rng(43);
  std::vector<std::vector<double>> shapes = byteShapes();
  // Alphabets at the vector loop's edges: 32 and 33 symbols (one or two halves of its tables),
  // 64 (the most it takes) and 65 (left to the step by step loop); symbols above 127 (the
  // rank table's second half); one symbol of frequency 1 among common ones (its step has the
  // reciprocal of 1).
  for (const unsigned k : {32u, 33u, 64u, 65u}) {
    std::vector<double> w(256, 0.0);
    for (unsigned s = 0; s < k; ++s) w[(s * 7 + 100) % 256] = 1.0 + s % 5;
    shapes.push_back(w);
  }
  std::vector<double> high(256, 0.0);
  for (int s = 200; s < 256; ++s) high[s] = std::pow(0.8, std::abs(s - 230));
  shapes.push_back(high);
  // Lengths with 0, 1 and 31 symbols after the last whole round, each table size.
  const size_t lengths[] = {kRansX32MinBytes, 1024, 1025, 2047, 4096 + 31, 4096 + 32, 65536, 65537, 300001};
  size_t compared = 0;
  for (size_t shape = 0; shape < shapes.size(); ++shape)
    for (const size_t n : lengths) {
      std::vector<uint8_t> in = drawBytes(rng, n, shapes[shape]);
      if (shape == 2) in[n / 2] = 0; // a symbol seen once
      uint64_t counts[256] = {};
      for (uint8_t b : in) ++counts[b];
      Bytes vector{0x11}, stepwise{0x11};
      encodeRansX32Frame(in, counts, vector);
      encodeRansX32Frame(in, counts, stepwise, /*vectorized=*/false);
      const std::string where = "shape " + std::to_string(shape) + ", length " + std::to_string(n);
      ASSERT_TRUE(vector == stepwise) << where;
      const Bytes frame(stepwise.begin() + 1, stepwise.end());
      auto decoded = htscodecsDecode(frame, static_cast<uint32_t>(n));
      ASSERT_TRUE(decoded) << where;
      EXPECT_TRUE(*decoded == Bytes(in.begin(), in.end())) << where;
      ++compared;
    }
  EXPECT_EQ(compared, shapes.size() * std::size(lengths));
}

namespace {

/// A context literal's payload from its parts: block size, mode byte (the rate and flags), the
/// escape word if one is given, blocks.
Bytes contextLiteral(uint64_t blockWords, uint8_t rate, const std::vector<Bytes> &blocks,
                     std::optional<uint64_t> escape = std::nullopt) {
  Bytes out;
  putVarint(out, blockWords);
  out.push_back(rate);
  if (escape) putVarint(out, *escape);
  for (const Bytes &b : blocks) {
    putVarint(out, b.size());
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

std::string decodeError(Encoding enc, const Bytes &bytes, unsigned width, uint64_t count) {
  Payload payload = Payload::fromBytes(bytes);
  auto lit = Lit::make(StreamType{width, count}, enc, ByteRange{0, bytes.size()});
  if (auto valid = validateLit(*lit, payload); !valid) return valid.error().message;
  auto decoded = decodeLit(*lit, payload);
  return decoded ? "decoded" : decoded.error().message;
}

} // namespace

TEST(Codec, ContextCodesEveryWidthAndItsEstimateIsItsSize) {
  std::mt19937_64 rng(5);
  // Every width: the decoder has a loop of its own for each top lane of 1 to 8 bits, alone or
  // above a byte.
  for (unsigned width = 1; width <= kContextMaxWidth; ++width) {
    for (Shape shape : {Shape::Uniform, Shape::Skewed, Shape::OneSymbol}) {
      auto words = makeWords(rng, 3000, width, shape);
      expectRoundTrip(Encoding::Context, words, width, fmt::format("context u{} shape {}", width, static_cast<int>(shape)));
      // The simulated code length is what the coder writes, up to its flush and framing, with
      // the escape word (skewed words and one symbol have one) or without, whichever is smaller.
      Bytes coded;
      ASSERT_TRUE(encodeLit(Encoding::Context, words, width, coded));
      const auto escapes = contextEscapesToTry(words, width);
      if (shape == Shape::OneSymbol) {
        EXPECT_EQ(escapes.size(), 2u) << "u" << width;
      }
      if (shape == Shape::Uniform && width >= 4) {
        EXPECT_EQ(escapes.size(), 1u) << "u" << width;
      }
      std::vector<ContextCoding> codings;
      for (const auto &escape : escapes) {
        const auto bits = contextCodeBits(words, width, words.size(), escape);
        ASSERT_EQ(bits.size(), kContextTriedRates);
        for (const auto &rate : bits) EXPECT_EQ(rate[1], 0.0); // nothing after the split at the end
        // The codings encodeLit weighs: each rate without raw bits is the simulation above, and
        // with raw bits at most what the words' bits cost.
        const auto some = contextCodings(words, width, escape);
        ASSERT_EQ(some.size(), kContextTriedRates * (contextMaxRawBits(width) + 1)) << "u" << width;
        for (const ContextCoding &c : some) {
          EXPECT_EQ(c.escape, escape);
          if (c.rawBits == 0) {
            EXPECT_NEAR(c.bits, bits[c.rate - kContextMinRate][0], 1e-6) << "u" << width;
          }
        }
        codings.insert(codings.end(), some.begin(), some.end());
        // Split anywhere (the ends too), the parts add up to the whole, and the first is the
        // whole of the words before the split.
        for (size_t split : {size_t{0}, size_t{1}, words.size() / 3, words.size()}) {
          const auto parts = contextCodeBits(words, width, split, escape);
          const auto first = contextCodeBits(std::span<const uint64_t>(words).first(split), width, split, escape);
          // The cost model's estimate simulates its rate alone, to the same sums.
          const auto estimate = contextEstimateBits(words, width, split, escape);
          EXPECT_NEAR(estimate[0], parts[kContextEstimateRate - kContextMinRate][0], 1e-9) << "u" << width;
          EXPECT_NEAR(estimate[1], parts[kContextEstimateRate - kContextMinRate][1], 1e-9) << "u" << width;
          for (unsigned r = 0; r < kContextTriedRates; ++r) {
            EXPECT_EQ(parts[r][0], first[r][0]) << "u" << width << " split " << split << " rate " << r;
            EXPECT_NEAR(parts[r][0] + parts[r][1], bits[r][0], 1e-6 * bits[r][0] + 1e-9)
                << "u" << width << " split " << split << " rate " << r;
          }
        }
      }
      // (Framing: block size, mode, escape word, raw bits' count, block sizes, flush.)
      EXPECT_NEAR(static_cast<double>(coded.size()), chooseContextCoding(codings, 0).bits / 8, 16.0) << "u" << width;
    }
  }
  // Words beyond the widest the coder takes do not apply.
  EXPECT_FALSE(encodingApplies(Encoding::Context, std::vector<uint64_t>{1}, 33));
}

TEST(Codec, ContextCodesTheCommonWordOfASparseStreamByAnEscapeFlag) {
  // Words that are mostly one word (zero, or another), the rest spread: every width, alone or
  // above bytes (the decoder's loops for one lane, two and more), and over two blocks.
  std::mt19937_64 rng(12);
  for (unsigned width : {3u, 8u, 9u, 16u, 17u, 24u, 32u}) {
    const uint64_t mask = (uint64_t{1} << width) - 1;
    for (uint64_t common : {uint64_t{0}, ((uint64_t{1} << (width - 1)) + 1) & mask}) {
      const std::string what = fmt::format("u{} common {}", width, common);
      std::vector<uint64_t> words(5000);
      for (uint64_t &w : words) w = rng() % 10 < 8 ? common : rng() & mask;
      ASSERT_EQ(contextEscapeCandidate(words, width), std::optional<uint64_t>{common}) << what;
      expectRoundTrip(Encoding::Context, words, width, what);
      Bytes coded;
      ASSERT_TRUE(encodeLit(Encoding::Context, words, width, coded));
      ByteReader in(coded);
      ASSERT_TRUE(in.varint());
      EXPECT_NE(*in.byte() & kContextEscapeFlag, 0u) << what;
      // The escape pays: without it each common word codes every bit again.
      Bytes without;
      encodeContext(words, width, kContextMinRate, std::nullopt, without);
      EXPECT_LT(coded.size(), without.size()) << what;
      const auto bits = contextCodeBits(words, width, words.size(), common);
      // (The framing: the escape word's varint too.)
      EXPECT_NEAR(static_cast<double>(coded.size()), std::min(bits[0][0], bits[1][0]) / 8, 16.0) << what;
    }
  }
  // One bit is its own flag: there the escape does not pay and is not chosen; coded with one
  // anyway, the words decode (the decoder's loop for a lone top lane of one bit).
  std::vector<uint64_t> bits(3000);
  for (uint64_t &b : bits) b = rng() % 10 < 8 ? 0 : 1;
  Bytes oneBit;
  ASSERT_TRUE(encodeLit(Encoding::Context, bits, 1, oneBit));
  EXPECT_EQ(oneBit[3] & kContextEscapeFlag, 0u);
  Bytes forced = {9};
  encodeContext(bits, 1, kContextMinRate, 0, forced);
  Payload payload = Payload::fromBytes(forced);
  auto lit = Lit::make(StreamType{1, bits.size()}, Encoding::Context, ByteRange{1, forced.size() - 1});
  auto decoded = decodeLit(*lit, payload);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, bits);
  // The flags' models and the top lane's context start again in every block.
  std::vector<uint64_t> twoBlocks(kContextBlockWords + 3000);
  for (uint64_t &w : twoBlocks) w = rng() % 4 ? 0 : rng() & 0xffff;
  expectRoundTrip(Encoding::Context, twoBlocks, 16, "context with an escape word, two blocks");
  // A stream whose common word is under a quarter of it has no candidate.
  std::vector<uint64_t> dense(4000);
  for (size_t i = 0; i < dense.size(); ++i) dense[i] = i % 5 == 0 ? 7 : rng() & 0xff;
  EXPECT_EQ(contextEscapeCandidate(dense, 8), std::nullopt);
}

TEST(Codec, ContextDecodesRunsOfTheEscapeWordWhereverTheyEnd) {
  // A run of escape words decodes in one call after its first two: runs that end at the end
  // of the words learning the levels' modes (256), cross it, fill a whole block, end the
  // stream or the block, and the words between them, for one lane, two and more.
  std::mt19937_64 rng(21);
  const auto roundTrip = [&](const std::vector<uint64_t> &words, unsigned width, uint64_t escape,
                             const std::string &what) {
    for (unsigned raw : {0u, 1u}) {
      Bytes coded = {7};
      encodeContext(words, width, kContextMinRate + raw, escape, coded, raw);
      Payload payload = Payload::fromBytes(coded);
      auto lit = Lit::make(StreamType{width, words.size()}, Encoding::Context, ByteRange{1, coded.size() - 1});
      auto decoded = decodeLit(*lit, payload);
      ASSERT_TRUE(decoded) << what << ": " << decoded.error().message;
      EXPECT_EQ(*decoded, words) << what << " raw " << raw;
    }
  };
  for (unsigned width : {8u, 9u, 16u, 24u}) {
    const uint64_t mask = (uint64_t{1} << width) - 1, escape = 5;
    const auto other = [&] {
      uint64_t w;
      do w = rng() & mask;
      while (w == escape);
      return w;
    };
    // Runs placed around the end of learning, and of varied lengths after it.
    for (uint64_t runStart : {0u, 1u, 2u, 100u, 254u, 255u, 256u, 257u}) {
      for (uint64_t runLength : {1u, 2u, 3u, 156u, 157u, 158u, 400u}) {
        std::vector<uint64_t> words(1000);
        for (uint64_t &w : words) w = other();
        for (uint64_t i = runStart; i < std::min<uint64_t>(words.size(), runStart + runLength); ++i) words[i] = escape;
        for (uint64_t i = 600; i < 900; ++i) words[i] = i % 97 == 0 ? other() : escape;
        roundTrip(words, width, escape, fmt::format("u{} run at {} of {}", width, runStart, runLength));
      }
    }
    // Every word the escape word; the stream ends inside a run; a block of escapes, then more.
    roundTrip(std::vector<uint64_t>(3000, escape), width, escape, fmt::format("u{} all escapes", width));
    std::vector<uint64_t> tail(3000);
    for (size_t i = 0; i < tail.size(); ++i) tail[i] = i < 1000 && i % 3 ? other() : escape;
    roundTrip(tail, width, escape, fmt::format("u{} ending in a run", width));
  }
  std::vector<uint64_t> blocks(kContextBlockWords + 5000, 5);
  for (size_t i = kContextBlockWords - 10; i < blocks.size(); i += 7) blocks[i] = 9;
  roundTrip(blocks, 16, 5, "a block of escapes and its next");
}

TEST(Codec, ContextSimulatesARunOfEscapeWordsAsItsFlagsOneByOne) {
  // The simulation steps a run of escape flags until the model stops moving, then adds the
  // rest at once. Cut into two parts anywhere (inside a run, at its first words, at a part's
  // end), the parts' costs must add up to the same total to the unit, and the estimate must
  // stay the coded size.
  std::mt19937_64 rng(33);
  for (unsigned width : {8u, 12u, 16u}) {
    const uint64_t escape = 3;
    std::vector<uint64_t> words;
    for (uint64_t run : {1u, 2u, 3u, 40u, 90u, 200u, 1000u, 5000u}) {
      words.insert(words.end(), run, escape);
      for (int k = 0; k < 5; ++k) words.push_back((rng() & ((uint64_t{1} << width) - 1)) | 4);
    }
    const std::string what = fmt::format("u{}", width);
    const auto total = contextCodeBits(words, width, words.size(), escape);
    const auto estimate = contextEstimateBits(words, width, words.size(), escape);
    for (size_t split : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{50}, size_t{100}, size_t{1105},
                         size_t{1300}, words.size() - 3000, words.size() - 1, words.size()}) {
      const auto parts = contextCodeBits(words, width, split, escape);
      for (size_t r = 0; r < parts.size(); ++r)
        EXPECT_EQ(parts[r][0] + parts[r][1], total[r][0]) << what << " split " << split << " rate " << r;
      const auto estimated = contextEstimateBits(words, width, split, escape);
      EXPECT_EQ(estimated[0] + estimated[1], estimate[0]) << what << " split " << split;
    }
    Bytes coded;
    encodeContext(words, width, kContextMinRate, escape, coded);
    EXPECT_NEAR(static_cast<double>(coded.size()), total[0][0] / 8, 16.0) << what;
  }
}

TEST(Codec, ContextRefusesMalformedLiterals) {
  std::mt19937_64 rng(9);
  auto words = makeWords(rng, 1000, 8, Shape::Uniform);
  Bytes good;
  ASSERT_TRUE(encodeLit(Encoding::Context, words, 8, good));
  EXPECT_EQ(decodeError(Encoding::Context, good, 8, 1000), "decoded");
  // The parts of the good literal: block size, mode (uniform words have no escape word), one block.
  ByteReader in(good);
  ASSERT_TRUE(in.varint());
  const uint8_t rate = *in.byte();
  ASSERT_EQ(rate & kContextEscapeFlag, 0u);
  auto size = in.varint();
  const Bytes block(in.position(), in.position() + *size);
  EXPECT_EQ(decodeError(Encoding::Context, contextLiteral(kContextBlockWords, rate, {block}), 8, 1000), "decoded");
  // A rate outside 4..7; flags no encoder writes.
  for (uint8_t bad : {0, 3, 8, 15})
    EXPECT_NE(decodeError(Encoding::Context, contextLiteral(kContextBlockWords, bad, {block}), 8, 1000)
                  .find("adaptation rate"),
              std::string::npos);
  for (uint8_t bad : {0x40, 0x80})
    EXPECT_NE(decodeError(Encoding::Context, contextLiteral(kContextBlockWords, rate | bad, {block}), 8, 1000)
                  .find("unknown flags"),
              std::string::npos);
  // An escape word missing, or wider than the words.
  EXPECT_NE(decodeError(Encoding::Context, contextLiteral(kContextBlockWords, rate | kContextEscapeFlag, {}), 8, 1000)
                .find("truncated"),
            std::string::npos);
  EXPECT_NE(decodeError(Encoding::Context, contextLiteral(kContextBlockWords, rate | kContextEscapeFlag, {block}, 256), 8, 1000)
                .find("does not fit in 8 bits"),
            std::string::npos);
  // Block size zero, or larger than any encoder writes.
  EXPECT_NE(decodeError(Encoding::Context, contextLiteral(0, rate, {block}), 8, 1000).find("invalid block size"),
            std::string::npos);
  EXPECT_NE(decodeError(Encoding::Context, contextLiteral(uint64_t{1} << 40, rate, {block}), 8, 1000).find("larger"),
            std::string::npos);
  // Bytes after the last block; a block missing its last bytes (the coder reads past its end).
  Bytes trailing = good;
  trailing.push_back(0);
  EXPECT_NE(decodeError(Encoding::Context, trailing, 8, 1000).find("trailing"), std::string::npos);
  const Bytes cut(block.begin(), block.end() - 2);
  EXPECT_NE(decodeError(Encoding::Context, contextLiteral(kContextBlockWords, rate, {cut}), 8, 1000).find("truncated"),
            std::string::npos);
  // More blocks than the literal's words need, or fewer.
  EXPECT_NE(decodeError(Encoding::Context, contextLiteral(500, rate, {block}), 8, 1000).find("truncated"),
            std::string::npos);
  EXPECT_NE(decodeError(Encoding::Context, contextLiteral(kContextBlockWords, rate, {block, block}), 8, 1000)
                .find("trailing"),
            std::string::npos);
  // Wider than 32 bits is refused by the checker's rule, and by the decoder alike.
  EXPECT_NE(decodeError(Encoding::Context, good, 40, 1000).find("1 to 32 bits"), std::string::npos);
}

namespace {

/// Words whose low `noise` bits are uniformly random and whose bits above follow a skewed
/// distribution: a float's near-random low mantissa under its exponent. With `common`, 60% of
/// the words are that word.
std::vector<uint64_t> wordsWithNoiseBelow(std::mt19937_64 &rng, size_t n, unsigned width, unsigned noise,
                                          std::optional<uint64_t> common = std::nullopt) {
  std::geometric_distribution<uint64_t> top(0.2);
  std::vector<uint64_t> words(n);
  for (uint64_t &w : words)
    w = common && rng() % 10 < 6 ? *common : ((top(rng) << noise) | (rng() & widthMask(noise))) & widthMask(width);
  return words;
}

/// The parts of an encodeContext literal of one block with raw bits.
struct RawContextParts {
  uint8_t mode = 0;
  unsigned rawBits = 0;
  Bytes coder, raw;
};

RawContextParts splitRawContext(const Bytes &literal) {
  RawContextParts parts;
  ByteReader in(literal);
  EXPECT_TRUE(in.varint());
  parts.mode = *in.byte();
  EXPECT_EQ(parts.mode & kContextEscapeFlag, 0u);
  EXPECT_NE(parts.mode & kContextRawFlag, 0u);
  parts.rawBits = *in.byte();
  auto size = in.varint();
  parts.coder.assign(in.position(), in.position() + *size);
  in.take(*size);
  size = in.varint();
  parts.raw.assign(in.position(), in.position() + *size);
  return parts;
}

Bytes rawContextLiteral(uint8_t mode, std::optional<uint8_t> rawBits, const Bytes &coder, std::optional<Bytes> raw) {
  Bytes out;
  putVarint(out, kContextBlockWords);
  out.push_back(mode);
  if (rawBits) out.push_back(*rawBits);
  putVarint(out, coder.size());
  out.insert(out.end(), coder.begin(), coder.end());
  if (raw) {
    putVarint(out, raw->size());
    out.insert(out.end(), raw->begin(), raw->end());
  }
  return out;
}

} // namespace

TEST(Codec, ContextStoresLowBitsRawAndTheirSizeIsTheSimulations) {
  std::mt19937_64 rng(31);
  // Widths of one lane (the raw bits in the lane that is also the next word's context), two
  // and more (the decoders' loops for each), with and without an escape word.
  for (unsigned width : {2u, 5u, 8u, 9u, 12u, 16u, 17u, 24u, 32u}) {
    const unsigned maxRaw = contextMaxRawBits(width);
    EXPECT_EQ(maxRaw, width > 8 ? 8u : width - 1) << "u" << width;
    for (const std::optional<uint64_t> common : {std::optional<uint64_t>{}, std::optional<uint64_t>{0}}) {
      const std::string what = fmt::format("u{}{}", width, common ? " with an escape word" : "");
      const auto words = wordsWithNoiseBelow(rng, 4000, width, std::min(maxRaw, 6u), common);
      const auto codings = contextCodings(words, width, common);
      // Every count of raw bits at every rate decodes to the words, to the simulated size.
      for (const ContextCoding &c : codings) {
        Bytes coded;
        encodeContext(words, width, c.rate, common, coded, c.rawBits);
        const std::string how = fmt::format("{} rate {} raw {}", what, c.rate, c.rawBits);
        EXPECT_NEAR(static_cast<double>(coded.size()), c.bits / 8, 16.0) << how;
        Payload payload = Payload::fromBytes(coded);
        auto lit = Lit::make(StreamType{width, words.size()}, Encoding::Context, ByteRange{0, coded.size()});
        ASSERT_TRUE(validateLit(*lit, payload)) << how;
        auto decoded = decodeLit(*lit, payload);
        ASSERT_TRUE(decoded) << how << ": " << decoded.error().message;
        EXPECT_EQ(*decoded, words) << how;
      }
      // Random low bits cost their adaptive models more than themselves: the smallest coding of
      // words of two lanes or more stores some raw, and encodeLit writes it. (A lone lane is
      // also the next word's context, which noise spreads over so many trees that no model
      // learns: there coded and raw bits cost the same.)
      const ContextCoding smallest = chooseContextCoding(codings, 0);
      if (width > 8) {
        EXPECT_GE(smallest.rawBits, 1u) << what;
      }
      Bytes chosen, none;
      ASSERT_TRUE(encodeLit(Encoding::Context, words, width, chosen));
      encodeContext(words, width, smallest.rate, smallest.escape, none, 0);
      EXPECT_LE(chosen.size(), none.size()) << what;
      // With room, at least as many raw bits, and no larger than the room allows.
      const ContextCoding roomy = chooseContextCoding(codings, 0.05);
      EXPECT_GE(roomy.rawBits, smallest.rawBits) << what;
      EXPECT_LE(roomy.bits, smallest.bits * 1.05) << what;
    }
  }
  // Raw bits in two blocks, with an escape word: each block's raw bits stand beside its coder's.
  std::vector<uint64_t> twoBlocks = wordsWithNoiseBelow(rng, kContextBlockWords + 3000, 16, 8, uint64_t{0});
  Bytes coded;
  encodeContext(twoBlocks, 16, kContextMinRate, uint64_t{0}, coded, 8);
  Payload payload = Payload::fromBytes(coded);
  auto lit = Lit::make(StreamType{16, twoBlocks.size()}, Encoding::Context, ByteRange{0, coded.size()});
  auto decoded = decodeLit(*lit, payload);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, twoBlocks);
}

TEST(Codec, ContextCodingChoiceTakesTheMostRawBitsWithinItsRoom) {
  const std::vector<ContextCoding> codings = {{std::nullopt, 4, 0, 1000.0}, {std::nullopt, 4, 2, 1005.0},
                                              {std::nullopt, 5, 3, 1001.0}, {std::nullopt, 5, 4, 1011.0},
                                              {std::nullopt, 4, 3, 1009.0}};
  auto pick = [&](double room) {
    const ContextCoding c = chooseContextCoding(codings, room);
    return std::pair{c.rate, c.rawBits};
  };
  EXPECT_EQ(pick(0), (std::pair{4u, 0u}));
  EXPECT_EQ(pick(0.0005), (std::pair{4u, 0u}));
  EXPECT_EQ(pick(0.01), (std::pair{5u, 3u})); // of the two with 3 raw bits, the smaller
  EXPECT_EQ(pick(0.02), (std::pair{5u, 4u}));
}

TEST(Codec, ContextRefusesMalformedRawBits) {
  std::mt19937_64 rng(33);
  const auto words = wordsWithNoiseBelow(rng, 1000, 8, 4);
  Bytes good;
  encodeContext(words, 8, kContextMinRate, std::nullopt, good, 4);
  EXPECT_EQ(decodeError(Encoding::Context, good, 8, 1000), "decoded");
  const RawContextParts parts = splitRawContext(good);
  ASSERT_EQ(parts.rawBits, 4u);
  ASSERT_EQ(parts.raw.size(), 500u); // 4 bits of each of 1,000 words
  EXPECT_EQ(decodeError(Encoding::Context, rawContextLiteral(parts.mode, 4, parts.coder, parts.raw), 8, 1000), "decoded");
  // A count of raw bits of 0, or more than the last lane allows (a lone lane keeps one bit coded).
  for (uint8_t bad : {0, 8, 9, 255})
    EXPECT_NE(decodeError(Encoding::Context, rawContextLiteral(parts.mode, bad, parts.coder, parts.raw), 8, 1000)
                  .find("raw low bits"),
              std::string::npos)
        << int{bad};
  // The count, or the raw bits' size or bytes, missing.
  Bytes noCount;
  putVarint(noCount, kContextBlockWords);
  noCount.push_back(parts.mode);
  EXPECT_NE(decodeError(Encoding::Context, noCount, 8, 1000).find("truncated"), std::string::npos);
  EXPECT_NE(decodeError(Encoding::Context, rawContextLiteral(parts.mode, 4, parts.coder, std::nullopt), 8, 1000)
                .find("truncated"),
            std::string::npos);
  // Raw bits short of the words' needs, or longer.
  const Bytes shorter(parts.raw.begin(), parts.raw.end() - 1);
  EXPECT_NE(decodeError(Encoding::Context, rawContextLiteral(parts.mode, 4, parts.coder, shorter), 8, 1000)
                .find("raw bits do not match"),
            std::string::npos);
  Bytes longer = parts.raw;
  longer.push_back(0);
  EXPECT_NE(decodeError(Encoding::Context, rawContextLiteral(parts.mode, 4, parts.coder, longer), 8, 1000)
                .find("raw bits do not match"),
            std::string::npos);
  // Raw bits whose last byte has a set bit past the words' (1,001 words of 4 bits: 4 unused).
  const auto odd = wordsWithNoiseBelow(rng, 1001, 8, 4);
  Bytes oddGood;
  encodeContext(odd, 8, kContextMinRate, std::nullopt, oddGood, 4);
  EXPECT_EQ(decodeError(Encoding::Context, oddGood, 8, 1001), "decoded");
  RawContextParts oddParts = splitRawContext(oddGood);
  ASSERT_EQ(oddParts.raw.size(), 501u);
  EXPECT_EQ(oddParts.raw.back() >> 4, 0);
  oddParts.raw.back() |= 0x80;
  EXPECT_NE(decodeError(Encoding::Context, rawContextLiteral(oddParts.mode, 4, oddParts.coder, oddParts.raw), 8, 1001)
                .find("raw bits do not match"),
            std::string::npos);
  // Without the flag, the same bytes are a coder's block with bytes after it.
  EXPECT_NE(decodeError(Encoding::Context, rawContextLiteral(parts.mode & ~kContextRawFlag, std::nullopt, parts.coder,
                                                             parts.raw), 8, 1000)
                .find("trailing"),
            std::string::npos);
}
