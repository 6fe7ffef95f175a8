// brevisc fmt PROGRAM.bdsl [-i]: print the program in canonical form. Comments are kept, each
// above the region it is written in or before (one inside a region moves up to its head).
#include "tools/brevisc/Commands.h"

#include "frontend/Parser.h"
#include "lang/Diagnostics.h"
#include "lang/Printer.h"
#include "runtime/containers/FileIO.h"

#include <iostream>

namespace brevis::cli {

namespace {

struct FmtOptions {
  std::string input;
  bool inPlace = false;
  bool dropComments = false;
};

int runFmt(const FmtOptions &o) {
  auto text = readProgramText(o.input);
  if (!text) return fail(text.error().message);
  Diagnostics diags(o.input, std::move(*text));
  auto module = parseModule(diags);
  std::cerr << diags.render();
  if (!module) return kExitFailure;
  if (o.dropComments) {
    module->leadingComments.clear();
    module->trailingComments.clear();
    if (module->isCheckpoint())
      for (Region &r : module->checkpoint().regions) r.comments.clear();
  }
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
  cmd->add_option("program", o->input, ".bdsl file")->required();
  cmd->add_flag("-i,--in-place", o->inPlace, "rewrite the file instead of printing");
  cmd->add_flag("--drop-comments", o->dropComments,
                "leave out the program's comments (kept by default, each above the region it is written in or "
                "before)");
  cmd->callback([o, &ctx] { ctx.exitCode = runFmt(*o); });
}

} // namespace brevis::cli
