#pragma once
// The library interface to `.brv` archives: open one, list its files and tensors, and decode a
// tensor or a whole member, verified against the archive's digests. brevisc's commands are
// built on it; programs embedding Brevis use it the same way:
//
//   auto archive = brevis::ArchiveReader::open("model.safetensors.brv");
//   if (!archive) { /* archive.error().message says what is wrong */ }
//   auto bytes = archive->readTensor("model.embed_tokens.weight");   // Result<Bytes>
//
// Opening reads the header, the programs and the index (checked against their checksum) and
// maps the payload; reading a tensor touches only that tensor's payload bytes.
#include "lang/Ast.h"
#include "lang/Result.h"
#include "runtime/containers/Archive.h"
#include "runtime/execution/ByteSink.h"
#include "runtime/execution/DecodeOptions.h"
#include "runtime/execution/ParallelDecode.h"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace brevis {

/// A tensor of an archive: which member file and region hold it, and what it is.
struct TensorInfo {
  size_t member = 0, region = 0;
  std::string file; ///< the member's path
  std::string name;
  DType dtype = DType::U8;
  std::vector<uint64_t> shape;
  uint64_t bytes = 0;
  /// A tensor of a dtype programs have no words for (F4, F6_*, F8_E8M0, C64: its safetensors
  /// name here, `dtype` meaningless) lies inside a region of bytes, from `offset` on.
  std::string opaqueDtype;
  uint64_t offset = 0;
};

class ArchiveReader {
public:
  /// Reads and checks an archive as far as can be done without decoding. Diagnostics of a
  /// program that does not check go to `diagnostics` if given, else into the error message.
  static Result<ArchiveReader> open(const std::string &path, ArchiveReadOptions options = {},
                                    std::string *diagnostics = nullptr);
  /// The same for an archive already in memory (or mapped); `name` is used in messages.
  static Result<ArchiveReader> open(std::shared_ptr<const MappedFile> file, const std::string &name,
                                    ArchiveReadOptions options = {}, std::string *diagnostics = nullptr);

  const std::string &path() const { return path_; }
  const Archive &contents() const { return archive_; }
  bool isDirectory() const { return archive_.directory; }
  size_t memberCount() const { return modules_.size(); }
  const ArchiveMember &member(size_t i) const { return archive_.members[i]; }
  const Checkpoint &checkpoint(size_t i) const { return modules_[i].checkpoint(); }
  Checkpoint &checkpoint(size_t i) { return modules_[i].checkpoint(); }
  const Payload &payload(size_t i) const { return archive_.members[i].payload; }
  const std::vector<uint64_t> &digests(size_t i) const { return archive_.members[i].digests; }
  /// A DecodeJob for member `i` (all its regions) writing to `output`, with its digests.
  DecodeJob decodeJob(size_t i, PositionalSink &output) const;
  uint64_t originalSize() const;
  uint64_t payloadSize() const;

  /// The safetensors header member `m`'s program rebuilds (length prefix and JSON), decoded and
  /// checked against its digest; empty where the member has no header region.
  Result<Bytes> header(size_t m, const DecodeOptions &options = {}) const;
  /// Every tensor of every member, in member and file order: the tensor regions, and the
  /// tensors of dtypes programs have no words for, found in the header a member's program
  /// rebuilds (where that header does not decode to its digest, they are left out: reading a
  /// tensor of the member then says why; so is one a hand-written program splits across two
  /// regions of bytes).
  std::vector<TensorInfo> tensors() const;
  /// The tensor called `name` (in member file `file` of a directory archive, where given); an
  /// error if no member or more than one has it.
  Result<TensorInfo> findTensor(const std::string &name, const std::optional<std::string> &file = std::nullopt) const;
  /// Decodes one tensor's bytes (as its safetensors file holds them) to `sink`, at offsets from
  /// 0, checked against its digest.
  Result<void> readTensor(const TensorInfo &tensor, PositionalSink &sink, const DecodeOptions &options = {}) const;
  Result<Bytes> readTensor(const std::string &name, const DecodeOptions &options = {}) const;
  /// The bytes of a tensor readTensorPart() decodes for its bytes `part`: the pieces (of
  /// kDigestPieceBytes) that hold them, which the index checks one by one. The whole tensor in
  /// archives before version 6 and for a tensor of one piece; nothing for an empty part.
  ByteRange tensorPartToDecode(const TensorInfo &tensor, ByteRange part) const;
  /// Decodes tensorPartToDecode(tensor, part) to `sink`, at offsets from its start, checked.
  Result<void> readTensorPart(const TensorInfo &tensor, ByteRange part, PositionalSink &sink,
                              const DecodeOptions &options = {}) const;
  /// Whether member `member`'s tensor declarations (names, dtypes, shapes, places) agree with the
  /// safetensors header its program rebuilds: checked on the first read of one of its tensors
  /// (and by brevisc verify), then remembered. Decoding whole members needs no names.
  Result<void> declarationsHold(size_t member) const;

private:
  /// Member m's tensors of dtypes programs have no words for, found once in its header.
  std::vector<TensorInfo> opaqueTensors(size_t m) const;

  std::string path_;
  Archive archive_;
  std::vector<Module> modules_; ///< one checkpoint program per member
  struct DeclarationChecks {
    std::mutex mutex;
    std::vector<std::optional<std::string>> checked; ///< per member: unchecked, "" held, or the error
  };
  std::shared_ptr<DeclarationChecks> declarations_ = std::make_shared<DeclarationChecks>();
  struct OpaqueTensors {
    std::mutex mutex;
    std::vector<std::optional<std::vector<TensorInfo>>> members; ///< per member, once found
  };
  std::shared_ptr<OpaqueTensors> opaque_ = std::make_shared<OpaqueTensors>();
};

} // namespace brevis
