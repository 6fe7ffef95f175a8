// libFuzzer target: every literal decoder on arbitrary payload bytes. The first byte picks the
// encoding and width, the next two the word count; the rest is the payload. Whatever the
// input, validation and decoding must return (an error or words) without crashing, reading out
// of bounds or allocating beyond what the payload's size justifies.
#include "runtime/codecs/LitDecode.h"

#include <cstddef>
#include <cstdint>

using namespace brevis;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  const Encoding encoding = kAllEncodings[data[0] % std::size(kAllEncodings)];
  const unsigned width = 1 + (data[0] >> 3) % maxEncodingWidth(encoding) % 64;
  const uint64_t count = data[1] | (uint64_t{data[2]} << 8);
  Payload payload = Payload::fromBytes(ByteSpan(data + 3, size - 3));
  auto lit = Lit::make(StreamType{width, count}, encoding, ByteRange{0, payload.size()});
  if (!validateLit(*lit, payload)) return 0;
  auto cursor = LitCursor::open(*lit, payload);
  if (!cursor) return 0;
  std::vector<uint64_t> words(1024);
  for (uint64_t done = 0; done < count;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(words.size(), count - done));
    if (!(*cursor)->read(words.data(), n)) return 0;
    for (size_t i = 0; i < n; ++i)
      if (words[i] & ~widthMask(width)) __builtin_trap(); // a decoder produced a word wider than its type
    done += n;
  }
  return 0;
}
