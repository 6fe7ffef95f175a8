// Benchmark: the literal codecs against zstd on the same streams, one core, in one run.
//
//   codec_bench [--mib N] [--runs R] CHECKPOINT...     speed and size table (Markdown)
//   codec_bench --order1 CHECKPOINT...                 rans_o1 vs rans on float exponents
//   codec_bench --context [--runs R] CHECKPOINT...     `context` decoding speed, per kind of stream
//
// Streams: the BF16/F16/F32 exponent bytes of the given checkpoints, tiled to N MiB (default
// 64); their U8 tensors' bytes, tiled likewise (if they have any); their JSON headers, one after
// another (not tiled: repeats of a header would be matches no real header has); and N MiB of
// uniformly random bytes. Throughput is in MB/s of the stream's bytes, the median of R runs
// (default 5).
#include "codegen/JitDecoder.h"
#include "runtime/containers/FileIO.h"
#include "runtime/codecs/context/ContextCodec.h"
#include "runtime/codecs/huffman/HuffmanDecode.h"
#include "runtime/codecs/huffman/HuffmanEncode.h"
#include "runtime/codecs/LitDecode.h"
#include "runtime/codecs/LitEncode.h"
#include "runtime/codecs/rans/RansCodec.h"
#include "runtime/codecs/zstd/ZstdCodec.h"
#include "runtime/containers/Safetensors.h"
#include "synth/CostModel.h"

#include <fmt/format.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace brevis;

namespace {

/// Seconds each of `runs` calls of f took, the fastest first.
std::vector<double> sortedSeconds(int runs, const std::function<void()> &f) {
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t;
}

double medianSeconds(int runs, const std::function<void()> &f) {
  const auto t = sortedSeconds(runs, f);
  return t[t.size() / 2];
}

/// The fastest of `runs`: on a shared machine, the run least slowed by others.
double fastestSeconds(int runs, const std::function<void()> &f) { return sortedSeconds(runs, f).front(); }

/// Exponent bytes of every float tensor of a safetensors file.
std::vector<uint8_t> exponentBytes(const Bytes &file) {
  std::vector<uint8_t> out;
  auto layout = parseSafetensors(file);
  if (!layout) return out;
  for (const auto &t : layout->tensors) {
    const auto &info = dtypeInfo(t.dtype);
    if (!info.isFloat() || info.exponentBits > 8) continue;
    unsigned bytes = info.wordBits / 8;
    for (uint64_t at = t.begin; at + bytes <= t.end; at += bytes) {
      uint64_t w = 0;
      std::memcpy(&w, file.data() + at, bytes);
      out.push_back(static_cast<uint8_t>((w >> info.mantissaBits) & widthMask(info.exponentBits)));
    }
  }
  return out;
}

/// The bytes of every U8 tensor of a safetensors file.
std::vector<uint8_t> u8TensorBytes(const Bytes &file) {
  std::vector<uint8_t> out;
  auto layout = parseSafetensors(file);
  if (!layout) return out;
  for (const auto &t : layout->tensors)
    if (t.dtype == DType::U8) out.insert(out.end(), file.begin() + t.begin, file.begin() + t.end);
  return out;
}

/// The JSON header of a safetensors file.
std::vector<uint8_t> headerBytes(const Bytes &file) {
  auto layout = parseSafetensors(file);
  if (!layout) return {};
  return std::vector<uint8_t>(file.begin() + 8, file.begin() + layout->headerSize);
}

std::vector<uint8_t> tiled(const std::vector<uint8_t> &s, size_t target) {
  std::vector<uint8_t> out;
  out.reserve(target);
  while (out.size() < target) out.insert(out.end(), s.begin(), s.begin() + std::min(s.size(), target - out.size()));
  return out;
}

double entropyBytes(const std::vector<uint8_t> &s) {
  uint64_t counts[256] = {};
  for (uint8_t b : s) ++counts[b];
  double bits = 0;
  for (uint64_t c : counts)
    if (c) bits -= static_cast<double>(c) * std::log2(static_cast<double>(c) / static_cast<double>(s.size()));
  return bits / 8;
}

struct Row {
  std::string codec;
  uint64_t size;
  double encodeSeconds, decodeSeconds;
};

void report(const std::string &name, const std::vector<uint8_t> &stream, int runs) {
  const double mb = static_cast<double>(stream.size()) / 1e6;
  std::vector<Row> rows;
  std::vector<uint64_t> words(stream.begin(), stream.end());

  for (int level : {1, 3}) {
    Bytes packed(ZSTD_compressBound(stream.size()));
    size_t size = 0;
    double enc = medianSeconds(runs, [&] { size = ZSTD_compress(packed.data(), packed.size(), stream.data(), stream.size(), level); });
    std::vector<uint8_t> back(stream.size());
    double dec = medianSeconds(runs, [&] { ZSTD_decompress(back.data(), back.size(), packed.data(), size); });
    if (back != stream) fmt::print(stderr, "zstd round trip failed\n");
    rows.push_back({fmt::format("zstd -{}", level), size, enc, dec});
  }

  {
    Bytes packed;
    double enc = medianSeconds(runs, [&] {
      packed.clear();
      encodeHuffman(words, 8, packed);
    });
    auto decoder = HuffmanDecoder::create(packed, 8, words.size());
    std::vector<uint8_t> symbols(decoder ? (*decoder)->blockWords() : 0);
    bool ok = true;
    double dec = medianSeconds(runs, [&] {
      for (size_t b = 0; b < (*decoder)->blockCount(); ++b) ok &= static_cast<bool>((*decoder)->decodeBlock(b, symbols.data()));
    });
    if (!ok) fmt::print(stderr, "huffman decode failed\n");
    rows.push_back({"brevis huffman", packed.size(), enc, dec});
  }

  for (unsigned order : {0u, 1u}) {
    Bytes packed;
    double enc = medianSeconds(runs, [&] {
      packed.clear();
      encodeRans(words, order, packed);
    });
    // A payload's slack follows the frames, as decoders may read it (Payload.h).
    Payload framed = Payload::fromBytes(packed);
    auto decoder = RansDecoder::create(ByteSpan(framed.data(), framed.size()), 8, words.size());
    // As the interpreter decodes them: kBlocksTogether blocks at a time.
    const size_t together = RansDecoder::kBlocksTogether;
    std::vector<uint8_t> out((*decoder)->blockWords() * together);
    bool ok = true;
    double dec = medianSeconds(runs, [&] {
      for (size_t b = 0; b < (*decoder)->blockCount(); b += together)
        ok &= static_cast<bool>(
            (*decoder)->decodeBlocks(b, std::min(together, (*decoder)->blockCount() - b), out.data()));
    });
    if (!ok) fmt::print(stderr, "rans decode failed\n");
    rows.push_back({order ? "brevis rans_o1" : "brevis rans", packed.size(), enc, dec});
  }

  // The zstd levels of brevisc's --level 1, 5 and 9; the highest once (it encodes at a few MB/s).
  for (int level : {policyForLevel(1).zstdLevel, policyForLevel(5).zstdLevel, policyForLevel(9).zstdLevel}) {
    const int levelRuns = level > policyForLevel(5).zstdLevel ? 1 : runs;
    Bytes packed;
    double enc = medianSeconds(levelRuns, [&] {
      packed.clear();
      encodeLit(Encoding::Zstd, words, 8, packed, level);
    });
    auto decoder = ZstdDecoder::create(packed, 8, words.size());
    std::vector<uint8_t> out((*decoder)->blockWords());
    bool ok = true;
    double dec = medianSeconds(runs, [&] {
      for (size_t b = 0; b < (*decoder)->blockCount(); ++b)
        ok &= static_cast<bool>((*decoder)->decodeBlock(b, out.data()));
    });
    if (!ok) fmt::print(stderr, "zstd decode failed\n");
    rows.push_back({fmt::format("brevis zstd, level {}", level), packed.size(), enc, dec});
  }

  { // The adaptive context coder: one range-coder step per bit.
    Bytes packed;
    double enc = medianSeconds(runs, [&] {
      packed.clear();
      encodeLit(Encoding::Context, words, 8, packed);
    });
    auto decoder = ContextDecoder::create(packed, 8, words.size());
    std::vector<uint8_t> out((*decoder)->blockWords());
    bool ok = true;
    double dec = medianSeconds(runs, [&] {
      for (size_t b = 0; b < (*decoder)->blockCount(); ++b)
        ok &= static_cast<bool>((*decoder)->decodeBlock(b, out.data()));
    });
    if (!ok) fmt::print(stderr, "context decode failed\n");
    rows.push_back({"brevis context", packed.size(), enc, dec});
  }

  for (Encoding e : {Encoding::Raw, Encoding::Bitpack}) {
    Bytes packed;
    double enc = medianSeconds(runs, [&] {
      packed.clear();
      encodeLit(e, words, 8, packed);
    });
    Payload payload = Payload::fromBytes(packed);
    auto lit = Lit::make(StreamType{8, words.size()}, e, ByteRange{0, packed.size()});
    // The interpreter's kernel: words straight into bytes (decodeLitNarrow), 64 KiB at a time.
    std::vector<uint8_t> out(1 << 16);
    double dec = medianSeconds(runs, [&] {
      for (uint64_t at = 0; at < words.size(); at += out.size())
        decodeLitNarrow(*lit, payload, at, std::min<uint64_t>(out.size(), words.size() - at), out.data());
    });
    rows.push_back({fmt::format("brevis {}", encodingName(e)), packed.size(), enc, dec});

    // The same literal as a whole region through the JIT: what `--jit` decoding runs, bytes out.
    Region region;
    region.kind = RegionKind::Bytes;
    region.bytes = ByteRange{0, words.size()};
    region.program = Lit::make(StreamType{8, words.size()}, e, ByteRange{0, packed.size()});
    auto jit = JitDecoder::create({});
    DiscardSink sink;
    double jitDec = medianSeconds(runs, [&] { (void)(*jit)->decode(region, payload, sink); });
    rows.push_back({fmt::format("brevis {} (JIT)", encodingName(e)), packed.size(), enc, jitDec});
  }

  {
    // Bit-packing at an odd width (7 bits: the BF16 mantissa field), the JIT's shifted loads.
    std::vector<uint64_t> seven(words.size());
    for (size_t i = 0; i < words.size(); ++i) seven[i] = words[i] & 0x7f;
    Bytes packed;
    double enc = medianSeconds(runs, [&] {
      packed.clear();
      encodeLit(Encoding::Bitpack, seven, 7, packed);
    });
    Payload payload = Payload::fromBytes(packed);
    Region region;
    region.kind = RegionKind::Bytes;
    region.bytes = ByteRange{0, seven.size()};
    region.program = Lit::make(StreamType{7, seven.size()}, Encoding::Bitpack, ByteRange{0, packed.size()});
    auto jit = JitDecoder::create({});
    DiscardSink sink;
    auto lit = Lit::make(StreamType{7, seven.size()}, Encoding::Bitpack, ByteRange{0, packed.size()});
    std::vector<uint8_t> out(1 << 16);
    double dec = medianSeconds(runs, [&] {
      for (uint64_t at = 0; at < seven.size(); at += out.size())
        decodeLitNarrow(*lit, payload, at, std::min<uint64_t>(out.size(), seven.size() - at), out.data());
    });
    rows.push_back({"brevis bitpack, 7 bits of each byte", packed.size(), enc, dec});
    double jitDec = medianSeconds(runs, [&] { (void)(*jit)->decode(region, payload, sink); });
    rows.push_back({"brevis bitpack, 7 bits of each byte (JIT)", packed.size(), enc, jitDec});
  }

  double h0 = entropyBytes(stream);
  // What an adaptive-per-block order-0 coder can reach: the sum of each 2^20-byte block's entropy.
  double blockEntropy = 0;
  for (size_t at = 0; at < stream.size(); at += kRansBlockWords) {
    std::vector<uint8_t> block(stream.begin() + at, stream.begin() + std::min(stream.size(), at + kRansBlockWords));
    blockEntropy += entropyBytes(block);
  }
  const Row *rans = nullptr;
  for (const Row &r : rows)
    if (r.codec == "brevis rans") rans = &r;
  fmt::print("\n### {} ({:.1f} MiB, order-0 entropy {:.4f} bits/byte)\n\n", name,
             static_cast<double>(stream.size()) / (1 << 20), 8 * h0 / static_cast<double>(stream.size()));
  fmt::print("| codec | size | vs entropy | encode MB/s | decode MB/s | decode vs zstd -1 | encode vs zstd -3 |\n");
  fmt::print("|---|---|---|---|---|---|---|\n");
  const Row &z1 = rows[0], &z3 = rows[1];
  for (const Row &r : rows)
    fmt::print("| {} | {:.2f}% | {:+.2f}% | {:.0f} | {:.0f} | {:.2f}x | {:.2f}x |\n", r.codec,
               100.0 * static_cast<double>(r.size) / static_cast<double>(stream.size()),
               100.0 * (static_cast<double>(r.size) - h0) / h0, mb / r.encodeSeconds, mb / r.decodeSeconds,
               z1.decodeSeconds / r.decodeSeconds, z3.encodeSeconds / r.encodeSeconds);
  if (rans)
    fmt::print("\nrans is {:+.3f}% from the sum of its blocks' order-0 entropies ({} bytes; the difference is "
               "tables and framing)\n",
               100.0 * (static_cast<double>(rans->size) - blockEntropy) / blockEntropy,
               static_cast<uint64_t>(blockEntropy));
}

void order1Report(const std::vector<std::string> &files) {
  fmt::print("| checkpoint | exponent bytes | rans | rans_o1 | gain |\n|---|---|---|---|---|\n");
  for (const auto &path : files) {
    auto file = readFile(path);
    if (!file) continue;
    auto exps = exponentBytes(*file);
    if (exps.empty()) continue;
    // Per tensor, as the synthesizer codes them, summed over the file.
    auto layout = parseSafetensors(*file);
    uint64_t o0 = 0, o1 = 0;
    for (const auto &t : layout->tensors) {
      const auto &info = dtypeInfo(t.dtype);
      if (!info.isFloat() || info.exponentBits > 8 || t.end == t.begin) continue;
      std::vector<uint64_t> words;
      unsigned bytes = info.wordBits / 8;
      for (uint64_t at = t.begin; at + bytes <= t.end; at += bytes) {
        uint64_t w = 0;
        std::memcpy(&w, file->data() + at, bytes);
        words.push_back((w >> info.mantissaBits) & widthMask(info.exponentBits));
      }
      Bytes a, b;
      encodeRans(words, 0, a);
      encodeRans(words, 1, b);
      o0 += a.size();
      o1 += b.size();
    }
    std::string name = path.substr(path.find_last_of('/') + 1);
    fmt::print("| {} | {} | {} | {} | {:+.2f}% |\n", name, exps.size(), o0, o1,
               100.0 * (static_cast<double>(o0) - static_cast<double>(o1)) / static_cast<double>(o0));
  }
}

/// `context` literals as a decoder meets them: each tensor's stream of one kind coded as the
/// synthesizer would code it alone (escape word and raw low bits chosen by encodeLit), all of
/// one kind decoded one after another; words per second and nanoseconds per word, the fastest
/// of `runs`. Kinds: a 16-bit float's top 9 bits (sign, exponent, 3 mantissa bits: an F16
/// tensor's upper field), its whole word (two lanes), its exponent byte, a U8 tensor's bytes.
void contextReport(const std::vector<std::string> &files, int runs) {
  struct Kind {
    std::string name;
    unsigned width;
    std::vector<Bytes> payloads = {};
    std::vector<std::vector<uint64_t>> streams = {};
    uint64_t words = 0, bytes = 0;
  };
  std::vector<Kind> kinds{{"F16 top 9 bits", 9}, {"16-bit float words", 16}, {"float exponent bytes", 8},
                          {"U8 tensor bytes", 8}};
  auto add = [](Kind &k, const std::vector<uint64_t> &words) {
    if (words.size() < 4096) return; // small ones measure the setup, not the coder
    Bytes packed;
    encodeLit(Encoding::Context, words, k.width, packed);
    k.payloads.push_back(std::move(packed));
    k.streams.push_back(words);
    k.words += words.size();
    k.bytes += k.payloads.back().size();
  };
  for (const auto &path : files) {
    auto file = readFile(path);
    if (!file) continue;
    auto layout = parseSafetensors(*file);
    if (!layout) continue;
    for (const auto &t : layout->tensors) {
      const auto &info = dtypeInfo(t.dtype);
      const uint8_t *at = file->data() + t.begin;
      const uint64_t n = (t.end - t.begin) / std::max(1u, info.wordBits / 8);
      std::vector<uint64_t> top, whole, exps;
      if (t.dtype == DType::U8) add(kinds[3], std::vector<uint64_t>(at, at + n));
      if (!info.isFloat() || info.wordBits != 16) continue;
      for (uint64_t i = 0; i < n; ++i) {
        uint16_t w;
        std::memcpy(&w, at + 2 * i, 2);
        if (t.dtype == DType::F16) top.push_back(w >> 7);
        whole.push_back(w);
        exps.push_back((w >> info.mantissaBits) & widthMask(info.exponentBits));
      }
      add(kinds[0], top);
      add(kinds[1], whole);
      add(kinds[2], exps);
    }
  }
  fmt::print("| stream | tensors | words | coded | M words/s | ns/word |\n|---|---:|---:|---:|---:|---:|\n");
  for (const Kind &k : kinds) {
    if (k.payloads.empty()) continue;
    std::vector<std::unique_ptr<ContextDecoder>> decoders;
    for (size_t i = 0; i < k.payloads.size(); ++i)
      decoders.push_back(std::move(*ContextDecoder::create(k.payloads[i], k.width, k.streams[i].size())));
    // As the interpreter decodes them: into the narrowest words that hold them.
    std::vector<uint16_t> out(kContextBlockWords);
    bool ok = true;
    for (size_t i = 0; i < decoders.size(); ++i) { // every word, once, before the timing
      auto lit = Lit::make(StreamType{k.width, k.streams[i].size()}, Encoding::Context, ByteRange{0, k.payloads[i].size()});
      auto back = decodeLit(*lit, Payload::fromBytes(k.payloads[i]));
      ok &= back && *back == k.streams[i];
    }
    const double s = fastestSeconds(runs, [&] {
      for (const auto &d : decoders)
        for (size_t b = 0; b < d->blockCount(); ++b)
          ok &= static_cast<bool>(k.width <= 8 ? d->decodeBlock(b, reinterpret_cast<uint8_t *>(out.data()))
                                               : d->decodeBlock(b, out.data()));
    });
    if (!ok) fmt::print(stderr, "context decode failed\n");
    const double words = static_cast<double>(k.words);
    fmt::print("| {} | {} | {} | {:.1f}% | {:.1f} | {:.2f} |\n", k.name, k.payloads.size(), k.words,
               100.0 * static_cast<double>(k.bytes) / (words * k.width / 8), words / s / 1e6, s * 1e9 / words);
  }
}

} // namespace

int main(int argc, char **argv) {
  size_t mib = 64;
  int runs = 5;
  bool order1 = false, context = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--mib" && i + 1 < argc) mib = std::stoul(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) runs = std::stoi(argv[++i]);
    else if (a == "--order1") order1 = true;
    else if (a == "--context") context = true;
    else files.push_back(a);
  }
  if (files.empty()) {
    fmt::print(stderr, "usage: codec_bench [--mib N] [--runs R] [--order1 | --context] CHECKPOINT...\n");
    return 2;
  }
  if (order1) {
    order1Report(files);
    return 0;
  }
  if (context) {
    contextReport(files, runs);
    return 0;
  }
  std::vector<uint8_t> exps, u8s, headers;
  for (const auto &f : files) {
    auto file = readFile(f);
    if (!file) {
      fmt::print(stderr, "{}\n", file.error().message);
      return 1;
    }
    auto e = exponentBytes(*file);
    exps.insert(exps.end(), e.begin(), e.end());
    auto u = u8TensorBytes(*file);
    u8s.insert(u8s.end(), u.begin(), u.end());
    auto h = headerBytes(*file);
    headers.insert(headers.end(), h.begin(), h.end());
  }
  if (exps.empty()) {
    fmt::print(stderr, "no float exponents in the given files\n");
    return 1;
  }
  const size_t target = mib << 20;
  std::vector<uint8_t> random(target);
  std::mt19937_64 rng(1);
  for (auto &b : random) b = static_cast<uint8_t>(rng());
  report("BF16 exponent bytes", tiled(exps, target), runs);
  if (!u8s.empty()) report("U8 tensor bytes", tiled(u8s, target), runs);
  report("safetensors JSON headers", headers, runs);
  report("uniformly random bytes", random, runs);
  return 0;
}
