#include "tools/brevisc/ShapeRules.h"

#include "tools/api/ProgramText.h"
#include "tools/brevisc/Common.h"

#include "lang/Printer.h"
#include "runtime/containers/Payload.h"
#include "runtime/execution/ByteSink.h"
#include "runtime/execution/CheckpointRunner.h"
#include "synth/Driver.h"
#include "synth/search/SketchFill.h"

#include <fmt/format.h>

#include <iostream>
#include <map>
#include <optional>
#include <set>

namespace brevis::cli {

namespace {

constexpr std::string_view kLength = "[N]";

/// The sketch with every `[N]` made `[count]`.
std::string withLength(const std::string &sketch, uint64_t count) {
  std::string out;
  const std::string length = fmt::format("[{}]", count);
  for (size_t at = 0;;) {
    const size_t found = sketch.find(kLength, at);
    out.append(sketch, at, found == std::string::npos ? std::string::npos : found - at);
    if (found == std::string::npos) return out;
    out += length;
    at = found + kLength.size();
  }
}

/// The sketch for `count` elements parsed and checked as one expression; null (diagnostics
/// printed) where it is not one.
ExprPtr parseSketch(const ShapeRule &rule, uint64_t count) {
  std::string diagnostics;
  auto module = parseProgram(rule.name(), withLength(rule.sketch, count), /*requireRunnable=*/false, diagnostics);
  std::cerr << diagnostics;
  if (!module) return nullptr;
  if (module->isCheckpoint()) {
    fail(fmt::format("{}: a sketch for a kind of tensor is one expression, not a checkpoint program", rule.name()));
    return nullptr;
  }
  return std::move(std::get<ExprPtr>(module->body));
}

} // namespace

std::string ShapeRule::name() const { return fmt::format("--shape {}", dtypeInfo(dtype).bdslName); }

std::vector<ShapeRule> parseShapeRules(const std::vector<std::string> &given, int &status) {
  status = kExitOk;
  std::vector<ShapeRule> rules;
  std::set<DType> seen;
  for (const std::string &value : given) {
    const size_t equals = value.find('=');
    const std::optional<DType> dtype =
        equals == std::string::npos ? std::nullopt : dtypeFromBdslName(value.substr(0, equals));
    if (!dtype) {
      status = usageError(fmt::format("--shape {}: expected DTYPE=SKETCH, DTYPE a dtype as programs name it (bf16, "
                                      "f16, f32, u8, ...)",
                                      value));
      return {};
    }
    if (!seen.insert(*dtype).second) {
      status = usageError(fmt::format("--shape names {} twice", dtypeInfo(*dtype).bdslName));
      return {};
    }
    ShapeRule rule{*dtype, value.substr(equals + 1)};
    // Checked once, for a tensor of one element: what it produces must be the dtype's words.
    ExprPtr one = parseSketch(rule, 1);
    if (!one) {
      status = kExitUsage;
      return {};
    }
    const StreamType produced = streamTypeOf(*one), wanted{dtypeInfo(*dtype).wordBits, 1};
    if (produced != wanted) {
      status = usageError(fmt::format("{}: the sketch produces u{}[{}] for a tensor of N = 1 element, but a {} "
                                      "tensor's words are u{}[N]",
                                      rule.name(), produced.width, produced.length, dtypeInfo(*dtype).bdslName,
                                      wanted.width));
      return {};
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

int applyShapeRules(const std::vector<ShapeRule> &rules, Checkpoint &c, ByteSpan file, Bytes &payload, int level,
                    bool quiet) {
  if (rules.empty()) return kExitOk;
  // The rule each region took, and its element count: errors are told in the rule's terms.
  std::vector<const ShapeRule *> ruleOf(c.regions.size(), nullptr);
  std::vector<uint64_t> countOf(c.regions.size(), 0);
  for (const ShapeRule &rule : rules) {
    std::map<uint64_t, ExprPtr> parsed; // by element count: a model's tensors share a few shapes
    size_t taken = 0;
    for (size_t i = 0; i < c.regions.size(); ++i) {
      Region &r = c.regions[i];
      if (r.kind != RegionKind::Tensor || r.dtype != rule.dtype) continue;
      const std::optional<uint64_t> count = elementCount(r.shape);
      if (!count) continue; // the checker refused such a tensor already
      ExprPtr &sketch = parsed[*count];
      if (!sketch && !(sketch = parseSketch(rule, *count))) return kExitUsage;
      r.program = cloneExpr(*sketch);
      ruleOf[i] = &rule;
      countOf[i] = *count;
      ++taken;
    }
    if (taken == 0 && !quiet)
      std::cerr << fmt::format("brevisc: note: {}: the checkpoint has no {} tensor\n", rule.name(),
                               dtypeInfo(rule.dtype).bdslName);
  }
  auto filled = fillCheckpointHoles(c, file, payload, level);
  if (auto *error = std::get_if<CheckpointFillError>(&filled)) {
    const Region &r = c.regions[error->region];
    const std::string rule = ruleOf[error->region] ? ruleOf[error->region]->name() + ": " : "";
    return fail(fmt::format("{}tensor {} ({} elements): {}", rule, quoteString(r.name), countOf[error->region],
                            error->error.message));
  }
  payload = compactPayload(c, payload);
  c.payloadSize = payload.size();
  // What the sketch fixed is the user's (a const, a map's constant): held to the tensor's bytes
  // here, so that a sketch that cannot rebuild them is said to be the sketch's fault.
  DiscardSink sink;
  auto rebuilt = decodeCheckpoint(c, Payload::fromBytes(payload), DecodeOptions{}, sink, nullptr,
                                  CheckpointCheck{true, file});
  if (!rebuilt) {
    std::string names;
    for (const ShapeRule &rule : rules) names += (names.empty() ? "" : ", ") + rule.name();
    return fail(fmt::format("{}: the sketch does not rebuild the checkpoint: {}", names, rebuilt.error().message));
  }
  return kExitOk;
}

} // namespace brevis::cli
