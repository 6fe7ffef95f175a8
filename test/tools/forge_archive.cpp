// forge_archive: writes a .brv archive from program text and a payload file WITHOUT checking
// or decoding anything, so that tests can hand brevisc archives no writer would make (sizes
// that disagree, absurd counts, wrong digests). Test use only.
//
//   forge_archive PROGRAM PAYLOAD OUT SOURCE_SIZE REGIONS [DIGEST [PIECES]]
//
// The member is named after PROGRAM's base name without extension; its source checksum is 0
// (so the program's `source` line should say xxh64 0x0); every region digest is DIGEST
// (default 0). With PIECES, the index also holds PIECES piece hashes (all 0), and the last
// region's digest is the one they make, as a large region's must be.
#include "runtime/containers/Archive.h"
#include "runtime/containers/FileIO.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

using namespace brevis;

int main(int argc, char **argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: forge_archive PROGRAM PAYLOAD OUT SOURCE_SIZE REGIONS [DIGEST [PIECES]]\n");
    return 2;
  }
  auto text = readTextFile(argv[1]);
  auto payload = readFile(argv[2]);
  if (!text || !payload) {
    std::fprintf(stderr, "forge_archive: cannot read the inputs\n");
    return 1;
  }
  ArchiveMember m;
  m.path = std::filesystem::path(argv[1]).stem().string();
  m.programText = *text;
  m.sourceSize = std::strtoull(argv[4], nullptr, 0);
  m.sourceXxh64 = 0;
  m.digests.assign(std::strtoull(argv[5], nullptr, 0), argc > 6 ? std::strtoull(argv[6], nullptr, 0) : 0);
  if (argc > 7) {
    m.pieceHashes.assign(std::strtoull(argv[7], nullptr, 0), 0);
    if (!m.digests.empty()) m.digests.back() = combinePieceHashes(m.pieceHashes);
  }
  auto out = OutputFile::create(argv[3], /*overwrite=*/true);
  if (!out) return 1;
  ArchiveWriter writer(**out);
  auto range = writer.appendPayload(*payload);
  if (!range) return 1;
  m.payloadRange = *range;
  if (!writer.finish({m}, /*directory=*/false) || !(*out)->commit()) return 1;
  return 0;
}
