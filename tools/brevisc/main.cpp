// brevisc: the Brevis driver. Subcommands live in cmd_<name>.cpp.
#include "tools/brevisc/Commands.h"

#include "lang/Ast.h"
#include "lang/Printer.h"
#include "runtime/containers/Archive.h"
#include "runtime/containers/FileIO.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace {

/// Edit distance, for suggesting the command a typo meant.
size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

/// "unknown command 'comprss'; did you mean 'compress'?"
std::string unknownCommand(const CLI::App &app, const std::string &given) {
  std::string best;
  size_t bestDistance = 3; // farther than two edits is no suggestion
  for (const CLI::App *sub : app.get_subcommands({}))
    if (size_t d = editDistance(given, sub->get_name()); d < bestDistance) bestDistance = d, best = sub->get_name();
  std::string message = "unknown command '" + given + "'";
  return best.empty() ? message + "; brevisc --help lists the commands" : message + "; did you mean '" + best + "'?";
}

} // namespace

int main(int argc, char **argv) {
  using namespace brevis::cli;
  // A file-size limit (ulimit -f) then fails a write with EFBIG, reported like a full disk,
  // instead of killing the process and leaving its temporary file.
  std::signal(SIGXFSZ, SIG_IGN);
  brevis::installCleanupHandlers(); // from the start, so that an early SIGINT removes what it must

  CLI::App app{"brevisc: lossless neural-network checkpoint compression by per-tensor program synthesis"};
  app.footer("Exit status: 0 on success, 1 when an input is invalid or corrupt or a result fails verification, "
             "2 on a usage error. 'brevisc COMMAND --help' describes a command.");
  app.require_subcommand(1);
  app.fallthrough(); // -q and -v work after the subcommand name too
  Context ctx;
  app.add_flag_callback(
      "-q,--quiet",
      [&ctx] {
        ctx.verbosity.quiet = true;
        silenceNotices();
      },
      "print nothing on stderr but errors (no summaries, notes or progress), nor verify's summary line on stdout; "
      "reports on stdout (info, explain, fmt, JSON) stay");
  app.add_flag("-v,--verbose", ctx.verbosity.verbose,
               "print more where a command has more to say: info lists every tensor; compress, pack and unpack "
               "each file of a directory; check why it did not compare the declarations with the header; --jit its "
               "compilations and cache");
  app.set_version_flag("-V,--version", fmt::format("brevisc 0.1.0 (language version {}, archive format version {})",
                                                   brevis::kLanguageVersion, brevis::kArchiveVersion));
  // Where the first argument names a command, only that command's options are built: building
  // every command's was a third of the instructions of `brevisc --version` (a process start,
  // which decoding a small file pays). Help and anything else see every command.
  struct CommandEntry {
    std::string_view name;
    void (*add)(CLI::App &, Context &);
  };
  static constexpr CommandEntry kCommands[] = {
      {"synth", registerSynth},   {"check", registerCheck},       {"fmt", registerFmt},       {"run", registerRun},
      {"compress", registerCompress}, {"decompress", registerDecompress}, {"verify", registerVerify},
      {"info", registerInfo},     {"pack", registerPack},         {"unpack", registerPack}, // one registers both
      {"explain", registerExplain}, {"prior", registerPrior}};
  const CommandEntry *named = nullptr;
  if (argc >= 2)
    for (const CommandEntry &c : kCommands)
      if (c.name == argv[1]) named = &c;
  if (named) {
    named->add(app, ctx);
  } else {
    for (size_t i = 0; i < std::size(kCommands); ++i)
      if (i == 0 || kCommands[i].add != kCommands[i - 1].add) kCommands[i].add(app, ctx);
    assert(app.get_subcommands({}).size() == std::size(kCommands) && "kCommands names every command");
  }

  // `brevisc help [COMMAND]`, and a misspelled command named as such.
  if (!named && argc >= 2 && argv[1][0] != '-') {
    const std::string first = argv[1];
    if (first == "help") {
      app.name(argv[0]); // as parsing names it, for the usage lines
      if (argc >= 3) {
        try {
          // `help prior learn`: the subcommand's subcommands too.
          CLI::App *sub = app.get_subcommand(argv[2]);
          std::vector<std::string> asHelp{argv[0], sub->get_name()};
          for (int k = 3; k < argc; ++k) {
            CLI::App *inner = nullptr;
            try {
              inner = sub->get_subcommand(argv[k]);
            } catch (const CLI::OptionNotFound &) {
              std::string path;
              for (size_t n = 1; n < asHelp.size(); ++n) path += (n > 1 ? " " : "") + asHelp[n];
              std::cerr << fmt::format("brevisc: error: '{}' has no command '{}'; brevisc help {} lists its commands\n",
                                       path, argv[k], path);
              return kExitUsage;
            }
            sub = inner;
            asHelp.push_back(sub->get_name());
          }
          // As `brevisc COMMAND --help` prints it: parsing gives the usage line its parents' names.
          asHelp.push_back("--help");
          std::vector<char *> args;
          for (std::string &a : asHelp) args.push_back(a.data());
          try {
            app.parse(static_cast<int>(args.size()), args.data());
          } catch (const CLI::CallForHelp &e) {
            return app.exit(e);
          }
          std::cout << sub->help();
          return kExitOk;
        } catch (const CLI::OptionNotFound &) {
          std::cerr << "brevisc: error: " << unknownCommand(app, argv[2]) << "\n";
          return kExitUsage;
        }
      }
      std::cout << app.help();
      return kExitOk;
    }
    auto subs = app.get_subcommands({});
    if (std::none_of(subs.begin(), subs.end(), [&](const CLI::App *s) { return s->get_name() == first; })) {
      std::cerr << "brevisc: error: " << unknownCommand(app, first) << "\n";
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    std::string what = e.what();
    if (e.get_name() == "RequiredError" && what == "A subcommand is required") {
      // Which command lacks one: the deepest parsed.
      const CLI::App *at = &app;
      for (bool deeper = true; deeper;) {
        deeper = false;
        for (const CLI::App *sub : at->get_subcommands())
          if (sub->parsed()) {
            at = sub;
            deeper = true;
            break;
          }
      }
      what = at == &app ? "a command is required: brevisc COMMAND ... (brevisc --help lists them)"
                        : fmt::format("brevisc {} needs a command: brevisc {} --help lists them", at->get_name(),
                                      at->get_name());
    }
    // CLI11's "--threads: At Most 1 required but received 2", for an option given twice.
    constexpr std::string_view kTwice = ": At Most 1 required but received ";
    if (const size_t at = what.find(kTwice); e.get_name() == "ArgumentMismatch" && at != std::string::npos)
      what = fmt::format("{} is given {} times; give it once", what.substr(0, at), what.substr(at + kTwice.size()));
    // CLI11's "keep was given a disallowed flag override", for a value given to a bare flag.
    constexpr std::string_view kOverride = " was given a disallowed flag override";
    if (what.ends_with(kOverride))
      what = fmt::format("--{} takes no value", what.substr(0, what.size() - kOverride.size()));
    // CLI11's "Could not convert: --force = maybe", for a bare flag's value it cannot read.
    constexpr std::string_view kConvert = "Could not convert: ";
    if (const size_t eq = what.find(" = "); what.starts_with(kConvert) && eq != std::string::npos) {
      const std::string option = what.substr(kConvert.size(), eq - kConvert.size());
      const std::string value = brevis::quoteString(what.substr(eq + 3));
      what = fmt::format("{} takes no value (or true or false), not {}", option, value);
    }
    // CLI11's "The following argument was not expected: -x" (or "arguments were"), in our words.
    for (std::string_view extra :
         {"The following argument was not expected: ", "The following arguments were not expected: "})
      if (what.starts_with(extra))
        what = fmt::format("not an option or argument of this command: {} (brevisc COMMAND --help lists them)",
                           what.substr(extra.size()));
    // `-k=maybe`: CLI11 takes `k` as a flag and reports what is left, "-=maybe", which names no
    // option; the argument as given does.
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      const size_t eq = arg.find('=');
      if (arg.size() > 2 && arg[0] == '-' && arg[1] != '-' && eq != std::string_view::npos &&
          what.find(fmt::format(": -{} ", arg.substr(eq))) != std::string::npos) {
        what = fmt::format("{}: a short option takes no value after '=' (give a value as -T 2)", arg);
        break;
      }
    }
    if (what.size() > 1 && std::isupper(static_cast<unsigned char>(what[0])) &&
        std::islower(static_cast<unsigned char>(what[1])))
      what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0]))); // a message's style: lower case
    std::cerr << "brevisc: error: " << what << "\n";
    return kExitUsage;
  } catch (const std::filesystem::filesystem_error &e) {
    // A path the file system will not resolve (a loop of symbolic links, say) where a command
    // asked without an error code: an error of the input, after the commands' temporary files
    // went with the unwinding.
    const std::string what =
        e.path1().empty() ? e.what() : fmt::format("cannot use {}: {}", e.path1().string(), e.code().message());
    std::cerr << "brevisc: error: " << what << "\n";
    return kExitFailure;
  }
  // A result that could not be written (stdout closed, a full disk) is not a success.
  std::cout.flush();
  if (!std::cout && ctx.exitCode == kExitOk) {
    std::cerr << "brevisc: error: cannot write standard output\n";
    return kExitFailure;
  }
  return ctx.exitCode;
}
