#include "synth/search/SketchFill.h"

#include "lang/MergeLayout.h"
#include "runtime/codecs/LitEncode.h"
#include "runtime/common/WordOps.h"
#include "synth/CostModel.h"
#include "synth/Literals.h"

#include <fmt/format.h>

#include <algorithm>

namespace brevis {

namespace {

struct Filler {
  HoleSearch &search;
  Bytes &payload;
  size_t filled = 0;
  std::optional<FillError> error;

  bool fail(const Expr &e, std::string message) {
    if (!error) error = FillError{e.loc, std::move(message)};
    return false;
  }

  bool fill(ExprPtr &e, std::span<const uint64_t> words, const HoleContext &context) {
    const StreamType type = streamTypeOf(*e);
    if (type.length != words.size())
      return fail(*e, fmt::format("this {} produces {} words where {} are needed", nodeKindName(e->kind), type.length,
                                  words.size()));
    const HoleContext inner{nullptr, {}};
    switch (e->kind) {
    case NodeKind::Hole: {
      if (as<Hole>(*e).literalOnly) return fillLiteral(e, words, type);
      const Plan plan = search.solve(words, type.width, context);
      SourceLoc loc = e->loc;
      e = search.emit(plan, words, type.width, payload);
      e->loc = loc;
      ++filled;
      return true;
    }
    case NodeKind::Lit:
    case NodeKind::Const: return true; // kept as written; the checksum decides whether it is right
    case NodeKind::Concat: {
      uint64_t at = 0;
      for (ExprPtr &part : as<Concat>(*e).parts) {
        const uint64_t n = streamTypeOf(*part).length;
        if (!fill(part, words.subspan(at, n), inner)) return false;
        at += n;
      }
      return true;
    }
    case NodeKind::Repeat: {
      Repeat &r = as<Repeat>(*e);
      const uint64_t period = words.size() / r.count;
      for (uint64_t i = period; i < words.size(); ++i)
        if (words[i] != words[i - period])
          return fail(*e, fmt::format("the words do not repeat with period {} (word {} differs)", period, i));
      return fill(r.body, words.first(period), inner);
    }
    case NodeKind::Map: {
      Map &m = as<Map>(*e);
      std::vector<uint64_t> body(words.size());
      for (size_t i = 0; i < words.size(); ++i)
        body[i] = inverseMap(m.fn, m.constantFor(i), type.width, words[i]);
      return fill(m.body, body, inner);
    }
    case NodeKind::Scan: {
      Scan &s = as<Scan>(*e);
      if (words.empty()) return fail(*e, "a scan produces at least one word");
      if (words[0] != s.init)
        return fail(*e, fmt::format("scan starts at {:#x} but the first word is {:#x}", s.init, words[0]));
      // Sketches are filled in 64-bit words throughout.
      return fill(s.body, scanDifferences(s.op, type.width, words).view().widened(), inner);
    }
    case NodeKind::Merge: {
      Merge &m = as<Merge>(*e);
      std::vector<unsigned> widths;
      for (const MergeField &f : m.fields) widths.push_back(streamTypeOf(*f.expr).width);
      const std::vector<unsigned> shifts = mergeFieldShifts(widths);
      for (size_t k = 0; k < m.fields.size(); ++k) {
        if (!containsHole(*m.fields[k].expr)) continue;
        if (!fill(m.fields[k].expr, extractField(words, shifts[k], widths[k]), inner)) return false;
      }
      return true;
    }
    }
    return true;
  }

  /// A literal hole: its words in the encoding it names, or the smallest one for auto.
  bool fillLiteral(ExprPtr &e, std::span<const uint64_t> words, StreamType type) {
    const Hole &h = as<Hole>(*e);
    const WordsView view(words);
    const uint64_t offset = payload.size();
    Encoding encoding;
    if (h.encoding) {
      encoding = *h.encoding;
      if (!encodeLit(encoding, view, type.width, payload, search.policy().zstdLevelFor(view.size()),
                     search.policy().minGain))
        return fail(*e, fmt::format("a {} literal cannot hold these words{}", encodingName(encoding),
                                    encoding == Encoding::Huffman ? " (it codes at most 65,536 distinct words)" : ""));
    } else {
      encoding = encodeSmallest(view, type.width, payload, search.policy());
    }
    const SourceLoc loc = e->loc;
    e = Lit::make(type, encoding, ByteRange{offset, payload.size() - offset});
    e->loc = loc;
    ++filled;
    return true;
  }

  static bool containsHole(const Expr &e) {
    if (e.kind == NodeKind::Hole) return true;
    bool found = false;
    forEachChild(e, [&](const Expr &child) { found = found || containsHole(child); });
    return found;
  }
};

} // namespace

std::variant<size_t, FillError> fillHoles(ExprPtr &program, std::span<const uint64_t> words, const HoleContext &context,
                                          HoleSearch &search, Bytes &payload) {
  Filler filler{search, payload, 0, std::nullopt};
  if (!filler.fill(program, words, context)) return *filler.error;
  return filler.filled;
}

namespace {

template <typename F> void forEachPayloadLit(Expr &e, F &&f) {
  if (e.kind == NodeKind::Lit) {
    if (Lit &lit = as<Lit>(e); !lit.isInline()) f(lit);
    return;
  }
  for (Expr *child : children(e)) forEachPayloadLit(*child, f);
}

} // namespace

Bytes compactPayload(Checkpoint &c, ByteSpan payload) {
  // The ranges read, merged where they touch or overlap (literals may share bytes: a repeated
  // tensor reads its first copy's).
  std::vector<std::pair<uint64_t, uint64_t>> read; // [begin, end)
  for (Region &r : c.regions)
    forEachPayloadLit(*r.program, [&](Lit &lit) {
      if (lit.payload().size) read.emplace_back(lit.payload().offset, lit.payload().offset + lit.payload().size);
    });
  std::sort(read.begin(), read.end());
  std::vector<std::pair<uint64_t, uint64_t>> kept;
  for (const auto &range : read)
    if (!kept.empty() && range.first <= kept.back().second)
      kept.back().second = std::max(kept.back().second, range.second);
    else
      kept.push_back(range);
  // Each kept run's new start, and the bytes.
  std::vector<uint64_t> newStart;
  Bytes out;
  for (const auto &[begin, end] : kept) {
    newStart.push_back(out.size());
    out.insert(out.end(), payload.begin() + static_cast<ptrdiff_t>(begin), payload.begin() + static_cast<ptrdiff_t>(end));
  }
  // Where an old offset lands: the kept bytes before it (an empty range too keeps its place).
  auto moved = [&](uint64_t offset) -> uint64_t {
    auto after = std::upper_bound(kept.begin(), kept.end(), std::make_pair(offset, UINT64_MAX));
    if (after == kept.begin()) return 0;
    const size_t run = static_cast<size_t>(after - kept.begin()) - 1;
    return newStart[run] + std::min(offset, kept[run].second) - kept[run].first;
  };
  for (Region &r : c.regions)
    forEachPayloadLit(*r.program, [&](Lit &lit) { lit.data = ByteRange{moved(lit.payload().offset), lit.payload().size}; });
  c.payloadSize = out.size();
  return out;
}

} // namespace brevis
