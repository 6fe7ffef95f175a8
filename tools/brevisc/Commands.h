#pragma once
// One registration function per subcommand; each lives in its own cmd_<name>.cpp.
#include "tools/brevisc/Common.h"

#include <CLI/CLI.hpp>

namespace brevis::cli {

/// Shared state the subcommands read (global flags) and write (their exit status).
struct Context {
  Verbosity verbosity;
  int exitCode = kExitOk;
};

void registerSynth(CLI::App &app, Context &ctx);
void registerCheck(CLI::App &app, Context &ctx);
void registerFmt(CLI::App &app, Context &ctx);
void registerRun(CLI::App &app, Context &ctx);
void registerCompress(CLI::App &app, Context &ctx);
void registerDecompress(CLI::App &app, Context &ctx);
void registerInfo(CLI::App &app, Context &ctx);
void registerVerify(CLI::App &app, Context &ctx);
void registerPack(CLI::App &app, Context &ctx); ///< pack and unpack
void registerExplain(CLI::App &app, Context &ctx);
void registerPrior(CLI::App &app, Context &ctx); ///< prior learn

} // namespace brevis::cli
