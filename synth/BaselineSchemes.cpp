#include "synth/BaselineSchemes.h"

#include "runtime/common/WordOps.h"
#include "synth/Literals.h"

namespace brevis {

namespace {
ExprPtr huffmanOrRaw(std::span<const uint64_t> words, unsigned width, Bytes &payload) {
  return makeLitFrom(words, width, payload, {Encoding::Raw, Encoding::Huffman});
}
} // namespace

ExprPtr zipnnTensor(DType dtype, ByteSpan bytes, Bytes &payload) {
  const DTypeInfo &info = dtypeInfo(dtype);
  const unsigned wordBytes = info.wordBits / 8;
  std::vector<uint64_t> words = readWords(bytes, wordBytes);
  if (!info.isFloat() || wordBytes < 2 || words.empty()) return huffmanOrRaw(words, info.wordBits, payload);
  std::vector<MergeField> planes;
  std::vector<uint64_t> plane(words.size());
  for (unsigned b = wordBytes; b-- > 0;) { // most significant byte first, as merge lists fields
    for (size_t i = 0; i < words.size(); ++i) plane[i] = (words[i] >> (8 * b)) & 0xff;
    planes.push_back(MergeField{"byte" + std::to_string(b), huffmanOrRaw(plane, 8, payload)});
  }
  return Merge::make(std::move(planes));
}

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

} // namespace brevis
