// The search-based synthesizer (synth/strategies/Search, synth/search/): planted structures are
// found and coded near their structure-aware reference size, every program rebuilds its tensor
// exactly, a budget of 0 gives the template, and on the committed checkpoints no tensor's
// program is larger than the template's, ZipNN's or DFloat11's.
#include "lang/MergeLayout.h"
#include "lang/Printer.h"
#include "runtime/containers/FileIO.h"
#include "runtime/execution/Interpreter.h"
#include "synth/CostModel.h"
#include "synth/Driver.h"
#include "synth/Literals.h"
#include "synth/search/FieldLayouts.h"
#include "synth/strategies/Search.h"
#include "tools/gen/PlantedCheckpoint.h"
#include "tools/gen/SyntheticCheckpoint.h"
#include "WordShapes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>

using namespace brevis;

namespace {

RegionInput inputOf(const gen::PlantedTensor &t) {
  return RegionInput{RegionKind::Tensor, t.name, t.dtype, t.shape, ByteSpan(t.bytes)};
}

/// Nodes of each kind in a program.
std::map<NodeKind, int> nodeCounts(const Expr &e) {
  std::map<NodeKind, int> counts;
  ++counts[e.kind];
  forEachChild(e, [&](const Expr &child) {
    for (const auto &[kind, n] : nodeCounts(child)) counts[kind] += n;
  });
  return counts;
}

class Planted : public ::testing::Test {
protected:
  static void SetUpTestSuite() { tensors_ = new std::vector<gen::PlantedTensor>(gen::plantedTensors(11)); }
  static void TearDownTestSuite() { delete tensors_; }

  const gen::PlantedTensor &tensor(std::string_view name) {
    for (const auto &t : *tensors_)
      if (t.name == name) return t;
    ADD_FAILURE() << "no planted tensor " << name;
    return tensors_->front();
  }

public:
  /// The search's program for a planted tensor, checked to rebuild it exactly.
  static RegionProgram synthesize(const gen::PlantedTensor &t, int level = kDefaultLevel) {
    SearchStrategy strategy(strategyOptionsForLevel(level));
    RegionProgram p = strategy.synthesize(inputOf(t));
    auto bytes = evaluate(*p.program, Payload::fromBytes(p.payload));
    EXPECT_TRUE(bytes) << bytes.error().message;
    EXPECT_TRUE(bytes && *bytes == t.bytes) << t.name << ": the program does not rebuild the tensor";
    return p;
  }

  static std::vector<gen::PlantedTensor> *tensors_;
};
std::vector<gen::PlantedTensor> *Planted::tensors_ = nullptr;

TEST_F(Planted, AConstantTensorIsOneConst) {
  RegionProgram p = synthesize(tensor("planted.const"));
  ASSERT_EQ(p.program->kind, NodeKind::Const) << printExpr(*p.program);
  EXPECT_EQ(as<Const>(*p.program).value, 0x3f000000u);
  EXPECT_TRUE(p.payload.empty());
}

TEST_F(Planted, ATiledTensorRepeatsItsRow) {
  RegionProgram p = synthesize(tensor("planted.tiled"));
  ASSERT_EQ(p.program->kind, NodeKind::Repeat) << printExpr(*p.program);
  EXPECT_EQ(as<Repeat>(*p.program).count, 64u);
  EXPECT_EQ(streamTypeOf(*as<Repeat>(*p.program).body).length, 1024u);
}

TEST_F(Planted, AnIndexRampIsAScanOfAConstant) {
  RegionProgram p = synthesize(tensor("planted.ramp"));
  ASSERT_EQ(p.program->kind, NodeKind::Scan) << printExpr(*p.program);
  const Scan &scan = as<Scan>(*p.program);
  EXPECT_EQ(scan.op, ScanOp::Add);
  EXPECT_EQ(scan.init, 0u);
  ASSERT_EQ(scan.body->kind, NodeKind::Const);
  EXPECT_EQ(as<Const>(*scan.body).value, 1u);
}

/// The merge's constant fields, as (width, value).
std::vector<std::pair<unsigned, uint64_t>> constantFields(const Expr &program) {
  std::vector<std::pair<unsigned, uint64_t>> out;
  if (const Merge *merge = dynAs<Merge>(program))
    for (const MergeField &f : merge->fields)
      if (const Const *c = dynAs<Const>(*f.expr)) out.emplace_back(c->type.width, c->value);
  return out;
}

TEST_F(Planted, AnUpcastBf16KeepsItsZeroLowHalfAsAConstant) {
  RegionProgram p = synthesize(tensor("planted.upcast"));
  auto constants = constantFields(*p.program);
  EXPECT_NE(std::find(constants.begin(), constants.end(), std::pair<unsigned, uint64_t>{16, 0}), constants.end())
      << printExpr(*p.program);
}

TEST_F(Planted, F16OriginValuesKeepTheirZeroLowMantissaBitsAsAConstant) {
  RegionProgram p = synthesize(tensor("planted.f16origin"));
  auto constants = constantFields(*p.program);
  EXPECT_NE(std::find(constants.begin(), constants.end(), std::pair<unsigned, uint64_t>{13, 0}), constants.end())
      << printExpr(*p.program);
}

TEST_F(Planted, ZeroRowsBecomeAConstantPieceOfAConcat) {
  RegionProgram p = synthesize(tensor("planted.zerorows"));
  ASSERT_EQ(p.program->kind, NodeKind::Concat) << printExpr(*p.program);
  const Concat &concat = as<Concat>(*p.program);
  bool zeroPiece = false;
  for (const auto &part : concat.parts)
    if (const Const *c = dynAs<Const>(*part)) zeroPiece |= c->value == 0 && c->type.length == 128 * 1024;
  EXPECT_TRUE(zeroPiece) << printExpr(*p.program);
}

TEST_F(Planted, HalvesOfDifferentScaleAreCutWhereTheStatisticsChange) {
  RegionProgram p = synthesize(tensor("planted.pieces"));
  ASSERT_EQ(p.program->kind, NodeKind::Concat) << printExpr(*p.program);
  const Concat &concat = as<Concat>(*p.program);
  ASSERT_EQ(concat.parts.size(), 2u);
  EXPECT_EQ(streamTypeOf(*concat.parts[0]).length, 65536u);
}

TEST_F(Planted, ByteHalvesOfDifferentWidthsAreCutWhereTheWidthsChange) {
  // Integer words are cut by their mean bit width (counted sixteen bytes at a time): two-bit
  // bytes, then bytes of every width, each half coded better alone. A cut one window off, or
  // none, would say the widths were miscounted.
  for (const uint64_t small : {uint64_t{24576}, uint64_t{65536}}) {
    gen::PlantedTensor t;
    t.name = "planted.bytehalves";
    t.dtype = DType::U8;
    t.shape = {2 * 65536};
    std::mt19937 rng(7);
    for (uint64_t i = 0; i < 2 * 65536; ++i) t.bytes.push_back(static_cast<uint8_t>(i < small ? rng() % 4 : rng()));
    RegionProgram p = synthesize(t);
    ASSERT_EQ(p.program->kind, NodeKind::Concat) << printExpr(*p.program);
    const Concat &concat = as<Concat>(*p.program);
    ASSERT_EQ(concat.parts.size(), 2u);
    EXPECT_EQ(streamTypeOf(*concat.parts[0]).length, small);
  }
}

TEST_F(Planted, OutputChannelsOfDifferentScalesGetColumnConstantsOnTheirExponents) {
  RegionProgram p = synthesize(tensor("planted.channels"));
  ASSERT_EQ(p.program->kind, NodeKind::Merge) << printExpr(*p.program);
  const Map *columns = nullptr;
  for (const MergeField &f : as<Merge>(*p.program).fields)
    if (const Map *m = dynAs<Map>(*f.expr); m && !m->periodic.empty()) columns = m;
  ASSERT_NE(columns, nullptr) << printExpr(*p.program);
  EXPECT_EQ(columns->fn, MapFn::Add);
  ASSERT_EQ(columns->periodic.size(), 64u);
  // Columns of one scale mostly get one constant (a column's median exponent, of 512 samples,
  // may fall one binade off); the eight scales at least eight different ones.
  size_t same = 0;
  for (size_t c = 8; c < 64; ++c) same += columns->periodic[c] == columns->periodic[c - 8];
  EXPECT_GE(same, 42u) << printExpr(*p.program);
  EXPECT_GE(std::set<uint64_t>(columns->periodic.begin(), columns->periodic.end()).size(), 8u);
}

/// `t` and its BF16 truncation synthesized, each with `expected` in its program, then decoded
/// from each of `ranges` (first word, count) and compared with the tensor's words.
void expectDecodesFromAnyWord(const gen::PlantedTensor &t, const std::string &expected,
                              const std::vector<std::pair<uint64_t, uint64_t>> &ranges) {
  gen::PlantedTensor bf16 = t;
  bf16.dtype = DType::BF16;
  bf16.bytes.clear();
  for (size_t i = 0; i < t.bytes.size(); i += 4) bf16.bytes.insert(bf16.bytes.end(), {t.bytes[i + 2], t.bytes[i + 3]});
  for (const gen::PlantedTensor *u : {&t, static_cast<const gen::PlantedTensor *>(&bf16)}) {
    RegionProgram p = Planted::synthesize(*u);
    ASSERT_NE(printExpr(*p.program).find(expected), std::string::npos) << u->name << ": " << printExpr(*p.program);
    Region region;
    region.kind = RegionKind::Tensor;
    region.dtype = u->dtype;
    region.shape = u->shape;
    region.bytes = ByteRange{0, u->bytes.size()};
    region.program = std::move(p.program);
    const Payload payload = Payload::fromBytes(p.payload);
    const unsigned wordBytes = dtypeInfo(u->dtype).wordBits / 8;
    const uint64_t words = u->bytes.size() / wordBytes;
    for (auto [first, count] : ranges) {
      if (count == 0) count = words - first; // to the end
      Bytes out;
      VectorSink sink(out);
      Interpreter interpreter;
      ASSERT_TRUE(interpreter.decodeWords(region, payload, first, count, sink)) << first;
      const auto from = u->bytes.begin() + static_cast<std::ptrdiff_t>(first * wordBytes);
      EXPECT_TRUE(out == Bytes(from, from + static_cast<std::ptrdiff_t>(count * wordBytes)))
          << u->name << " words " << first << "+" << count;
    }
  }
}

TEST_F(Planted, ColumnConstantsDecodeFromAnyWordThroughTheFusedKernel) {
  // The F32 tensor (its exponent field of more than 8 bits: the kernel's shift-or path) and its
  // BF16 truncation (an 8-bit field: the kernel's byte path), each decoded from words that start
  // inside a period and cross the kernel's 16384-word chunks.
  expectDecodesFromAnyWord(tensor("planted.channels"), "map add [",
                           {{0, 0}, {1, 100}, {63, 16384 + 130}, {20000, 0}, {32767, 1}});
}

/// planted.channels laid out [outputs, inputs], as PyTorch keeps a linear layer: the channels
/// are its rows.
gen::PlantedTensor transposed(const gen::PlantedTensor &t) {
  gen::PlantedTensor out = t;
  const uint64_t rows = t.shape[0], columns = t.shape[1];
  out.shape = {columns, rows};
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < columns; ++c)
      std::copy_n(t.bytes.begin() + static_cast<std::ptrdiff_t>((r * columns + c) * 4), 4,
                  out.bytes.begin() + static_cast<std::ptrdiff_t>((c * rows + r) * 4));
  return out;
}

TEST_F(Planted, ChannelsLaidOutAsRowsGetRowConstantsOnTheirExponents) {
  RegionProgram p = synthesize(transposed(tensor("planted.channels")));
  ASSERT_EQ(p.program->kind, NodeKind::Merge) << printExpr(*p.program);
  const Map *rows = nullptr;
  for (const MergeField &f : as<Merge>(*p.program).fields)
    if (const Map *m = dynAs<Map>(*f.expr); m && !m->periodic.empty()) rows = m;
  ASSERT_NE(rows, nullptr) << printExpr(*p.program);
  EXPECT_EQ(rows->fn, MapFn::Add);
  ASSERT_EQ(rows->periodic.size(), 64u);
  EXPECT_EQ(rows->per, 512u);
  size_t same = 0;
  for (size_t c = 8; c < 64; ++c) same += rows->periodic[c] == rows->periodic[c - 8];
  EXPECT_GE(same, 42u) << printExpr(*p.program);
  EXPECT_NE(printExpr(*p.program).find("] per 512 ("), std::string::npos);
}

/// The `map add` constants of `t`'s program (an F32 tensor of `channels` channels, each `length`
/// words, laid out as `rows` says) against those worked out here: each channel's median exponent
/// over 256 evenly spaced words of it (the search's sample of a channel), less the median of all
/// those words, placed in the field as the search places it.
void expectChannelMediansAsConstants(const gen::PlantedTensor &t, uint64_t channels, uint64_t length, bool rows) {
  RegionProgram p = Planted::synthesize(t);
  ASSERT_EQ(p.program->kind, NodeKind::Merge) << printExpr(*p.program);
  const Merge &merge = as<Merge>(*p.program);
  std::vector<unsigned> widths;
  for (const MergeField &f : merge.fields) widths.push_back(streamTypeOf(*f.expr).width);
  const std::vector<unsigned> shifts = mergeFieldShifts(widths);
  constexpr uint64_t kTaken = 256;
  ASSERT_GE(length, kTaken);
  auto exponentAt = [&](uint64_t channel, uint64_t k) {
    const uint64_t i = k * length / kTaken, word = rows ? channel * length + i : i * channels + channel;
    uint32_t w;
    std::memcpy(&w, t.bytes.data() + 4 * word, 4);
    return (w >> 23) & 0xff;
  };
  auto median = [](std::vector<uint32_t> v) { // the least value that more than half are at most
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::vector<uint32_t> medians, all;
  for (uint64_t c = 0; c < channels; ++c) {
    std::vector<uint32_t> column;
    for (uint64_t k = 0; k < kTaken; ++k) column.push_back(exponentAt(c, k));
    all.insert(all.end(), column.begin(), column.end());
    medians.push_back(median(column));
  }
  const uint32_t overall = median(all);
  bool found = false;
  for (size_t k = 0; k < merge.fields.size(); ++k) {
    const Map *m = dynAs<Map>(*merge.fields[k].expr);
    if (!m || m->periodic.empty()) continue;
    found = true;
    const unsigned lo = std::max(shifts[k], 23u), partShift = lo - shifts[k], dropped = lo - 23;
    ASSERT_EQ(m->periodic.size(), channels);
    for (uint64_t c = 0; c < channels; ++c) {
      const int64_t difference = static_cast<int64_t>(medians[c] >> dropped) - static_cast<int64_t>(overall >> dropped);
      EXPECT_EQ(m->periodic[c], (static_cast<uint64_t>(difference) << partShift) & widthMask(widths[k])) << c;
    }
  }
  EXPECT_TRUE(found) << printExpr(*p.program);
}

TEST_F(Planted, ChannelConstantsAreEachChannelsMedianExponentLessTheWholesMedian) {
  expectChannelMediansAsConstants(tensor("planted.channels"), 64, 512, /*rows=*/false);
  expectChannelMediansAsConstants(transposed(tensor("planted.channels")), 64, 512, /*rows=*/true);
}

TEST_F(Planted, RowConstantsDecodeFromAnyWordThroughTheFusedKernel) {
  // As for the columns: from words inside a row, across rows and across the kernel's chunks.
  expectDecodesFromAnyWord(transposed(tensor("planted.channels")), "] per 512 (",
                           {{0, 0}, {1, 100}, {511, 2}, {300, 16384 + 1000}, {20000, 0}, {32767, 1}});
}

TEST_F(Planted, EveryTensorIsWithinTwoPercentOfItsReferenceSize) {
  for (const auto &t : *tensors_) {
    RegionProgram p = synthesize(t);
    // Program text compresses to about a quarter in an archive; a small tile pays for its tables.
    const double size = static_cast<double>(p.payload.size() + printExpr(*p.program).size() / 4);
    EXPECT_LE(size, t.referenceBytes * 1.02 + 160) << t.name << " (" << t.structure << "): " << printExpr(*p.program);
  }
}

TEST_F(Planted, ABudgetOfZeroGivesTheTemplateAndStillRebuildsEveryTensor) {
  for (const auto &t : *tensors_) {
    RegionProgram p = synthesize(t, /*level=*/1);
    const auto counts = nodeCounts(*p.program);
    EXPECT_EQ(counts.count(NodeKind::Repeat) + counts.count(NodeKind::Concat) + counts.count(NodeKind::Scan) +
                  counts.count(NodeKind::Map),
              0u)
        << t.name << ": " << printExpr(*p.program);
  }
}

TEST_F(Planted, ABudgetOfZeroReturnsTheTemplatesShapeUnscoredUnlessTraced) {
  for (const auto &t : *tensors_) {
    const RegionInput input = inputOf(t);
    const std::vector<uint64_t> words = readWords(input.bytes, regionWordType(input).wordBits / 8);
    const HoleContext context = regionContext(input);
    HoleSearch search(policyForLevel(1), SearchLimits{3, 0});
    const Plan quick = search.solve(words, regionWordType(input).wordBits, context);
    if (quick.op == PlanOp::Const) continue; // a uniform stream is a const at any budget
    const Plan scored = search.templatePlan(words, regionWordType(input).wordBits, context);
    EXPECT_TRUE(samePlanShape(quick, scored)) << t.name;
    // Nothing is compared at a budget of 0: no literal is estimated.
    EXPECT_LT(quick.cost, scored.cost) << t.name;
    if (quick.op == PlanOp::Lit) {
      EXPECT_EQ(quick.cost, 0) << t.name;
    }
    for (const Plan &child : quick.children) {
      if (child.op == PlanOp::Lit) {
        EXPECT_EQ(child.cost, 0) << t.name;
      }
    }
    // explain traces the candidates, and shows their costs.
    std::vector<HoleSearch::Candidate> trace;
    search.traceCandidates(&trace);
    EXPECT_GT(search.solve(words, regionWordType(input).wordBits, context).cost, 0) << t.name;
  }
}

TEST(FieldLayouts, TheTemplateComesFirstAndConstantBitsGetFieldsOfTheirOwn) {
  const DTypeInfo &f32 = dtypeInfo(DType::F32);
  // Low 13 bits constant (F16 origin).
  const auto layouts = proposeFieldLayouts(32, &f32, 0x1fff, true);
  ASSERT_FALSE(layouts.empty());
  EXPECT_EQ(layouts[0].widths, (FieldLayout{1, 8, 23}));
  EXPECT_EQ(layouts[0].kind, "ieee");
  EXPECT_NE(std::find_if(layouts.begin(), layouts.end(),
                         [](const auto &l) { return l.widths == FieldLayout{1, 8, 10, 13} && l.kind == "ieee/const"; }),
            layouts.end());
  for (const auto &layout : layouts) {
    unsigned total = 0;
    for (unsigned w : layout.widths) total += w;
    EXPECT_EQ(total, 32u);
  }
  EXPECT_EQ(fieldName(32, &f32, 0, 13), "mant_lo");
  EXPECT_EQ(fieldName(32, &f32, 20, 11), "exp_mant_hi");
  EXPECT_EQ(fieldName(32, &f32, 31, 1), "sign");
  EXPECT_EQ(fieldName(16, nullptr, 8, 8), "bits15_8");
  EXPECT_EQ(constantBits(std::vector<uint64_t>{0xf0, 0xf1, 0xf3}, 8), 0xfcu);
}

TEST(FieldLayouts, TheSignJoinsTheExponentOnlyWhereItMayCodeSmallerSo) {
  const DTypeInfo &bf16 = dtypeInfo(DType::BF16);
  auto kinds = [&](bool joined) {
    std::vector<std::string> out;
    for (const ProposedLayout &l : proposeFieldLayouts(16, &bf16, 0, joined)) out.push_back(l.kind);
    return out;
  };
  auto hasSignJoined = [](const std::vector<std::string> &k) {
    return std::any_of(k.begin(), k.end(), [](const std::string &s) { return s.starts_with("signexp"); });
  };
  EXPECT_TRUE(hasSignJoined(kinds(true)));
  EXPECT_FALSE(hasSignJoined(kinds(false)));
  EXPECT_EQ(kinds(false).front(), "ieee");

  // BF16 words: sign bit 15, exponent bits 14..7, mantissa bits 6..0.
  std::mt19937_64 rng(7);
  auto word = [](uint64_t sign, uint64_t exponent, uint64_t mantissa) { return sign << 15 | exponent << 7 | mantissa; };
  std::vector<uint64_t> independent, tied, positive;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t exponent = 120 + rng() % 8, mantissa = rng() % 128, sign = rng() & 1;
    independent.push_back(word(sign, exponent, mantissa));
    tied.push_back(word(exponent >= 124 ? sign : 0, exponent, mantissa)); // small values are positive
    positive.push_back(word(rng() % 8 == 0, exponent, mantissa));           // a sign of 0.54 bits
  }
  EXPECT_FALSE(signMayJoinExponent(independent, bf16));
  EXPECT_TRUE(signMayJoinExponent(tied, bf16));
  EXPECT_TRUE(signMayJoinExponent(positive, bf16));
  EXPECT_TRUE(signMayJoinExponent(std::vector<uint64_t>{}, bf16));
}

/// A region's stored bytes: its payload, plus its program text as the search models it after the
/// archive's compression (3 bytes per operator, 8 per literal; synth/search/HoleSearch.cpp). A
/// search result may trade a byte of payload for a node less, never the total.
uint64_t regionBytes(const Expr &e) {
  uint64_t bytes = e.kind == NodeKind::Lit ? 8 : 3;
  if (const Lit *lit = dynAs<Lit>(e); lit && !lit->isInline()) bytes += lit->payload().size;
  forEachChild(e, [&](const Expr &child) { bytes += regionBytes(child); });
  return bytes;
}

/// Per region of a committed checkpoint, the stored bytes of each strategy's program.
std::vector<uint64_t> regionSizes(ByteSpan file, std::string_view strategyName) {
  auto strategy = makeStrategy(strategyName, strategyOptionsForLevel(kDefaultLevel));
  EXPECT_TRUE(strategy);
  SynthOutput out = synthesizeCheckpoint(file, "model.safetensors", "model.bdsl.bin", **strategy, SynthOptions{2});
  std::vector<uint64_t> sizes;
  for (const Region &r : out.checkpoint.regions) sizes.push_back(regionBytes(*r.program));
  return sizes;
}

TEST(SearchOnCommittedCheckpoints, NoTensorIsLargerThanTheTemplateOrThePeersPrograms) {
  for (const char *name : {"stories260K.bf16.safetensors", "stories260K.safetensors"}) {
    auto file = readFile(std::string(BREVIS_TEST_DATA) + "/" + name);
    ASSERT_TRUE(file) << file.error().message;
    const auto search = regionSizes(*file, "search");
    for (std::string_view other : {"floatfields", "zipnn", "dfloat11"}) {
      const auto theirs = regionSizes(*file, other);
      ASSERT_EQ(theirs.size(), search.size());
      for (size_t i = 0; i < search.size(); ++i)
        EXPECT_LE(search[i], theirs[i]) << name << " region " << i << " against " << other;
    }
  }
}

} // namespace

namespace {

TEST(Prior, CountsBackOffToTheDtypeAndRoundTripThroughJson) {
  ProductionPrior prior;
  prior.count("bf16|top|z0|d3", "merge:exp+1", 3);
  prior.count("bf16|top|z0|d3", "merge:ieee", 1);
  prior.count("bf16|top|z3|d0", "concat:runs", 2);
  // Seen in this context: ordered by its counts.
  EXPECT_GT(prior.probability("bf16|top|z0|d3", "merge:exp+1"), prior.probability("bf16|top|z0|d3", "merge:ieee"));
  EXPECT_GT(prior.probability("bf16|top|z0|d3", "merge:ieee"), prior.probability("bf16|top|z0|d3", "repeat"));
  // A context never seen falls back to the dtype's winners, then to uniform.
  EXPECT_GT(prior.probability("bf16|inner|z1|d1", "merge:exp+1"), prior.probability("bf16|inner|z1|d1", "repeat"));
  EXPECT_GT(prior.probability("f32|top|z0|d3", "lit"), 0.0);
  EXPECT_EQ(prior.observations(), 6u);

  auto again = ProductionPrior::fromJson(prior.toJson());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->toJson(), prior.toJson());
  EXPECT_FALSE(ProductionPrior::fromJson("{}"));
  EXPECT_FALSE(ProductionPrior::fromJson("not json"));
  EXPECT_FALSE(ProductionPrior::fromJson(R"({"brevis_prior": 1, "contexts": {"bf16|top|z0|d3": {"lit": -1}}})"));
  auto unknown = ProductionPrior::fromJson(R"({"brevis_prior": 1, "contexts": {"bf16|top|z0|d3": {"nonsense": 3}}})");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "unknown production \"nonsense\" in a prior file");
  auto context = ProductionPrior::fromJson(R"({"brevis_prior": 1, "contexts": {"bf16|sideways|z0|d3": {"lit": 3}}})");
  ASSERT_FALSE(context);
  EXPECT_EQ(context.error().message, "unknown prior context \"bf16|sideways|z0|d3\"");
  EXPECT_EQ(ProductionPrior::fromJson("[1, 2]").error().message, "not a prior file (not a JSON object)");
  EXPECT_FALSE(ProductionPrior::fromJson(R"({"brevis_prior": "1", "contexts": {}})"));
  EXPECT_FALSE(ProductionPrior::fromJson(R"({"brevis_prior": 1, "contexts": {}, "bogus": {}})"));
  EXPECT_TRUE(ProductionPrior::fromJson(R"({"brevis_prior": 1, "contexts": {"u8|inner|z3|d0": {"merge:exp+2/const": 1}}})"));
}

TEST(Prior, ASmallBudgetIsSpentOnTheLikelyCandidatesFirst) {
  const auto tensors = gen::plantedTensors(3);
  const gen::PlantedTensor &tiled = *std::find_if(tensors.begin(), tensors.end(), [](const auto &t) { return t.name == "planted.tiled"; });
  const RegionInput input = inputOf(tiled);
  StrategyOptions options = strategyOptionsForLevel(kDefaultLevel);
  options.searchExpansions = 1;
  options.learnPrior = false;
  // In the fixed order one expansion goes to the whole-word literal: no repeat.
  RegionProgram uniform = SearchStrategy(options).synthesize(input);
  EXPECT_NE(uniform.program->kind, NodeKind::Repeat);
  // A prior that has seen repeats win at such holes tries the repeat first.
  auto prior = std::make_shared<ProductionPrior>();
  const std::vector<uint64_t> words = readWords(tiled.bytes, 2);
  prior->count(priorContext(words, 16, &dtypeInfo(DType::BF16), true), "repeat", 5);
  options.prior = prior;
  RegionProgram guided = SearchStrategy(options).synthesize(input);
  EXPECT_EQ(guided.program->kind, NodeKind::Repeat) << printExpr(*guided.program);
  auto bytes = evaluate(*guided.program, Payload::fromBytes(guided.payload));
  ASSERT_TRUE(bytes);
  EXPECT_EQ(*bytes, tiled.bytes);
}

/// The regions of a checkpoint as the driver hands them to a strategy (`regions` owns what the
/// inputs' names and shapes point to).
std::vector<RegionInput> regionInputs(const Bytes &file, std::vector<Region> &regions) {
  std::optional<std::string> notSafetensors;
  regions = tileRegions(file, notSafetensors);
  std::vector<RegionInput> inputs;
  for (const Region &r : regions)
    inputs.push_back(RegionInput{r.kind, r.name, r.dtype, r.shape, ByteSpan(file).subspan(r.bytes.offset, r.bytes.size)});
  return inputs;
}

TEST(Prior, LearningIsTheSameOnAnyThreadCount) {
  auto file = readFile(std::string(BREVIS_TEST_DATA) + "/stories260K.bf16.safetensors");
  ASSERT_TRUE(file);
  std::vector<Region> regions;
  const std::vector<RegionInput> inputs = regionInputs(*file, regions);
  const ProductionPrior one = learnPrior(inputs, policyForLevel(kDefaultLevel), 1);
  const ProductionPrior three = learnPrior(inputs, policyForLevel(kDefaultLevel), 3);
  EXPECT_GT(one.observations(), 0u);
  EXPECT_EQ(one.toJson(), three.toJson());
}

} // namespace

// A prior orders candidates: a budget that tries all of them needs none, and prepare learns one
// only below kPriorUsefulBelowExpansions (and not at level 1, which tries no candidate).
TEST(Prior, PrepareLearnsOneOnlyWhereTheBudgetCannotTryEveryCandidate) {
  auto file = readFile(std::string(BREVIS_TEST_DATA) + "/stories260K.bf16.safetensors");
  ASSERT_TRUE(file);
  std::vector<Region> regions;
  const std::vector<RegionInput> inputs = regionInputs(*file, regions);
  for (int level = 1; level <= 9; ++level) {
    const StrategyOptions options = strategyOptionsForLevel(level);
    SearchStrategy strategy(options);
    strategy.prepare(inputs, 1);
    const bool expected = options.searchExpansions > 0 && options.searchExpansions < kPriorUsefulBelowExpansions;
    EXPECT_EQ(strategy.prior() != nullptr, expected) << "level " << level;
    if (strategy.prior()) {
      EXPECT_GT(strategy.prior()->observations(), 0u) << "level " << level;
    }
  }
  EXPECT_LT(strategyOptionsForLevel(2).searchExpansions, kPriorUsefulBelowExpansions) << "some level learns one";
}

// The search's verdict on context goes with its plan: a literal whose estimate found context
// losing is emitted without estimating context again, one where it won is coded by it.
TEST(Search, ALiteralWhereContextLostIsEmittedWithoutTryingIt) {
  std::mt19937_64 rng(5);
  const std::vector<uint64_t> sequential = sparseHalves(rng, 20000);
  const std::vector<uint64_t> noise = makeWords(rng, 20000, 16, Shape::Uniform);
  for (const auto &[words, contextWins] : {std::pair{sequential, true}, std::pair{noise, false}}) {
    HoleSearch search(policyForLevel(kDefaultLevel), SearchLimits{0, 1}); // depth 0: a literal
    const Plan plan = search.solve(words, 16, HoleContext{});
    ASSERT_EQ(plan.op, PlanOp::Lit);
    EXPECT_EQ(plan.contextLost, !contextWins);
    Bytes payload;
    const ExprPtr program = search.emit(plan, words, 16, payload);
    ASSERT_EQ(program->kind, NodeKind::Lit);
    EXPECT_EQ(static_cast<const Lit &>(*program).encoding == Encoding::Context, contextWins);
    auto bytes = evaluate(*program, Payload::fromBytes(payload));
    ASSERT_TRUE(bytes);
    EXPECT_EQ(bytes->size(), words.size() * 2);
  }
  // Where the search scores nothing (a budget of 0), nothing is ruled out.
  HoleSearch quick(policyForLevel(kDefaultLevel), SearchLimits{3, 0});
  EXPECT_FALSE(quick.solve(noise, 16, HoleContext{}).contextLost);
}

// --- structures reused across tensors of one role ---------------------------------------------

namespace {

/// A [rows, cols] BF16 matrix as trained linear layers are: normal weights, each row at its own
/// scale (log-normal), words little-endian.
std::vector<uint64_t> layerWords(std::mt19937_64 &rng, uint64_t rows, uint64_t cols) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint64_t> words(rows * cols);
  for (uint64_t r = 0; r < rows; ++r) {
    const float scale = 0.02f * std::exp(0.3f * normal(rng));
    for (uint64_t c = 0; c < cols; ++c) {
      const float x = scale * normal(rng);
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      words[r * cols + c] = bits >> 16;
    }
  }
  return words;
}

/// Little-endian 16-bit words as bytes.
Bytes bytesOf16(const std::vector<uint64_t> &words) {
  Bytes out;
  for (uint64_t w : words) {
    out.push_back(static_cast<uint8_t>(w));
    out.push_back(static_cast<uint8_t>(w >> 8));
  }
  return out;
}

} // namespace

TEST(Reuse, RolesAreTheNameWithItsNumbersLeftOutTheDtypeAndTheShape) {
  const std::vector<uint64_t> square{512, 512}, wide{1408, 512};
  auto role = [](std::string_view name, DType dtype, std::span<const uint64_t> shape) {
    return roleOf(RegionInput{RegionKind::Tensor, name, dtype, shape, {}});
  };
  EXPECT_EQ(role("model.layers.0.mlp.up_proj.weight", DType::BF16, square),
            role("model.layers.17.mlp.up_proj.weight", DType::BF16, square));
  EXPECT_NE(role("model.layers.0.mlp.up_proj.weight", DType::BF16, square),
            role("model.layers.0.mlp.down_proj.weight", DType::BF16, square));
  EXPECT_NE(role("model.layers.0.mlp.up_proj.weight", DType::BF16, square),
            role("model.layers.0.mlp.up_proj.weight", DType::BF16, wide));
  EXPECT_NE(role("model.layers.0.mlp.up_proj.weight", DType::BF16, square),
            role("model.layers.0.mlp.up_proj.weight", DType::F16, square));
  // A run of digits is one `#`, whatever its length; the digits' place still counts.
  EXPECT_EQ(role("conv2d_7/kernel", DType::F32, square), role("conv2d_123/kernel", DType::F32, square));
  EXPECT_NE(role("block1.conv", DType::F32, square), role("block.conv1", DType::F32, square));
}

// A stream of the leader's role takes the leader's layout without a search; one with a
// structure of its own (long zero runs), or a leader's structure that has no refit (a repeat),
// is searched.
TEST(Reuse, AFollowerRefitsTheLeadersLayoutOrIsSearchedWhereItDoesNotCarryOver) {
  std::mt19937_64 rng(3);
  const std::vector<uint64_t> shape{512, 512};
  const HoleContext context{&dtypeInfo(DType::BF16), shape};
  const std::vector<uint64_t> leaderWords = layerWords(rng, 512, 512);
  HoleSearch search(policyForLevel(kDefaultLevel), SearchLimits{});
  const Plan leader = search.solve(leaderWords, 16, context);
  ASSERT_EQ(leader.op, PlanOp::Merge) << describePlan(leader);
  EXPECT_GT(search.expansions(), 0u);

  const std::vector<uint64_t> follower = layerWords(rng, 512, 512);
  const Plan refit = search.solveLike(std::span<const Plan>(&leader, 1), follower, 16, context);
  EXPECT_EQ(search.expansions(), 0u) << "a refit needs no search";
  ASSERT_EQ(refit.op, PlanOp::Merge) << describePlan(refit);
  EXPECT_EQ(refit.fieldWidths, leader.fieldWidths);
  ASSERT_NE(search.solvedTemplate(), nullptr);
  EXPECT_LE(refit.cost, search.solvedTemplate()->cost);
  Bytes payload;
  ExprPtr program = search.emit(refit, follower, 16, payload);
  auto bytes = evaluate(*program, Payload::fromBytes(payload));
  ASSERT_TRUE(bytes);
  EXPECT_EQ(*bytes, bytesOf16(follower));

  // Half of its rows pruned to zero: runs the search cuts out.
  std::vector<uint64_t> pruned = follower;
  std::fill(pruned.begin() + 512 * 128, pruned.begin() + 512 * 384, 0);
  const Plan searched = search.solveLike(std::span<const Plan>(&leader, 1), pruned, 16, context);
  EXPECT_GT(search.expansions(), 0u);
  EXPECT_EQ(searched.op, PlanOp::Concat) << describePlan(searched);

  // A leader's repeat is its own data's period: no refit.
  Plan repeat;
  repeat.op = PlanOp::Repeat;
  repeat.count = 512;
  repeat.children.push_back(leader);
  const Plan instead = search.solveLike(std::span<const Plan>(&repeat, 1), follower, 16, context);
  EXPECT_GT(search.expansions(), 0u);
  EXPECT_NE(instead.op, PlanOp::Repeat);
}

namespace {

/// Whether any literal of `e` is context-coded.
bool usesContext(const Expr &e) {
  if (e.kind == NodeKind::Lit) return static_cast<const Lit &>(e).encoding == Encoding::Context;
  bool any = false;
  forEachChild(e, [&](const Expr &child) { any = any || usesContext(child); });
  return any;
}

} // namespace

// A follower's fields are scored as its leader's came out: where context lost on the leader's
// field, the follower's is neither scored nor emitted with it; where it won, it is tried.
TEST(Reuse, AFollowerTriesContextWhereItsLeadersFieldDid) {
  std::mt19937_64 rng(9);
  const std::vector<uint64_t> shape{512, 512};
  const HoleContext context{&dtypeInfo(DType::BF16), shape};
  HoleSearch search(policyForLevel(kDefaultLevel), SearchLimits{});
  search.solve(sparseHalves(rng, 512 * 512), 16, context);
  // The leader's template (the IEEE fields) as the structure its role refits.
  ASSERT_NE(search.solvedTemplate(), nullptr);
  const Plan leader = *search.solvedTemplate(), leaderTemplate = leader;
  ASSERT_EQ(leader.op, PlanOp::Merge) << describePlan(leader);
  ASSERT_TRUE(std::any_of(leader.children.begin(), leader.children.end(),
                          [](const Plan &f) { return f.op == PlanOp::Lit && !f.contextLost; }))
      << "context wins on a field of the leader";
  // The same plans, as if context had lost on every field.
  auto lost = [](Plan p) {
    std::function<void(Plan &)> mark = [&](Plan &q) {
      if (q.op == PlanOp::Lit) q.contextLost = true;
      for (Plan &c : q.children) mark(c);
    };
    mark(p);
    return p;
  };
  const Plan lostLeader = lost(leader), lostTemplate = lost(leaderTemplate);

  const std::vector<uint64_t> follower = sparseHalves(rng, 512 * 512);
  for (const bool contextLostThere : {false, true}) {
    const Plan &shortlisted = contextLostThere ? lostLeader : leader;
    const Plan refit = search.solveLike(std::span<const Plan>(&shortlisted, 1), follower, 16, context,
                                        contextLostThere ? &lostTemplate : &leaderTemplate);
    EXPECT_EQ(search.expansions(), 0u) << "a refit: " << describePlan(refit);
    Bytes payload;
    const ExprPtr program = search.emit(refit, follower, 16, payload);
    // Scored with context where the leader's field was (and there it wins again), without it
    // where it lost: then it is not emitted with it either.
    ASSERT_EQ(refit.op, PlanOp::Merge) << describePlan(refit);
    const bool triedAndWon = std::any_of(refit.children.begin(), refit.children.end(),
                                         [](const Plan &f) { return f.op == PlanOp::Lit && !f.contextLost; });
    EXPECT_EQ(triedAndWon, !contextLostThere) << describePlan(refit);
    if (contextLostThere) {
      EXPECT_FALSE(usesContext(*program)) << printExpr(*program);
    }
    auto bytes = evaluate(*program, Payload::fromBytes(payload));
    ASSERT_TRUE(bytes);
    EXPECT_EQ(*bytes, bytesOf16(follower));
  }
}

namespace {

/// The bytes of a synthetic checkpoint of layers (tools/gen) of about `bytes` at width `hidden`
/// (and as many vocabulary rows), written under `name` in the test's temporary folder.
Result<Bytes> syntheticLayers(const std::string &name, uint64_t bytes, unsigned hidden) {
  const std::string path = ::testing::TempDir() + "/" + name + ".safetensors";
  gen::SyntheticOptions generated;
  generated.targetBytes = bytes;
  generated.hidden = hidden;
  generated.vocab = hidden;
  if (auto written = gen::writeSyntheticCheckpoint(path, generated, true); !written) return written.error();
  return readFile(path);
}

/// Whether `plan` holds a map of periodic constants, which apply by position.
bool hasPeriodicMap(const Plan &plan) {
  if (plan.op == PlanOp::Map && !plan.mapPeriodic.empty()) return true;
  return std::any_of(plan.children.begin(), plan.children.end(), hasPeriodicMap);
}

} // namespace

// Over a checkpoint of layers: the archive is the same on any thread count, every tensor
// rebuilds, and reuse codes it within a small fraction of searching every tensor.
TEST(Reuse, ACheckpointOfLayersIsTheSameOnAnyThreadCountAndNearTheFullSearch) {
  auto file = syntheticLayers("reuse-layers", 12 << 20, 512);
  ASSERT_TRUE(file);
  std::vector<Region> regions;
  const std::vector<RegionInput> inputs = regionInputs(*file, regions);
  std::set<std::string> roles;
  size_t large = 0;
  for (const RegionInput &r : inputs)
    if (r.kind == RegionKind::Tensor && r.bytes.size() >= (size_t{1} << 18)) {
      roles.insert(roleOf(r));
      ++large;
    }
  ASSERT_GT(large, roles.size()) << "some role has more than one large tensor";

  auto run = [&](bool reuse, unsigned threads) {
    StrategyOptions options = strategyOptionsForLevel(kDefaultLevel);
    options.reuseStructures = reuse;
    SearchStrategy strategy(options);
    return synthesizeCheckpoint(*file, "layers", "layers.bin", strategy, SynthOptions{threads});
  };
  SearchStrategy prepared(strategyOptionsForLevel(kDefaultLevel));
  prepared.prepare(inputs, 1);
  size_t followers = 0;
  for (const RegionInput &r : inputs)
    if (r.kind == RegionKind::Tensor)
      if (const std::string *leader = prepared.reusesStructureOf(r.name)) {
        EXPECT_NE(*leader, r.name);
        ++followers;
      }
  EXPECT_EQ(followers, large - roles.size());
  const SynthOutput one = run(true, 1), two = run(true, 2), searched = run(false, 1);
  EXPECT_EQ(printCheckpoint(one.checkpoint), printCheckpoint(two.checkpoint));
  EXPECT_EQ(one.payload, two.payload);
  const Payload payload = Payload::fromBytes(one.payload);
  for (const Region &r : one.checkpoint.regions) {
    if (r.kind != RegionKind::Tensor) continue;
    auto bytes = evaluate(*r.program, payload);
    ASSERT_TRUE(bytes) << r.name;
    EXPECT_TRUE(std::equal(bytes->begin(), bytes->end(), file->begin() + static_cast<ptrdiff_t>(r.bytes.offset)))
        << r.name;
  }
  EXPECT_LT(static_cast<double>(one.payload.size()), static_cast<double>(searched.payload.size()) * 1.002);
}

TEST(Reuse, EachRoleFollowsItsFirstTensorWhateverOrderTheLeadersAreSearchedIn) {
  // Two roles, the later one's tensors larger (prepare searches its leader first): every
  // follower reuses the first tensor of its own role, in file order.
  std::mt19937 rng(5);
  std::vector<gen::PlantedTensor> tensors;
  for (const auto &[name, size] : {std::pair{"small.0.weight", 8192}, std::pair{"small.1.weight", 8192},
                                   std::pair{"large.0.weight", 65536}, std::pair{"large.1.weight", 65536},
                                   std::pair{"small.2.weight", 8192}}) {
    gen::PlantedTensor &t = tensors.emplace_back();
    t.name = name;
    t.shape = {static_cast<uint64_t>(size)};
    for (int i = 0; i < size; ++i) t.bytes.push_back(static_cast<uint8_t>(rng() % 37));
  }
  std::vector<RegionInput> inputs;
  for (const gen::PlantedTensor &t : tensors) inputs.push_back(inputOf(t)); // a U8 tensor each
  for (unsigned threads : {1u, 2u}) {
    SearchStrategy prepared(strategyOptionsForLevel(kDefaultLevel));
    prepared.prepare(inputs, threads);
    for (const char *leader : {"small.0.weight", "large.0.weight"})
      EXPECT_EQ(prepared.reusesStructureOf(leader), nullptr) << leader;
    for (const auto &[follower, leader] : {std::pair{"small.1.weight", "small.0.weight"},
                                           std::pair{"large.1.weight", "large.0.weight"},
                                           std::pair{"small.2.weight", "small.0.weight"}}) {
      const std::string *reused = prepared.reusesStructureOf(follower);
      ASSERT_NE(reused, nullptr) << follower;
      EXPECT_EQ(*reused, leader) << follower << " on " << threads << " threads";
    }
  }
}

TEST(Search, IntegerWordsAboveTheirLeastAreMappedDownByIt) {
  // Bytes from 200 to 215 take eight bits as they are, four less their least (`map add`).
  std::mt19937 rng(6);
  gen::PlantedTensor t;
  t.name = "planted.offset";
  t.dtype = DType::U8;
  t.shape = {40000};
  for (size_t i = 0; i < 40000; ++i) t.bytes.push_back(static_cast<uint8_t>(200 + rng() % 16));
  RegionProgram p = Planted::synthesize(t);
  ASSERT_EQ(p.program->kind, NodeKind::Map) << printExpr(*p.program);
  const Map &map = as<Map>(*p.program);
  EXPECT_EQ(map.fn, MapFn::Add);
  EXPECT_EQ(map.param, 200u);
}

TEST(Search, EstimatesDecideOnlyByMoreThanTheyErrAndNeverForASampledWholeWordLiteral) {
  auto lit = [](double cost) {
    Plan p;
    p.op = PlanOp::Lit;
    p.cost = cost;
    return p;
  };
  Plan merge = lit(0);
  merge.op = PlanOp::Merge;
  merge.fieldWidths = {1, 5, 10};
  merge.children = {lit(1000), lit(50000), lit(290000)};
  merge.cost = 341000;
  const uint64_t sampled = kSearchSampleThreshold + 1, whole = kSearchSampleThreshold;
  // The same structure needs no comparison; another one does within the estimates' error.
  EXPECT_TRUE(estimatesDecide(merge, merge, sampled, 16));
  Plan close = merge;
  close.fieldWidths = {1, 6, 9};
  close.cost = merge.cost * (1 - kEstimateRelative / 2);
  EXPECT_FALSE(estimatesDecide(close, merge, sampled, 16));
  close.cost = merge.cost * (1 - 2 * kEstimateRelative);
  EXPECT_TRUE(estimatesDecide(close, merge, sampled, 16));
  // A whole 16-bit word as one literal, estimated 12% under the template's merge: clear where
  // the literal was scored on the whole stream, or holds bytes; not where a sample of wide words
  // stood for it.
  EXPECT_TRUE(estimatesDecide(lit(301000), merge, whole, 16));
  EXPECT_TRUE(estimatesDecide(lit(301000), merge, sampled, 8));
  EXPECT_FALSE(estimatesDecide(lit(301000), merge, sampled, 16));
  EXPECT_FALSE(estimatesDecide(lit(150000), merge, sampled, 32));
}

TEST(Search, LargeTensorsCompareTheirProgramsOnSlicesAsEncodingBothWould) {
  // Tensors of a million words and more, whose search result and template come within the
  // estimates' error of each other, are compared on slices of their words; the one encoded is
  // the one encoding both and keeping the smaller keeps.
  auto file = syntheticLayers("sliced-comparison", 14 << 20, 1024);
  ASSERT_TRUE(file);
  std::vector<Region> regions;
  const std::vector<RegionInput> inputs = regionInputs(*file, regions);
  constexpr uint64_t kSlicedFrom = uint64_t{1} << 20;

  // The slices' payloads stand for the whole's: exact encodings of a quarter of the words, scaled,
  // within a fraction of a percent of the whole encoded, map constants applied where they hold.
  size_t compared = 0, periodic = 0;
  const StrategyOptions level = strategyOptionsForLevel(kDefaultLevel);
  for (const RegionInput &r : inputs) {
    if (r.kind != RegionKind::Tensor || r.bytes.size() / 2 < kSlicedFrom) continue;
    WordBuffer copy;
    const WordsView words = viewWords(r.bytes, 2, copy);
    HoleSearch search(level.policy, searchLimits(level));
    const Plan best = search.solve(words, 16, regionContext(r));
    ASSERT_NE(search.solvedTemplate(), nullptr) << r.name;
    const Plan baseline = *search.solvedTemplate();
    if (estimatesDecide(best, baseline, words.size(), 16)) continue;
    ++compared;
    for (const Plan *plan : {&best, &baseline}) {
      periodic += hasPeriodicMap(*plan);
      const auto sliced = search.slicedPayloadBytes(*plan, words, 16);
      ASSERT_TRUE(sliced) << r.name;
      Bytes whole;
      search.emit(*plan, words, 16, whole);
      EXPECT_NEAR(*sliced, static_cast<double>(whole.size()), 0.005 * static_cast<double>(whole.size()))
          << r.name << ": " << describePlan(*plan);
    }
  }
  ASSERT_GT(compared, 0u) << "no tensor whose search result and template came within the estimates' error";
  ASSERT_GT(periodic, 0u) << "no program with map constants, which apply by position";

  auto run = [&](uint64_t slicedFrom) {
    StrategyOptions options = level;
    options.slicedComparisonMinWords = slicedFrom;
    SearchStrategy strategy(options);
    return synthesizeCheckpoint(*file, "sliced", "sliced.bin", strategy, SynthOptions{1});
  };
  const SynthOutput sliced = run(kSlicedFrom), both = run(UINT64_MAX);
  EXPECT_EQ(printCheckpoint(sliced.checkpoint), printCheckpoint(both.checkpoint));
  EXPECT_EQ(sliced.payload, both.payload);
}

// --- programs edited by hand: literal holes and payloads --------------------------------------

TEST(SketchFill, LiteralHolesTakeTheEncodingTheyNameOrTheSmallest) {
  // BF16-like words: a random sign over a few exponents and random mantissas.
  std::vector<uint64_t> words(5000);
  uint64_t state = 7;
  for (uint64_t &w : words) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    w = (state >> 63) << 15 | (120 + (state >> 40) % 6) << 7 | (state >> 20) % 128;
  }
  std::vector<MergeField> fields;
  fields.push_back({"sign", Hole::makeLiteral({1, words.size()}, Encoding::Bitpack)});
  fields.push_back({"rest", Hole::makeLiteral({15, words.size()}, std::nullopt)});
  ExprPtr program = Merge::make(std::move(fields));
  EXPECT_EQ(printExpr(*program), "merge(sign: lit bitpack u1[5000], rest: lit auto u15[5000])");
  HoleSearch search(policyForLevel(kDefaultLevel), SearchLimits{});
  Bytes payload = {1, 2, 3}; // what the program read before: kept, the literals go after it
  auto filled = fillHoles(program, words, HoleContext{nullptr, {}}, search, payload);
  ASSERT_TRUE(std::holds_alternative<size_t>(filled)) << std::get<FillError>(filled).message;
  EXPECT_EQ(std::get<size_t>(filled), 2u);
  const auto &merge = as<Merge>(*program);
  const Lit &sign = as<Lit>(*merge.fields[0].expr), &rest = as<Lit>(*merge.fields[1].expr);
  EXPECT_EQ(sign.encoding, Encoding::Bitpack);
  EXPECT_EQ(sign.payload().offset, 3u);
  Bytes smallest;
  EXPECT_EQ(rest.encoding, encodeSmallest(extractField(words, 0, 15), 15, smallest, policyForLevel(kDefaultLevel)));
  EXPECT_EQ(rest.payload().size, smallest.size());
  auto decoded = evaluateWords(*program, Payload(payload));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, words);

  // An encoding that cannot hold the words is reported at the hole.
  ExprPtr narrow = Hole::makeLiteral({16, words.size()}, Encoding::RansO1);
  narrow->loc = {3, 5};
  auto refused = fillHoles(narrow, words, HoleContext{nullptr, {}}, search, payload);
  ASSERT_TRUE(std::holds_alternative<FillError>(refused));
  EXPECT_EQ(std::get<FillError>(refused).loc.line, 3u);
  EXPECT_EQ(std::get<FillError>(refused).message, "a rans_o1 literal cannot hold these words");
}

TEST(SketchFill, CompactingAPayloadDropsOnlyWhatNoLiteralReads) {
  auto lit = [](uint64_t offset, uint64_t size) { return Lit::make({8, size}, Encoding::Raw, ByteRange{offset, size}); };
  auto checkpointOf = [&](std::vector<std::pair<uint64_t, uint64_t>> ranges) {
    Checkpoint c;
    for (auto [offset, size] : ranges) {
      Region r;
      r.program = lit(offset, size);
      c.regions.push_back(std::move(r));
    }
    return c;
  };
  Bytes payload(30);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i);
  // Bytes 4..9 and 14..29 are read by nothing; 10..13 twice (a repeated tensor); an empty range
  // keeps its place among the bytes kept.
  Checkpoint c = checkpointOf({{10, 4}, {0, 4}, {10, 4}, {20, 0}, {12, 2}});
  Bytes compacted = compactPayload(c, payload);
  EXPECT_EQ(compacted, (Bytes{0, 1, 2, 3, 10, 11, 12, 13}));
  EXPECT_EQ(c.payloadSize, 8u);
  const std::vector<ByteRange> want = {{4, 4}, {0, 4}, {4, 4}, {8, 0}, {6, 2}};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(as<Lit>(*c.regions[i].program).payload(), want[i]) << i;
  // Read whole, a payload comes back the same, every literal where it was.
  Checkpoint whole = checkpointOf({{0, 10}, {10, 20}, {5, 10}, {30, 0}});
  EXPECT_EQ(compactPayload(whole, payload), payload);
  EXPECT_EQ(as<Lit>(*whole.regions[2].program).payload(), (ByteRange{5, 10}));
  EXPECT_EQ(as<Lit>(*whole.regions[3].program).payload(), (ByteRange{30, 0}));
}
