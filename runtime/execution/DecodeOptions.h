#pragma once
// How to decode, for every entry point: the library's archive reader and builder, brevisc's
// commands and the benchmark all take this one struct.
#include "lang/Result.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace brevis {

struct DecodeOptions {
  unsigned threads = 1;
  /// Bytes decoded so far, for progress displays (may be null).
  std::atomic<uint64_t> *progress = nullptr;
  /// LLVM-compiled decoders instead of the interpreter (chosen where the decoder is made:
  /// tools/api/DecoderFactory).
  bool jit = false;
  /// Where the JIT writes the LLVM IR it generates, before and after optimization (empty:
  /// nowhere).
  std::string emitLlvm = {};
  /// Notes about decoding; may be empty.
  std::function<void(const std::string &)> notice = {};
  /// After decoding, the decoder's summary line (RegionDecoder::summary), where it has one; may
  /// be empty (-v sets it).
  std::function<void(const std::string &)> summary = {};
  /// Work done beside the decoding (decompress: the whole archive's checksum), as one more task
  /// of decodeJobs', handed out before the pieces: on two threads or more it runs while the
  /// others decode, instead of after them on one. Its failure is returned only where decoding
  /// succeeded, so that damage a region's decoding meets is reported by that region; where
  /// decoding fails before the pieces (a literal that does not validate, a payload of the wrong
  /// size) it does not run. Every decodeJobs call runs it, the library's entry points too. May be
  /// empty.
  std::function<Result<void>()> alongside = {};
};

} // namespace brevis
