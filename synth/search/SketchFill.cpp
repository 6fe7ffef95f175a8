#include "synth/search/SketchFill.h"

#include "lang/MergeLayout.h"
#include "runtime/common/WordOps.h"
#include "synth/Literals.h"

#include <fmt/format.h>

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
      for (size_t i = 0; i < words.size(); ++i) body[i] = inverseMap(m.fn, m.param, type.width, words[i]);
      return fill(m.body, body, inner);
    }
    case NodeKind::Scan: {
      Scan &s = as<Scan>(*e);
      if (words.empty()) return fail(*e, "a scan produces at least one word");
      if (words[0] != s.init)
        return fail(*e, fmt::format("scan starts at {:#x} but the first word is {:#x}", s.init, words[0]));
      return fill(s.body, scanDifferences(s.op, type.width, words), inner);
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

void movePayload(Expr &e, ByteSpan from, Bytes &to) {
  if (e.kind == NodeKind::Lit) {
    Lit &lit = as<Lit>(e);
    if (lit.isInline()) return;
    const ByteRange r = lit.payload();
    const uint64_t offset = to.size();
    to.insert(to.end(), from.begin() + static_cast<ptrdiff_t>(r.offset),
              from.begin() + static_cast<ptrdiff_t>(r.offset + r.size));
    lit.data = ByteRange{offset, r.size};
    return;
  }
  for (Expr *child : children(e)) movePayload(*child, from, to);
}

} // namespace brevis
