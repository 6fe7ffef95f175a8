#include "synth/TemplateSynth.h"

#include "runtime/Checksum.h"
#include "runtime/LitEncode.h"
#include "runtime/Safetensors.h"

#include <cstring>

namespace brevis {

namespace {

std::vector<uint64_t> readWords(ByteSpan bytes, unsigned wordBytes) {
  std::vector<uint64_t> words(bytes.size() / wordBytes);
  for (size_t i = 0; i < words.size(); ++i) {
    uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i * wordBytes, wordBytes); // little-endian host
    words[i] = w;
  }
  return words;
}

/// A literal of `words` in its smallest encoding, its payload appended to `payload`.
ExprPtr makeLit(std::span<const uint64_t> words, unsigned width, Bytes &payload) {
  uint64_t offset = payload.size();
  Encoding enc = encodeSmallest(words, width, payload);
  return Lit::make(StreamType{width, words.size()}, enc, ByteRange{offset, payload.size() - offset});
}

ExprPtr bytesProgram(ByteSpan bytes, Bytes &payload) {
  return makeLit(readWords(bytes, 1), 8, payload);
}

Region bytesRegion(RegionKind kind, ByteSpan file, uint64_t begin, uint64_t end, Bytes &payload) {
  Region r;
  r.kind = kind;
  r.bytes = ByteRange{begin, end - begin};
  r.program = bytesProgram(file.subspan(begin, end - begin), payload);
  return r;
}

} // namespace

ExprPtr synthesizeTensor(DType dtype, ByteSpan bytes, Bytes &payload) {
  const DTypeInfo &info = dtypeInfo(dtype);
  std::vector<uint64_t> words = readWords(bytes, info.wordBits / 8);
  if (!info.isFloat() || words.empty()) return makeLit(words, info.wordBits, payload);

  struct FieldSpec {
    const char *name;
    unsigned width, shift;
  };
  const FieldSpec specs[] = {
      {"sign", info.signBits, info.exponentBits + info.mantissaBits},
      {"exp", info.exponentBits, info.mantissaBits},
      {"mant", info.mantissaBits, 0},
  };
  std::vector<MergeField> fields;
  std::vector<uint64_t> field(words.size());
  for (const auto &spec : specs) {
    for (size_t i = 0; i < words.size(); ++i) field[i] = (words[i] >> spec.shift) & widthMask(spec.width);
    fields.push_back(MergeField{spec.name, makeLit(field, spec.width, payload)});
  }
  return Merge::make(std::move(fields));
}

SynthOutput synthesizeTemplate(ByteSpan file, const std::string &sourceName, const std::string &payloadName) {
  SynthOutput out;
  Checkpoint &c = out.checkpoint;
  c.version = kLanguageVersion;
  c.source = SourceInfo{sourceName, file.size(), xxh64(file)};
  c.payloadFile = payloadName;

  auto layout = parseSafetensors(file);
  if (!layout) {
    out.notSafetensorsReason = layout.error().message;
    c.regions.push_back(bytesRegion(RegionKind::Bytes, file, 0, file.size(), out.payload));
  } else {
    c.regions.push_back(bytesRegion(RegionKind::Header, file, 0, layout->headerSize, out.payload));
    uint64_t at = layout->headerSize;
    for (const auto &t : layout->tensors) {
      if (t.begin > at) c.regions.push_back(bytesRegion(RegionKind::Bytes, file, at, t.begin, out.payload));
      Region r;
      r.kind = RegionKind::Tensor;
      r.name = t.name;
      r.dtype = t.dtype;
      r.shape = t.shape;
      r.bytes = ByteRange{t.begin, t.end - t.begin};
      r.program = synthesizeTensor(t.dtype, file.subspan(t.begin, t.end - t.begin), out.payload);
      c.regions.push_back(std::move(r));
      at = t.end;
    }
    if (file.size() > at) c.regions.push_back(bytesRegion(RegionKind::Bytes, file, at, file.size(), out.payload));
  }
  c.payloadSize = out.payload.size();
  return out;
}

} // namespace brevis
