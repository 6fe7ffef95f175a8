// libFuzzer target: every literal encoder on arbitrary words, then its decoder. The first byte
// picks the width, the second how many times the words repeat (so that short inputs reach the
// 32-way rANS frames, from 4 KiB on); the rest, in containerBytes(width)-byte little-endian
// pieces masked to the width, are the words. Every encoding that applies must decode back to
// exactly the words, through validation and a cursor, whole and in narrow reads; and the
// encoding encodeSmallest keeps must too.
#include "runtime/codecs/LitDecode.h"
#include "runtime/codecs/LitEncode.h"
#include "synth/CostModel.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

using namespace brevis;

namespace {

void expectRoundTrip(Encoding encoding, const std::vector<uint64_t> &words, unsigned width, const Bytes &encoded) {
  // Payload::fromBytes adds the slack decoders may read past the end, as archives have.
  Payload payload = Payload::fromBytes(encoded);
  auto lit = Lit::make(StreamType{width, words.size()}, encoding, ByteRange{0, encoded.size()});
  if (!validateLit(*lit, payload)) __builtin_trap(); // an encoder wrote what its decoder refuses
  auto decoded = decodeLit(*lit, payload);
  if (!decoded || *decoded != words) __builtin_trap();
  if (width > 32) return;
  // The fused kernels' narrow reads, in uneven pieces.
  auto cursor = LitCursor::open(*lit, payload);
  if (!cursor) __builtin_trap();
  std::vector<uint32_t> narrow(words.size());
  for (size_t done = 0, step = 1; done < words.size(); done += step, step = step * 3 + 1) {
    step = std::min(step, words.size() - done);
    if (!(*cursor)->read32(narrow.data() + done, step)) __builtin_trap();
  }
  for (size_t i = 0; i < words.size(); ++i)
    if (narrow[i] != words[i]) __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  const unsigned width = 1 + data[0] % 64;
  const unsigned repeats = 1 + data[1] % 16;
  const unsigned cb = containerBytes(width);
  std::vector<uint64_t> words;
  for (unsigned r = 0; r < repeats; ++r)
    for (size_t at = 2; at + cb <= size; at += cb) {
      uint64_t w = 0;
      std::memcpy(&w, data + at, cb); // little-endian host
      words.push_back(w & widthMask(width));
    }
  for (Encoding encoding : kAllEncodings) {
    Bytes encoded;
    const bool applies = encodingApplies(encoding, words, width);
    if (encodeLit(encoding, words, width, encoded) != applies) __builtin_trap();
    if (applies) expectRoundTrip(encoding, words, width, encoded);
    else if (!encoded.empty()) __builtin_trap(); // nothing appended when it does not apply
  }
  Bytes smallest;
  const Encoding chosen = encodeSmallest(words, width, smallest, policyForLevel(1 + data[1] / 16 % 9));
  expectRoundTrip(chosen, words, width, smallest);
  return 0;
}
