#pragma once
// General-purpose compressors from Debian's libraries, behind one interface, for the benchmark:
// zstd (levels, long mode, worker threads), zlib, xz (single and multi-threaded), brotli, lz4
// (fast and HC) and snappy. Each compresses a whole buffer and decompresses it back.
#include "lang/Result.h"
#include "runtime/common/Bytes.h"

#include <memory>
#include <string>
#include <vector>

namespace brevis::bench {

class PeerCodec {
public:
  virtual ~PeerCodec() = default;
  virtual std::string name() const = 0;
  /// Whether compress() uses more than one thread when asked (zstd, xz).
  virtual bool threaded() const { return false; }
  virtual Result<Bytes> compress(ByteSpan input, unsigned threads) const = 0;
  virtual Result<Bytes> decompress(ByteSpan compressed, size_t originalSize) const = 0;
};

/// Every peer, in the order tables list them; `only` (names) filters when non-empty.
std::vector<std::unique_ptr<PeerCodec>> allPeers(const std::vector<std::string> &only = {});

} // namespace brevis::bench
