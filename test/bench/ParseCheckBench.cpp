// Benchmark: parsing and type-checking a large checkpoint program, as `brevisc check` and
// every decompression do. The program is a synthetic checkpoint of N BF16 tensors shaped like
// the template synthesizer's output (a merge of three literals each), printed canonically.
//
//   parse_check_bench [TENSORS] [RUNS]     (defaults: 10000 tensors, 5 runs; median reported)
#include "frontend/Parser.h"
#include "lang/Diagnostics.h"
#include "lang/Printer.h"
#include "lang/TypeChecker.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

using namespace brevis;

namespace {

std::string syntheticProgram(size_t tensors) {
  Checkpoint c;
  c.payloadFile = "model.bdsl.bin";
  c.source.fileName = "model.safetensors";
  uint64_t fileAt = 0, payloadAt = 0;
  Region header;
  header.kind = RegionKind::Header;
  header.bytes = ByteRange{0, 4096};
  header.program = Lit::make(StreamType{8, 4096}, Encoding::Raw, ByteRange{0, 4096});
  c.regions.push_back(std::move(header));
  fileAt = payloadAt = 4096;
  for (size_t i = 0; i < tensors; ++i) {
    const uint64_t rows = 64 + i % 64, cols = 128, n = rows * cols;
    std::vector<MergeField> fields;
    const std::pair<const char *, unsigned> specs[] = {{"sign", 1}, {"exp", 8}, {"mant", 7}};
    for (auto [name, width] : specs) {
      uint64_t size = 1 + (n * width + 7) / 8;
      fields.push_back({name, Lit::make(StreamType{width, n}, Encoding::Bitpack, ByteRange{payloadAt, size})});
      payloadAt += size;
    }
    Region r;
    r.kind = RegionKind::Tensor;
    r.name = fmt::format("model.layers.{}.mlp.{}_proj.weight", i / 7, "gate_up_down"[i % 3]);
    r.name += std::to_string(i);
    r.dtype = DType::BF16;
    r.shape = {rows, cols};
    r.bytes = ByteRange{fileAt, n * 2};
    r.program = Merge::make(std::move(fields));
    fileAt += n * 2;
    c.regions.push_back(std::move(r));
  }
  c.source.size = fileAt;
  c.payloadSize = payloadAt;
  return printCheckpoint(c);
}

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  size_t tensors = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000;
  int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  std::string text = syntheticProgram(tensors);
  std::vector<double> parseTimes, checkTimes;
  for (int run = 0; run < std::max(runs, 1); ++run) {
    Diagnostics diags("model.bdsl", text);
    auto t0 = std::chrono::steady_clock::now();
    auto module = parseModule(diags);
    auto t1 = std::chrono::steady_clock::now();
    if (!module) {
      fmt::print(stderr, "{}", diags.render());
      return 1;
    }
    TypeChecker checker(diags, /*recordTypes=*/false);
    bool ok = checker.checkModule(*module);
    auto t2 = std::chrono::steady_clock::now();
    if (!ok) {
      fmt::print(stderr, "{}", diags.render());
      return 1;
    }
    parseTimes.push_back(seconds(t1 - t0));
    checkTimes.push_back(seconds(t2 - t1));
  }
  double parse = median(parseTimes), check = median(checkTimes);
  fmt::print("program: {} tensors, {} lines, {:.2f} MB of text\n", tensors,
             std::count(text.begin(), text.end(), '\n'), static_cast<double>(text.size()) / 1e6);
  fmt::print("parse:   {:.3f} s ({:.1f} MB/s)\n", parse, static_cast<double>(text.size()) / 1e6 / parse);
  fmt::print("check:   {:.3f} s\n", check);
  fmt::print("total:   {:.3f} s (median of {} runs)\n", parse + check, parseTimes.size());
  return 0;
}
