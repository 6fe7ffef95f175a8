#pragma once
// The checkpoint-level driver: from a file's bytes to a checkpoint program and its payload.
// It tiles the file into regions (the safetensors header, each tensor, the bytes between and
// after them), hands each region to a strategy (synth/Strategy.h) on the thread pool, and joins
// the regions' payloads into one in file order. It knows nothing of how a region is coded.
#include "lang/Ast.h"
#include "runtime/common/Bytes.h"
#include "synth/Strategy.h"
#include "synth/search/SketchFill.h"

#include <atomic>
#include <functional>
#include <optional>
#include <string>

namespace brevis {

struct SynthOutput {
  Checkpoint checkpoint;
  Bytes payload; ///< empty where SynthOptions::payloadWriter took it
  /// The first failure of SynthOptions::payloadWriter, after which it was not called again and
  /// no more regions were made: then the checkpoint is incomplete and only this counts.
  std::optional<Error> payloadError;
  /// Set when the input is not valid safetensors and was kept as one byte stream.
  std::optional<std::string> notSafetensorsReason;
  /// regionDigest of each region's bytes in `file`, what an archive records to verify it by.
  std::vector<uint64_t> digests;
};

/// Beyond the machine's cores, threads get at least this much of the input each.
inline constexpr uint64_t kMinBytesPerThread = uint64_t{1} << 20;
/// `requested` threads (at least 1), no more than the machine has cores or `bytes` has
/// mebibytes: each thread keeps buffers of its own, and 1,024 threads asked for on a 2 MB file
/// held 298 MB where one held 19 MB. Synthesis does not depend on the count.
unsigned usefulThreads(unsigned requested, uint64_t bytes);

struct SynthOptions {
  unsigned threads = 1; ///< at most; regions are independent, the result does not depend on the count
  std::atomic<uint64_t> *progress = nullptr; ///< input bytes whose program is done, for progress bars
  bool headerText = false; ///< keep the safetensors header as text (writeHeaderAsIndex not applied)
  /// Where set, the payload goes here part by part, in order, as the regions are joined, instead
  /// of into SynthOutput::payload: an archive written as the file is synthesized holds no
  /// payload in memory but the regions in flight. Called under a lock, from any thread.
  std::function<Result<void>(ByteSpan)> payloadWriter = {};
};

/// The regions of `file`, in file order, with no programs yet: the header, each tensor and
/// the bytes no tensor covers; or, if `file` is not safetensors, one region of bytes (and the
/// reason in `notSafetensorsReason`).
std::vector<Region> tileRegions(ByteSpan file, std::optional<std::string> &notSafetensorsReason);

/// For each of `file`'s regions, the first region of the same kind and dtype with the same bytes
/// (its own index if none is earlier). Checkpoints repeat whole tensors (a shared bias, a copied
/// block); synthesizeCheckpoint gives a repeat the first one's program, reading the same payload
/// bytes, at no payload cost. Regions are told apart by their regionDigest, stored in `digests`
/// where given (one pass over the file serves both), taken on up to `threads` threads.
std::vector<size_t> firstWithSameBytes(const std::vector<Region> &regions, ByteSpan file,
                                       std::vector<uint64_t> *digests = nullptr, unsigned threads = 1);

/// Writes `c`'s header region as the list of its tensors (`safetensors(…)`,
/// lang/SafetensorsIndex.h) where that makes exactly the header's bytes in `file`; the header
/// stays text otherwise. The list costs nothing to store: the tensor regions declare it all.
void writeHeaderAsIndex(Checkpoint &c, ByteSpan file);

/// The program of `file`, named `sourceName`, whose literals point into a payload file named
/// `payloadName`; every region synthesized by `strategy`.
SynthOutput synthesizeCheckpoint(ByteSpan file, const std::string &sourceName, const std::string &payloadName,
                                 Strategy &strategy, const SynthOptions &options = {});

/// Where filling a checkpoint's holes stopped: the region, and the operator that cannot produce
/// its words.
struct CheckpointFillError {
  size_t region = 0;
  FillError error;
};

/// Fills every hole of a checkpoint program written by hand (a sketch; an edit that left a
/// literal as `lit auto`) with what the search finds at `level` for `file`, the bytes the
/// program rebuilds (its size already checked); the holes' literals are appended to `payload`.
/// Returns how many holes were filled.
std::variant<size_t, CheckpointFillError> fillCheckpointHoles(Checkpoint &c, ByteSpan file, Bytes &payload, int level);

} // namespace brevis
