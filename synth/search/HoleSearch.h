#pragma once
// The search for one region's program. A hole owns the exact stream it must produce; operators
// are applied backwards, through their inverses (synth/search/Plan.h): merge splits the words
// into fields, scan takes differences, map applies the inverse bijection, concat cuts at long
// runs of one value, repeat checks a period, const checks uniformity, and lit closes the hole at
// the estimated size of its cheapest encoding (synth/CostModel.h). Children of merge, concat,
// repeat, map and scan are independent given their parent's stream, so each hole is searched on
// its own and a plan's cost is its operator's plus its children's. Candidates are tried in a fixed
// order, bounded by depth and by a budget of expansions per region; every decision depends only
// on the stream, so the result is the same on any thread count. docs/synthesis.md explains it.
#include "lang/Ast.h"
#include "lang/DType.h"
#include "runtime/common/Bytes.h"
#include "synth/CostModel.h"
#include "synth/search/Plan.h"
#include "synth/search/Prior.h"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace brevis {

/// Streams of more words than this are scored on a sample of their words, shorter ones whole.
inline constexpr size_t kSearchSampleThreshold = size_t{1} << 17;

struct SearchLimits {
  unsigned maxDepth = 3;       ///< operators above a literal, at most
  uint64_t maxExpansions = 64; ///< candidates beyond the first tried per region; 0: the template only
  /// From this many words on, a region whose search result and template come within the
  /// estimates' error of each other has both compared on slices of its words before either is
  /// encoded whole (strategies/Search.cpp, keepSmaller), at levels that ask a gain.
  uint64_t slicedComparisonMinWords = uint64_t{1} << 22;
};

/// What a hole's stream is, beyond its words: a float tensor's words (their IEEE layout is
/// worth proposing) and the tensor's shape (its dimensions are candidate periods and rows).
struct HoleContext {
  const DTypeInfo *floatType = nullptr;
  std::span<const uint64_t> shape;
};

class HoleSearch {
public:
  HoleSearch(EncodePolicy policy, SearchLimits limits) : policy_(policy), limits_(limits) {}
  const EncodePolicy &policy() const { return policy_; }

  /// The cheapest plan found for `words` (of `width` bits) within the limits. With a budget of
  /// 0 and neither a trace nor a learner, that is the template's plan, its literals unscored (cost 0).
  Plan solve(WordsView words, unsigned width, const HoleContext &context);

  /// The plan for `words` of a stream of the same role and shape as one a search was solved for
  /// (a model's layers): the cheapest of that search's `shortlist` of structures refit to these
  /// words (merge layouts with their fields closed again: constants, channel constants and
  /// literals of these words), scored beside the template only; where none carries over (other
  /// operators, a stream with long runs, every refit scored above the template), the search
  /// `solve` makes. solvedTemplate() gives the template as scored here.
  /// `leaderTemplate`, where given, is the template as the leader's search scored it. The
  /// fields of these structures and of the template (and their channel constants) are scored
  /// without simulating `context` where it lost on the leader's field: the leader's verdict
  /// stands for its role (simulating context for every field of every tensor was a fifth of
  /// level 5's instructions on a checkpoint of layers). Channel constants are computed from
  /// these words: a layer's scales are its own (where only the leader's were tried, a pose
  /// model's archive came out 0.1% larger).
  Plan solveLike(std::span<const Plan> shortlist, WordsView words, unsigned width, const HoleContext &context,
                 const Plan *leaderTemplate = nullptr);

  /// The template's plan: a float tensor's IEEE fields, or one literal; what `solve` returns
  /// with a budget of 0, and the baseline no search result may exceed.
  Plan templatePlan(WordsView words, unsigned width, const HoleContext &context);
  /// The template's plan as the last `solve` scored it for its region's own stream (the same as
  /// templatePlan of its arguments, without scoring it again); null before any solve, or where
  /// that solve scored nothing.
  const Plan *solvedTemplate() const { return solvedTemplate_ ? &*solvedTemplate_ : nullptr; }

  /// The program for `plan`, its literals appended to `payload` in the encodings the policy picks.
  /// Every structural claim of the plan is checked against `words` (a plan scored on a sample
  /// may be wrong about the whole stream); where one fails, that hole becomes a literal, so the
  /// program always produces `words` exactly.
  ExprPtr emit(const Plan &plan, WordsView words, unsigned width, Bytes &payload) const;

  /// The payload bytes emit codes for `plan` over four evenly spaced runs of `words` (each a
  /// sixteenth of the stream, at most 2^18 words), scaled to the whole stream: exact encodings,
  /// on a sixteenth to a quarter of the words. Null where the plan cannot be emitted on a run of
  /// its stream (concat and repeat: their lengths are the whole stream's) or the stream is
  /// shorter than 64 words.
  std::optional<double> slicedPayloadBytes(const Plan &plan, WordsView words, unsigned width) const;

  /// Lets emit code the fields of a large merge on up to `threads` threads (the result is the
  /// same for any number).
  void emitOnThreads(unsigned threads) { emitThreads_ = threads; }

  uint64_t expansions() const { return expansions_; }

  /// A candidate scored for the region's own stream (the top hole), for explanations.
  struct Candidate {
    Plan plan;
    double cost = 0;
  };
  /// Records every candidate scored at the top hole into `trace` (null: none), in the order tried.
  void traceCandidates(std::vector<Candidate> *trace) { trace_ = trace; }
  /// Tries candidates in decreasing probability under `prior` (null: in the fixed order).
  void usePrior(const ProductionPrior *prior) { prior_ = prior; }
  /// Counts the production that wins at every hole into `learner` (null: none).
  void recordWinners(ProductionPrior *learner) { learner_ = learner; }

private:
  /// emit for `words` at `position` of the stream the plan was made for: periodic map
  /// constants are applied from there.
  ExprPtr emitAt(const Plan &plan, WordsView words, unsigned width, Bytes &payload, uint64_t position) const;
  struct Hole; // a stream with what every candidate reads of it: constant bits, a sample
  Plan solveHole(WordsView words, unsigned width, const HoleContext &context, unsigned depth);
  Plan litPlan(const Hole &hole) const;
  /// Gives `lit` the estimated cost of a literal of `sample` (scaled by `scale`) and whether
  /// context lost there; a float's `mantissa` bits that look like noise are not scored for
  /// context (it loses, as far as they tell).
  void scoreLit(Plan &lit, WordsView sample, unsigned width, double scale, bool mantissa = false,
                bool contextLost = false) const;
  /// What a leader's plans tell of a field, by (shift, width): whether `context` lost on it.
  struct FieldVerdict {
    bool contextLost = true;
  };
  using FieldVerdicts = std::vector<std::pair<uint64_t, FieldVerdict>>;
  static void collectVerdicts(const Plan &plan, FieldVerdicts &out);
  const FieldVerdict *verdictFor(uint64_t key) const;
  /// Estimated costs of fields already scored for the hole being expanded, by (shift, width):
  /// layouts share most of their fields, the template's among them.
  using FieldCosts = std::vector<std::pair<uint64_t, Plan>>;
  Plan templatePlan(const Hole &hole, const HoleContext &context, FieldCosts *memo = nullptr) const;
  Plan mergePlan(const Hole &hole, const HoleContext &context, const std::vector<unsigned> &layout,
                 FieldCosts *memo = nullptr) const;
  /// A field of a float tensor holding exponent bits as `map add [per-column constants]` over
  /// a literal (columnOffsets), or with `rows`, `map add [per-row constants] per ROW` (a layout
  /// whose rows are the channels); an empty plan (op Lit, no cost) where there is nothing to gain.
  Plan channelOffsetsPlan(const Hole &hole, const HoleContext &context, unsigned shift, unsigned width,
                          bool rows) const;
  /// channelOffsetsPlan, kept in `memo` (where given) for the hole's other layouts with the field.
  Plan channelPlan(const Hole &hole, const HoleContext &context, unsigned shift, unsigned width, bool rows,
                   FieldCosts *memo) const;
  /// `leader`'s structure scored on `hole`: null where it has no refit (structural operators
  /// whose parameters are the leader's own data: runs, periods, cuts, offsets).
  std::optional<Plan> refitPlan(const Plan &leader, const Hole &hole, const HoleContext &context, FieldCosts &memo) const;
  void tryStructural(const Hole &hole, const HoleContext &context, unsigned depth, Plan &best,
                     std::vector<Candidate> *trace, const std::string &priorKey, FieldCosts &memo);
  bool spend();

  EncodePolicy policy_;
  SearchLimits limits_;
  uint64_t expansions_ = 0;
  std::vector<Candidate> *trace_ = nullptr;
  const ProductionPrior *prior_ = nullptr;
  ProductionPrior *learner_ = nullptr;
  unsigned emitThreads_ = 1;
  bool scoring_ = true; ///< whether plans get estimated costs (solve: not where none is compared)
  mutable bool columnOffsets_ = true; ///< whether mergePlan tries column offsets (not for the template)
  std::optional<Plan> solvedTemplate_;
  const FieldVerdicts *verdicts_ = nullptr; ///< solveLike's: the leader's, for its fields
};

/// Estimated bytes of a literal of `words` in the encoding `policy` would pick, program text
/// included; that encoding in `chosen` where given (Raw for an inline or empty literal).
double estimateLitCost(WordsView words, unsigned width, EncodePolicy policy, Encoding *chosen = nullptr);

} // namespace brevis
