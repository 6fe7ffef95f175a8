#pragma once
// Where decoded bytes go: a growing buffer or a file being written.
#include "lang/Result.h"
#include "runtime/common/Bytes.h"

#include <algorithm>
#include <cstddef>

namespace brevis {

class ByteSink {
public:
  virtual ~ByteSink() = default;
  virtual Result<void> write(const uint8_t *data, size_t size) = 0;
  /// Writing in place: room for `size` bytes, to be filled and then passed on by commit(n)
  /// (n <= size) as write() would pass them, or left unused; nothing else may be called
  /// in between. A sink
  /// that buffers hands out its own buffer, which saves the decoder a copy; by default it is
  /// a scratch buffer that commit() writes.
  virtual uint8_t *reserve(size_t size) {
    if (scratch_.size() < size) scratch_.resize(size);
    return scratch_.data();
  }
  virtual Result<void> commit(size_t size) { return write(scratch_.data(), size); }

private:
  Bytes scratch_;
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

/// Where bytes go when they are produced out of order (by several threads, or a header written
/// last).
class PositionalSink {
public:
  virtual ~PositionalSink() = default;
  /// Called concurrently from several threads, for disjoint ranges.
  virtual Result<void> writeAt(uint64_t offset, const uint8_t *data, size_t size) = 0;
  /// Where bytes [offset, offset + size) are kept, if the sink keeps them in memory it owns
  /// (a buffer sized in advance): decoders then write them there in place, without a copy.
  /// Null (the default) where they must go through writeAt().
  virtual uint8_t *memoryAt(uint64_t /*offset*/, size_t /*size*/) { return nullptr; }
};

/// A buffer taking positional writes: it grows on demand (one thread); sized in advance, it
/// takes concurrent writes to disjoint ranges.
class VectorPositionalSink final : public PositionalSink {
public:
  explicit VectorPositionalSink(Bytes &out) : out_(out) {}
  Result<void> writeAt(uint64_t offset, const uint8_t *data, size_t size) override {
    if (out_.size() < offset + size) out_.resize(offset + size);
    std::copy(data, data + size, out_.begin() + static_cast<std::ptrdiff_t>(offset));
    return {};
  }
  /// Within the size it was given in advance (growing it would move the bytes).
  uint8_t *memoryAt(uint64_t offset, size_t size) override {
    return offset + size <= out_.size() ? out_.data() + offset : nullptr;
  }

private:
  Bytes &out_;
};

/// Accepts and drops positional writes (decoding only to check digests).
class DiscardPositionalSink final : public PositionalSink {
public:
  Result<void> writeAt(uint64_t, const uint8_t *, size_t) override { return {}; }
};

/// Accepts and drops bytes: for decoding only to check (the runner hashes what passes).
class DiscardSink final : public ByteSink {
public:
  Result<void> write(const uint8_t *, size_t) override { return {}; }
};

} // namespace brevis
