#include "synth/Literals.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

#if defined(__x86_64__)
/// The words [0, n) less the last n % (64 / sizeof(In)): shifted and masked a register at a time
/// with AVX-512 (one shift of the input's lanes, one narrowing, one mask). GCC's loop for the
/// same, at the x86-64 baseline, widened 16-bit words to 32-bit lanes to shift them (C++'s
/// integer promotion): a tenth of level 1's time. Returns the words done.
template <typename In, typename Out>
[[gnu::target("avx512f,avx512bw")]] size_t extractAvx512(const In *in, size_t n, unsigned shift, Out mask, Out *out) {
  constexpr size_t step = 64 / sizeof(In);
  const __m128i count = _mm_cvtsi32_si128(static_cast<int>(shift));
  // (The maskz forms with every lane on: GCC 12's plain ones warn about their pass-through.)
  const __mmask32 all32 = ~__mmask32{0};
  const __mmask16 all16 = 0xffff;
  const auto byteBits = static_cast<uint8_t>(shift < 8 ? 0xffu >> shift : 0);
  const __m512i byteMask = _mm512_set1_epi8(static_cast<char>(mask & byteBits));
  const __m256i halfMask = _mm256_set1_epi8(static_cast<char>(mask));
  size_t i = 0;
  for (; i + step <= n; i += step) {
    const __m512i v = _mm512_loadu_si512(in + i);
    if constexpr (sizeof(In) == 1) {
      // Bytes shifted in 16-bit lanes: the bits that cross into a byte from the next lie at
      // 8 - shift and above, where a byte shifted alone has zeros; the mask keeps them out.
      const __m512i w = _mm512_and_si512(_mm512_maskz_srl_epi16(all32, v, count), byteMask);
      _mm512_storeu_si512(out + i, w);
    } else if constexpr (sizeof(In) == 2) {
      const __m512i w = _mm512_maskz_srl_epi16(all32, v, count);
      if constexpr (sizeof(Out) == 1)
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i),
                            _mm256_and_si256(_mm512_maskz_cvtepi16_epi8(all32, w), halfMask));
      else
        _mm512_storeu_si512(out + i, _mm512_and_si512(w, _mm512_set1_epi16(static_cast<short>(mask))));
    } else {
      const __m512i w =
          _mm512_and_si512(_mm512_maskz_srl_epi32(all16, v, count), _mm512_set1_epi32(static_cast<int>(mask)));
      if constexpr (sizeof(Out) == 1)
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i), _mm512_maskz_cvtepi32_epi8(all16, w));
      else if constexpr (sizeof(Out) == 2)
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), _mm512_maskz_cvtepi32_epi16(all16, w));
      else _mm512_storeu_si512(out + i, w);
    }
  }
  return i;
}
#endif

template <typename Out> WordsView extractInto(WordsView words, unsigned shift, unsigned width, FieldBuffer<Out> &field) {
  const auto mask = static_cast<Out>(widthMask(width));
  field.resize(words.size());
  // Through a plain pointer: stores of bytes through the vector may alias its own pointers as
  // far as the compiler knows, which kept the byte loops from vectorizing (8 instructions a word).
  Out *const out = field.data();
  words.visit([&](auto in) {
    using In = typename decltype(in)::value_type;
    size_t i = 0;
#if defined(__x86_64__)
    static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    if constexpr (sizeof(In) <= 4 && sizeof(Out) <= sizeof(In))
      if (avx512) i = extractAvx512<In, Out>(in.data(), in.size(), shift, mask, out);
#endif
    // Shifted in the input's container: a narrower field of a wider word, or the same width.
    for (; i < in.size(); ++i) out[i] = static_cast<Out>(static_cast<In>(in[i] >> shift)) & mask;
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
