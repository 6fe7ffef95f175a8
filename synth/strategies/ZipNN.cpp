#include "synth/strategies/ZipNN.h"

#include "synth/Literals.h"

#include <string>

namespace brevis {

namespace {

ExprPtr zipnnTensor(DType dtype, ByteSpan bytes, Bytes &payload) {
  const DTypeInfo &info = dtypeInfo(dtype);
  const unsigned wordBytes = info.wordBits / 8;
  std::vector<uint64_t> words = readWords(bytes, wordBytes);
  if (!info.isFloat() || wordBytes < 2 || words.empty()) return makeHuffmanOrRawLit(words, info.wordBits, payload);
  std::vector<MergeField> planes;
  std::vector<uint64_t> plane(words.size());
  for (unsigned b = wordBytes; b-- > 0;) { // most significant byte first, as merge lists fields
    for (size_t i = 0; i < words.size(); ++i) plane[i] = (words[i] >> (8 * b)) & 0xff;
    planes.push_back(MergeField{"byte" + std::to_string(b), makeHuffmanOrRawLit(plane, 8, payload)});
  }
  return Merge::make(std::move(planes));
}

} // namespace

RegionProgram ZipNNStrategy::synthesize(const RegionInput &region) const {
  RegionProgram out;
  switch (region.kind) {
  case RegionKind::Tensor: out.program = zipnnTensor(region.dtype, region.bytes, out.payload); break;
  case RegionKind::Header:
  case RegionKind::Bytes: out.program = makeHuffmanOrRawLit(readWords(region.bytes, 1), 8, out.payload); break;
  }
  return out;
}

} // namespace brevis
