#pragma once
// The tests' reference evaluator: the semantics of docs/language.md, directly, with no
// streaming or chunking, for comparing against the interpreter and the JIT.
#include "lang/TypeChecker.h"
#include "runtime/codecs/LitDecode.h"
#include "runtime/containers/Payload.h"
#include "runtime/common/WordOps.h"

#include <gtest/gtest.h>

#include <vector>

namespace brevis {

/// Direct evaluation from the semantics in docs/language.md, with no streaming or chunking.
inline std::vector<uint64_t> referenceEvaluate(const Expr &e, const Payload &p, const TypeChecker &types) {
  const unsigned width = types.types().at(&e).width;
  switch (e.kind) {
  case NodeKind::Lit: {
    const auto &l = as<Lit>(e);
    if (l.isInline()) return l.words();
    auto w = decodeLit(l, p);
    EXPECT_TRUE(w) << w.error().message;
    return w ? *w : std::vector<uint64_t>{};
  }
  case NodeKind::Const: return std::vector<uint64_t>(as<Const>(e).type.length, as<Const>(e).value);
  case NodeKind::Concat: {
    std::vector<uint64_t> out;
    for (const auto &c : as<Concat>(e).parts) {
      auto w = referenceEvaluate(*c, p, types);
      out.insert(out.end(), w.begin(), w.end());
    }
    return out;
  }
  case NodeKind::Repeat: {
    auto body = referenceEvaluate(*as<Repeat>(e).body, p, types);
    std::vector<uint64_t> out;
    for (uint64_t k = 0; k < as<Repeat>(e).count; ++k) out.insert(out.end(), body.begin(), body.end());
    return out;
  }
  case NodeKind::Map: {
    const auto &m = as<Map>(e);
    auto w = referenceEvaluate(*m.body, p, types);
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = applyMap(m.fn, m.constantFor(i), width, w[i]);
    return w;
  }
  case NodeKind::Scan: {
    const auto &s = as<Scan>(e);
    std::vector<uint64_t> out{s.init};
    for (uint64_t u : referenceEvaluate(*s.body, p, types)) out.push_back(scanStep(s.op, width, out.back(), u));
    return out;
  }
  case NodeKind::Merge: {
    const auto &m = as<Merge>(e);
    std::vector<uint64_t> out(types.types().at(&e).length, 0);
    for (const auto &f : m.fields) {
      unsigned fw = types.types().at(f.expr.get()).width;
      auto w = referenceEvaluate(*f.expr, p, types);
      for (size_t i = 0; i < out.size(); ++i) out[i] = fw == 64 ? w[i] : (out[i] << fw) | w[i];
    }
    return out;
  }
  case NodeKind::Hole: break;
  }
  ADD_FAILURE() << "holes are never generated";
  return {};
}

/// Type-checks `e` (which must be well typed) and evaluates it.
inline std::vector<uint64_t> referenceEvaluate(const Expr &e, const Payload &p) {
  Diagnostics diags("reference", "");
  TypeChecker checker(diags);
  EXPECT_TRUE(checker.check(e, p.size())) << diags.render();
  return referenceEvaluate(e, p, checker);
}

} // namespace brevis
