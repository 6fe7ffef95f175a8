#include "runtime/containers/Payload.h"

#include "runtime/containers/FileIO.h"

namespace brevis {

Payload::Payload(Bytes bytes) {
  size_ = bytes.size();
  bytes.resize(bytes.size() + kPayloadSlack, 0);
  auto owned = std::make_shared<const Bytes>(std::move(bytes));
  data_ = owned->data();
  owner_ = std::move(owned);
}

Payload Payload::view(ByteSpan bytes, std::shared_ptr<const void> owner) {
  Payload p;
  p.owner_ = std::move(owner);
  p.data_ = bytes.data();
  p.size_ = bytes.size();
  return p;
}

Result<Payload> Payload::readFile(const std::string &path) {
  auto bytes = brevis::readFile(path);
  if (!bytes) return bytes.error();
  return Payload(std::move(*bytes));
}

} // namespace brevis
