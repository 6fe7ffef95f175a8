#include "synth/Literals.h"

#include <cstring>

namespace brevis {

std::vector<uint64_t> readWords(ByteSpan bytes, unsigned wordBytes) {
  std::vector<uint64_t> words(bytes.size() / wordBytes);
  // A load of constant size per word size: a variable-size memcpy is a call per word.
  auto read = [&]<typename Word>(Word) {
    for (size_t i = 0; i < words.size(); ++i) {
      Word w;
      std::memcpy(&w, bytes.data() + i * sizeof(Word), sizeof(Word)); // little-endian host
      words[i] = w;
    }
  };
  switch (wordBytes) {
  case 1: read(uint8_t{}); break;
  case 2: read(uint16_t{}); break;
  case 4: read(uint32_t{}); break;
  case 8: read(uint64_t{}); break;
  default:
    for (size_t i = 0; i < words.size(); ++i) {
      uint64_t w = 0;
      std::memcpy(&w, bytes.data() + i * wordBytes, wordBytes);
      words[i] = w;
    }
  }
  return words;
}

std::vector<uint64_t> extractField(std::span<const uint64_t> words, unsigned shift, unsigned width) {
  std::vector<uint64_t> field;
  extractField(words, shift, width, field);
  return field;
}

void extractField(std::span<const uint64_t> words, unsigned shift, unsigned width, std::vector<uint64_t> &field) {
  field.resize(words.size());
  const uint64_t mask = widthMask(width);
  for (size_t i = 0; i < words.size(); ++i) field[i] = (words[i] >> shift) & mask;
}

namespace {

/// A Lit node for what `encode` appends to `payload`.
template <typename Encode>
ExprPtr litOf(std::span<const uint64_t> words, unsigned width, Bytes &payload, Encode encode) {
  const uint64_t offset = payload.size();
  const Encoding encoding = encode();
  return Lit::make(StreamType{width, words.size()}, encoding, ByteRange{offset, payload.size() - offset});
}

} // namespace

ExprPtr makeLit(std::span<const uint64_t> words, unsigned width, Bytes &payload, EncodePolicy policy) {
  return litOf(words, width, payload, [&] { return encodeSmallest(words, width, payload, policy); });
}

ExprPtr makeLitFrom(std::span<const uint64_t> words, unsigned width, Bytes &payload,
                    std::initializer_list<Encoding> encodings) {
  return litOf(words, width, payload, [&] { return encodeSmallestOf(words, width, payload, encodings); });
}

ExprPtr makeHuffmanOrRawLit(std::span<const uint64_t> words, unsigned width, Bytes &payload) {
  return makeLitFrom(words, width, payload, {Encoding::Raw, Encoding::Huffman});
}

} // namespace brevis
