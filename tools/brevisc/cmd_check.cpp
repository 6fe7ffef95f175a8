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
#include <variant>

#include <iostream>

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
    const std::string base = baseName(c.payloadFile);
    const std::string path = directoryOf(program) + "/" + base;
    std::error_code ec;
    if (base.empty() || base == "." || base == ".." || !std::filesystem::is_regular_file(path, ec))
      return fmt::format("its payload {} is not beside it", quoteString(c.payloadFile));
    auto mapped = MappedFile::open(path);
    if (!mapped) return mapped.error().message;
    const ByteSpan bytes = (*mapped)->bytes();
    if (bytes.size() != c.payloadSize)
      return fmt::format("its payload {} has {} bytes, but the program declares {}", path, bytes.size(), c.payloadSize);
    payload = Payload::fromBytes(bytes.first(std::min<uint64_t>(end, bytes.size())));
  }
  Bytes out;
  VectorSink sink(out);
  auto done = validateForExecution(*header.program, payload);
  if (done) done = evaluateTo(*header.program, payload, sink);
  if (!done) return "its header region does not decode: " + done.error().message;
  return out;
}

int runCheck(const CheckOptions &o, const Verbosity &v) {
  if (o.json && o.types) return fail("--json and --types both print on standard output; choose one");
  auto text = readProgramText(o.input);
  if (!text) return fail(text.error().message);
  Diagnostics diags(o.input, std::move(*text));
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
    // Declarations against the header the program rebuilds, where its payload is at hand.
    if (!diags.hasErrors() && module->isCheckpoint())
      if (const Region *header = headerRegion(module->checkpoint())) {
        auto decoded = decodeHeader(o.input, module->checkpoint(), *header);
        if (auto *bytes = std::get_if<Bytes>(&decoded)) {
          for (Error &e : checkDeclarations(module->checkpoint(), *bytes)) diags.error(e.loc, std::move(e.message));
        } else if (v.verbose) {
          std::cerr << fmt::format("brevisc: note: {}: declarations not compared with the header: {}\n", o.input,
                                   std::get<std::string>(decoded));
        }
      }
  }
  std::cerr << diags.render();
  if (o.json) {
    size_t regions = module && module->isCheckpoint() ? module->checkpoint().regions.size() : 0;
    printJson({{"command", "check"}, {"input", o.input}, {"ok", !diags.hasErrors()}, {"regions", regions}});
  }
  if (diags.hasErrors()) return kExitFailure;
  if (o.types) {
    annotateTypes(*module, *checker);
    std::cout << printModule(*module);
  }
  return kExitOk;
}

} // namespace

void registerCheck(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<CheckOptions>();
  auto *cmd = app.add_subcommand("check", "Parse and type-check a program; exit 1 with diagnostics on errors");
  cmd->add_option("program", o->input, ".bdsl file")->required();
  cmd->add_flag("--types", o->types, "print the program with every node annotated with its derived type");
  cmd->add_flag("--json", o->json,
                "print the result as JSON on stdout: {\"command\": \"check\", \"ok\": ...} (diagnostics stay on stderr)");
  cmd->callback([o, &ctx] { ctx.exitCode = runCheck(*o, ctx.verbosity); });
}

} // namespace brevis::cli
