#include "synth/Literals.h"

namespace brevis {

std::vector<uint64_t> readWords(ByteSpan bytes, unsigned wordBytes) {
  WordBuffer copy;
  return viewWords(bytes, wordBytes, copy).widened();
}

std::vector<uint64_t> extractField(WordsView words, unsigned shift, unsigned width) {
  const uint64_t mask = widthMask(width);
  return words.visit([&](auto in) {
    std::vector<uint64_t> field(in.size());
    for (size_t i = 0; i < in.size(); ++i) field[i] = (uint64_t{in[i]} >> shift) & mask;
    return field;
  });
}

namespace {

template <typename Out> WordsView extractInto(WordsView words, unsigned shift, unsigned width, FieldBuffer<Out> &field) {
  const auto mask = static_cast<Out>(widthMask(width));
  field.resize(words.size());
  // Through a plain pointer: stores of bytes through the vector may alias its own pointers as
  // far as the compiler knows, which kept the byte loops from vectorizing (8 instructions a word).
  Out *const out = field.data();
  words.visit([&](auto in) {
    using In = typename decltype(in)::value_type;
    // Shifted in the input's container: a narrower field of a wider word, or the same width.
    for (size_t i = 0; i < in.size(); ++i) out[i] = static_cast<Out>(static_cast<In>(in[i] >> shift)) & mask;
  });
  return WordsView(std::span<const Out>(field));
}

} // namespace

namespace {
thread_local std::vector<std::unique_ptr<FieldBuffers>> idleFieldBuffers;
} // namespace

PooledFieldBuffers::PooledFieldBuffers() {
  if (idleFieldBuffers.empty()) {
    buffers_ = std::make_unique<FieldBuffers>();
  } else {
    buffers_ = std::move(idleFieldBuffers.back());
    idleFieldBuffers.pop_back();
  }
}

PooledFieldBuffers::~PooledFieldBuffers() {
  // Kept for the next tensor up to a size: a large tensor's fields fault in few pages for their
  // size anyway, and kept on every thread they would hold its words once per thread.
  constexpr size_t kKeptBytes = size_t{16} << 20;
  FieldBuffers &b = *buffers_;
  if (b.bytes.capacity() + 2 * b.halves.capacity() + 4 * b.singles.capacity() + 8 * b.doubles.capacity() > kKeptBytes)
    b = FieldBuffers{};
  idleFieldBuffers.push_back(std::move(buffers_));
}

WordsView extractField(WordsView words, unsigned shift, unsigned width, FieldBuffers &buffers) {
  if (width <= 8) return extractInto(words, shift, width, buffers.bytes);
  if (width <= 16) return extractInto(words, shift, width, buffers.halves);
  if (width <= 32) return extractInto(words, shift, width, buffers.singles);
  return extractInto(words, shift, width, buffers.doubles);
}

namespace {

/// A Lit node for what `encode` appends to `payload`.
template <typename Encode>
ExprPtr litOf(WordsView words, unsigned width, Bytes &payload, Encode encode) {
  const uint64_t offset = payload.size();
  const Encoding encoding = encode();
  return Lit::make(StreamType{width, words.size()}, encoding, ByteRange{offset, payload.size() - offset});
}

} // namespace

ExprPtr makeLit(WordsView words, unsigned width, Bytes &payload, EncodePolicy policy) {
  return litOf(words, width, payload, [&] { return encodeSmallest(words, width, payload, policy); });
}

ExprPtr makeLitFrom(WordsView words, unsigned width, Bytes &payload,
                    std::initializer_list<Encoding> encodings) {
  return litOf(words, width, payload, [&] { return encodeSmallestOf(words, width, payload, encodings); });
}

ExprPtr makeHuffmanOrRawLit(WordsView words, unsigned width, Bytes &payload) {
  return makeLitFrom(words, width, payload, {Encoding::Raw, Encoding::Huffman});
}

ExprPtr makeHeaderText(ByteSpan header) {
  constexpr size_t kLengthBytes = 8;
  if (header.size() < kLengthBytes || header.size() > kMaxHeaderTextBytes) return nullptr;
  auto asText = [](ByteSpan bytes) {
    return std::string_view(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  };
  std::vector<ExprPtr> parts;
  auto length = Lit::make(StreamType{8, kLengthBytes}, readWords(header.first(kLengthBytes), 1));
  length->radix = Radix::Hex; // bytes of a number, not text
  parts.push_back(std::move(length));
  parts.push_back(Lit::makeText(asText(header.subspan(kLengthBytes))));
  return Concat::make(std::move(parts));
}

} // namespace brevis
