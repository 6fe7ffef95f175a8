#include "synth/strategies/Search.h"

#include "synth/Literals.h"

namespace brevis {

RegionProgram SearchStrategy::synthesize(const RegionInput &region) const {
  const bool tensor = region.kind == RegionKind::Tensor;
  const DTypeInfo &info = dtypeInfo(tensor ? region.dtype : DType::U8);
  const unsigned width = info.wordBits;
  const std::vector<uint64_t> words = readWords(region.bytes, width / 8);
  const HoleContext context{tensor && info.isFloat() ? &info : nullptr,
                            tensor ? region.shape : std::span<const uint64_t>{}};

  HoleSearch search(policy_, limits_);
  const Plan best = search.solve(words, width, context);
  RegionProgram out;
  out.program = search.emit(best, words, width, out.payload);

  // Estimates err by up to kEstimateRelative + kEstimateAbsolute: where the template's estimate
  // is within that of the winner's, both are encoded and the smaller kept, so that a search result
  // is never larger than the template's.
  const Plan baseline = search.templatePlan(words, width, context);
  if (!samePlanShape(best, baseline) &&
      baseline.cost - best.cost < kEstimateRelative * baseline.cost + static_cast<double>(kEstimateAbsolute)) {
    RegionProgram alternative;
    alternative.program = search.emit(baseline, words, width, alternative.payload);
    if (static_cast<double>(alternative.payload.size()) + planTextBytes(baseline) <
        static_cast<double>(out.payload.size()) + planTextBytes(best))
      out = std::move(alternative);
  }
  return out;
}

} // namespace brevis
