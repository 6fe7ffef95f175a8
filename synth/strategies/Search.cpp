#include "synth/strategies/Search.h"

#include "runtime/execution/ThreadPool.h"
#include "synth/Literals.h"

#include <algorithm>
#include <mutex>
#include <numeric>

namespace brevis {

namespace {

/// The budget of the search whose winners the prior counts: every candidate, as at level 9.
constexpr uint64_t kLearningExpansions = 512;
/// A sampled tensor is learned from at most this many words, in 16 runs at evenly spaced
/// positions: the prior's contexts are statistics of a stream, and learning from the whole of
/// a large tensor would cost as much as compressing it.
constexpr size_t kLearningRuns = 16, kLearningRunWords = 4096;

std::vector<uint64_t> learningWords(ByteSpan bytes, unsigned wordBytes) {
  const size_t n = bytes.size() / wordBytes;
  if (n <= kLearningRuns * kLearningRunWords) return readWords(bytes, wordBytes);
  std::vector<uint64_t> words;
  const size_t stride = (n - kLearningRunWords) / (kLearningRuns - 1);
  for (size_t r = 0; r < kLearningRuns; ++r) {
    const auto run = readWords(bytes.subspan(r * stride * wordBytes, kLearningRunWords * wordBytes), wordBytes);
    words.insert(words.end(), run.begin(), run.end());
  }
  return words;
}

/// Tensors of fewer words are searched, whatever their role (below it, a search costs little).
/// Tensors of one role can differ in which layout codes them best (a TensorFlow graph's
/// `Const_#` tensors of one shape are unrelated weights): reused from 2^12 words on, the
/// corpus' level-5 archives came out 2.5 KB (0.005%) larger than with every tensor under 2^17
/// words searched, for a quarter less time (7.2 s against 5.5 s, one thread; from 2^10 on, the
/// same time).
constexpr size_t kReuseMinWords = size_t{1} << 12;

/// A leader's program, made by prepare's comparison with the template, is kept for synthesize
/// where its tensor is at most this large (larger ones are made again: keeping them would hold
/// a large tensor's payload once per role).
constexpr size_t kKeptLeaderMaxBytes = size_t{8} << 20;

/// A tensor that refits its role's leader is not also encoded as the template where the
/// leader's program came out at least this much smaller than the leader's template: the
/// leader's exact comparison stands for its role. (Encoding both for every tensor was a third
/// of level 5's time on a checkpoint of layers.)
constexpr double kRoleMargin = 0.005;

/// Compared on slices of a large region (HoleSearch::slicedPayloadBytes, exact encodings of a
/// sixteenth to a quarter of its words), the search's program and the template's are encoded
/// whole only where neither wins by this much: a slice misjudges its stream a little (on
/// checkpoints of 7B-model-sized tensors, within 0.11 points of the difference encoding both gave).
constexpr double kSlicedMargin = 0.002;

/// The structures a leader hands on: at most this many, each within this fraction of its best.
constexpr size_t kShortlistPlans = 2;
constexpr double kShortlistMargin = 0.03;

/// Room for a region's own size in its payload, which a literal seldom exceeds: reserved, not
/// touched, so it costs address space only, where growing by doubling copied the payload and
/// faulted in twice its pages (a tenth of level 1's time on a large tensor).
void reservePayload(RegionProgram &out, const RegionInput &region) { out.payload.reserve(region.bytes.size() + 4096); }

} // namespace

const DTypeInfo &regionWordType(const RegionInput &region) {
  return dtypeInfo(region.kind == RegionKind::Tensor ? region.dtype : DType::U8);
}

HoleContext regionContext(const RegionInput &region) {
  const DTypeInfo &info = regionWordType(region);
  const bool tensor = region.kind == RegionKind::Tensor;
  return HoleContext{tensor && info.isFloat() ? &info : nullptr, tensor ? region.shape : std::span<const uint64_t>{}};
}

SearchLimits searchLimits(const StrategyOptions &options) {
  return SearchLimits{SearchLimits{}.maxDepth, options.searchExpansions, options.slicedComparisonMinWords};
}

ProductionPrior learnPrior(std::span<const RegionInput> regions, EncodePolicy policy, unsigned threads) {
  std::vector<size_t> tensors;
  for (size_t i = 0; i < regions.size(); ++i)
    if (regions[i].kind == RegionKind::Tensor && !regions[i].bytes.empty()) tensors.push_back(i);
  std::vector<size_t> sample;
  const size_t k = std::min(tensors.size(), kPriorSampleTensors);
  for (size_t j = 0; j < k; ++j) sample.push_back(tensors[j * tensors.size() / k]);
  std::vector<ProductionPrior> learned(sample.size());
  parallelFor(sample.size(), threads, [&](size_t j) {
    const RegionInput &region = regions[sample[j]];
    const DTypeInfo &info = regionWordType(region);
    const std::vector<uint64_t> words = learningWords(region.bytes, info.wordBits / 8);
    HoleSearch search(policy, SearchLimits{SearchLimits{}.maxDepth, kLearningExpansions});
    search.recordWinners(&learned[j]);
    HoleContext context = regionContext(region);
    if (words.size() * (info.wordBits / 8) != region.bytes.size()) context.shape = {}; // a sample has no shape
    search.solve(words, info.wordBits, context);
  });
  ProductionPrior prior;
  for (const ProductionPrior &p : learned) prior.add(p);
  return prior;
}

std::string roleOf(const RegionInput &region) {
  std::string role(dtypeInfo(region.dtype).bdslName);
  for (uint64_t d : region.shape) role += "," + std::to_string(d);
  role += ' ';
  for (size_t i = 0; i < region.name.size(); ++i) {
    const char c = region.name[i];
    if (c >= '0' && c <= '9') {
      if (i == 0 || region.name[i - 1] < '0' || region.name[i - 1] > '9') role += '#';
    } else {
      role += c;
    }
  }
  return role;
}

void SearchStrategy::prepare(std::span<const RegionInput> regions, unsigned threads) {
  threads_ = std::max(1u, threads);
  leaders_.clear();
  leaderOf_.clear();
  if (!prior_ && learnPrior_ && limits_.maxExpansions > 0 && limits_.maxExpansions < kPriorUsefulBelowExpansions)
    prior_ = std::make_shared<const ProductionPrior>(learnPrior(regions, policy_, threads));
  if (!reuse_ || limits_.maxExpansions == 0) return;

  // Roles of more than one tensor, and the first of each in file order: its leader.
  std::unordered_map<std::string, std::vector<size_t>> members;
  std::vector<std::string> order; // roles by their first tensor's position
  for (size_t i = 0; i < regions.size(); ++i) {
    if (regions[i].kind != RegionKind::Tensor ||
        regions[i].bytes.size() < kReuseMinWords * (regionWordType(regions[i]).wordBits / 8))
      continue;
    auto [it, fresh] = members.try_emplace(roleOf(regions[i]));
    if (fresh) order.push_back(it->first);
    it->second.push_back(i);
  }
  std::vector<size_t> leaderRegions;
  for (const std::string &role : order) {
    const std::vector<size_t> &m = members[role];
    if (m.size() < 2) continue;
    for (size_t i : m) leaderOf_.emplace(std::string(regions[i].name), leaderRegions.size());
    leaderRegions.push_back(m.front());
  }
  leaders_.resize(leaderRegions.size());
  // The largest leaders first: threads take tasks in order, and a large leader taken last kept
  // one thread busy while the others had nothing left (face_recognition's two largest roles
  // come last in the file: 100 of its 360 ms on one thread of two). Each leader's result is its
  // own, whatever the order.
  std::vector<size_t> largestFirst(leaderRegions.size());
  std::iota(largestFirst.begin(), largestFirst.end(), size_t{0});
  std::stable_sort(largestFirst.begin(), largestFirst.end(), [&](size_t a, size_t b) {
    return regions[leaderRegions[a]].bytes.size() > regions[leaderRegions[b]].bytes.size();
  });
  parallelFor(largestFirst.size(), threads_, [&](size_t task) {
    const size_t j = largestFirst[task];
    const RegionInput &region = regions[leaderRegions[j]];
    const unsigned width = regionWordType(region).wordBits;
    WordBuffer copy;
    const WordsView words = viewWords(region.bytes, width / 8, copy);
    HoleSearch search(policy_, limits_);
    search.usePrior(prior_.get());
    std::vector<HoleSearch::Candidate> candidates;
    search.traceCandidates(&candidates);
    Leader &leader = leaders_[j];
    leader.name = std::string(region.name);
    leader.best = search.solve(words, width, regionContext(region));
    if (search.solvedTemplate()) leader.baseline = *search.solvedTemplate();
    // The cheapest candidates of distinct structures, near the best: layers of one role differ
    // a little in which of them codes smallest.
    std::stable_sort(candidates.begin(), candidates.end(), [](const auto &a, const auto &b) { return a.cost < b.cost; });
    for (const HoleSearch::Candidate &c : candidates) {
      if (leader.shortlist.size() == kShortlistPlans || c.cost > leader.best.cost * (1 + kShortlistMargin)) break;
      const bool seen = std::any_of(leader.shortlist.begin(), leader.shortlist.end(), [&](const Plan &p) {
        return p.op == c.plan.op && p.fieldWidths == c.plan.fieldWidths;
      });
      if (!seen) leader.shortlist.push_back(c.plan);
    }
    if (leader.shortlist.empty()) leader.shortlist.push_back(leader.best);
    // The exact comparison with the template, once for the role.
    const Plan baseline = leader.baseline ? *leader.baseline : search.templatePlan(words, width, regionContext(region));
    // Kept for synthesize where small: emitting it a third time was a twentieth of level 5's
    // time on a checkpoint of many roles of few tensors each (face_recognition). A larger one
    // is encoded here only where both programs must be to compare them.
    const bool keep = region.bytes.size() <= kKeptLeaderMaxBytes;
    RegionProgram kept = keepSmaller(search, leader.best, baseline, region, words, width, &leader.margin, keep);
    if (keep) leader.program = std::move(kept);
  });
}

const std::string *SearchStrategy::reusesStructureOf(std::string_view name) const {
  const auto group = leaderOf_.find(std::string(name));
  if (group == leaderOf_.end() || leaders_[group->second].name == name) return nullptr;
  return &leaders_[group->second].name;
}

RegionProgram SearchStrategy::synthesize(const RegionInput &region) const {
  if (region.kind == RegionKind::Header)
    if (ExprPtr text = makeHeaderText(region.bytes)) return RegionProgram{std::move(text), {}};
  const DTypeInfo &info = regionWordType(region);
  const unsigned width = info.wordBits;
  WordBuffer copy; // only where the bytes are not aligned for their words
  const WordsView words = viewWords(region.bytes, width / 8, copy);
  const HoleContext context = regionContext(region);

  HoleSearch search(policy_, limits_);
  search.usePrior(prior_.get());
  search.emitOnThreads(threads_);
  // A tensor of a role searched in prepare: the leader takes its plan, the others refit it.
  const auto group = region.kind == RegionKind::Tensor ? leaderOf_.find(std::string(region.name)) : leaderOf_.end();
  const Leader *leader = group != leaderOf_.end() ? &leaders_[group->second] : nullptr;
  const bool isLeader = leader && leader->name == region.name;
  const Plan best = isLeader ? leader->best
                    : leader ? search.solveLike(leader->shortlist, words, width, context,
                                                leader->baseline ? &*leader->baseline : nullptr)
                             : search.solve(words, width, context);
  auto emitOnly = [&](const Plan &plan) {
    RegionProgram out;
    reservePayload(out, region);
    out.program = search.emit(plan, words, width, out.payload);
    return out;
  };
  if (limits_.maxExpansions == 0) return emitOnly(best); // the template's plan is the only one tried
  const Plan baseline = isLeader && leader->baseline ? *leader->baseline
                        : !isLeader && search.solvedTemplate() ? *search.solvedTemplate()
                                                                : search.templatePlan(words, width, context);
  if (isLeader) { // prepare compared both, and kept the smaller where it was small
    std::optional<RegionProgram> kept;
    {
      std::lock_guard lock(keptMutex_);
      kept = std::exchange(leader->program, std::nullopt);
    }
    return kept ? std::move(*kept) : emitOnly(leader->margin < 0 ? baseline : best);
  }
  if (leader && leader->margin >= kRoleMargin) return emitOnly(best);
  return keepSmaller(search, best, baseline, region, words, width, nullptr);
}

bool estimatesDecide(const Plan &best, const Plan &baseline, uint64_t words, unsigned width) {
  if (samePlanShape(best, baseline)) return true;
  // A whole word of 9 bits or more kept as one literal, scored on a sample, is not clear at any
  // margin: its alphabet's table grows with the sample's scale in the estimate, and not in the
  // stream, which moves the verdict between coders that a level asks different gains of (an F16
  // tensor of 401,408 words, 19,614 values: estimated at 301 KB as `context`, coded 328 KB as
  // `huffman` when context missed level 2's gain; the template's merge, estimated at 339 KB,
  // came to 307 KB).
  if (best.op == PlanOp::Lit && width > 8 && words > kSearchSampleThreshold) return false;
  return baseline.cost - best.cost >= kEstimateRelative * baseline.cost + static_cast<double>(kEstimateAbsolute);
}

RegionProgram SearchStrategy::keepSmaller(HoleSearch &search, const Plan &best, const Plan &baseline,
                                          const RegionInput &region, WordsView words, unsigned width,
                                          double *margin, bool emitDecided) const {
  const bool bestIsClear = estimatesDecide(best, baseline, words.size(), width);
  auto encode = [&](const Plan &plan) {
    RegionProgram out;
    reservePayload(out, region);
    out.program = search.emit(plan, words, width, out.payload);
    return out;
  };
  auto emitOnly = [&](const Plan &plan) { return emitDecided ? encode(plan) : RegionProgram{}; };
  if (margin) *margin = (baseline.cost - best.cost) / std::max(baseline.cost, 1.0);
  if (bestIsClear) return emitOnly(best);
  // A large region has both compared on slices of its words first, and only the one that wins
  // there by kSlicedMargin encoded whole: on a checkpoint of 7B-model-sized tensors every large
  // tensor came within the bound above (search and template 0.4-1.2% apart), and encoding both
  // was a third of level 5's time. Level 9, which keeps the exact smallest, encodes both.
  if (words.size() >= limits_.slicedComparisonMinWords && policy_.minGain > 0) {
    const auto bestSliced = search.slicedPayloadBytes(best, words, width);
    const auto baselineSliced = bestSliced ? search.slicedPayloadBytes(baseline, words, width) : std::nullopt;
    if (bestSliced && baselineSliced) {
      const double b = *bestSliced + planTextBytes(best), t = *baselineSliced + planTextBytes(baseline);
      if (margin) *margin = (t - b) / std::max(std::max(t, b), 1.0);
      if (b <= t * (1 - kSlicedMargin)) return emitOnly(best);
      if (t <= b * (1 - kSlicedMargin)) return emitOnly(baseline);
    }
  }
  RegionProgram out = encode(best);
  const double bestBytes = static_cast<double>(out.payload.size()) + planTextBytes(best);
  RegionProgram alternative = encode(baseline);
  const double baselineBytes = static_cast<double>(alternative.payload.size()) + planTextBytes(baseline);
  if (margin) *margin = (baselineBytes - bestBytes) / std::max(std::max(baselineBytes, bestBytes), 1.0);
  if (baselineBytes < bestBytes) out = std::move(alternative);
  return out;
}

} // namespace brevis
