#include "runtime/codecs/zstd/ZstdCodec.h"

#include "runtime/common/OrOfWords.h"
#include "runtime/common/Varint.h"

#include <fmt/format.h>
#include <zstd.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace brevis {

namespace {

/// libzstd's smallest window (ZSTD_WINDOWLOG_MIN, which zstd.h defines only for static linking).
constexpr int kMinWindowLog = 10;

/// One compression and one decompression context per thread, kept from literal to literal:
/// a context's tables at high levels take tens of megabytes to allocate and clear.
struct ZstdContexts {
  ZSTD_CCtx *compress = nullptr;
  ZSTD_DCtx *decompress = nullptr;
  ~ZstdContexts() {
    ZSTD_freeCCtx(compress);
    ZSTD_freeDCtx(decompress);
  }
};
thread_local ZstdContexts contexts;

ZSTD_CCtx *compressContext() {
  if (!contexts.compress) contexts.compress = ZSTD_createCCtx();
  if (!contexts.compress) __builtin_trap(); // out of memory
  return contexts.compress;
}

ZSTD_DCtx *decompressContext() {
  if (!contexts.decompress) contexts.decompress = ZSTD_createDCtx();
  if (!contexts.decompress) __builtin_trap(); // out of memory
  return contexts.decompress;
}

/// Compresses `bytes` into one frame in `frame` (resized to it): content size recorded, no
/// checksum (archives check every region's digest) and a window that spans the input.
void compressFrame(std::span<const uint8_t> bytes, int level, Bytes &frame) {
  ZSTD_CCtx *c = compressContext();
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  const int windowLog =
      std::max(kMinWindowLog, static_cast<int>(std::bit_width(bytes.size() - (bytes.empty() ? 0 : 1))));
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, std::clamp(level, kZstdMinLevel, kZstdMaxLevel));
  ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, windowLog);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0);
  ZSTD_CCtx_setParameter(c, ZSTD_c_dictIDFlag, 0);
  frame.resize(ZSTD_compressBound(bytes.size()));
  const size_t size = ZSTD_compress2(c, frame.data(), frame.size(), bytes.data(), bytes.size());
  if (ZSTD_isError(size)) __builtin_trap(); // only on allocation failure or a buffer below the bound
  frame.resize(size);
}

} // namespace

namespace {

template <typename W> void encodeZstdOf(std::span<const W> words, int level, Bytes &out) {
  putVarint(out, kZstdBlockWords);
  thread_local Bytes block, frame;
  for (uint64_t begin = 0; begin < words.size(); begin += kZstdBlockWords) {
    const uint64_t end = std::min<uint64_t>(words.size(), begin + kZstdBlockWords);
    if constexpr (std::is_same_v<W, uint8_t>) {
      compressFrame(words.subspan(begin, end - begin), level, frame); // bytes already
    } else {
      block.resize(end - begin);
      std::copy(words.begin() + begin, words.begin() + end, block.begin());
      compressFrame(block, level, frame);
    }
    putVarint(out, frame.size());
    out.insert(out.end(), frame.begin(), frame.end());
  }
}

} // namespace

void encodeZstd(WordsView words, int level, Bytes &out) {
  return words.visit([&](auto w) { return encodeZstdOf(w, level, out); });
}

uint64_t zstdFrameSize(std::span<const uint8_t> bytes, int level) {
  thread_local Bytes frame;
  compressFrame(bytes, level, frame);
  return frame.size();
}

Result<std::unique_ptr<ZstdDecoder>> ZstdDecoder::create(ByteSpan bytes, unsigned width, uint64_t count) {
  auto d = std::unique_ptr<ZstdDecoder>(new ZstdDecoder());
  d->width_ = width;
  d->count_ = count;
  ByteReader in(bytes);
  auto blockWords = in.varint();
  if (!blockWords || *blockWords == 0) return Error{"zstd literal has an invalid block size"};
  d->blockWords_ = *blockWords;
  const uint64_t blocks = count / *blockWords + (count % *blockWords != 0);
  // Every block has at least its size varint and a frame's magic number.
  if (blocks > in.remaining() / 5) return Error{"zstd literal is truncated"};
  d->frames_.reserve(blocks);
  for (uint64_t b = 0; b < blocks; ++b) {
    auto size = in.varint();
    const uint8_t *frame = size ? in.take(*size) : nullptr;
    if (!frame) return Error{"zstd literal is truncated"};
    const uint64_t length = d->blockLength(b);
    uint32_t magic = 0;
    if (*size >= 4) std::memcpy(&magic, frame, 4);
    if (magic != ZSTD_MAGICNUMBER) return Error{fmt::format("zstd block {} is not a zstd frame", b)};
    // Frames are checked before anything is allocated for them: the size a frame records must
    // be its block's, and the frame must end where the block's bytes do.
    const unsigned long long content = ZSTD_getFrameContentSize(frame, *size);
    if (content == ZSTD_CONTENTSIZE_ERROR) return Error{fmt::format("zstd block {} has a corrupt frame header", b)};
    if (content == ZSTD_CONTENTSIZE_UNKNOWN) return Error{fmt::format("zstd block {} does not record its size", b)};
    if (content != length)
      return Error{fmt::format("zstd block {} records {} bytes, but the block holds {} words", b, content, length)};
    if (ZSTD_getDictID_fromFrame(frame, *size) != 0) return Error{fmt::format("zstd block {} needs a dictionary", b)};
    const size_t frameSize = ZSTD_findFrameCompressedSize(frame, *size);
    if (ZSTD_isError(frameSize)) return Error{fmt::format("zstd block {} is truncated", b)};
    if (frameSize != *size) return Error{fmt::format("zstd block {} has bytes after its frame", b)};
    d->frames_.emplace_back(frame, static_cast<size_t>(*size));
  }
  if (in.remaining() != 0) return Error{"zstd literal has trailing bytes"};
  return d;
}

uint64_t ZstdDecoder::blockLength(size_t b) const { return std::min(blockWords_, count_ - b * blockWords_); }

Result<void> ZstdDecoder::decodeBlock(size_t b, uint8_t *out) const {
  const size_t length = static_cast<size_t>(blockLength(b));
  // One call into the block's buffer: the decoder's history is the output itself, so a hostile
  // window size allocates nothing, and it writes no byte past `length`.
  const size_t got = ZSTD_decompressDCtx(decompressContext(), out, length, frames_[b].data(), frames_[b].size());
  if (ZSTD_isError(got) || got != length) return Error{fmt::format("zstd block {} is corrupt", b)};
  if (width_ < 8 && orOfWords(out, length, 1) >> width_)
    return Error{fmt::format("zstd block {} holds words wider than {} bits", b, width_)};
  return {};
}

} // namespace brevis
