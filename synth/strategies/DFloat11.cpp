#include "synth/strategies/DFloat11.h"

#include "runtime/common/WordOps.h"
#include "synth/Literals.h"

namespace brevis {

namespace {

ExprPtr dfloat11Tensor(DType dtype, ByteSpan bytes, Bytes &payload) {
  const DTypeInfo &info = dtypeInfo(dtype);
  std::vector<uint64_t> words = readWords(bytes, info.wordBits / 8);
  if (dtype != DType::BF16 || words.empty())
    return makeLitFrom(words, info.wordBits, payload, {Encoding::Raw});
  std::vector<uint64_t> field(words.size());
  std::vector<MergeField> fields;
  auto add = [&](const char *name, unsigned width, unsigned shift, std::initializer_list<Encoding> encodings) {
    for (size_t i = 0; i < words.size(); ++i) field[i] = (words[i] >> shift) & widthMask(width);
    fields.push_back(MergeField{name, makeLitFrom(field, width, payload, encodings)});
  };
  add("sign", 1, 15, {Encoding::Bitpack});
  add("exp", 8, 7, {Encoding::Raw, Encoding::Huffman});
  add("mant", 7, 0, {Encoding::Bitpack});
  return Merge::make(std::move(fields));
}

} // namespace

RegionProgram DFloat11Strategy::synthesize(const RegionInput &region) const {
  RegionProgram out;
  switch (region.kind) {
  case RegionKind::Tensor: out.program = dfloat11Tensor(region.dtype, region.bytes, out.payload); break;
  case RegionKind::Header:
  case RegionKind::Bytes: out.program = makeHuffmanOrRawLit(readWords(region.bytes, 1), 8, out.payload); break;
  }
  return out;
}

} // namespace brevis
