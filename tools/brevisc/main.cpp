// brevisc: the Brevis driver. Subcommands live in cmd_<name>.cpp.
#include "tools/brevisc/Commands.h"

#include <iostream>

int main(int argc, char **argv) {
  using namespace brevis::cli;
  CLI::App app{"brevisc: lossless neural-network checkpoint compression by per-tensor program synthesis"};
  app.footer("Exit status: 0 on success, 1 when an input is invalid or corrupt or a result fails verification, "
             "2 on a usage error.");
  app.require_subcommand(1);
  app.fallthrough(); // -q and -v work after the subcommand name too
  Context ctx;
  app.add_flag("-q,--quiet", ctx.verbosity.quiet, "print nothing but errors");
  app.add_flag("-v,--verbose", ctx.verbosity.verbose, "print more about what is done");
  app.set_version_flag("--version", "brevisc 0.1.0 (language version 1, archive version 3)");
  registerSynth(app, ctx);
  registerCheck(app, ctx);
  registerFmt(app, ctx);
  registerRun(app, ctx);
  registerCompress(app, ctx);
  registerDecompress(app, ctx);
  registerVerify(app, ctx);
  registerInfo(app, ctx);
  registerPack(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    app.exit(e);
    return kExitUsage;
  }
  return ctx.exitCode;
}
