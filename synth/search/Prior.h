#pragma once
// The search's prior over productions: how likely each candidate (a merge layout family, a
// concat at runs, a repeat, a scan, a literal of whole words) is to win at a hole, given cheap
// facts about the hole's stream (its dtype or width, whether it is a region's own stream, its
// fraction of zero words and of distinct words in a fixed probe). Learned by counting the
// winners of an unbudgeted search on a deterministic sample of a checkpoint's tensors
// (strategies/Search, prepare), or loaded from a file (`brevisc prior learn`, `--prior`).
// The search tries candidates in decreasing prior probability, so that a small budget is spent
// on the likely ones first; without a prior, in a fixed order.
#include "lang/DType.h"
#include "lang/Result.h"
#include "runtime/common/Words.h"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

namespace brevis {

/// The facts a production's probability is conditioned on, as one key ("bf16|top|z0|d3").
std::string priorContext(WordsView words, unsigned width, const DTypeInfo *floatType, bool top);

class ProductionPrior {
public:
  void count(const std::string &context, const std::string &production, uint64_t times = 1);
  void add(const ProductionPrior &other);
  /// P(production | context), smoothed towards P(production | the context's dtype part), which
  /// is smoothed towards uniform: a context never seen still orders by its dtype's winners.
  double probability(const std::string &context, const std::string &production) const;
  bool empty() const { return contexts_.empty(); }
  uint64_t observations() const;

  std::string toJson() const;
  static Result<ProductionPrior> fromJson(std::string_view text);

private:
  std::map<std::string, std::map<std::string, uint64_t>> contexts_; ///< context -> production -> wins
  std::map<std::string, std::map<std::string, uint64_t>> dtypes_;   ///< dtype part -> production -> wins
};

} // namespace brevis
