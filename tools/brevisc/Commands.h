#pragma once
// One registration function per subcommand; each lives in its own cmd_<name>.cpp.
#include "tools/brevisc/Common.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace brevis::cli {

/// Shared state the subcommands read (global flags) and write (their exit status).
struct Context {
  Verbosity verbosity;
  int exitCode = kExitOk;
};

/// The most threads -T asks for: far beyond any core count, and below what would exhaust a
/// process's threads.
inline constexpr unsigned kMaxThreads = 1024;

/// An option value that must be a whole number from `low` to `high`, in decimal: says which of
/// the two it is not ("5.5 is not a whole number", where CLI::Range said "not in range 1 to 9"),
/// and hands the number on without its sign or leading zeros (CLI11 would read "010" as octal).
/// Used with ->transform().
inline CLI::Validator wholeNumberIn(long low, long high) {
  return CLI::Validator(
      [low, high](std::string &value) -> std::string {
        const bool negative = !value.empty() && value[0] == '-';
        const size_t sign = !value.empty() && (value[0] == '-' || value[0] == '+') ? 1 : 0;
        const bool digits = sign < value.size() && value.find_first_not_of("0123456789", sign) == std::string::npos;
        if (!digits) return value + " is not a whole number";
        const std::string magnitude = value.substr(std::min(value.find_first_not_of('0', sign), value.size() - 1));
        const std::string outOfRange = fmt::format("{} is not from {} to {}", value, low, high);
        if (magnitude.size() > 12) return outOfRange;
        const long number = negative ? -std::stol(magnitude) : std::stol(magnitude);
        if (number < low || number > high) return outOfRange;
        value = std::to_string(number);
        return std::string();
      },
      fmt::format("INT in [{} - {}]", low, high));
}

/// Adds -T,--threads (0: all cores) to `cmd`, with a range check that names the option.
inline CLI::Option *addThreadsOption(CLI::App *cmd, unsigned &threads, const std::string &help) {
  return cmd->add_option("-T,--threads", threads, help)->transform(wholeNumberIn(0, kMaxThreads));
}

/// Adds --prior (kPriorHelp; strategyOptionsFor reads it) to `cmd`.
inline CLI::Option *addPriorOption(CLI::App *cmd, std::string &prior) {
  return cmd->add_option("--prior", prior, kPriorHelp)->check([](const std::string &value) {
    return value.empty() ? std::string("--prior needs a prior file or \"uniform\"") : std::string();
  });
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
