#include "tools/gen/PlantedCheckpoint.h"

#include "runtime/containers/FileIO.h"
#include "tools/gen/Random.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <map>

namespace brevis::gen {

namespace {

/// Bytes of the order-0 entropy of each field of `words` (widths most significant first).
double fieldEntropyBytes(const std::vector<uint64_t> &words, std::initializer_list<unsigned> widths) {
  unsigned total = 0;
  for (unsigned w : widths) total += w;
  double bits = 0;
  unsigned shift = total;
  for (unsigned w : widths) {
    shift -= w;
    std::map<uint64_t, uint64_t> counts;
    for (uint64_t word : words) ++counts[(word >> shift) & ((uint64_t{1} << w) - 1)];
    for (const auto &[value, count] : counts)
      bits -= static_cast<double>(count) * std::log2(static_cast<double>(count) / static_cast<double>(words.size()));
  }
  return bits / 8;
}

template <typename Word> std::vector<uint8_t> toBytes(const std::vector<uint64_t> &words) {
  std::vector<uint8_t> bytes(words.size() * sizeof(Word));
  for (size_t i = 0; i < words.size(); ++i) {
    const auto w = static_cast<Word>(words[i]);
    std::memcpy(bytes.data() + i * sizeof(Word), &w, sizeof(Word)); // little-endian host
  }
  return bytes;
}

/// Weights of a trained-looking matrix: normal, standard deviation 1/sqrt(cols).
float weight(Rng &rng, uint64_t cols) { return rng.normal() / std::sqrt(static_cast<float>(cols)); }

} // namespace

std::vector<PlantedTensor> plantedTensors(uint64_t seed) {
  Rng rng{seed};
  std::vector<PlantedTensor> out;

  { // One value everywhere.
    std::vector<uint64_t> words(256 * 256, std::bit_cast<uint32_t>(0.5f));
    out.push_back({"planted.const", DType::F32, {256, 256}, toBytes<uint32_t>(words), "every word 0.5", 0});
  }
  { // One row of 1024 BF16 weights, 64 times.
    std::vector<uint64_t> tile(1024), words;
    for (auto &w : tile) w = toBf16(weight(rng, 1024));
    for (int r = 0; r < 64; ++r) words.insert(words.end(), tile.begin(), tile.end());
    out.push_back({"planted.tiled", DType::BF16, {64, 1024}, toBytes<uint16_t>(words), "one row repeated 64 times",
                   fieldEntropyBytes(tile, {1, 8, 7})});
  }
  { // 0, 1, 2, ...
    std::vector<uint64_t> words(65536);
    for (size_t i = 0; i < words.size(); ++i) words[i] = i;
    out.push_back({"planted.ramp", DType::I32, {65536}, toBytes<uint32_t>(words), "the index ramp 0, 1, 2, ...", 0});
  }
  { // BF16 weights widened to F32: the low 16 bits are zero.
    std::vector<uint64_t> source(512 * 512), words(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      source[i] = toBf16(weight(rng, 512));
      words[i] = source[i] << 16;
    }
    out.push_back({"planted.upcast", DType::F32, {512, 512}, toBytes<uint32_t>(words), "BF16 values widened to F32",
                   fieldEntropyBytes(source, {1, 8, 7})});
  }
  { // F16 weights widened to F32: 13 zero low mantissa bits, a narrower exponent range.
    std::vector<uint64_t> source(512 * 256), words(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      const float x = weight(rng, 256) * 4;
      source[i] = toF16(x);
      // The F16 value exactly, as F32 (normal halves only: |x| >= 2^-14 or zero, as planted).
      const uint64_t h = source[i];
      const uint64_t sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
      words[i] = exponent == 0 ? sign << 31 : sign << 31 | (exponent - 15 + 127) << 23 | mantissa << 13;
      if (exponent == 0) source[i] = h & 0x8000; // subnormal halves are planted as signed zeros
    }
    out.push_back({"planted.f16origin", DType::F32, {512, 256}, toBytes<uint32_t>(words),
                   "F16 values widened to F32 (13 zero low mantissa bits)", fieldEntropyBytes(source, {1, 5, 10})});
  }
  { // Bytes xor a constant mask: the top three bytes are the mask's.
    std::vector<uint64_t> low(65536), words(low.size());
    for (size_t i = 0; i < low.size(); ++i) {
      low[i] = rng.next() & 0xff;
      words[i] = low[i] ^ 0x5a5a5a5a;
    }
    out.push_back({"planted.xor", DType::I32, {65536}, toBytes<uint32_t>(words), "random bytes xor 0x5a5a5a5a",
                   fieldEntropyBytes(low, {8})});
  }
  { // Four values with probabilities 1/2, 1/4, 1/8, 1/8.
    const uint64_t values[] = {0x3c00, 0xbc00, 0x0000, 0x4000}; // 1, -1, 0, 2 in F16
    std::vector<uint64_t> words(512 * 512);
    for (auto &w : words) {
      const uint64_t r = rng.next() & 7;
      w = values[r < 4 ? 0 : r < 6 ? 1 : r < 7 ? 2 : 3];
    }
    out.push_back({"planted.fewvalued", DType::F16, {512, 512}, toBytes<uint16_t>(words),
                   "four values, probabilities 1/2, 1/4, 1/8, 1/8", fieldEntropyBytes(words, {16})});
  }
  { // A dense BF16 matrix whose rows 64..191 are zero.
    std::vector<uint64_t> words, dense;
    for (uint64_t r = 0; r < 256; ++r)
      for (uint64_t c = 0; c < 1024; ++c) {
        const uint64_t w = r >= 64 && r < 192 ? 0 : toBf16(weight(rng, 1024));
        words.push_back(w);
        if (r < 64 || r >= 192) dense.push_back(w);
      }
    out.push_back({"planted.zerorows", DType::BF16, {256, 1024}, toBytes<uint16_t>(words),
                   "rows 64..191 of 256 zero, the rest dense", fieldEntropyBytes(dense, {1, 8, 7})});
  }
  { // Two halves of different scale joined in one vector (two parameters packed into one): the
    // second 1/1000 of the first. Flat, so that no row of the shape marks where they meet.
    std::vector<uint64_t> words, first, second;
    for (uint64_t i = 0; i < 2 * 65536; ++i) {
      const uint64_t w = toBf16(weight(rng, 64) * (i < 65536 ? 1.0f : 1e-3f));
      words.push_back(w);
      (i < 65536 ? first : second).push_back(w);
    }
    out.push_back({"planted.pieces", DType::BF16, {2 * 65536}, toBytes<uint16_t>(words),
                   "two halves of different scale (the second 1/1000 of the first)",
                   fieldEntropyBytes(first, {1, 8, 7}) + fieldEntropyBytes(second, {1, 8, 7})});
  }
  { // An F32 kernel laid out [inputs, outputs] whose 64 output channels differ in scale by
    // powers of two (a folded normalization): each column's exponents are its own. (The
    // deviation puts the median magnitude mid-binade, so that a column's median exponent is
    // its scale's.)
    std::vector<uint64_t> words, signExponents;
    for (uint64_t r = 0; r < 512; ++r)
      for (uint64_t c = 0; c < 64; ++c) {
        const float w = weight(rng, 1000);
        const float scale = std::ldexp(1.0f, static_cast<int>(c % 8) - 4);
        uint32_t bits, unit;
        const float scaled = w * scale;
        std::memcpy(&bits, &scaled, 4);
        std::memcpy(&unit, &w, 4);
        words.push_back(bits);
        signExponents.push_back(unit >> 23);
      }
    // The unscaled values' sign and exponent, their mantissas as they are, a constant a column.
    out.push_back({"planted.channels", DType::F32, {512, 64}, toBytes<uint32_t>(words),
                   "64 output channels (columns) of scales 2^-4 to 2^3",
                   fieldEntropyBytes(signExponents, {1, 8}) + 512.0 * 64 * 23 / 8 + 64});
  }
  return out;
}

Result<void> writePlantedCheckpoint(const std::string &path, const std::vector<PlantedTensor> &tensors, bool overwrite) {
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}, {"generator", "brevis-gen --planted"}};
  uint64_t offset = 0;
  for (const PlantedTensor &t : tensors) {
    header[t.name] = {{"dtype", std::string(dtypeInfo(t.dtype).safetensorsName)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  auto out = OutputFile::create(path, overwrite);
  if (!out) return out.error();
  uint8_t prefix[8];
  const uint64_t n = json.size();
  std::memcpy(prefix, &n, 8);
  BREVIS_TRY((*out)->write(prefix, 8));
  BREVIS_TRY((*out)->write(reinterpret_cast<const uint8_t *>(json.data()), json.size()));
  for (const PlantedTensor &t : tensors) BREVIS_TRY((*out)->write(t.bytes.data(), t.bytes.size()));
  return (*out)->commit();
}

} // namespace brevis::gen
