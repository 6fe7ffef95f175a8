#pragma once
// Decoding with the executor the options choose: every entry point (the archive reader and
// builder, brevisc, the benchmark) decodes through these two functions.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/containers/Payload.h"
#include "runtime/execution/CheckpointRunner.h"
#include "runtime/execution/ByteSink.h"
#include "runtime/execution/DecodeOptions.h"
#include "runtime/execution/ParallelDecode.h"

#include <span>
#include <vector>

namespace brevis {

/// decodeJobs (runtime/execution/ParallelDecode.h) with the interpreter or the JIT, as
/// options.jit says.
Result<void> decodeJobs(std::span<const DecodeJob> jobs, const DecodeOptions &options);

/// Decodes a checkpoint program sequentially into `sink`, verified against the program's source
/// checksum and its regions' digests (programs without an archive index: `run`, `pack`); with
/// `regionDigests`, every region's digest is appended there (runCheckpoint). options.threads is
/// not used.
Result<void> decodeCheckpoint(const Checkpoint &c, const Payload &payload, const DecodeOptions &options, ByteSink &sink,
                              std::vector<uint64_t> *regionDigests = nullptr, const CheckpointCheck &check = {});

} // namespace brevis
