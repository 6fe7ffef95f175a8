#pragma once
// The one sink that hashes and counts bytes on their way to another sink: region pieces hash
// with XXH3 where they are decoded (ParallelDecode), whole files with xxh64 against a program's
// `source` line (CheckpointRunner). Decoding in place passes through: the bytes are hashed
// where the next sink holds them, without a copy.
#include "runtime/execution/ByteSink.h"

#include <cstdint>

namespace brevis {

/// `Hash` has update(data, size), digest() and reset() (runtime/containers/Checksum.h).
template <typename Hash> class HashingSink final : public ByteSink {
public:
  explicit HashingSink(ByteSink &next) : next_(next) {}
  Result<void> write(const uint8_t *data, size_t size) override {
    hash_.update(data, size);
    written_ += size;
    return next_.write(data, size);
  }
  uint8_t *reserve(size_t size) override { return reserved_ = next_.reserve(size); }
  Result<void> commit(size_t size) override {
    hash_.update(reserved_, size);
    written_ += size;
    return next_.commit(size);
  }
  uint64_t written() const { return written_; }
  uint64_t digest() const { return hash_.digest(); }
  /// Starts a new hash (the count goes on).
  void restartHash() { hash_.reset(); }

private:
  ByteSink &next_;
  Hash hash_;
  uint8_t *reserved_ = nullptr;
  uint64_t written_ = 0;
};

} // namespace brevis
