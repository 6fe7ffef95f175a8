#include "runtime/Payload.h"

#include "runtime/FileIO.h"

namespace brevis {

Payload Payload::fromBytes(ByteSpan bytes) {
  Payload p;
  p.bytes_.assign(bytes.begin(), bytes.end());
  p.bytes_.resize(bytes.size() + kPayloadSlack, 0);
  return p;
}

Result<Payload> Payload::readFile(const std::string &path) {
  auto bytes = brevis::readFile(path);
  if (!bytes) return bytes.error();
  bytes->resize(bytes->size() + kPayloadSlack, 0);
  Payload p;
  p.bytes_ = std::move(*bytes);
  return p;
}

} // namespace brevis
