#pragma once
// The template strategy: one fixed program shape per dtype, built through the real AST. Float
// tensors become a merge of their IEEE fields (sign, exponent, mantissa), each a literal in the
// encoding the cost model picks; every other tensor, and every non-tensor region, is one
// literal. The search-based synthesizer replaces it as the default; it stays as its baseline.
#include "synth/Strategy.h"

namespace brevis {

class FloatFieldsStrategy final : public Strategy {
public:
  explicit FloatFieldsStrategy(const StrategyOptions &options) : policy_(options.policy) {}
  RegionProgram synthesize(const RegionInput &region) const override;

private:
  EncodePolicy policy_;
};

} // namespace brevis
