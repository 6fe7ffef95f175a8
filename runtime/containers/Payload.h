#pragma once
// The literal payload a program reads: an owned buffer, or a view into a mapped archive.
// Decoders may load whole 64-bit words up to kPayloadSlack bytes past any payload byte, so
// every payload is followed by that many readable bytes (zeros in an owned buffer and at the
// end of an archive's payload section; the next member's payload inside an archive).
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/common/Bytes.h"

#include <memory>
#include <string>

namespace brevis {

inline constexpr size_t kPayloadSlack = 16;

class Payload {
public:
  Payload() : Payload(Bytes{}) {}
  /// A copy of `bytes`.
  static Payload fromBytes(ByteSpan bytes) { return Payload(Bytes(bytes.begin(), bytes.end())); }
  /// Takes the buffer (no copy of the bytes beyond adding the slack).
  explicit Payload(Bytes bytes);
  /// Bytes owned elsewhere (kept alive by `owner`) and followed by kPayloadSlack readable bytes.
  static Payload view(ByteSpan bytes, std::shared_ptr<const void> owner);
  static Result<Payload> readFile(const std::string &path);

  const uint8_t *data() const { return data_; }
  uint64_t size() const { return size_; }
  /// The bytes of `r`; the caller has checked that r lies inside the payload.
  ByteSpan slice(ByteRange r) const { return ByteSpan(data_ + r.offset, r.size); }
  bool contains(ByteRange r) const { return r.offset <= size() && r.size <= size() - r.offset; }

private:
  std::shared_ptr<const void> owner_;
  const uint8_t *data_ = nullptr;
  uint64_t size_ = 0;
};

} // namespace brevis
