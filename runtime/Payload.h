#pragma once
// The literal payload sidecar a program reads. Decoders may load whole 64-bit words up to
// kPayloadSlack bytes past any payload byte, so the buffer always carries that many zero
// bytes after its end.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/Bytes.h"

#include <string>

namespace brevis {

inline constexpr size_t kPayloadSlack = 16;

class Payload {
public:
  Payload() : bytes_(kPayloadSlack, 0) {}
  static Payload fromBytes(ByteSpan bytes);
  static Result<Payload> readFile(const std::string &path);

  const uint8_t *data() const { return bytes_.data(); }
  uint64_t size() const { return bytes_.size() - kPayloadSlack; }
  /// The bytes of `r`; the caller has checked that r lies inside the payload.
  ByteSpan slice(ByteRange r) const { return ByteSpan(bytes_.data() + r.offset, r.size); }
  bool contains(ByteRange r) const { return r.offset <= size() && r.size <= size() - r.offset; }

private:
  Bytes bytes_;
};

} // namespace brevis
