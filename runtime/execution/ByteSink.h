#pragma once
// Where decoded bytes go: a growing buffer or a file being written.
#include "lang/Result.h"
#include "runtime/common/Bytes.h"

#include <algorithm>
#include <cstddef>
#include <memory>

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

  /// Bytes written, readable again, and what keeps them so.
  struct WrittenBytes {
    ByteSpan bytes;
    std::shared_ptr<const void> owner;
  };
  /// Whether readBack() works: the sink keeps what it was given where it can be read (a file it
  /// created, a buffer), not a device or a pipe.
  virtual bool canReadBack() const { return false; }
  /// Bytes [offset, offset + size) as they were written, all of them written before: to verify
  /// what was written rather than a copy kept in memory.
  virtual Result<WrittenBytes> readBack(uint64_t /*offset*/, uint64_t /*size*/) {
    return Error{"this output cannot be read back"};
  }
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
  bool canReadBack() const override { return true; }
  /// A copy: the buffer may still grow and move.
  Result<WrittenBytes> readBack(uint64_t offset, uint64_t size) override {
    if (offset > out_.size() || size > out_.size() - offset) return Error{"read back past what was written"};
    auto copy = std::make_shared<const Bytes>(out_.begin() + static_cast<std::ptrdiff_t>(offset),
                                              out_.begin() + static_cast<std::ptrdiff_t>(offset + size));
    return WrittenBytes{ByteSpan(copy->data(), copy->size()), copy};
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
