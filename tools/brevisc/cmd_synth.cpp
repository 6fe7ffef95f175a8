// brevisc synth MODEL [-o PROGRAM.bdsl] [-f]: one program per tensor, as editable text plus
// a binary payload sidecar (PROGRAM.bdsl.bin). brevisc synth PROGRAM.bdsl, or
// brevisc synth --sketch SKETCH.bdsl MODEL: fills only the holes of a program written by hand.
#include "tools/brevisc/Commands.h"

#include "tools/brevisc/Progress.h"
#include "tools/brevisc/ShapeRules.h"
#include "tools/brevisc/Verify.h"

#include "lang/Printer.h"
#include "runtime/containers/Checksum.h"
#include "runtime/containers/FileIO.h"
#include "synth/Driver.h"
#include "synth/Literals.h"
#include "synth/search/SketchFill.h"
#include "synth/strategies/Search.h"

#include <functional>
#include <iostream>

namespace brevis::cli {

namespace {

struct SynthCommandOptions {
  std::string input;
  std::string sketch;
  std::string output;
  unsigned threads = 0;
  int level = kDefaultLevel;
  std::string prior;
  bool force = false;
  bool json = false;
  bool headerText = false;
  std::vector<std::string> shapes; ///< --shape DTYPE=SKETCH
};

bool isProgramText(const std::string &path) {
  auto file = MappedFile::open(path);
  if (!file) return false;
  const ByteSpan b = (*file)->bytes();
  static constexpr std::string_view kStart = "brevis";
  return b.size() >= kStart.size() && std::equal(kStart.begin(), kStart.end(), b.begin());
}

/// Fills the holes of the checkpoint program `sketchPath` for the checkpoint `modelPath` (by
/// default the program's source, beside it); everything else is kept as written.
int runFill(const SynthCommandOptions &o, const std::string &sketchPath, std::string modelPath, const Verbosity &v) {
  auto text = readProgramText(sketchPath);
  if (!text) return fail(text.error().message);
  auto module = loadProgram(sketchPath, *text, /*requireRunnable=*/false);
  if (!module) return kExitFailure;
  if (!module->isCheckpoint()) return fail(sketchPath + ": a sketch is a checkpoint program (brevis 1, source, payload, regions)");
  Checkpoint &c = module->checkpoint();
  auto beside = [&](const std::string &name) { return directoryOf(sketchPath) + "/" + baseName(name); };
  const bool fromSourceLine = modelPath.empty();
  if (fromSourceLine) modelPath = beside(c.source.fileName);
  auto model = openInput(modelPath);
  if (!model && fromSourceLine)
    return failIn(sketchPath, Error{fmt::format("the holes are filled from the checkpoint this line names, beside the "
                                                "program: {} (give another with --sketch {} CHECKPOINT)",
                                                model.error().message, sketchPath),
                                    c.sourceLoc});
  if (!model) return fail(model.error().message);
  const ByteSpan file = (*model)->bytes();
  if (file.size() != c.source.size || xxh64(file) != c.source.xxh64)
    return fail(fmt::format("{} is not the file {} was written for ({}: {} bytes, xxh64 {:#018x})", modelPath,
                            sketchPath, quoteString(c.source.fileName), c.source.size, c.source.xxh64));

  // The literals written in the sketch keep their bytes, moved into the new payload.
  Payload oldPayload;
  bool referencesPayload = false;
  for (const Region &r : c.regions) {
    std::function<void(const Expr &)> scan = [&](const Expr &e) {
      if (const Lit *l = dynAs<Lit>(e); l && !l->isInline()) referencesPayload = true;
      forEachChild(e, scan);
    };
    scan(*r.program);
  }
  if (referencesPayload) {
    auto loaded = Payload::readFile(beside(c.payloadFile));
    if (!loaded)
      return fail(fmt::format("{}: the payload file its `payload` line names: {}", sketchPath, loaded.error().message));
    oldPayload = std::move(*loaded);
    if (oldPayload.size() != c.payloadSize)
      return fail(fmt::format("{}: the payload {} holds {} bytes, the program declares {}", sketchPath,
                              beside(c.payloadFile), oldPayload.size(), c.payloadSize));
  }

  const std::string output = o.output.empty() ? withExtension(sketchPath, ".filled.bdsl") : o.output;
  const std::string payloadPath = output + ".bin";
  for (const std::string &written : {output, payloadPath})
    if (auto refused = refuseOwnInput(written, {sketchPath, modelPath, referencesPayload ? beside(c.payloadFile) : ""}))
      return *refused;
  // The holes' literals go after the bytes the sketch's literals read; bytes none reads are dropped.
  Bytes payload(oldPayload.data(), oldPayload.data() + oldPayload.size());
  auto result = fillCheckpointHoles(c, file, payload, o.level);
  if (auto *error = std::get_if<CheckpointFillError>(&result)) return failToFill(sketchPath, c, *error);
  const size_t filled = std::get<size_t>(result);
  payload = compactPayload(c, payload);
  if (filled == 0 && !v.quiet && !o.json)
    std::cerr << "brevisc: note: " << sketchPath << " has no holes ('?'); it is written as it is\n";
  c.payloadFile = baseName(payloadPath);
  c.payloadSize = payload.size();
  // What the sketch kept as written is the user's: it is held to the original (bytes, digests,
  // declarations) and reported where it is written.
  {
    DiscardSink sink;
    auto kept = decodeCheckpoint(c, Payload::fromBytes(payload), DecodeOptions{}, sink, nullptr, CheckpointCheck{true, file});
    if (!kept) return failIn(sketchPath, kept.error());
  }
  for (Region &r : c.regions)
    if (!r.digest) r.digest = regionDigest(file.subspan(r.bytes.offset, r.bytes.size));
  const std::string filledText = printCheckpoint(c);
  if (auto ok = verifyProgram(output, filledText, payload); !ok) return fail(ok.error().message);
  if (auto written = writeProgramFiles(output, filledText, payloadPath, payload, o.force); !written)
    return fail(written.error().message);
  if (o.json)
    printJson({{"command", "synth"},
               {"input", shownName(sketchPath)},
               {"output", output},
               {"payload", payloadPath},
               {"holes_filled", filled},
               {"program_bytes", filledText.size()},
               {"payload_bytes", payload.size()},
               {"regions", c.regions.size()}});
  else if (!v.quiet)
    std::cerr << fmt::format("{}: {} hole{} filled -> {} ({}) + {} ({})\n", shownName(sketchPath), filled,
                             filled == 1 ? "" : "s", output, humanBytes(filledText.size()), payloadPath,
                             humanBytes(payload.size()));
  return kExitOk;
}

int runSynth(const SynthCommandOptions &o, const Verbosity &v) {
  if (o.output == "-")
    return usageError("synth writes a program and its payload beside it (FILE and FILE.bin): use -o FILE, not -o -");
  if (!o.shapes.empty() && !o.sketch.empty()) return usageError("--shape and --sketch: give one of them");
  if (!o.sketch.empty()) return runFill(o, o.sketch, o.input, v);
  const bool fromStdin = o.input == "-";
  if (!fromStdin && isProgramText(o.input)) {
    if (!o.shapes.empty())
      return usageError(
          "--shape gives the tensors of a checkpoint file a sketch; a program's holes are filled as written");
    return runFill(o, o.input, "", v);
  }
  if (fromStdin && o.output.empty())
    return usageError("the program of a checkpoint read from standard input needs a name: use -o FILE");
  std::string output = o.output.empty() ? withExtension(o.input, ".bdsl") : o.output;
  // The name recorded for the source (what run writes by default): the input's, or for standard
  // input the program's without .bdsl.
  std::string sourceName = baseName(o.input);
  if (fromStdin) {
    sourceName = baseName(output);
    if (sourceName.size() > 5 && sourceName.ends_with(".bdsl")) sourceName.resize(sourceName.size() - 5);
  }
  std::string payloadPath = output + ".bin";
  for (const std::string &written : {output, payloadPath})
    if (auto refused = refuseOwnInput(written, {o.input})) return *refused;
  int shapeStatus = kExitOk;
  const std::vector<ShapeRule> shapes = parseShapeRules(o.shapes, shapeStatus);
  if (shapeStatus != kExitOk) return shapeStatus;
  auto file = openInput(o.input);
  if (!file) return fail(file.error().message);

  auto options = strategyOptionsFor(o.level, o.prior);
    if (!options) return fail(options.error().message);
    auto strategy = makeStrategy(kDefaultStrategy, *options);
  if (!strategy) return fail(strategy.error().message);
  std::atomic<uint64_t> done{0};
  SynthOutput synth;
  {
    ProgressBar bar("synthesize " + sourceName, (*file)->bytes().size(), done,
                    !v.quiet && !o.json && stderrIsTerminal());
    synth = synthesizeCheckpoint((*file)->bytes(), sourceName, baseName(payloadPath), **strategy,
                                 SynthOptions{resolveThreads(o.threads), &done, o.headerText});
  }
  if (auto intact = (*file)->checkIntact(); !intact) return fail(intact.error().message + "; nothing was written");
  if (synth.notSafetensorsReason && !v.quiet)
    std::cerr << "brevisc: note: " << o.input << " is not valid safetensors (" << *synth.notSafetensorsReason
              << "); keeping it as one byte stream\n";
  for (size_t i = 0; i < synth.checkpoint.regions.size() && i < synth.digests.size(); ++i)
    synth.checkpoint.regions[i].digest = synth.digests[i];
  const bool quiet = v.quiet || o.json;
  if (int shaped = applyShapeRules(shapes, synth.checkpoint, (*file)->bytes(), synth.payload, o.level, quiet);
      shaped != kExitOk)
    return shaped;
  std::string text = printCheckpoint(synth.checkpoint);
  if (auto ok = verifyProgram(output, text, synth.payload); !ok) return fail(ok.error().message);

  if (auto written = writeProgramFiles(output, text, payloadPath, synth.payload, o.force); !written)
    return fail(written.error().message);
  if (o.json)
    printJson({{"command", "synth"},
               {"input", shownName(o.input)},
               {"output", output},
               {"payload", payloadPath},
               {"original_bytes", (*file)->bytes().size()},
               {"program_bytes", text.size()},
               {"payload_bytes", synth.payload.size()},
               {"regions", synth.checkpoint.regions.size()},
               {"safetensors", !synth.notSafetensorsReason}});
  else if (!v.quiet)
    std::cerr << fmt::format("{}: {} regions -> {} ({}) + {} ({})\n", shownName(o.input),
                             synth.checkpoint.regions.size(), output, humanBytes(text.size()), payloadPath,
                             humanBytes(synth.payload.size()));
  return kExitOk;
}

} // namespace

void registerSynth(CLI::App &app, Context &ctx) {
  auto o = std::make_shared<SynthCommandOptions>();
  auto *cmd = app.add_subcommand("synth", "Synthesize a program for every tensor of a checkpoint");
  cmd->add_option("input", o->input,
                  "safetensors file (any other file is kept as one byte stream), or a checkpoint program with holes "
                  "(`?`, or literals without their payload range: `lit auto u8[N]`) to fill for its source file "
                  "beside it; - reads a checkpoint from standard input (with -o)")
      ->required();
  cmd->add_option("--sketch", o->sketch,
                  "a checkpoint program with holes for INPUT: fill only its holes, keep the rest as written "
                  "(output default: SKETCH with extension .filled.bdsl)");
  cmd->add_option("--shape", o->shapes,
                  "DTYPE=SKETCH: every tensor of DTYPE gets SKETCH, one expression with holes in which [N] is the "
                  "tensor's element count (bf16='merge(sign: ? u1[N], exp: ? u8[N], mant: ? u7[N])'); the search fills "
                  "each tensor's holes. Repeatable, once per dtype; not with a program or --sketch")
      ->allow_extra_args(false);
  cmd->add_option("-o,--output", o->output, "program file to write (default: INPUT with extension .bdsl); "
                                            "the payload goes to OUTPUT.bin");
  addThreadsOption(cmd, o->threads, "synthesis threads (default 0: all cores)");
  cmd->add_option("-l,--level", o->level, "1-9, as for compress")->transform(wholeNumberIn(1, 9))->capture_default_str();
  addPriorOption(cmd, o->prior);
  cmd->add_flag("--header-text", o->headerText,
                "write the safetensors header as its JSON text (a literal over 4 MiB), to edit apart from the "
                "tensors' declarations (default: safetensors(tensors, …), made from the declarations, where that "
                "rebuilds it)");
  cmd->add_flag("-f,--force", o->force, "overwrite existing output files");
  cmd->add_flag("--json", o->json, "print the result as JSON on stdout (docs/cli.md)");
  cmd->callback([o, &ctx] { ctx.exitCode = runSynth(*o, ctx.verbosity); });
}

} // namespace brevis::cli
