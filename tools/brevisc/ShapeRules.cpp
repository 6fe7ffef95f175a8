#include "tools/brevisc/ShapeRules.h"

#include "tools/api/ProgramText.h"
#include "tools/brevisc/Common.h"

#include "frontend/Parser.h"
#include "lang/Printer.h"
#include "runtime/containers/Payload.h"
#include "runtime/execution/ByteSink.h"
#include "runtime/execution/CheckpointRunner.h"
#include "synth/Driver.h"
#include "synth/search/SketchFill.h"

#include <fmt/format.h>

#include <cctype>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace brevis::cli {

namespace {

/// Where the sketch's lengths are: the `N` of each `u<W>[N]` (spaces allowed inside the
/// brackets). An N anywhere else (a map's list of constants) is not a length, and stays N.
std::vector<size_t> lengthPlaces(const std::string &sketch) {
  std::vector<size_t> places;
  auto space = [&](size_t i) { return i < sketch.size() && std::isspace(static_cast<unsigned char>(sketch[i])); };
  for (size_t open = sketch.find('['); open != std::string::npos; open = sketch.find('[', open + 1)) {
    size_t n = open + 1;
    while (space(n)) ++n;
    if (n >= sketch.size() || sketch[n] != 'N') continue;
    size_t close = n + 1;
    while (space(close)) ++close;
    if (close >= sketch.size() || sketch[close] != ']') continue;
    size_t before = open;
    while (before > 0 && std::isspace(static_cast<unsigned char>(sketch[before - 1]))) --before;
    size_t digits = before;
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(sketch[digits - 1]))) --digits;
    if (digits == before || digits == 0 || sketch[digits - 1] != 'u') continue;
    places.push_back(n);
  }
  return places;
}

/// The sketch with each length N made `count`.
std::string withLength(const std::string &sketch, uint64_t count) {
  const std::string digits = fmt::format("{}", count);
  std::string out;
  size_t at = 0;
  for (size_t n : lengthPlaces(sketch)) {
    out.append(sketch, at, n - at);
    out += digits;
    at = n + 1;
  }
  out.append(sketch, at, std::string::npos);
  return out;
}

/// The sketch for `count` elements parsed and checked as one expression; null (diagnostics
/// printed) where it is not one. For one element the text has the columns of the sketch as
/// given, and diagnostics show it as given.
ExprPtr parseSketch(const ShapeRule &rule, uint64_t count) {
  std::string diagnostics;
  const std::string text = withLength(rule.sketch, count);
  auto module = parseProgram(rule.name(), text, /*requireRunnable=*/false, diagnostics);
  if (count == 1 && text.size() == rule.sketch.size()) {
    for (size_t at = diagnostics.find(text); at != std::string::npos; at = diagnostics.find(text, at + text.size()))
      diagnostics.replace(at, text.size(), rule.sketch);
  }
  std::cerr << diagnostics;
  if (!module) return nullptr;
  if (module->isCheckpoint()) {
    fail(fmt::format("{}: a sketch for a kind of tensor is one expression, not a checkpoint program", rule.name()));
    return nullptr;
  }
  return std::move(std::get<ExprPtr>(module->body));
}

/// How deep the text of `e` nests parentheses and brackets (what the parser bounds): a leaf's
/// type is one level, an operator one more than its deepest child.
unsigned textDepth(const Expr &e) {
  unsigned deepest = 0;
  forEachChild(e, [&](const Expr &child) { deepest = std::max(deepest, textDepth(child)); });
  return deepest + 1;
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
  // A tensor whose bytes an earlier one of its rule has (same digest and size) takes that one's
  // filled program, and so reads the same payload, as the search's repeated tensors do.
  std::vector<size_t> sameAs(c.regions.size(), SIZE_MAX);
  for (const ShapeRule &rule : rules) {
    std::map<uint64_t, ExprPtr> parsed; // by element count: a model's tensors share a few shapes
    std::map<std::tuple<uint64_t, uint64_t, uint64_t>, size_t> firstWith; // (digest, bytes, count)
    size_t taken = 0;
    for (size_t i = 0; i < c.regions.size(); ++i) {
      Region &r = c.regions[i];
      if (r.kind != RegionKind::Tensor || r.dtype != rule.dtype) continue;
      const std::optional<uint64_t> count = elementCount(r.shape);
      // An empty tensor has nothing to sketch (and a literal of no words is no encoding's).
      if (!count || *count == 0) continue;
      ruleOf[i] = &rule;
      countOf[i] = *count;
      ++taken;
      if (r.digest) {
        auto [first, inserted] = firstWith.try_emplace({*r.digest, r.bytes.size, *count}, i);
        if (!inserted) {
          sameAs[i] = first->second;
          continue; // keeps the search's program (no holes) until the first one is filled
        }
      }
      ExprPtr &sketch = parsed[*count];
      if (!sketch && !(sketch = parseSketch(rule, *count)))
        return usageError(fmt::format("{}: the sketch does not check for tensor {} of {} elements (above, N written "
                                      "as {})",
                                      rule.name(), quoteString(r.name), *count, *count));
      r.program = cloneExpr(*sketch);
    }
    if (taken == 0 && !quiet)
      std::cerr << fmt::format("brevisc: note: {}: the checkpoint has no {} tensor with elements\n", rule.name(),
                               dtypeInfo(rule.dtype).bdslName);
  }
  auto filled = fillCheckpointHoles(c, file, payload, level);
  if (auto *error = std::get_if<CheckpointFillError>(&filled)) {
    const Region &r = c.regions[error->region];
    const std::string rule = ruleOf[error->region] ? ruleOf[error->region]->name() + ": " : "";
    return fail(fmt::format("{}tensor {} ({} elements): {}", rule, quoteString(r.name), countOf[error->region],
                            error->error.message));
  }
  for (size_t i = 0; i < c.regions.size(); ++i) {
    if (!ruleOf[i]) continue;
    if (sameAs[i] != SIZE_MAX) c.regions[i].program = cloneExpr(*c.regions[sameAs[i]].program);
    // A hole filled with a structure may nest the program deeper than program text may.
    if (const unsigned depth = textDepth(*c.regions[i].program); depth > kMaxNestingDepth)
      return fail(fmt::format("{}: tensor {}: with its holes filled, the sketch nests {} levels deep, more than the "
                              "{} a program may",
                              ruleOf[i]->name(), quoteString(c.regions[i].name), depth, kMaxNestingDepth));
  }
  payload = compactPayload(c, payload);
  c.payloadSize = payload.size();
  // What the sketch fixed is the user's (a const, a map's constant): held to the tensor's bytes
  // here, so that a sketch that cannot rebuild them is said to be the sketch's fault.
  DiscardSink sink;
  auto rebuilt =
      decodeCheckpoint(c, Payload::fromBytes(payload), DecodeOptions{}, sink, nullptr, CheckpointCheck{true, file});
  if (!rebuilt) {
    std::string names;
    for (const ShapeRule &rule : rules) names += (names.empty() ? "" : ", ") + rule.name();
    return fail(fmt::format("{}: the sketch does not rebuild the checkpoint: {}", names, rebuilt.error().message));
  }
  return kExitOk;
}

} // namespace brevis::cli
