// brevisc info ARCHIVE [--json] [-v]: what an archive holds — the source file, sizes and ratio,
// tensors by dtype, literals by encoding, operators used — without decoding it.
#include "tools/brevisc/Commands.h"

#include "lang/Diagnostics.h"
#include "lang/Printer.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <map>
#include <optional>

namespace brevis::cli {

namespace {

struct InfoOptions {
  std::string input;
  bool json = false;
};

struct Tally {
  uint64_t count = 0, original = 0, stored = 0;
};

/// Payload ranges already counted, each with the region that first read it: a tensor that
/// repeats an earlier one's bytes reads that one's payload, which is stored once.
using RangeOwners = std::map<std::pair<uint64_t, uint64_t>, std::string>;

/// Payload bytes a program's literals take (ranges in `owners` are not counted again; new ones
/// are added, owned by `region`), and its literal and operator counts. `sharedWith` is the
/// owner of the ranges it shares, if any.
void survey(const Expr &e, const std::string &region, RangeOwners &owners, uint64_t &stored,
            std::optional<std::string> &sharedWith, std::map<std::string, Tally> &encodings,
            std::map<std::string, uint64_t> &operators) {
  const auto *lit = dynAs<Lit>(e);
  ++operators[lit && lit->isText() ? std::string("text") : std::string(nodeKindName(e.kind))];
  if (auto *l = lit) {
    std::string name = l->isText() ? "text" : l->isInline() ? "inline" : std::string(encodingName(l->encoding));
    Tally &t = encodings[name];
    // A range read before (by a repeated tensor) counts neither as a literal nor in bytes or
    // words again, so that each encoding's figures are of what it stores. Empty ranges are no
    // one's.
    bool counted = true;
    if (!l->isInline() && l->payload().size > 0) {
      auto [it, added] = owners.emplace(std::pair{l->payload().offset, l->payload().size}, region);
      counted = added;
      if (added) {
        t.stored += l->payload().size;
        stored += l->payload().size;
      } else if (it->second != region) {
        sharedWith = it->second;
      }
    }
    // The information it holds: its words' bits (a u1 literal of 8 words is one byte), not the
    // containers they are written to.
    if (counted) {
      ++t.count;
      t.original += static_cast<uint64_t>((static_cast<unsigned __int128>(l->type.length) * l->type.width + 7) / 8);
    }
  }
  for (const Expr *c : children(e)) survey(*c, region, owners, stored, sharedWith, encodings, operators);
}

std::string percent(uint64_t part, uint64_t whole) {
  return whole ? fmt::format("{:.2f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

int runInfo(const InfoOptions &o, const Verbosity &v) {
  if (auto refused = refuseOwnInput("-", {o.input})) return *refused; // the report goes there
  auto archive = loadArchive(o.input);
  if (!archive) return fail(archive.error().message);
  const Archive &a = archive->contents();
  const uint64_t archiveSize = a.fileSize, original = archive->originalSize(), payload = archive->payloadSize();

  std::map<std::string, Tally> regions, dtypes, encodings;
  std::map<std::string, uint64_t> operators;
  nlohmann::json tensors = nlohmann::json::array();
  nlohmann::json files = nlohmann::json::array();
  for (size_t m = 0; m < archive->memberCount(); ++m) {
  const Checkpoint &c = archive->checkpoint(m);
  files.push_back({{"path", a.members[m].path},
                   {"original_bytes", c.source.size},
                   {"xxh64", fmt::format("{:016x}", c.source.xxh64)},
                   {"payload_bytes", c.payloadSize},
                   {"regions", c.regions.size()}});
  RangeOwners owners;
  for (const Region &r : c.regions) {
    uint64_t stored = 0;
    std::optional<std::string> sharedWith;
    const std::string regionName = r.kind == RegionKind::Tensor ? r.name : std::string(regionKindName(r.kind));
    survey(*r.program, regionName, owners, stored, sharedWith, encodings, operators);
    Tally &rt = regions[std::string(regionKindName(r.kind))];
    ++rt.count;
    rt.original += r.bytes.size;
    rt.stored += stored;
    if (r.kind != RegionKind::Tensor) continue;
    Tally &dt = dtypes[std::string(dtypeInfo(r.dtype).bdslName)];
    ++dt.count;
    dt.original += r.bytes.size;
    dt.stored += stored;
    tensors.push_back({{"name", r.name},
                       {"dtype", dtypeInfo(r.dtype).bdslName},
                       {"shape", r.shape},
                       {"original_bytes", r.bytes.size},
                       {"payload_bytes", stored},
                       {"program", nodeKindName(r.program->kind)}});
    if (a.directory) tensors.back()["file"] = a.members[m].path;
    if (sharedWith) tensors.back()["shares_payload_with"] = *sharedWith;
  }
  }

  if (o.json) {
    auto tallies = [](const std::map<std::string, Tally> &m) {
      nlohmann::json j = nlohmann::json::object();
      for (const auto &[k, t] : m) j[k] = {{"count", t.count}, {"original_bytes", t.original}, {"payload_bytes", t.stored}};
      return j;
    };
    nlohmann::json j = {{"command", "info"},
                        {"input", shownName(o.input)},
                        {"archive_bytes", archiveSize},
                        {"kind", a.directory ? "directory" : "file"},
                        {"original_bytes", original},
                        {"ratio", ratioJson(archiveSize, original)},
                        {"payload_bytes", payload},
                        {"files", files},
                        {"regions", tallies(regions)},
                        {"dtypes", tallies(dtypes)},
                        {"encodings", tallies(encodings)},
                        {"operators", operators}};
    if (v.verbose) j["tensors"] = tensors;
    printJson(j);
    return kExitOk;
  }

  std::string what = a.directory ? fmt::format("a directory of {} files", archive->memberCount())
                                 : quoteString(archive->checkpoint(0).source.fileName);
  std::cout << fmt::format("{}: {} archive of {} ({}), {} of the original\n",
                           shownName(o.input), humanBytes(archiveSize), what,
                           humanBytes(original), percent(archiveSize, original));
  std::cout << fmt::format("  payload {}, programs, index and framing {}\n", humanBytes(payload),
                           humanBytes(archiveSize - payload));
  if (a.directory)
    for (const auto &f : files)
      std::cout << fmt::format("  {:<40} {:>10} -> {:>10}\n", withControlsEscaped(f["path"].get<std::string>(), false),
                               humanBytes(f["original_bytes"].get<uint64_t>()), humanBytes(f["payload_bytes"].get<uint64_t>()));
  std::cout << "regions:\n";
  for (const auto &[k, t] : regions)
    std::cout << fmt::format("  {:<8} {:>6}  {:>10} -> {:>10}  {:>8}\n", k, t.count, humanBytes(t.original),
                             humanBytes(t.stored), percent(t.stored, t.original));
  std::cout << "tensors by dtype:\n";
  for (const auto &[k, t] : dtypes)
    std::cout << fmt::format("  {:<8} {:>6}  {:>10} -> {:>10}  {:>8}\n", k, t.count, humanBytes(t.original),
                             humanBytes(t.stored), percent(t.stored, t.original));
  std::cout << "literals by encoding:\n";
  for (const auto &[k, t] : encodings) {
    // Inline words and text are stored in the program section, compressed with the program.
    const bool inProgram = k == "inline" || k == "text";
    std::cout << fmt::format("  {:<8} {:>6}  {:>10} -> {:>10}  {:>8}\n", k, t.count, humanBytes(t.original),
                             inProgram ? "in program" : humanBytes(t.stored), inProgram ? "" : percent(t.stored, t.original));
  }
  std::cout << "operators:";
  for (const auto &[k, n] : operators) std::cout << fmt::format(" {} {}", k, n);
  std::cout << "\n";
  if (v.verbose)
    for (size_t i = 0; i < tensors.size(); ++i) {
      const nlohmann::json &t = tensors[i];
      // A directory archive's tensors under the file they are in, each file named once.
      if (t.contains("file") && (i == 0 || tensors[i - 1]["file"] != t["file"]))
        std::cout << fmt::format("in {}:\n", withControlsEscaped(t["file"].get<std::string>(), false));
      std::cout << fmt::format("  {} {}{} {} -> {} ({}{})\n", quoteString(t["name"].get<std::string>()),
                               t["dtype"].get<std::string>(), t["shape"].dump(), humanBytes(t["original_bytes"].get<uint64_t>()),
                               humanBytes(t["payload_bytes"].get<uint64_t>()), t["program"].get<std::string>(),
                               t.contains("shares_payload_with")
                                   ? ", reads the payload of " + quoteString(t["shares_payload_with"].get<std::string>())
                                   : std::string());
    }
  return kExitOk;
}

} // namespace

void registerInfo(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<InfoOptions>();
  auto *cmd = app.add_subcommand("info", "Describe an archive: source, sizes, tensors by dtype, encodings, operators");
  cmd->add_option("archive", o->input, ".brv file")->required();
  cmd->add_flag("--json", o->json, "print JSON for scripts (with -v: one entry per tensor)");
  cmd->callback([o, &ctx] { ctx.exitCode = runInfo(*o, ctx.verbosity); });
}

} // namespace brevis::cli
