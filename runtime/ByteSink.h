#pragma once
// Where decoded bytes go: a growing buffer or a file being written.
#include "lang/Result.h"
#include "runtime/Bytes.h"

#include <cstddef>

namespace brevis {

class ByteSink {
public:
  virtual ~ByteSink() = default;
  virtual Result<void> write(const uint8_t *data, size_t size) = 0;
};

class VectorSink final : public ByteSink {
public:
  explicit VectorSink(Bytes &out) : out_(out) {}
  Result<void> write(const uint8_t *data, size_t size) override {
    out_.insert(out_.end(), data, data + size);
    return {};
  }

private:
  Bytes &out_;
};

/// Accepts and drops bytes: for decoding only to check (the runner hashes what passes).
class DiscardSink final : public ByteSink {
public:
  Result<void> write(const uint8_t *, size_t) override { return {}; }
};

} // namespace brevis
