// brevis-gen: writes a deterministic synthetic LLM-like safetensors checkpoint.
#include "tools/gen/PlantedCheckpoint.h"
#include "tools/gen/SyntheticCheckpoint.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

int main(int argc, char **argv) {
  using namespace brevis;
  CLI::App app{"brevis-gen: a deterministic synthetic LLM-like safetensors checkpoint (Llama-style layout; "
               "per-row scales and outliers as in trained weights)"};
  std::string output, size = "1GiB", dtype = "bf16";
  gen::SyntheticOptions o;
  bool force = false;
  app.add_option("-o,--output", output, "file to write")->required();
  app.add_option("--size", size, "target file size, e.g. 1GiB, 256MiB (the file is at most this large)")
      ->capture_default_str();
  app.add_option("--dtype", dtype, "bf16, f16 or f32")->capture_default_str();
  app.add_option("--hidden", o.hidden, "model width")->capture_default_str();
  app.add_option("--seed", o.seed, "random seed")->capture_default_str();
  app.add_flag("-f,--force", force, "overwrite the output");
  bool planted = false;
  app.add_flag("--planted", planted,
               "write a small checkpoint of tensors with planted structure instead (constant, tiled, ramp, "
               "up-cast, F16-origin, xor-masked, few-valued, zero rows, halves of different scale) and print each one's structure-aware "
               "reference size; --size, --dtype, --hidden and --small-tensors do not apply");
  app.add_flag("--small-tensors", o.smallTensors,
               fmt::format("many small tensors instead of a model's layout: each of about {} to {} KiB (log-uniform; "
                           "kernels, biases, norms), as many as --size holds; --hidden does not apply",
                           gen::kSmallTensorMinBytes / 1024, gen::kSmallTensorMaxBytes / 1024));
  app.footer("Exit status: 0 on success, 1 on failure, 2 on a usage error.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (planted) {
    const auto tensors = gen::plantedTensors(o.seed);
    auto written = gen::writePlantedCheckpoint(output, tensors, force);
    if (!written) {
      std::cerr << "brevis-gen: error: " << written.error().message << "\n";
      return 1;
    }
    double reference = 0;
    for (const auto &t : tensors) {
      std::cout << fmt::format("{:<20} {:>9} reference bytes  {}\n", t.name, static_cast<uint64_t>(t.referenceBytes),
                               t.structure);
      reference += t.referenceBytes;
    }
    std::cout << fmt::format("{:<20} {:>9} reference bytes  all tensors\n", "total", static_cast<uint64_t>(reference));
    std::cerr << fmt::format("brevis-gen: wrote {}\n", output);
    return 0;
  }
  auto bytes = gen::parseSize(size);
  if (!bytes) {
    std::cerr << "brevis-gen: error: " << bytes.error().message << "\n";
    return 2;
  }
  o.targetBytes = *bytes;
  if (dtype == "bf16") o.dtype = DType::BF16;
  else if (dtype == "f16") o.dtype = DType::F16;
  else if (dtype == "f32") o.dtype = DType::F32;
  else {
    std::cerr << "brevis-gen: error: --dtype must be bf16, f16 or f32\n";
    return 2;
  }
  if (o.hidden < 8 || o.hidden > 65536) {
    std::cerr << "brevis-gen: error: --hidden must be between 8 and 65536\n";
    return 2;
  }
  auto written = gen::writeSyntheticCheckpoint(output, o, force);
  if (!written) {
    std::cerr << "brevis-gen: error: " << written.error().message << "\n";
    return 1;
  }
  std::cerr << fmt::format("brevis-gen: wrote {} ({} bytes)\n", output, *written);
  return 0;
}
