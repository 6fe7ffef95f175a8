// brevisc check PROGRAM.bdsl: parse and type-check; silent on success, diagnostics otherwise.
#include "tools/brevisc/Commands.h"

#include "runtime/FileIO.h"

namespace brevis::cli {

void registerCheck(CLI::App &app, Context &ctx) {
  auto input = std::make_shared<std::string>();
  auto *cmd = app.add_subcommand("check", "Parse and type-check a program; exit 1 with diagnostics on errors");
  cmd->add_option("program", *input, ".bdsl file")->required()->check(CLI::ExistingFile);
  cmd->callback([input, &ctx] {
    auto text = readTextFile(*input);
    if (!text) {
      ctx.exitCode = fail(text.error().message);
      return;
    }
    ctx.exitCode = loadProgram(*input, std::move(*text), /*requireRunnable=*/false) ? kExitOk : kExitFailure;
  });
}

} // namespace brevis::cli
