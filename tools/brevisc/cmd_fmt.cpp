// brevisc fmt PROGRAM.bdsl [-i] [--annotate]: print the program in canonical form. Comments are
// kept, each above the region it is written in or before (one inside a region moves up to its
// head). --annotate writes above each region what it stores.
#include "tools/brevisc/Commands.h"

#include "frontend/Parser.h"
#include "lang/Diagnostics.h"
#include "lang/Printer.h"
#include "runtime/containers/FileIO.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <vector>

namespace brevis::cli {

namespace {

struct FmtOptions {
  std::string input;
  bool inPlace = false;
  bool dropComments = false;
  bool annotate = false;
};

/// Payload bytes of the ranges `e`'s literals read that `seen` does not hold yet (adding them).
uint64_t newPayloadBytes(const Expr &e, std::set<std::pair<uint64_t, uint64_t>> &seen) {
  uint64_t bytes = 0;
  if (const Lit *l = dynAs<Lit>(e); l && !l->isInline() && l->payload().size > 0 &&
                                    seen.emplace(l->payload().offset, l->payload().size).second)
    bytes += l->payload().size;
  for (const Expr *c : children(e)) bytes += newPayloadBytes(*c, seen);
  return bytes;
}

/// Program-text bytes of `e`'s inline words and text, and of its maps' lists of constants.
uint64_t inlineBytes(const Expr &e) {
  uint64_t bytes = 0;
  if (const Lit *l = dynAs<Lit>(e); l && l->isInline())
    bytes += (static_cast<uint64_t>(l->type.length) * l->type.width + 7) / 8;
  if (const Map *m = dynAs<Map>(e); m && !m->periodic.empty())
    bytes += (static_cast<uint64_t>(m->periodic.size()) * streamTypeOf(*m).width + 7) / 8;
  for (const Expr *c : children(e)) bytes += inlineBytes(*c);
  return bytes;
}

/// One comment per region, above it: the payload bytes it reads first (a repeated tensor reads
/// an earlier one's), its bits per weight, and its share of the payload.
void annotate(Checkpoint &c) {
  std::set<std::pair<uint64_t, uint64_t>> seen;
  for (Region &r : c.regions) {
    std::erase_if(r.comments, [](const std::string &comment) { return comment.starts_with(kAnnotationPrefix); });
    const uint64_t stored = newPayloadBytes(*r.program, seen), inlined = inlineBytes(*r.program);
    std::vector<std::string> parts;
    if (stored > 0 || inlined == 0) {
      parts.push_back(fmt::format("{} of payload", humanBytes(stored)));
      if (r.kind == RegionKind::Tensor)
        if (auto n = elementCount(r.shape); n && *n > 0)
          parts.push_back(fmt::format("{:.2f} bits per weight", 8.0 * static_cast<double>(stored) / static_cast<double>(*n)));
      if (c.payloadSize > 0)
        parts.push_back(fmt::format("{:.2f}% of the payload",
                                    100.0 * static_cast<double>(stored) / static_cast<double>(c.payloadSize)));
    }
    // A header written as safetensors(tensors, …) is made from the declarations: its text is
    // the metadata alone, not the header it stands for.
    if (r.index)
      parts.push_back(fmt::format("{} header made from the tensors' declarations{}", humanBytes(inlined),
                                  r.index->metadata.empty()
                                      ? std::string()
                                      : fmt::format(" and {} of metadata text", humanBytes(r.index->metadata.size()))));
    else if (inlined > 0)
      parts.push_back(fmt::format("{} in the program text", humanBytes(inlined)));
    std::set<std::pair<uint64_t, uint64_t>> own;
    if (const uint64_t reads = newPayloadBytes(*r.program, own); reads > stored)
      parts.push_back(fmt::format("reads {} an earlier region stores", humanBytes(reads - stored)));
    std::string note = fmt::format("{}{}", kAnnotationPrefix, fmt::join(parts, ", "));
    r.comments.insert(r.comments.begin(), std::move(note));
  }
}

int runFmt(const FmtOptions &o) {
  if (o.inPlace && o.input == "-") return usageError("-i rewrites a file; standard input has none (fmt - prints)");
  if (!o.inPlace)
    if (auto refused = refuseOwnInput("-", {o.input})) return *refused;
  auto text = readProgramText(o.input);
  if (!text) return fail(text.error().message);
  std::optional<Module> module;
  if (o.annotate) { // sizes of a program that does not check would mean nothing
    module = loadProgram(o.input, std::move(*text), /*requireRunnable=*/false);
  } else {
    Diagnostics diags(o.input, std::move(*text));
    module = parseModule(diags);
    std::cerr << diags.render();
  }
  if (!module) return kExitFailure;
  if (o.dropComments) {
    module->leadingComments.clear();
    module->trailingComments.clear();
    if (module->isCheckpoint())
      for (Region &r : module->checkpoint().regions) r.comments.clear();
  }
  if (o.annotate) {
    if (!module->isCheckpoint())
      return usageError(
          fmt::format("{}: --annotate describes the regions of a checkpoint program; this is one expression", o.input));
    annotate(module->checkpoint());
  }
  std::string formatted = printModule(*module);
  if (!o.inPlace) {
    std::cout << formatted;
    return kExitOk;
  }
  // Through a symbolic link to the file it names, which is what is edited.
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::canonical(o.input, ec);
  auto written = writeFile(ec ? o.input : target.string(),
                           ByteSpan(reinterpret_cast<const uint8_t *>(formatted.data()), formatted.size()),
                           /*overwrite=*/true);
  return written ? kExitOk : fail(written.error().message);
}

} // namespace

void registerFmt(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<FmtOptions>();
  auto *cmd = app.add_subcommand("fmt", "Print a program in canonical form");
  cmd->add_option("program", o->input, ".bdsl file (- for standard input)")->required();
  cmd->add_flag("-i,--in-place", o->inPlace, "rewrite the file instead of printing");
  cmd->add_flag("--drop-comments", o->dropComments,
                "leave out the program's comments (kept by default, each above the region it is written in or "
                "before)");
  cmd->add_flag("--annotate", o->annotate,
                "write above each region what it stores: payload bytes, bits per weight, share of the payload, bytes "
                "in the program text (as `#: ` comments, which --annotate replaces when run again)");
  cmd->callback([o, &ctx] { ctx.exitCode = runFmt(*o); });
}

} // namespace brevis::cli
