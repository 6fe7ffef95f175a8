// brevisc check PROGRAM.bdsl [--types]: parse and type-check; silent on success unless asked
// to print every node's derived type, diagnostics otherwise.
#include "tools/brevisc/Commands.h"

#include "frontend/Parser.h"
#include "lang/Diagnostics.h"
#include "lang/Printer.h"
#include "lang/TypeChecker.h"
#include "runtime/containers/FileIO.h"

#include <iostream>

namespace brevis::cli {

namespace {

struct CheckOptions {
  std::string input;
  bool types = false;
  bool json = false;
};

int runCheck(const CheckOptions &o) {
  if (o.json && o.types) return fail("--json and --types both print on standard output; choose one");
  auto text = readProgramText(o.input);
  if (!text) return fail(text.error().message);
  Diagnostics diags(o.input, std::move(*text));
  auto module = parseModule(diags);
  std::optional<TypeChecker> checker;
  if (module) {
    checker.emplace(diags, /*recordTypes=*/o.types);
    checker->checkModule(*module);
  }
  std::cerr << diags.render();
  if (o.json) {
    size_t regions = module && module->isCheckpoint() ? module->checkpoint().regions.size() : 0;
    printJson({{"command", "check"}, {"input", o.input}, {"ok", !diags.hasErrors()}, {"regions", regions}});
  }
  if (diags.hasErrors()) return kExitFailure;
  if (o.types) {
    annotateTypes(*module, *checker);
    std::cout << printModule(*module);
  }
  return kExitOk;
}

} // namespace

void registerCheck(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<CheckOptions>();
  auto *cmd = app.add_subcommand("check", "Parse and type-check a program; exit 1 with diagnostics on errors");
  cmd->add_option("program", o->input, ".bdsl file")->required();
  cmd->add_flag("--types", o->types, "print the program with every node annotated with its derived type");
  cmd->add_flag("--json", o->json,
                "print the result as JSON on stdout: {\"command\": \"check\", \"ok\": ...} (diagnostics stay on stderr)");
  cmd->callback([o, &ctx] { ctx.exitCode = runCheck(*o); });
}

} // namespace brevis::cli
