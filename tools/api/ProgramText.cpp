#include "tools/api/ProgramText.h"

#include "frontend/Parser.h"
#include "lang/Diagnostics.h"
#include "lang/TypeChecker.h"

namespace brevis {

std::optional<Module> parseProgram(const std::string &name, std::string text, bool requireRunnable,
                                   std::string &diagnostics) {
  Diagnostics diags(name, std::move(text));
  auto module = parseModule(diags);
  if (module) {
    TypeChecker checker(diags, /*recordTypes=*/false);
    checker.checkModule(*module);
    if (!diags.hasErrors() && requireRunnable && checker.sawHole())
      diags.error(checker.firstHole(), "the program has holes ('?', or a literal without its payload range); fill "
                                       "them first: brevisc synth PROGRAM fills them from the original file");
  }
  diagnostics += diags.render();
  if (diags.hasErrors()) return std::nullopt;
  return module;
}

} // namespace brevis
