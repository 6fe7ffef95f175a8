#include "TypeChecker.h"

#include "OperatorTyping.h"
#include "Printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <unordered_set>

namespace brevis {

std::optional<StreamType> TypeChecker::check(const Expr &e, std::optional<uint64_t> payloadSize) {
  payloadSize_ = payloadSize;
  return derive(e);
}

std::optional<StreamType> TypeChecker::derive(const Expr &e) {
  // Every child is checked (and reports its errors) before the node's own rule.
  std::vector<StreamType> childTypes;
  bool childrenTyped = true;
  forEachChild(e, [&](const Expr &c) {
    if (auto t = derive(c)) childTypes.push_back(*t);
    else childrenTyped = false;
  });
  if (const Merge *m = dynAs<Merge>(e)) {
    // A field is read (and edited) by its name: two of one name would be ambiguous. (A merge
    // has a few fields, at most one per bit of its words: compared pairwise, without a set's
    // allocations in a program of many small merges.)
    const auto &fields = m->fields;
    for (size_t i = 0; i < fields.size(); ++i) {
      const auto same = [&](const MergeField &g) { return g.name == fields[i].name; };
      if (!fields[i].name.empty() && std::any_of(fields.begin(), fields.begin() + static_cast<ptrdiff_t>(i), same))
        diags_.error(fields[i].expr->loc, fmt::format("merge field name '{}' is used twice", fields[i].name));
    }
  }
  if (!childrenTyped) return std::nullopt;

  Typing typing = typeOperator(e, childTypes, payloadSize_);
  if (auto *error = std::get_if<TypeError>(&typing)) {
    diags_.error(error->child ? children(e)[*error->child]->loc : e.loc, error->message);
    return std::nullopt;
  }
  const StreamType t = std::get<StreamType>(typing);
  if (e.kind == NodeKind::Hole && !sawHole_) {
    sawHole_ = true;
    firstHole_ = e.loc;
  }

  if (e.annotation && *e.annotation != t) {
    diags_.error(e.loc, fmt::format("annotated type {} does not match the derived type {}", toString(*e.annotation),
                                    toString(t)));
    return std::nullopt;
  }
  if (recordTypes_) types_[&e] = t;
  return t;
}

void TypeChecker::checkCheckpoint(const Checkpoint &c) {
  if (c.version != kLanguageVersion)
    diags_.error(c.loc, fmt::format("unsupported language version {}; this brevisc reads version {}", c.version,
                                    kLanguageVersion));
  payloadSize_ = c.payloadSize;
  uint64_t expectedOffset = 0;
  std::unordered_set<std::string_view> names; // of the regions, which outlive the check
  names.reserve(c.regions.size());
  for (const auto &r : c.regions) {
    if (r.bytes.offset != expectedOffset)
      diags_.error(r.loc, fmt::format("region starts at byte {}, but the previous one ends at byte {}", r.bytes.offset,
                                      expectedOffset));
    if (__builtin_add_overflow(r.bytes.offset, r.bytes.size, &expectedOffset)) {
      diags_.error(r.loc, "region end overflows 64 bits");
      return;
    }
    StreamType expected{8, r.bytes.size};
    if (r.kind == RegionKind::Tensor) {
      if (!names.insert(r.name).second)
        diags_.error(r.loc, fmt::format("tensor {} is declared twice", quoteString(r.name)));
      const auto &info = dtypeInfo(r.dtype);
      auto count = elementCount(r.shape);
      uint64_t bytes;
      if (!count || __builtin_mul_overflow(*count, info.wordBits / 8, &bytes)) {
        diags_.error(r.loc, count ? "tensor byte count overflows 64 bits" : "tensor element count overflows 64 bits");
        continue;
      }
      if (bytes != r.bytes.size)
        diags_.error(r.loc, fmt::format("tensor of {} {} elements needs {} bytes, but its range holds {}", *count,
                                        info.bdslName, bytes, r.bytes.size));
      expected = StreamType{info.wordBits, *count};
    }
    auto t = derive(*r.program);
    if (t && *t != expected)
      diags_.error(r.program->loc, fmt::format("program produces {}, but the {} needs {}", toString(*t),
                                               r.kind == RegionKind::Tensor ? "tensor" : "region", toString(expected)));
  }
  if (expectedOffset != c.source.size)
    diags_.error(c.sourceLoc.valid() ? c.sourceLoc : c.loc,
                 fmt::format("the source file is declared as {} bytes, but the regions cover {}", c.source.size,
                             expectedOffset));
}

bool TypeChecker::checkModule(const Module &m) {
  size_t before = diags_.errorCount();
  if (m.isCheckpoint())
    checkCheckpoint(m.checkpoint());
  else
    check(m.expr());
  return diags_.errorCount() == before;
}

namespace {
void annotate(Expr &e, const std::unordered_map<const Expr *, StreamType> &types) {
  if (auto it = types.find(&e); it != types.end()) e.annotation = it->second;
  for (Expr *c : children(e)) annotate(*c, types);
}
} // namespace

void annotateTypes(Module &m, const TypeChecker &checker) {
  if (!m.isCheckpoint()) {
    annotate(m.expr(), checker.types());
    return;
  }
  for (auto &r : m.checkpoint().regions) annotate(*r.program, checker.types());
}

} // namespace brevis
