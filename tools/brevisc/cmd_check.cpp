// brevisc check PROGRAM.bdsl [--types]: parse and type-check; silent on success unless asked
// to print every node's derived type, diagnostics otherwise.
#include "tools/brevisc/Commands.h"

#include "frontend/Parser.h"
#include "lang/Diagnostics.h"
#include "lang/Printer.h"
#include "lang/TypeChecker.h"
#include "runtime/containers/FileIO.h"
#include "runtime/execution/DeclarationCheck.h"
#include "runtime/execution/Interpreter.h"

#include <filesystem>
#include <functional>
#include <iostream>
#include <variant>

namespace brevis::cli {

namespace {

struct CheckOptions {
  std::string input;
  bool types = false;
  bool json = false;
};

/// The bytes the program's header region rebuilds, decoded from the payload beside the program
/// (only the part the header's literals read); nullopt with a reason where that cannot be done.
std::variant<Bytes, std::string> decodeHeader(const std::string &program, const Checkpoint &c, const Region &header) {
  uint64_t end = 0;
  std::function<void(const Expr &)> reach = [&](const Expr &e) {
    if (const Lit *l = dynAs<Lit>(e); l && !l->isInline()) end = std::max(end, l->payload().offset + l->payload().size);
    forEachChild(e, reach);
  };
  reach(*header.program);
  Payload payload;
  if (end > 0) {
    const auto path = regularFileBeside(program, c.payloadFile);
    if (!path) return fmt::format("its payload {} is not beside it", quoteString(c.payloadFile));
    auto mapped = MappedFile::open(*path);
    if (!mapped) return mapped.error().message;
    const ByteSpan bytes = (*mapped)->bytes();
    if (bytes.size() != c.payloadSize)
      return fmt::format("its payload {} has {} bytes, but the program declares {}", *path, bytes.size(), c.payloadSize);
    payload = Payload::fromBytes(bytes.first(std::min<uint64_t>(end, bytes.size())));
  }
  Bytes out;
  VectorSink sink(out);
  auto done = validateForExecution(*header.program, payload);
  if (done) done = evaluateTo(*header.program, payload, sink);
  if (!done) return "its header region does not decode: " + done.error().message;
  return out;
}

struct Checked {
  bool ok = false;
  size_t regions = 0;
};

/// Checks one program, printing its diagnostics (and with --types, the program).
Checked checkFile(const std::string &input, const CheckOptions &o, const Verbosity &v) {
  auto text = readProgramText(input);
  if (!text) {
    fail(text.error().message);
    return {};
  }
  Diagnostics diags(input, std::move(*text));
  auto module = parseModule(diags);
  std::optional<TypeChecker> checker;
  if (module) {
    checker.emplace(diags, /*recordTypes=*/o.types);
    checker->checkModule(*module);
    // A single expression names no payload: where its literals read one, say that run needs it.
    if (!diags.hasErrors() && !module->isCheckpoint())
      if (const Lit *first = firstPayloadLit(module->expr()))
        diags.note(first->loc, fmt::format("this literal reads payload bytes @{}+{}: a single expression names no "
                                           "payload, so run needs one given with --payload FILE",
                                           first->payload().offset, first->payload().size));
    // A payload beside the program must be the size the program declares.
    if (!diags.hasErrors() && module->isCheckpoint()) {
      const Checkpoint &c = module->checkpoint();
      std::error_code ec;
      if (const auto path = regularFileBeside(input, c.payloadFile))
        if (const uint64_t size = std::filesystem::file_size(*path, ec); !ec && size != c.payloadSize)
          diags.error(c.payloadLoc, fmt::format("payload {} has {} bytes, but the program declares {}", *path, size,
                                                c.payloadSize));
    }
    // Declarations against the header the program rebuilds, where its payload is at hand.
    if (!diags.hasErrors() && module->isCheckpoint())
      if (const Region *header = headerRegion(module->checkpoint())) {
        auto decoded = decodeHeader(input, module->checkpoint(), *header);
        if (auto *bytes = std::get_if<Bytes>(&decoded)) {
          for (Error &e : checkDeclarations(module->checkpoint(), *bytes)) diags.error(e.loc, std::move(e.message));
        } else if (v.verbose) {
          std::cerr << fmt::format("brevisc: note: {}: declarations not compared with the header: {}\n", input,
                                   std::get<std::string>(decoded));
        }
      }
  }
  std::cerr << diags.render();
  Checked checked{!diags.hasErrors(), module && module->isCheckpoint() ? module->checkpoint().regions.size() : 0};
  if (checked.ok && o.types) {
    annotateTypes(*module, *checker);
    std::cout << printModule(*module);
  }
  return checked;
}

int runCheck(const CheckOptions &o, const Verbosity &v) {
  if (o.json && o.types) return fail("--json and --types both print on standard output; choose one");
  if (auto refused = refuseOwnInput("-", {o.input})) return *refused; // --types and --json print there
  std::error_code ec;
  std::vector<std::string> files{o.input};
  std::string dir;
  if (std::filesystem::is_directory(o.input, ec)) {
    // A directory of programs, as unpack writes a directory archive: every .bdsl in it.
    dir = o.input;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    auto listed = listFiles(dir);
    if (!listed) return fail(listed.error().message);
    files.clear();
    for (const std::string &rel : *listed)
      if (rel.ends_with(".bdsl")) files.push_back(dir + "/" + rel);
    if (files.empty()) return fail(fmt::format("{} holds no .bdsl programs", o.input));
  }
  bool ok = true;
  size_t regions = 0;
  for (const std::string &file : files) {
    const Checked checked = checkFile(file, o, v);
    ok = ok && checked.ok;
    regions += checked.regions;
  }
  // The directory as a whole, as pack and run take it: each program's source a usable path,
  // no two rebuilding one file, no file where another needs a directory.
  if (ok && !dir.empty() && std::holds_alternative<int>(readProgramTree(dir, "checked"))) ok = false;
  if (o.json)
    printJson({{"command", "check"},
               {"input", shownName(o.input)},
               {"ok", ok},
               {"files", files.size()},
               {"regions", regions}});
  return ok ? kExitOk : kExitFailure;
}

} // namespace

void registerCheck(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<CheckOptions>();
  auto *cmd = app.add_subcommand("check", "Parse and type-check a program; exit 1 with diagnostics on errors");
  cmd->footer("A checkpoint program whose payload lies beside it is also held to the safetensors header it rebuilds: "
              "every tensor's name, dtype, shape and range (-v says when the payload is not there to decode the "
              "header).\nExit status: 0 on success, 1 when an input is invalid, 2 on a usage error.");
  cmd->add_option("program", o->input, ".bdsl file, or a directory of them (as unpack writes a directory archive)")
      ->required();
  cmd->add_flag("--types", o->types, "print the program with every node annotated with its derived type");
  cmd->add_flag("--json", o->json,
                "print the result as JSON on stdout: {\"command\": \"check\", \"ok\": ...} (diagnostics stay on stderr)");
  cmd->callback([o, &ctx] { ctx.exitCode = runCheck(*o, ctx.verbosity); });
}

} // namespace brevis::cli
