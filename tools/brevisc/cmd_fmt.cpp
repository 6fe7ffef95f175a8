// brevisc fmt PROGRAM.bdsl [-i]: print the program in canonical form. Comments are not part of
// the AST, so -i refuses to rewrite a file that has some unless told to drop them.
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

/// Whether the text has a `#` comment outside string literals (the printer does not keep them).
bool hasComments(std::string_view text) {
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\') ++i;
      else if (c == '"' || c == '\n') inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '#') {
      return true;
    }
  }
  return false;
}

int runFmt(const FmtOptions &o) {
  auto text = readProgramText(o.input);
  if (!text) return fail(text.error().message);
  if (o.inPlace && !o.dropComments && hasComments(*text))
    return fail(o.input + " has comments, which the canonical form does not keep; use --drop-comments to rewrite it "
                          "anyway");
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
  cmd->add_option("program", o->input, ".bdsl file")->required();
  cmd->add_flag("-i,--in-place", o->inPlace, "rewrite the file instead of printing");
  cmd->add_flag("--drop-comments", o->dropComments, "allow -i to rewrite a file whose comments would be lost");
  cmd->callback([o, &ctx] { ctx.exitCode = runFmt(*o); });
}

} // namespace brevis::cli
