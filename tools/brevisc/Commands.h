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

/// The most threads -T asks for: far beyond any core count, and below what would exhaust a
/// process's threads.
inline constexpr unsigned kMaxThreads = 1024;

/// Adds -T,--threads (0: all cores) to `cmd`, with a range check that names the option.
inline CLI::Option *addThreadsOption(CLI::App *cmd, unsigned &threads, const std::string &help) {
  return cmd->add_option("-T,--threads", threads, help)->check(CLI::Range(0u, kMaxThreads));
}

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
