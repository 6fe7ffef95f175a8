#include "tools/gen/SyntheticCheckpoint.h"

#include "runtime/containers/FileIO.h"
#include "tools/gen/Random.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

namespace brevis::gen {

namespace {

struct TensorSpec {
  std::string name;
  uint64_t rows, cols; ///< rows = 1 for vectors
  bool norm = false;   ///< a norm weight: values near 1
};

/// Tensors of kSmallTensorMinBytes..kSmallTensorMaxBytes, log-uniform, until the budget is
/// spent: blocks of a 3x3 kernel, a 1x1 kernel, a bias and a norm (vectors), with random widths.
std::vector<TensorSpec> smallTensorLayout(const SyntheticOptions &o, uint64_t wordBytes, uint64_t budget) {
  Rng rng{o.seed ^ 0x5ca1ab1e5ca1ab1eull}; // its own stream: the weights' stays as without it
  std::vector<TensorSpec> all;
  uint64_t used = 0;
  const double span = std::log(static_cast<double>(kSmallTensorMaxBytes) / kSmallTensorMinBytes);
  for (uint64_t i = 0;; ++i) {
    const auto bytes = static_cast<uint64_t>(kSmallTensorMinBytes * std::exp(span * rng.uniform()));
    const uint64_t words = std::max<uint64_t>(1, bytes / wordBytes);
    const std::string p = fmt::format("blocks.{}.{}.", i / 4, i % 4);
    TensorSpec t;
    switch (i % 4) {
    case 0: t = {p + "conv3x3.weight", std::max<uint64_t>(1, words / 9), 9}; break;
    case 1: {
      const uint64_t cols = uint64_t{16} << (rng.next() % 6); // 16..512
      t = {p + "conv1x1.weight", std::max<uint64_t>(1, words / cols), std::min(words, cols)};
      break;
    }
    case 2: t = {p + "bias", 1, words}; break;
    default: t = {p + "norm.weight", 1, words, true}; break;
    }
    const uint64_t n = t.rows * t.cols * wordBytes;
    if (used + n > budget) break;
    used += n;
    all.push_back(t);
  }
  return all;
}

std::vector<TensorSpec> layout(const SyntheticOptions &o, uint64_t wordBytes) {
  if (o.smallTensors) return smallTensorLayout(o, wordBytes, o.targetBytes); // the header is made room for later
  const uint64_t d = o.hidden, ff = (o.hidden * 11) / 4, v = o.vocab;
  std::vector<TensorSpec> all;
  uint64_t budget = o.targetBytes > 4096 ? o.targetBytes - 4096 : 0; // room for the header
  uint64_t used = 0;
  auto fits = [&](const std::vector<TensorSpec> &ts) {
    uint64_t n = 0;
    for (const auto &t : ts) n += t.rows * t.cols * wordBytes;
    if (used + n > budget) return false;
    used += n;
    all.insert(all.end(), ts.begin(), ts.end());
    return true;
  };
  // Embedding and head first when they fit; then whole layers; then single matrices.
  fits({{"model.embed_tokens.weight", v, d}});
  for (unsigned l = 0;; ++l) {
    std::string p = fmt::format("model.layers.{}.", l);
    std::vector<TensorSpec> layer = {
        {p + "input_layernorm.weight", 1, d, true},      {p + "self_attn.q_proj.weight", d, d},
        {p + "self_attn.k_proj.weight", d, d},           {p + "self_attn.v_proj.weight", d, d},
        {p + "self_attn.o_proj.weight", d, d},           {p + "post_attention_layernorm.weight", 1, d, true},
        {p + "mlp.gate_proj.weight", ff, d},             {p + "mlp.up_proj.weight", ff, d},
        {p + "mlp.down_proj.weight", d, ff}};
    if (fits(layer)) continue;
    // The last, partial layer: as many of its tensors as fit, in order.
    for (const auto &t : layer)
      if (!fits({t})) break;
    break;
  }
  fits({{"model.norm.weight", 1, d, true}});
  return all;
}

} // namespace

Result<uint64_t> parseSize(const std::string &text) {
  size_t end = 0;
  double value;
  try {
    value = std::stod(text, &end);
  } catch (...) {
    return Error{fmt::format("'{}' is not a size", text)};
  }
  std::string unit = text.substr(end);
  for (auto &c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 1;
  if (unit == "" || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  else return Error{fmt::format("'{}' has an unknown unit (use B, KiB, MiB, GiB, KB, MB or GB)", text)};
  if (!(value >= 0) || value * scale > 1e15) return Error{fmt::format("'{}' is out of range", text)};
  return static_cast<uint64_t>(value * scale);
}

Result<uint64_t> writeSyntheticCheckpoint(const std::string &path, const SyntheticOptions &o, bool overwrite) {
  if (o.dtype != DType::BF16 && o.dtype != DType::F16 && o.dtype != DType::F32)
    return Error{"the generator writes bf16, f16 or f32 checkpoints"};
  const uint64_t wordBytes = o.dtype == DType::F32 ? 4 : 2;
  std::vector<TensorSpec> tensors = layout(o, wordBytes);
  if (tensors.empty()) return Error{fmt::format("{} bytes hold no tensor of this model; ask for more", o.targetBytes)};

  const char *dtypeName = o.dtype == DType::BF16 ? "BF16" : o.dtype == DType::F16 ? "F16" : "F32";
  auto headerText = [&] {
    nlohmann::ordered_json header;
    header["__metadata__"] = {{"format", "pt"}, {"generator", "brevis-gen"}, {"seed", std::to_string(o.seed)}};
    uint64_t offset = 0;
    for (const auto &t : tensors) {
      uint64_t n = t.rows * t.cols * wordBytes;
      nlohmann::ordered_json shape = t.rows == 1 ? nlohmann::ordered_json::array({t.cols})
                                                 : nlohmann::ordered_json::array({t.rows, t.cols});
      header[t.name] = {{"dtype", dtypeName}, {"shape", shape}, {"data_offsets", {offset, offset + n}}};
      offset += n;
    }
    std::string json = header.dump();
    json.append((8 - json.size() % 8) % 8, ' '); // the data section starts 8-aligned, as writers pad
    return std::make_pair(json, offset);
  };
  auto [json, dataBytes] = headerText();
  // Small tensors' headers are a large part of the file: drop tensors from the end until the
  // header and the data fit (the model layout leaves room for its short header).
  while (8 + json.size() + dataBytes > o.targetBytes && tensors.size() > 1) {
    uint64_t excess = 8 + json.size() + dataBytes - o.targetBytes;
    const uint64_t perTensor = (json.size() + dataBytes) / tensors.size() + 1;
    for (uint64_t drop = excess / perTensor + 1; drop && tensors.size() > 1; --drop) tensors.pop_back();
    std::tie(json, dataBytes) = headerText();
  }
  auto out = OutputFile::create(path, overwrite);
  if (!out) return out.error();
  uint8_t prefix[8];
  uint64_t n = json.size();
  std::memcpy(prefix, &n, 8);
  BREVIS_TRY((*out)->write(prefix, 8));
  BREVIS_TRY((*out)->write(reinterpret_cast<const uint8_t *>(json.data()), json.size()));

  Rng rng{o.seed};
  std::vector<uint8_t> row;
  for (const auto &t : tensors) {
    // Trained matrices: std about 1/sqrt(fan-in), rows scaled by a log-normal factor.
    const float base = 1.0f / std::sqrt(static_cast<float>(t.cols));
    row.resize(t.cols * wordBytes);
    for (uint64_t r = 0; r < t.rows; ++r) {
      const float scale = base * std::exp(0.35f * rng.normal());
      for (uint64_t c = 0; c < t.cols; ++c) {
        float x = t.norm ? 1.0f + 0.05f * rng.normal() : scale * rng.normal();
        if (!t.norm && (rng.next() & 0x3fff) == 0) x *= 12.0f; // about 1 in 16k is an outlier
        if (o.dtype == DType::F32) std::memcpy(&row[4 * c], &x, 4);
        else {
          uint16_t h = o.dtype == DType::BF16 ? toBf16(x) : toF16(x);
          std::memcpy(&row[2 * c], &h, 2);
        }
      }
      BREVIS_TRY((*out)->write(row.data(), row.size()));
    }
  }
  uint64_t size = (*out)->bytesWritten();
  BREVIS_TRY((*out)->commit());
  return size;
}

} // namespace brevis::gen
