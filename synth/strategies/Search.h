#pragma once
// The search-based strategy: each region's program is searched for (synth/search/HoleSearch.h)
// among field splits, constants, repeats, concatenations at runs, scans and maps, scored by the
// cost model, and never one the cost model scores above the template's (strategies/FloatFields).
#include "synth/Strategy.h"
#include "synth/search/HoleSearch.h"

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace brevis {

/// The words a region is read as: its dtype's for a tensor, bytes otherwise.
const DTypeInfo &regionWordType(const RegionInput &region);
/// What the search knows of a region beyond its words: a float tensor's dtype, a tensor's shape.
HoleContext regionContext(const RegionInput &region);
/// The search's limits under `options`.
SearchLimits searchLimits(const StrategyOptions &options);

class SearchStrategy final : public Strategy {
public:
  explicit SearchStrategy(const StrategyOptions &options)
      : policy_(options.policy), limits_(searchLimits(options)), prior_(options.prior),
        learnPrior_(options.learnPrior), reuse_(options.reuseStructures) {}
  /// Learns the prior from a sample of the tensors, unless one was given or the budget is 0 or
  /// at least kPriorUsefulBelowExpansions; then, where structures are reused, searches the first
  /// tensor of each role that has more than one (roleOf), on up to `threads` threads.
  void prepare(std::span<const RegionInput> regions, unsigned threads) override;
  /// The prior that orders candidates: given, learned by prepare, or none (the fixed order).
  const ProductionPrior *prior() const { return prior_.get(); }
  RegionProgram synthesize(const RegionInput &region) const override;
  /// After prepare: the tensor whose search `name`'s program refits, if another tensor's (the
  /// first of its role); null where `name` is searched itself.
  const std::string *reusesStructureOf(std::string_view name) const;

private:
  EncodePolicy policy_;
  SearchLimits limits_;
  std::shared_ptr<const ProductionPrior> prior_;
  bool learnPrior_ = true;
  bool reuse_ = true;
  unsigned threads_ = 1; ///< prepare's: a large tensor's fields are coded on as many
  /// The search's result for the first tensor of a role, and the structures the others of the
  /// role refit: its cheapest candidates of distinct layouts (kShortlistPlans).
  struct Leader {
    std::string name;
    Plan best;
    std::optional<Plan> baseline; ///< the template as that search scored it
    std::vector<Plan> shortlist;
    /// How much smaller `best`'s program came out than the template's, relatively (negative
    /// where the template's was smaller; the estimated margin where both were not encoded):
    /// prepare decides for the leader, as synthesize does for a tensor searched alone.
    double margin = 0;
    /// The smaller of the two, made by prepare, until synthesize takes it (small tensors only).
    mutable std::optional<RegionProgram> program;
  };
  mutable std::mutex keptMutex_; ///< guards Leader::program, taken by concurrent synthesize calls
  /// The program of `best` for `region`, or the template's (`baseline`) where that is smaller;
  /// with `margin`, how much smaller the one kept is than the other (relatively; the
  /// estimated margin where only `best` was encoded, the margin on slices where both were
  /// compared there). Without `emitDecided`, a program decided without encoding (the margin is
  /// all that is wanted) is not encoded: the result then has none.
  RegionProgram keepSmaller(HoleSearch &search, const Plan &best, const Plan &baseline, const RegionInput &region,
                            WordsView words, unsigned width, double *margin, bool emitDecided = true) const;
  std::vector<Leader> leaders_;
  std::unordered_map<std::string, size_t> leaderOf_; ///< tensor name -> its role's leader
};

/// Whether the search's `best` plan is kept over the template's (`baseline`) for a stream of
/// `words` words of `width` bits on their estimates alone: the same structure, or estimates apart
/// by more than they err (kEstimateRelative + kEstimateAbsolute). Elsewhere both are encoded
/// (or compared on slices) and the smaller kept, so that a search result is never larger than
/// the template's.
bool estimatesDecide(const Plan &best, const Plan &baseline, uint64_t words, unsigned width);

/// What tensors of one role share: the dtype, the shape and the name with each run of digits
/// written `#` (`model.layers.#.self_attn.q_proj.weight`, `conv#d_#/kernel`).
std::string roleOf(const RegionInput &region);

/// The prior learned from `regions`: the winners of a search with a large budget, in the fixed
/// order, on at most kPriorSampleTensors tensors at evenly spaced positions of the file order.
/// The same for any thread count.
inline constexpr size_t kPriorSampleTensors = 16;
/// From this budget on, a search tries nearly every candidate of a tensor (over the corpus,
/// archives without a prior are 16 bytes larger in 50.6 MB): prepare learns none, which was two
/// fifths of level 5's time on a 16 MB checkpoint of 146 tensors.
inline constexpr uint64_t kPriorUsefulBelowExpansions = 64;
ProductionPrior learnPrior(std::span<const RegionInput> regions, EncodePolicy policy, unsigned threads);

} // namespace brevis
