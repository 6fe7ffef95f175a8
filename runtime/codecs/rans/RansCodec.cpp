#include "runtime/codecs/rans/RansCodec.h"

#include "runtime/common/Histogram.h"
#include "runtime/common/OrOfWords.h"
#include "runtime/containers/Payload.h"
#include "runtime/codecs/rans/RansX32Decode.h"
#include "runtime/codecs/rans/RansX32Encode.h"
#include "runtime/common/Varint.h"

#include <fmt/format.h>
#include <htscodecs/rANS_static4x16.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

namespace brevis {

namespace {

constexpr unsigned kFrequencyBits = 12; // htscodecs' order-0 precision

/// Readable bytes kept before and after every buffer handed to htscodecs' encoder (see
/// encodeRans). Frames are decoded where they lie in the payload: after their size varint (at
/// least one byte) and followed by at least the payload's slack.
constexpr size_t kRansInputSlack = 16;
constexpr size_t kRansFrameSlackBefore = 1;
static_assert(kPayloadSlack >= kRansInputSlack);

/// Reads, in our own (instrumented) code, the bytes around a buffer that htscodecs may read:
/// the library is not built with AddressSanitizer, so a missing slack would go unseen there.
void touchSlack(const uint8_t *p, size_t n, size_t before, size_t after) {
  volatile uint8_t sink = 0;
  for (size_t k = 1; k <= before; ++k) sink = sink ^ p[-static_cast<ptrdiff_t>(k)];
  for (size_t k = 0; k < after; ++k) sink = sink ^ p[n + k];
}

/// Modeled bits of coding `counts` with frequencies quantized to 2^12 (each present symbol at
/// least 1, the remainder given to the most frequent), plus ~2 bytes of table per symbol.
double quantizedBits(const uint64_t counts[256], uint64_t n) {
  constexpr double total = double(1u << kFrequencyBits);
  double freq[256];
  double sum = 0;
  unsigned largest = 0;
  for (unsigned s = 0; s < 256; ++s) {
    freq[s] = counts[s] ? std::max(1.0, std::round(double(counts[s]) / double(n) * total)) : 0;
    sum += freq[s];
    if (counts[s] > counts[largest]) largest = s;
  }
  freq[largest] += total - sum;
  if (freq[largest] < 1) return std::numeric_limits<double>::infinity();
  double bits = 0;
  for (unsigned s = 0; s < 256; ++s)
    if (counts[s]) bits += double(counts[s]) * (kFrequencyBits - std::log2(freq[s])) + 16;
  return bits;
}

} // namespace

RarePlan planRarePatches(const uint64_t counts[256], uint64_t n) {
  RarePlan plan;
  std::vector<unsigned> present;
  for (unsigned s = 0; s < 256; ++s)
    if (counts[s]) present.push_back(s);
  if (present.size() < 3 || n == 0) return plan;
  // Rarest first; ties by symbol, so the plan is deterministic.
  std::stable_sort(present.begin(), present.end(), [&](unsigned a, unsigned b) { return counts[a] < counts[b]; });
  const unsigned mode = present.back();
  plan.replacement = static_cast<uint8_t>(mode);
  uint64_t main[256];
  std::copy(counts, counts + 256, main);
  double best = quantizedBits(main, n);
  uint64_t patched = 0;
  size_t bestK = 0;
  // Only symbols rarer than 1/4096 can gain: quantization rounds everything else fairly.
  for (size_t k = 1; k + 1 < present.size() && counts[present[k - 1]] * (1u << kFrequencyBits) < n; ++k) {
    unsigned s = present[k - 1];
    patched += counts[s];
    main[mode] += counts[s];
    main[s] = 0;
    // A patch: its value byte and its gap as a varint.
    double patchBits = double(patched) * 8.0 * (1 + varintSize(n / patched));
    double bits = quantizedBits(main, n) + patchBits;
    if (bits < best) {
      best = bits;
      bestK = k;
    }
  }
  for (size_t k = 0; k < bestK; ++k) {
    plan.rare[present[k]] = true;
    plan.patches += counts[present[k]];
  }
  return plan;
}

namespace {

/// Replaces the words of `block` that `plan` calls rare by its replacement, appending each one's
/// gap from the last and value to `patches`; returns how many. Rare words are few (each rarer
/// than 1/4096): eight words are looked up together and passed over where none is rare (a
/// word at a time, this was a sixth of level 1's time).
uint64_t patchRareWords(std::span<uint8_t> block, const RarePlan &plan, Bytes &patches) {
  uint64_t patchCount = 0, last = 0;
  size_t i = 0;
  const bool *rare = plan.rare;
  auto patch = [&](size_t at) {
    putVarint(patches, at - last);
    patches.push_back(block[at]);
    block[at] = plan.replacement;
    last = at + 1;
    ++patchCount;
  };
  for (; i + 8 <= block.size() && patchCount < plan.patches; i += 8) {
    const uint8_t *c = block.data() + i;
    if (!(rare[c[0]] | rare[c[1]] | rare[c[2]] | rare[c[3]] | rare[c[4]] | rare[c[5]] | rare[c[6]] | rare[c[7]]))
      continue;
    for (size_t k = i; k < i + 8 && patchCount < plan.patches; ++k)
      if (rare[block[k]]) patch(k);
  }
  for (; i < block.size() && patchCount < plan.patches; ++i)
    if (rare[block[i]]) patch(i);
  return patchCount;
}

/// Appends block `b` of `words` (its frame's size and bytes, its patches' count and bytes).
template <typename W>
void encodeRansBlock(std::span<const W> words, unsigned order, size_t b, std::span<const ByteCounts> blockCounts,
                     Bytes &out) {
  // The block's bytes with kRansInputSlack readable bytes on either side: htscodecs 1.3's
  // AVX-512 order-1 encoder reads in[-1] and in[n], in[n + 1] (from about 3000 bytes on). The
  // words are narrowed into this buffer anyway, so the slack costs no copy.
  // Kept from call to call (one per thread): the bound includes order-1 tables, a few hundred
  // KB that resize would clear for every literal (most of the synthesis time of many small
  // tensors), and a block's copy of a megabyte would fault its pages in again for every literal.
  thread_local std::vector<uint8_t> padded;
  thread_local Bytes frame;
  const uint64_t begin = b * kRansBlockWords, end = std::min<uint64_t>(words.size(), begin + kRansBlockWords);
  // Zero slack, so that the frame cannot depend on what the library reads there.
  padded.resize(kRansInputSlack + (end - begin) + kRansInputSlack);
  std::fill(padded.end() - kRansInputSlack, padded.end(), 0);
  std::span<uint8_t> block(padded.data() + kRansInputSlack, end - begin);
  std::copy(words.begin() + begin, words.begin() + end, block.begin());
  Bytes patches;
  uint64_t patchCount = 0;
  // Order-0 blocks htscodecs would code 32-way are coded by our encoder (RansX32Encode.h): no
  // setup, and with AVX-512 twice htscodecs' speed.
  const bool ours = order == 0 && block.size() >= kRansX32MinBytes;
  if (order == 0) {
    uint64_t counts[256] = {};
    if (b < blockCounts.size()) std::copy(blockCounts[b].begin(), blockCounts[b].end(), counts);
    else countSmallValues(std::span<const uint8_t>(block), counts);
    const RarePlan plan = planRarePatches(counts, block.size());
    patchCount = patchRareWords(block, plan, patches);
    if (ours) {
      for (unsigned s = 0; s < 256; ++s)
        if (plan.rare[s]) counts[plan.replacement] += std::exchange(counts[s], 0);
      frame.clear();
      encodeRansX32Frame(block, counts, frame);
    }
  }
  size_t size = frame.size();
  if (!ours) {
    const int flags = static_cast<int>(order) | RANS_ORDER_X32;
    const unsigned bound = rans_compress_bound_4x16(static_cast<unsigned>(block.size()), flags);
    if (frame.size() < bound) frame.resize(bound);
    unsigned coded = bound;
    touchSlack(block.data(), block.size(), kRansInputSlack, kRansInputSlack);
    if (!rans_compress_to_4x16(block.data(), static_cast<unsigned>(block.size()), frame.data(), &coded, flags))
      __builtin_trap(); // only fails on allocation failure or a buffer below the bound
    size = coded;
  }
  putVarint(out, size);
  out.insert(out.end(), frame.begin(), frame.begin() + static_cast<ptrdiff_t>(size));
  putVarint(out, patchCount);
  out.insert(out.end(), patches.begin(), patches.end());
}

template <typename W>
void encodeRansOf(std::span<const W> words, unsigned order, Bytes &out, std::span<const ByteCounts> blockCounts,
                  const RunBlocks *run) {
  putVarint(out, kRansBlockWords);
  const size_t blocks = (words.size() + kRansBlockWords - 1) / kRansBlockWords;
  if (!run || blocks < 2) {
    for (size_t b = 0; b < blocks; ++b) encodeRansBlock(words, order, b, blockCounts, out);
    return;
  }
  // Blocks are independent: each into a buffer of its own, joined in order (the same bytes).
  std::vector<Bytes> coded(blocks);
  (*run)(blocks, [&](size_t b) { encodeRansBlock(words, order, b, blockCounts, coded[b]); });
  for (const Bytes &c : coded) out.insert(out.end(), c.begin(), c.end());
}

} // namespace

void encodeRans(WordsView words, unsigned order, Bytes &out, std::span<const ByteCounts> blockCounts,
                const RunBlocks *run) {
  return words.visit([&](auto w) { return encodeRansOf(w, order, out, blockCounts, run); });
}

Result<std::unique_ptr<RansDecoder>> RansDecoder::create(ByteSpan bytes, unsigned width, uint64_t count) {
  auto d = std::unique_ptr<RansDecoder>(new RansDecoder());
  d->width_ = width;
  d->count_ = count;
  ByteReader in(bytes);
  auto blockWords = in.varint();
  if (!blockWords || *blockWords == 0 || *blockWords > std::numeric_limits<unsigned>::max())
    return Error{"rans literal has an invalid block size"};
  d->blockWords_ = *blockWords;
  uint64_t blocks = count / *blockWords + (count % *blockWords != 0);
  // Every block has at least its frame size and patch count.
  if (blocks > in.remaining() / 2) return Error{"rans literal is truncated"};
  d->blocks_.reserve(blocks);
  for (uint64_t b = 0; b < blocks; ++b) {
    Block block;
    auto size = in.varint();
    const uint8_t *frame = size ? in.take(*size) : nullptr;
    if (!frame || *size > std::numeric_limits<unsigned>::max()) return Error{"rans literal is truncated"};
    block.frame = ByteSpan(frame, *size);
    auto patchCount = in.varint();
    if (!patchCount) return Error{"rans literal is truncated"};
    const uint64_t length = d->blockLength(b);
    if (*patchCount > length) return Error{fmt::format("rans block {} has more patches than words", b)};
    const uint8_t *patchesBegin = in.position();
    uint64_t at = 0;
    for (uint64_t p = 0; p < *patchCount; ++p) {
      auto gap = in.varint();
      auto value = in.byte();
      if (!gap || !value) return Error{"rans literal is truncated"};
      if (*gap >= length - at) return Error{fmt::format("rans block {} has a patch past its end", b)};
      if (*value >> width) return Error{fmt::format("rans block {} patches in a word wider than {} bits", b, width)};
      at += *gap + 1;
    }
    block.patches = ByteSpan(patchesBegin, static_cast<size_t>(in.position() - patchesBegin));
    block.patchCount = *patchCount;
    d->blocks_.push_back(block);
  }
  if (in.remaining() != 0) return Error{"rans literal has trailing bytes"};
  return d;
}

uint64_t RansDecoder::blockLength(size_t b) const { return std::min(blockWords_, count_ - b * blockWords_); }

Result<void> RansDecoder::decodeBlocks(size_t first, size_t n, uint8_t *out) const {
  std::vector<RansX32Frame> frames;
  if (ransX32DecoderAvailable()) {
    uint8_t *at = out;
    for (size_t b = first; b < first + n; ++b) {
      const uint32_t length = static_cast<uint32_t>(blockLength(b));
      frames.push_back(RansX32Frame{blocks_[b].frame, at, length});
      at += length;
    }
    decodeRansX32Frames(frames);
  }
  for (size_t b = first; b < first + n; ++b) {
    const unsigned expected = static_cast<unsigned>(blockLength(b));
    const Block &block = blocks_[b];
    const auto status = frames.empty() ? RansX32Frame::Status::NotHandled : frames[b - first].status;
    if (status == RansX32Frame::Status::Corrupt) return Error{fmt::format("rans block {} is corrupt", b)};
    if (status != RansX32Frame::Status::Done) {
      unsigned got = expected;
      touchSlack(block.frame.data(), block.frame.size(), kRansFrameSlackBefore, kPayloadSlack);
      // htscodecs takes non-const input but does not modify it.
      if (!rans_uncompress_to_4x16(const_cast<uint8_t *>(block.frame.data()), static_cast<unsigned>(block.frame.size()),
                                   out, &got) ||
          got != expected)
        return Error{fmt::format("rans block {} is corrupt", b)};
    }
    // A frame decoded here gave only symbols of its table: where none is wider than the
    // literal, the bytes need no second pass (it was a tenth of decoding a BF16 checkpoint).
    const bool tableFits = status == RansX32Frame::Status::Done && frames[b - first].symbolsOr >> width_ == 0;
    if (width_ < 8 && !tableFits && orOfWords(out, expected, 1) >> width_)
      return Error{fmt::format("rans block {} holds words wider than {} bits", b, width_)};
    // create() checked every patch's position and value.
    ByteReader patches(block.patches);
    uint64_t at = 0;
    for (uint64_t p = 0; p < block.patchCount; ++p) {
      at += *patches.varint();
      out[at++] = *patches.byte();
    }
    out += expected;
  }
  return {};
}

} // namespace brevis
