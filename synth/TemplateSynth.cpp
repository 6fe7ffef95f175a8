#include "synth/TemplateSynth.h"

#include "runtime/containers/Checksum.h"
#include "runtime/codecs/LitEncode.h"
#include "runtime/containers/Safetensors.h"
#include "runtime/execution/ThreadPool.h"
#include "synth/BaselineSchemes.h"
#include "synth/Literals.h"

#include <atomic>
#include <cstring>
#include <optional>

namespace brevis {

namespace {

ExprPtr bytesProgram(ByteSpan bytes, Bytes &payload, EncodePolicy policy) {
  return makeLit(readWords(bytes, 1), 8, payload, policy);
}

} // namespace

ExprPtr synthesizeTensor(DType dtype, ByteSpan bytes, Bytes &payload, EncodePolicy policy) {
  const DTypeInfo &info = dtypeInfo(dtype);
  const unsigned wordBytes = info.wordBits / 8;
  const size_t n = bytes.size() / wordBytes;
  if (!info.isFloat() || n == 0) return makeLit(readWords(bytes, wordBytes), info.wordBits, payload, policy);

  struct FieldSpec {
    const char *name;
    unsigned width, shift;
  };
  const FieldSpec specs[] = {
      {"sign", info.signBits, info.exponentBits + info.mantissaBits},
      {"exp", info.exponentBits, info.mantissaBits},
      {"mant", info.mantissaBits, 0},
  };
  // Each field straight from the tensor's bytes, one field at a time: a 64-bit copy of every
  // word beside the field's would double the memory a large tensor needs (8 bytes per BF16
  // weight rather than 16).
  std::vector<MergeField> fields;
  std::vector<uint64_t> field(n);
  for (const auto &spec : specs) {
    const uint64_t mask = widthMask(spec.width);
    // A load of constant size per word size (a variable-size memcpy is a call per word).
    auto extract = [&]<typename Word>(Word) {
      for (size_t i = 0; i < n; ++i) {
        Word w;
        std::memcpy(&w, bytes.data() + i * sizeof(Word), sizeof(Word)); // little-endian host
        field[i] = (uint64_t{w} >> spec.shift) & mask;
      }
    };
    switch (wordBytes) {
    case 1: extract(uint8_t{}); break;
    case 2: extract(uint16_t{}); break;
    case 4: extract(uint32_t{}); break;
    default: extract(uint64_t{}); break;
    }
    fields.push_back(MergeField{spec.name, makeLit(field, spec.width, payload, policy)});
  }
  return Merge::make(std::move(fields));
}

namespace {

/// Adds `base` to the payload offset of every literal of `e`.
void rebase(Expr &e, uint64_t base) {
  if (e.kind == NodeKind::Lit) {
    Lit &l = as<Lit>(e);
    if (!l.isInline()) l.data = ByteRange{l.payload().offset + base, l.payload().size};
    return;
  }
  for (Expr *c : children(e)) rebase(*c, base);
}

} // namespace

SynthOutput synthesizeTemplate(ByteSpan file, const std::string &sourceName, const std::string &payloadName,
                               const SynthOptions &options) {
  SynthOutput out;
  Checkpoint &c = out.checkpoint;
  c.version = kLanguageVersion;
  c.source = SourceInfo{sourceName, file.size(), xxh64(file)};
  c.payloadFile = payloadName;

  // The regions first (bytes only), then their programs, each into its own payload buffer.
  auto layout = parseSafetensors(file);
  auto addBytes = [&](RegionKind kind, uint64_t begin, uint64_t end) {
    Region r;
    r.kind = kind;
    r.bytes = ByteRange{begin, end - begin};
    c.regions.push_back(std::move(r));
  };
  if (!layout) {
    out.notSafetensorsReason = layout.error().message;
    addBytes(RegionKind::Bytes, 0, file.size());
  } else {
    addBytes(RegionKind::Header, 0, layout->headerSize);
    uint64_t at = layout->headerSize;
    for (const auto &t : layout->tensors) {
      if (t.begin > at) addBytes(RegionKind::Bytes, at, t.begin);
      Region r;
      r.kind = RegionKind::Tensor;
      r.name = t.name;
      r.dtype = t.dtype;
      r.shape = t.shape;
      r.bytes = ByteRange{t.begin, t.end - t.begin};
      c.regions.push_back(std::move(r));
      at = t.end;
    }
    if (file.size() > at) addBytes(RegionKind::Bytes, at, file.size());
  }

  std::vector<Bytes> payloads(c.regions.size());
  parallelFor(c.regions.size(), options.threads, [&](size_t i) {
    {
      Region &r = c.regions[i];
      ByteSpan bytes = file.subspan(r.bytes.offset, r.bytes.size);
      struct Done {
        std::atomic<uint64_t> *progress;
        uint64_t bytes;
        ~Done() {
          if (progress) progress->fetch_add(bytes, std::memory_order_relaxed);
        }
      } done{options.progress, r.bytes.size};
      if (r.kind != RegionKind::Tensor) {
        r.program = options.scheme == TensorScheme::FloatFields
                        ? bytesProgram(bytes, payloads[i], options.policy)
                        : makeLitFrom(readWords(bytes, 1), 8, payloads[i], {Encoding::Raw, Encoding::Huffman});
        return;
      }
      switch (options.scheme) {
      case TensorScheme::FloatFields: r.program = synthesizeTensor(r.dtype, bytes, payloads[i], options.policy); break;
      case TensorScheme::ZipNN: r.program = zipnnTensor(r.dtype, bytes, payloads[i]); break;
      case TensorScheme::DFloat11: r.program = dfloat11Tensor(r.dtype, bytes, payloads[i]); break;
      }
    }
  });

  size_t total = 0;
  for (const Bytes &p : payloads) total += p.size();
  out.payload.reserve(total);
  for (size_t i = 0; i < c.regions.size(); ++i) {
    rebase(*c.regions[i].program, out.payload.size());
    out.payload.insert(out.payload.end(), payloads[i].begin(), payloads[i].end());
    Bytes().swap(payloads[i]);
  }
  c.payloadSize = out.payload.size();
  return out;
}

} // namespace brevis
