#pragma once
// The typing rule of every operator, stated once (docs/language.md, "Typing"): what a node's own
// fields must be, what each of its children must be, and the node's stream type from its
// children's. The type checker reports a broken rule as a diagnostic; the AST helpers, the
// interpreter and the JIT derive types with the same rules.
#include "Ast.h"

#include <optional>
#include <span>
#include <string>
#include <variant>

namespace brevis {

/// A broken typing rule.
struct TypeError {
  std::string message;
  /// The child (its index in children(e)) the rule is about, whose location a diagnostic points
  /// at; none when the rule is about the node itself.
  std::optional<size_t> child;
};

/// The node's stream type, or the first rule it breaks.
using Typing = std::variant<StreamType, TypeError>;

/// The type of `e` given the types of its children (in children(e) order, each well-typed).
/// Leaves are typed by their own fields; a payload literal's range must lie within
/// `payloadSize` when that is known.
Typing typeOperator(const Expr &e, std::span<const StreamType> childTypes,
                    std::optional<uint64_t> payloadSize = std::nullopt);

/// typeOperator() of a node known to be well-typed (type-checked; a broken rule is an internal bug).
/// A leaf's fields are not checked again: its type is the one it declares.
StreamType checkedOperatorType(const Expr &e, std::span<const StreamType> childTypes);

} // namespace brevis
