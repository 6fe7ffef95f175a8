#include "tools/bench/PeerCodecs.h"

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <fmt/format.h>
#include <lz4.h>
#include <lz4hc.h>
#include <lzma.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>

namespace brevis::bench {

namespace {

class Zstd final : public PeerCodec {
public:
  Zstd(int level, bool longMode) : level_(level), long_(longMode) {}
  std::string name() const override { return fmt::format("zstd -{}{}", level_, long_ ? " --long" : ""); }
  bool threaded() const override { return true; }
  Result<Bytes> compress(ByteSpan in, unsigned threads) const override {
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level_);
    if (threads > 1) ZSTD_CCtx_setParameter(c, ZSTD_c_nbWorkers, static_cast<int>(threads));
    if (long_) {
      ZSTD_CCtx_setParameter(c, ZSTD_c_enableLongDistanceMatching, 1);
      ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 27);
    }
    Bytes out(ZSTD_compressBound(in.size()));
    size_t n = ZSTD_compress2(c, out.data(), out.size(), in.data(), in.size());
    ZSTD_freeCCtx(c);
    if (ZSTD_isError(n)) return Error{ZSTD_getErrorName(n)};
    out.resize(n);
    return out;
  }
  Result<Bytes> decompress(ByteSpan in, size_t size) const override {
    ZSTD_DCtx *d = ZSTD_createDCtx();
    ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, 27);
    Bytes out(size);
    size_t n = ZSTD_decompressDCtx(d, out.data(), out.size(), in.data(), in.size());
    ZSTD_freeDCtx(d);
    if (ZSTD_isError(n) || n != size) return Error{"zstd: decompression failed"};
    return out;
  }

private:
  int level_;
  bool long_;
};

class Zlib final : public PeerCodec {
public:
  explicit Zlib(int level) : level_(level) {}
  std::string name() const override { return fmt::format("zlib -{}", level_); }
  Result<Bytes> compress(ByteSpan in, unsigned) const override {
    uLongf n = compressBound(in.size());
    Bytes out(n);
    if (compress2(out.data(), &n, in.data(), in.size(), level_) != Z_OK) return Error{"zlib: compression failed"};
    out.resize(n);
    return out;
  }
  Result<Bytes> decompress(ByteSpan in, size_t size) const override {
    Bytes out(size);
    uLongf n = size;
    if (uncompress(out.data(), &n, in.data(), in.size()) != Z_OK || n != size) return Error{"zlib: decompression failed"};
    return out;
  }

private:
  int level_;
};

class Xz final : public PeerCodec {
public:
  explicit Xz(uint32_t preset) : preset_(preset) {}
  std::string name() const override { return fmt::format("xz -{}", preset_); }
  bool threaded() const override { return true; }
  Result<Bytes> compress(ByteSpan in, unsigned threads) const override {
    lzma_stream s = LZMA_STREAM_INIT;
    lzma_mt mt{};
    mt.threads = std::max(threads, 1u);
    mt.preset = preset_;
    mt.check = LZMA_CHECK_CRC64;
    if ((threads > 1 ? lzma_stream_encoder_mt(&s, &mt) : lzma_easy_encoder(&s, preset_, LZMA_CHECK_CRC64)) != LZMA_OK)
      return Error{"xz: cannot start the encoder"};
    Bytes out(lzma_stream_buffer_bound(in.size()));
    s.next_in = in.data();
    s.avail_in = in.size();
    s.next_out = out.data();
    s.avail_out = out.size();
    lzma_ret r = lzma_code(&s, LZMA_FINISH);
    while (r == LZMA_OK) r = lzma_code(&s, LZMA_FINISH);
    out.resize(out.size() - s.avail_out);
    lzma_end(&s);
    if (r != LZMA_STREAM_END) return Error{"xz: compression failed"};
    return out;
  }
  Result<Bytes> decompress(ByteSpan in, size_t size) const override {
    Bytes out(size);
    uint64_t memlimit = UINT64_MAX;
    size_t inPos = 0, outPos = 0;
    if (lzma_stream_buffer_decode(&memlimit, 0, nullptr, in.data(), &inPos, in.size(), out.data(), &outPos, size) !=
            LZMA_OK ||
        outPos != size)
      return Error{"xz: decompression failed"};
    return out;
  }

private:
  uint32_t preset_;
};

class Brotli final : public PeerCodec {
public:
  explicit Brotli(int quality) : quality_(quality) {}
  std::string name() const override { return fmt::format("brotli -{}", quality_); }
  Result<Bytes> compress(ByteSpan in, unsigned) const override {
    size_t n = BrotliEncoderMaxCompressedSize(in.size());
    Bytes out(n ? n : in.size() + 1024);
    n = out.size();
    if (!BrotliEncoderCompress(quality_, 24, BROTLI_MODE_GENERIC, in.size(), in.data(), &n, out.data()))
      return Error{"brotli: compression failed"};
    out.resize(n);
    return out;
  }
  Result<Bytes> decompress(ByteSpan in, size_t size) const override {
    Bytes out(size);
    size_t n = size;
    if (BrotliDecoderDecompress(in.size(), in.data(), &n, out.data()) != BROTLI_DECODER_RESULT_SUCCESS || n != size)
      return Error{"brotli: decompression failed"};
    return out;
  }

private:
  int quality_;
};

class Lz4 final : public PeerCodec {
public:
  explicit Lz4(bool hc) : hc_(hc) {}
  std::string name() const override { return hc_ ? "lz4 -9 (HC)" : "lz4 -1"; }
  Result<Bytes> compress(ByteSpan in, unsigned) const override {
    if (in.size() > LZ4_MAX_INPUT_SIZE) return Error{"lz4: input too large"};
    Bytes out(static_cast<size_t>(LZ4_compressBound(static_cast<int>(in.size()))));
    const char *src = reinterpret_cast<const char *>(in.data());
    char *dst = reinterpret_cast<char *>(out.data());
    int n = hc_ ? LZ4_compress_HC(src, dst, static_cast<int>(in.size()), static_cast<int>(out.size()), 9)
                : LZ4_compress_default(src, dst, static_cast<int>(in.size()), static_cast<int>(out.size()));
    if (n <= 0) return Error{"lz4: compression failed"};
    out.resize(static_cast<size_t>(n));
    return out;
  }
  Result<Bytes> decompress(ByteSpan in, size_t size) const override {
    Bytes out(size);
    int n = LZ4_decompress_safe(reinterpret_cast<const char *>(in.data()), reinterpret_cast<char *>(out.data()),
                                static_cast<int>(in.size()), static_cast<int>(size));
    if (n < 0 || static_cast<size_t>(n) != size) return Error{"lz4: decompression failed"};
    return out;
  }

private:
  bool hc_;
};

class Snappy final : public PeerCodec {
public:
  std::string name() const override { return "snappy"; }
  Result<Bytes> compress(ByteSpan in, unsigned) const override {
    size_t n = snappy_max_compressed_length(in.size());
    Bytes out(n);
    if (snappy_compress(reinterpret_cast<const char *>(in.data()), in.size(), reinterpret_cast<char *>(out.data()), &n) !=
        SNAPPY_OK)
      return Error{"snappy: compression failed"};
    out.resize(n);
    return out;
  }
  Result<Bytes> decompress(ByteSpan in, size_t size) const override {
    Bytes out(size);
    size_t n = size;
    if (snappy_uncompress(reinterpret_cast<const char *>(in.data()), in.size(), reinterpret_cast<char *>(out.data()),
                          &n) != SNAPPY_OK ||
        n != size)
      return Error{"snappy: decompression failed"};
    return out;
  }
};

} // namespace

std::vector<std::unique_ptr<PeerCodec>> allPeers(const std::vector<std::string> &only) {
  std::vector<std::unique_ptr<PeerCodec>> all;
  all.push_back(std::make_unique<Zstd>(3, false));
  all.push_back(std::make_unique<Zstd>(19, false));
  all.push_back(std::make_unique<Zstd>(19, true));
  all.push_back(std::make_unique<Zlib>(6));
  all.push_back(std::make_unique<Zlib>(9));
  all.push_back(std::make_unique<Xz>(6));
  all.push_back(std::make_unique<Xz>(9));
  all.push_back(std::make_unique<Brotli>(9));
  all.push_back(std::make_unique<Lz4>(false));
  all.push_back(std::make_unique<Lz4>(true));
  all.push_back(std::make_unique<Snappy>());
  if (only.empty()) return all;
  std::vector<std::unique_ptr<PeerCodec>> kept;
  for (auto &c : all)
    if (std::find(only.begin(), only.end(), c->name()) != only.end()) kept.push_back(std::move(c));
  return kept;
}

} // namespace brevis::bench
