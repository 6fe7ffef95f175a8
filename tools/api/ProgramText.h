#pragma once
// From program text to a checked module, with diagnostics rendered for people.
#include "lang/Ast.h"

#include <optional>
#include <string>

namespace brevis {

/// Parses and type-checks program text; diagnostics (file:line:col, source line, caret) are
/// appended to `diagnostics`. With `requireRunnable`, a program with holes is refused.
std::optional<Module> parseProgram(const std::string &name, std::string text, bool requireRunnable,
                                   std::string &diagnostics);

} // namespace brevis
