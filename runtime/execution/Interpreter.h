#pragma once
// The reference executor of programs. Streams: every node produces its words in chunks of at
// most kChunkWords, so memory stays bounded by the program's size, not the tensor's.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/common/Bytes.h"
#include "runtime/execution/RegionDecoder.h"

namespace brevis {

class Interpreter final : public RegionDecoder {
public:
  static constexpr size_t kChunkWords = 4096;
  Result<void> decodeWords(const Region &region, const Payload &payload, uint64_t first, uint64_t count,
                           ByteSink &sink) override;
};

/// Rejects holes and malformed literal payloads anywhere in `e`: after this succeeds, a
/// well-typed program runs without further checks.
Result<void> validateForExecution(const Expr &e, const Payload &payload);

/// Executes a well-typed, hole-free expression, writing its words to `sink`, each stored
/// little-endian in containerBytes(W) bytes, chunk by chunk. Validates every literal first.
Result<void> evaluateTo(const Expr &e, const Payload &payload, ByteSink &sink);

/// evaluateTo() into memory.
Result<Bytes> evaluate(const Expr &e, const Payload &payload);

/// Executes into a word vector (tests and the reference evaluator use this).
Result<std::vector<uint64_t>> evaluateWords(const Expr &e, const Payload &payload);

} // namespace brevis
