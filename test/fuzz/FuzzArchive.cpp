// libFuzzer target: reading an archive, then parsing and checking every member's program against
// its index and decoding it with its digests, as `brevisc decompress` does, on arbitrary bytes.
#include "frontend/Parser.h"
#include "lang/TypeChecker.h"
#include "runtime/containers/Archive.h"
#include "runtime/containers/Checksum.h"
#include "runtime/execution/Interpreter.h"
#include "runtime/execution/ParallelDecode.h"

#include <cstring>

using namespace brevis;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Mutations almost never keep the metadata checksum right, so the target sets it: that lets
  // the fuzzer reach the programs, payloads and decoders behind it. (The checksums themselves
  // are covered by the unit tests.)
  Bytes bytes(data, data + size);
  if (bytes.size() >= kArchiveHeaderSize + 24) {
    uint64_t f[6];
    std::memcpy(f, bytes.data() + 24, sizeof f); // D, T, P, E, L
    const uint64_t table = f[0], program = f[2], entries = f[3], payload = f[4];
    const uint64_t fixed = kArchiveHeaderSize + 24;
    if (payload < size && table < size && program < size && entries < size / kArchiveIndexEntrySize &&
        fixed + payload + table + program + entries * kArchiveIndexEntrySize == size) {
      Xxh3Stream meta;
      meta.update(bytes.data(), 64);
      meta.update(bytes.data() + kArchiveHeaderSize + payload + 16, table + program + entries * kArchiveIndexEntrySize);
      uint64_t sum = meta.digest();
      std::memcpy(bytes.data() + 64, &sum, 8);
    }
  }
  auto archive = readArchive(MappedFile::fromBytes(std::move(bytes)), "fuzz.brv");
  if (!archive) return 0;
  for (ArchiveMember &m : archive->members) {
    Diagnostics diags("fuzz.bdsl", m.programText);
    auto module = parseModule(diags);
    if (!module || !module->isCheckpoint()) continue;
    TypeChecker checker(diags);
    if (!checker.checkModule(*module) || checker.sawHole()) continue;
    if (!checkMemberProgram(module->checkpoint(), m, "fuzz.brv")) continue;
    DiscardPositionalSink sink;
    DecodeJob job{&module->checkpoint(), &m.payload, m.digests, &sink, m.path, {}};
    job.pieceHashes = m.pieceHashes;
    Interpreter interpreter;
    (void)decodeJobs(std::span(&job, 1), interpreter, DecodeOptions{.threads = 1});
  }
  return 0;
}
