#pragma once
// xxHash64 (seed 0) of whole buffers and of streams, for tensor and file checksums.
#include "runtime/Bytes.h"

#include <memory>

namespace brevis {

uint64_t xxh64(ByteSpan data);

class Xxh64Stream {
public:
  Xxh64Stream();
  ~Xxh64Stream();
  void update(const uint8_t *data, size_t size);
  uint64_t digest() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace brevis
