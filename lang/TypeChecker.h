#pragma once
// Derives every expression's stream type and reports each violated typing rule
// (docs/language.md, "Typing"; the rules are in OperatorTyping.h) as a diagnostic at the
// offending node.
#include "Ast.h"
#include "Diagnostics.h"

#include <optional>
#include <unordered_map>

namespace brevis {

class TypeChecker {
public:
  /// Without `recordTypes`, types() stays empty: a table entry per node is most of the
  /// checker's time and memory on programs of many regions, and only annotation needs it.
  explicit TypeChecker(Diagnostics &diags, bool recordTypes = true) : diags_(diags), recordTypes_(recordTypes) {}

  /// Type of `e`, or nullopt if it (or a child) is ill-typed. `payloadSize`, when known,
  /// bounds payload references.
  std::optional<StreamType> check(const Expr &e, std::optional<uint64_t> payloadSize = std::nullopt);

  /// Checks a whole module; for a checkpoint also the regions against the source layout.
  bool checkModule(const Module &m);

  /// True if any checked expression contains a hole (well-typed, but not runnable).
  bool sawHole() const { return sawHole_; }
  /// Where the first hole lies (in source order), when there is one.
  SourceLoc firstHole() const { return firstHole_; }

  /// Derived type of every well-typed node checked so far (if recording types).
  const std::unordered_map<const Expr *, StreamType> &types() const { return types_; }

private:
  std::optional<StreamType> derive(const Expr &e);
  void checkCheckpoint(const Checkpoint &c);

  Diagnostics &diags_;
  std::optional<uint64_t> payloadSize_;
  std::unordered_map<const Expr *, StreamType> types_;
  bool recordTypes_;
  bool sawHole_ = false;
  SourceLoc firstHole_;
};

/// Writes every checked node's derived type into its annotation, so that printing the module
/// shows each node's type (`brevisc check --types`).
void annotateTypes(Module &m, const TypeChecker &checker);

} // namespace brevis
