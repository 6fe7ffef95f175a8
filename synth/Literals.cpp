#include "synth/Literals.h"

#include <cstring>

namespace brevis {

std::vector<uint64_t> readWords(ByteSpan bytes, unsigned wordBytes) {
  std::vector<uint64_t> words(bytes.size() / wordBytes);
  for (size_t i = 0; i < words.size(); ++i) {
    uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i * wordBytes, wordBytes); // little-endian host
    words[i] = w;
  }
  return words;
}

ExprPtr makeLit(std::span<const uint64_t> words, unsigned width, Bytes &payload, EncodePolicy policy) {
  uint64_t offset = payload.size();
  Encoding enc = encodeSmallest(words, width, payload, policy);
  return Lit::make(StreamType{width, words.size()}, enc, ByteRange{offset, payload.size() - offset});
}

ExprPtr makeLitFrom(std::span<const uint64_t> words, unsigned width, Bytes &payload,
                    std::initializer_list<Encoding> encodings) {
  Bytes best, candidate;
  Encoding chosen = Encoding::Raw;
  bool have = false;
  for (Encoding e : encodings) {
    candidate.clear();
    if (!encodeLit(e, words, width, candidate)) continue;
    if (!have || candidate.size() < best.size()) {
      std::swap(best, candidate);
      chosen = e;
      have = true;
    }
  }
  if (!have) encodeLit(chosen = Encoding::Raw, words, width, best);
  uint64_t offset = payload.size();
  payload.insert(payload.end(), best.begin(), best.end());
  return Lit::make(StreamType{width, words.size()}, chosen, ByteRange{offset, best.size()});
}

} // namespace brevis
