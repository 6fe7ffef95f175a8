#include "synth/Explain.h"

#include "lang/MergeLayout.h"
#include "lang/Printer.h"
#include "runtime/codecs/context/ContextCodec.h"
#include "synth/Literals.h"
#include "synth/search/HoleSearch.h"
#include "synth/strategies/Search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace brevis {

namespace {

double entropyBitsPerWord(std::vector<uint64_t> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  double bits = 0;
  const auto n = static_cast<double>(values.size());
  for (size_t i = 0; i < values.size();) {
    size_t j = i;
    while (j < values.size() && values[j] == values[i]) ++j;
    const auto c = static_cast<double>(j - i);
    bits -= c * std::log2(c / n);
    i = j;
  }
  return bits / n;
}

/// A context literal's settings, as its header in `payload` gives them; empty where the header
/// is not readable (the decoder reports that when the tensor is decoded).
std::string contextDetail(const Lit &lit, const Payload &payload) {
  if (!payload.contains(lit.payload())) return {};
  auto d = ContextDecoder::create(payload.slice(lit.payload()), lit.type.width, lit.type.length);
  if (!d) return {};
  std::string detail = fmt::format("rate {}", (*d)->rate());
  if ((*d)->escape()) detail += fmt::format(", escape {}", *(*d)->escape());
  if ((*d)->rawBits()) detail += fmt::format(", {} raw bits", (*d)->rawBits());
  return detail;
}

void collectLiterals(const Expr &e, const std::string &path, const Payload *payload, std::vector<LiteralReport> &out) {
  switch (e.kind) {
  case NodeKind::Lit: {
    const Lit &lit = as<Lit>(e);
    out.push_back(LiteralReport{path.empty() ? "lit" : path,
                                lit.isText() ? "text" : lit.isInline() ? "inline" : std::string(encodingName(lit.encoding)), lit.type.width,
                                lit.type.length, lit.isInline() ? 0 : lit.payload().size, {}});
    if (payload && !lit.isInline() && lit.encoding == Encoding::Context)
      out.back().detail = contextDetail(lit, *payload);
    return;
  }
  case NodeKind::Const:
  case NodeKind::Hole: return;
  case NodeKind::Concat: {
    const auto &parts = as<Concat>(e).parts;
    for (size_t i = 0; i < parts.size(); ++i)
      collectLiterals(*parts[i], path + (path.empty() ? "" : ".") + "concat[" + std::to_string(i) + "]", payload, out);
    return;
  }
  case NodeKind::Repeat:
    collectLiterals(*as<Repeat>(e).body, path + (path.empty() ? "" : ".") + "repeat", payload, out);
    return;
  case NodeKind::Map: collectLiterals(*as<Map>(e).body, path + (path.empty() ? "" : ".") + "map", payload, out); return;
  case NodeKind::Scan: collectLiterals(*as<Scan>(e).body, path + (path.empty() ? "" : ".") + "scan", payload, out); return;
  case NodeKind::Merge: {
    const auto &fields = as<Merge>(e).fields;
    for (size_t i = 0; i < fields.size(); ++i)
      collectLiterals(*fields[i].expr,
                      path + (path.empty() ? "" : ".") + "merge." +
                          (fields[i].name.empty() ? "field" + std::to_string(i) : fields[i].name),
                      payload, out);
    return;
  }
  }
}

} // namespace

RegionReport explainRegion(const RegionInput &region, const StrategyOptions &options, const Expr *storedProgram,
                           const Payload *storedPayload) {
  RegionReport r;
  r.kind = region.kind;
  r.name = std::string(region.name);
  r.dtype = region.dtype;
  r.shape.assign(region.shape.begin(), region.shape.end());
  const DTypeInfo &info = regionWordType(region);
  const unsigned width = info.wordBits;
  const std::vector<uint64_t> words = readWords(region.bytes, width / 8);
  r.words = words.size();
  r.originalBytes = region.bytes.size();

  const HoleContext context = regionContext(region);
  HoleSearch search(options.policy, searchLimits(options));
  std::vector<HoleSearch::Candidate> trace;
  search.traceCandidates(&trace);
  const Plan best = search.solve(words, width, context);
  for (const auto &c : trace)
    r.candidates.push_back(CandidateReport{describePlan(c.plan), c.cost, samePlanShape(c.plan, best)});
  std::stable_sort(r.candidates.begin(), r.candidates.end(),
                   [](const auto &a, const auto &b) { return a.estimatedBytes < b.estimatedBytes; });

  ExprPtr emitted;
  std::optional<Payload> emittedPayload;
  if (!storedProgram) {
    Bytes payload;
    emitted = search.emit(best, words, width, payload);
    storedProgram = emitted.get();
    storedPayload = &emittedPayload.emplace(std::move(payload));
  }
  r.program = printExpr(*storedProgram);
  collectLiterals(*storedProgram, "", storedPayload, r.literals);
  for (const auto &l : r.literals) r.payloadBytes += l.bytes;
  if (!emitted) {
    // The program stored is the one chosen, whatever this search's best: the compressor may have
    // reused a structure (tensors of one role) or kept the template. The first candidate of its
    // shape is starred (two concats of as many pieces read alike); where none has it, it is
    // listed itself, at its payload's real size.
    const std::string stored = describeProgram(*storedProgram);
    bool listed = false;
    for (CandidateReport &c : r.candidates) {
      c.chosen = !listed && c.program == stored;
      listed |= c.chosen;
    }
    if (!listed) {
      const CandidateReport self{stored + " (stored)", static_cast<double>(r.payloadBytes), true};
      r.candidates.insert(std::lower_bound(r.candidates.begin(), r.candidates.end(), self,
                                           [](const auto &a, const auto &b) {
                                             return a.estimatedBytes < b.estimatedBytes;
                                           }),
                          self);
    }
  }

  r.wordEntropyBits = entropyBitsPerWord(words);
  if (context.floatType) {
    const char *names[] = {"sign", "exp", "mant"};
    const unsigned widths[] = {info.signBits, info.exponentBits, info.mantissaBits};
    const std::vector<unsigned> shifts = mergeFieldShifts(widths);
    for (size_t k = 0; k < 3; ++k) {
      std::vector<uint64_t> field = extractField(words, shifts[k], widths[k]);
      r.fieldEntropyBits.emplace_back(names[k], entropyBitsPerWord(std::move(field)));
    }
  }
  return r;
}

} // namespace brevis
