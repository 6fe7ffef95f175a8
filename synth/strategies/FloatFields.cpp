#include "synth/strategies/FloatFields.h"

#include "lang/MergeLayout.h"
#include "runtime/common/WordOps.h"
#include "synth/Literals.h"

#include <cstring>
#include <iterator>

namespace brevis {

namespace {

ExprPtr floatFieldsTensor(DType dtype, ByteSpan bytes, Bytes &payload, EncodePolicy policy) {
  const DTypeInfo &info = dtypeInfo(dtype);
  const unsigned wordBytes = info.wordBits / 8;
  const size_t n = bytes.size() / wordBytes;
  if (!info.isFloat() || n == 0) return makeLit(readWords(bytes, wordBytes), info.wordBits, payload, policy);

  // The fields where merge puts them back (lang/MergeLayout.h).
  const char *names[] = {"sign", "exp", "mant"};
  const unsigned widths[] = {info.signBits, info.exponentBits, info.mantissaBits};
  const std::vector<unsigned> shifts = mergeFieldShifts(widths);
  // Each field straight from the tensor's bytes, one field at a time: a 64-bit copy of every
  // word beside the field's would double the memory a large tensor needs (8 bytes per BF16
  // weight rather than 16).
  std::vector<MergeField> fields;
  std::vector<uint64_t> field(n);
  for (size_t k = 0; k < std::size(names); ++k) {
    const uint64_t mask = widthMask(widths[k]);
    const unsigned shift = shifts[k];
    // A load of constant size per word size (a variable-size memcpy is a call per word).
    auto extract = [&]<typename Word>(Word) {
      for (size_t i = 0; i < n; ++i) {
        Word w;
        std::memcpy(&w, bytes.data() + i * sizeof(Word), sizeof(Word)); // little-endian host
        field[i] = (uint64_t{w} >> shift) & mask;
      }
    };
    switch (wordBytes) {
    case 1: extract(uint8_t{}); break;
    case 2: extract(uint16_t{}); break;
    case 4: extract(uint32_t{}); break;
    default: extract(uint64_t{}); break;
    }
    fields.push_back(MergeField{names[k], makeLit(field, widths[k], payload, policy)});
  }
  return Merge::make(std::move(fields));
}

} // namespace

RegionProgram FloatFieldsStrategy::synthesize(const RegionInput &region) const {
  RegionProgram out;
  switch (region.kind) {
  case RegionKind::Tensor: out.program = floatFieldsTensor(region.dtype, region.bytes, out.payload, policy_); break;
  case RegionKind::Header:
    if ((out.program = makeHeaderText(region.bytes))) break;
    [[fallthrough]];
  case RegionKind::Bytes: out.program = makeLit(readWords(region.bytes, 1), 8, out.payload, policy_); break;
  }
  return out;
}

} // namespace brevis
