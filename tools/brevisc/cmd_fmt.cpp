// brevisc fmt PROGRAM.bdsl [-i]: print the program in canonical form.
#include "tools/brevisc/Commands.h"

#include "frontend/Parser.h"
#include "lang/Diagnostics.h"
#include "lang/Printer.h"
#include "runtime/FileIO.h"

#include <iostream>

namespace brevis::cli {

namespace {

struct FmtOptions {
  std::string input;
  bool inPlace = false;
};

int runFmt(const FmtOptions &o) {
  auto text = readTextFile(o.input);
  if (!text) return fail(text.error().message);
  Diagnostics diags(o.input, std::move(*text));
  auto module = parseModule(diags);
  std::cerr << diags.render();
  if (!module) return kExitFailure;
  std::string formatted = printModule(*module);
  if (!o.inPlace) {
    std::cout << formatted;
    return kExitOk;
  }
  auto written = writeFile(o.input, ByteSpan(reinterpret_cast<const uint8_t *>(formatted.data()), formatted.size()),
                           /*overwrite=*/true);
  return written ? kExitOk : fail(written.error().message);
}

} // namespace

void registerFmt(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<FmtOptions>();
  auto *cmd = app.add_subcommand("fmt", "Print a program in canonical form");
  cmd->add_option("program", o->input, ".bdsl file")->required()->check(CLI::ExistingFile);
  cmd->add_flag("-i,--in-place", o->inPlace, "rewrite the file instead of printing");
  cmd->callback([o, &ctx] { ctx.exitCode = runFmt(*o); });
}

} // namespace brevis::cli
