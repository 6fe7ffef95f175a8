// The library interface: open an archive, list tensors, decode one tensor alone (interpreter
// and JIT, any thread count), with clear errors for missing, ambiguous and damaged tensors.
#include "lang/Printer.h"
#include "runtime/containers/Archive.h"
#include "runtime/containers/Checksum.h"
#include "runtime/containers/FileIO.h"
#include "runtime/containers/Safetensors.h"
#include "synth/Driver.h"
#include "tools/api/ArchiveBuilder.h"
#include "tools/api/ArchiveReader.h"
#include "tools/api/Compression.h"
#include "tools/api/Decoding.h"
#include "tools/gen/SyntheticCheckpoint.h"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>

using namespace brevis;

namespace {

Bytes committed(const std::string &name) {
  auto bytes = readFile(std::string(BREVIS_TEST_DATA) + "/" + name);
  EXPECT_TRUE(bytes);
  return bytes ? *bytes : Bytes{};
}

/// Writes a directory archive of the given files (path, bytes) to `out`; `corruptDigest`
/// damages the digest of the second region of the first member.
void writeArchiveFile(const std::string &out, const std::vector<std::pair<std::string, Bytes>> &files,
                      bool corruptDigest = false) {
  auto file = OutputFile::create(out, /*overwrite=*/true);
  ASSERT_TRUE(file);
  ArchiveWriter writer(**file);
  std::vector<ArchiveMember> members;
  for (const auto &[path, bytes] : files) {
    auto strategy = makeStrategy(kDefaultStrategy);
    ASSERT_TRUE(strategy);
    SynthOutput synth = synthesizeCheckpoint(bytes, path, path + ".bin", **strategy);
    ArchiveMember m;
    m.path = path;
    m.sourceSize = bytes.size();
    m.sourceXxh64 = synth.checkpoint.source.xxh64;
    m.programText = printCheckpoint(synth.checkpoint);
    for (const Region &r : synth.checkpoint.regions)
      m.digests.push_back(regionDigest(ByteSpan(bytes).subspan(r.bytes.offset, r.bytes.size)));
    if (corruptDigest && members.empty()) m.digests[1] ^= 1;
    auto range = writer.appendPayload(synth.payload);
    ASSERT_TRUE(range);
    m.payloadRange = *range;
    members.push_back(std::move(m));
  }
  ASSERT_TRUE(writer.finish(members, files.size() > 1));
  ASSERT_TRUE((*file)->commit());
}

} // namespace

TEST(ArchiveReader, DecodesOneTensorAloneExactly) {
  Bytes bf16 = committed("stories260K.bf16.safetensors");
  std::string path = ::testing::TempDir() + "/api.brv";
  writeArchiveFile(path, {{"model.safetensors", bf16}});
  auto archive = ArchiveReader::open(path);
  ASSERT_TRUE(archive) << archive.error().message;
  EXPECT_FALSE(archive->isDirectory());
  auto tensors = archive->tensors();
  ASSERT_EQ(tensors.size(), 49u);
  auto layout = parseSafetensors(bf16);
  ASSERT_TRUE(layout);
  for (bool jit : {false, true})
    for (unsigned threads : {1u, 2u}) {
      for (size_t i = 0; i < layout->tensors.size(); i += jit ? 16 : 1) { // the JIT compiles per tensor
        const TensorEntry &t = layout->tensors[i];
        DecodeOptions options;
        options.jit = jit;
        options.threads = threads;
        auto bytes = archive->readTensor(t.name, options);
        ASSERT_TRUE(bytes) << t.name << ": " << bytes.error().message;
        EXPECT_TRUE(*bytes == Bytes(bf16.begin() + static_cast<long>(t.begin), bf16.begin() + static_cast<long>(t.end)))
            << t.name;
      }
    }
  auto missing = archive->readTensor("no.such.tensor");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("has no tensor \"no.such.tensor\""), std::string::npos);
  std::remove(path.c_str());
}

TEST(ArchiveReader, ReportsAmbiguousNamesAndDamagedTensors) {
  Bytes bf16 = committed("stories260K.bf16.safetensors");
  Bytes f32 = committed("stories260K.safetensors");
  std::string path = ::testing::TempDir() + "/api-dir.brv";
  writeArchiveFile(path, {{"a/bf16.safetensors", bf16}, {"f32.safetensors", f32}}, /*corruptDigest=*/true);
  auto archive = ArchiveReader::open(path);
  ASSERT_TRUE(archive) << archive.error().message;
  EXPECT_TRUE(archive->isDirectory());
  EXPECT_EQ(archive->tensors().size(), 98u);
  auto ambiguous = archive->findTensor("tok_embeddings.weight");
  ASSERT_FALSE(ambiguous);
  EXPECT_NE(ambiguous.error().message.find("in both \"a/bf16.safetensors\" and \"f32.safetensors\""),
            std::string::npos);
  // Named with its file, it is found.
  auto named = archive->findTensor("tok_embeddings.weight", std::string("f32.safetensors"));
  ASSERT_TRUE(named) << named.error().message;
  EXPECT_EQ(named->file, "f32.safetensors");
  EXPECT_FALSE(archive->findTensor("tok_embeddings.weight", std::string("b.safetensors")));
  // Region 1 of the first member is its first tensor in file order; its digest was damaged.
  const Region &first = archive->checkpoint(0).regions[1];
  TensorInfo t{0, 1, "a/bf16.safetensors", first.name, first.dtype, first.shape, first.bytes.size, {}, 0};
  Bytes out(t.bytes);
  VectorPositionalSink sink(out);
  auto damaged = archive->readTensor(t, sink);
  ASSERT_FALSE(damaged);
  EXPECT_NE(damaged.error().message.find("do not match their checksum"), std::string::npos) << damaged.error().message;
  std::remove(path.c_str());
}

TEST(ArchiveReader, RefusesForeignFilesAndBrokenPrograms) {
  std::string path = ::testing::TempDir() + "/api-foreign.brv";
  ASSERT_TRUE(writeFile(path, Bytes(200, 7), /*overwrite=*/true));
  auto foreign = ArchiveReader::open(path);
  ASSERT_FALSE(foreign);
  EXPECT_NE(foreign.error().message.find("not a brevis archive"), std::string::npos);
  std::remove(path.c_str());
}

namespace {
MemberSource memberOf(const std::string &path, const Bytes &bytes, int level = kDefaultLevel) {
  auto strategy = makeStrategy(kDefaultStrategy, strategyOptionsForLevel(level));
  EXPECT_TRUE(strategy);
  SynthOutput synth = synthesizeCheckpoint(bytes, path, path + ".bin", **strategy);
  MemberSource m{path, std::move(synth.checkpoint), Payload(std::move(synth.payload)), {}};
  m.digests = regionDigests(m.checkpoint, bytes);
  return m;
}
} // namespace

TEST(ArchiveBuilder, WritesVerifiedMembersThatReadBackExactly) {
  Bytes bf16 = committed("stories260K.bf16.safetensors");
  Bytes f32 = committed("stories260K.safetensors");
  for (unsigned threads : {1u, 3u}) {
    std::string path = ::testing::TempDir() + "/built-" + std::to_string(threads) + ".brv";
    std::remove(path.c_str());
    auto builder = ArchiveBuilder::create(path, /*overwrite=*/false);
    ASSERT_TRUE(builder) << builder.error().message;
    ASSERT_TRUE((*builder)->add(memberOf("a/bf16.safetensors", bf16), DecodeOptions{.threads = threads}));
    ASSERT_TRUE((*builder)->add(memberOf("f32.safetensors", f32), DecodeOptions{.threads = threads}));
    auto size = (*builder)->finish(/*directory=*/true);
    ASSERT_TRUE(size) << size.error().message;
    auto archive = ArchiveReader::open(path, ArchiveReadOptions{.verifyWholeFile = true});
    ASSERT_TRUE(archive) << archive.error().message;
    EXPECT_EQ(archive->contents().fileSize, *size);
    ASSERT_EQ(archive->memberCount(), 2u);
    const Bytes *originals[] = {&bf16, &f32};
    for (size_t i = 0; i < 2; ++i) {
      Bytes out(archive->member(i).sourceSize);
      VectorPositionalSink sink(out);
      DecodeJob job{&archive->checkpoint(i), &archive->payload(i), archive->digests(i), &sink, "member", {}};
      ASSERT_TRUE(decodeJobs(std::span(&job, 1), DecodeOptions{.threads = threads}));
      EXPECT_TRUE(out == *originals[i]) << "member " << i;
    }
  }
}

TEST(ArchiveBuilder, AnArchiveIsTheSameBuiltOnAnyThreadCount) {
  // With threads, a first member's text is packed while it is verified, and used where it is the
  // only member: the bytes are those packed at the end on one thread.
  Bytes bf16 = committed("stories260K.bf16.safetensors");
  for (bool twoMembers : {false, true}) {
    std::vector<Bytes> archives;
    for (unsigned threads : {1u, 2u}) {
      Bytes out;
      VectorPositionalSink sink(out);
      ArchiveBuilder builder(sink);
      ASSERT_TRUE(builder.add(memberOf("a.safetensors", bf16), DecodeOptions{.threads = threads}));
      if (twoMembers) {
        ASSERT_TRUE(builder.add(memberOf("b.safetensors", bf16), DecodeOptions{.threads = threads}));
      }
      ASSERT_TRUE(builder.finish(/*directory=*/twoMembers));
      archives.push_back(std::move(out));
    }
    EXPECT_TRUE(archives[0] == archives[1]) << (twoMembers ? "two members" : "one member");
  }
  // A member refused after its text began packing leaves nothing behind for the next one.
  Bytes alone, after;
  for (bool refusedFirst : {false, true}) {
    Bytes &out = refusedFirst ? after : alone;
    VectorPositionalSink sink(out);
    ArchiveBuilder builder(sink);
    if (refusedFirst) {
      MemberSource bad = memberOf("bad.safetensors", committed("stories260K.safetensors"));
      bad.digests[1] ^= 1;
      ASSERT_FALSE(builder.add(bad, DecodeOptions{.threads = 2}));
    }
    ASSERT_TRUE(builder.add(memberOf("a.safetensors", bf16), DecodeOptions{.threads = 1}));
    ASSERT_TRUE(builder.finish(/*directory=*/false));
  }
  EXPECT_TRUE(alone == after);
}

TEST(ArchiveBuilder, RefusesAMemberThatDoesNotReproduceItsDigestsAndLeavesNoFile) {
  Bytes bf16 = committed("stories260K.bf16.safetensors");
  std::string path = ::testing::TempDir() + "/refused.brv";
  std::remove(path.c_str());
  {
    auto builder = ArchiveBuilder::create(path, /*overwrite=*/false);
    ASSERT_TRUE(builder) << builder.error().message;
    MemberSource m = memberOf("model.safetensors", bf16);
    m.digests[1] ^= 1; // as if the program decoded other bytes than the original's
    auto added = (*builder)->add(m, DecodeOptions{.threads = 2});
    ASSERT_FALSE(added);
    EXPECT_NE(added.error().message.find("does not reproduce the input"), std::string::npos) << added.error().message;
  } // dropped without finish(): the temporary goes, nothing is renamed into place
  EXPECT_FALSE(std::filesystem::exists(path));
}

/// A buffer that takes positional writes but, as a device would, cannot give them back.
class WriteOnlySink final : public PositionalSink {
public:
  explicit WriteOnlySink(Bytes &out) : out_(out) {}
  Result<void> writeAt(uint64_t offset, const uint8_t *data, size_t size) override {
    return out_.writeAt(offset, data, size);
  }

private:
  VectorPositionalSink out_;
};

/// An archive of `files` built with addCompressed on `sink`.
template <typename Sink>
void compressArchive(const std::vector<std::pair<std::string, Bytes>> &files, Bytes &archive) {
  Sink sink(archive);
  ArchiveBuilder builder(sink);
  for (const auto &[path, bytes] : files) {
    auto added = addCompressed(builder, path, bytes, CompressSettings{.threads = 2});
    ASSERT_TRUE(added) << added.error().message;
    EXPECT_EQ(added->originalBytes, bytes.size());
  }
  EXPECT_TRUE(builder.finish(files.size() > 1));
}

TEST(ArchiveBuilder, AStreamedPayloadMakesTheSameArchiveAsOneHeldInMemory) {
  const std::vector<std::pair<std::string, Bytes>> files = {
      {"a/bf16.safetensors", committed("stories260K.bf16.safetensors")},
      {"f32.safetensors", committed("stories260K.safetensors")},
      {"notes.txt", Bytes{'n', 'o', 't', 'e', 's'}},
      {"empty.txt", Bytes{}}};
  Bytes out;
  VectorPositionalSink probe(out);
  WriteOnlySink writeOnly(out);
  ASSERT_TRUE(ArchiveBuilder(probe).canStream());
  ASSERT_FALSE(ArchiveBuilder(writeOnly).canStream());
  Bytes streamed, held;
  compressArchive<VectorPositionalSink>(files, streamed);
  compressArchive<WriteOnlySink>(files, held);
  ASSERT_FALSE(streamed.empty());
  EXPECT_TRUE(streamed == held);
}

/// A sink that damages one byte on its way out: the byte at `offset` is written with a bit flipped.
class DamagingSink final : public PositionalSink {
public:
  DamagingSink(Bytes &out, uint64_t offset) : out_(out), offset_(offset) {}
  Result<void> writeAt(uint64_t offset, const uint8_t *data, size_t size) override {
    BREVIS_TRY(out_.writeAt(offset, data, size));
    if (offset <= offset_ && offset_ - offset < size) {
      const Bytes flipped{static_cast<uint8_t>(data[offset_ - offset] ^ 0x10)};
      BREVIS_TRY(out_.writeAt(offset_, flipped.data(), 1));
      ++damaged;
    }
    return {};
  }
  bool canReadBack() const override { return true; }
  Result<WrittenBytes> readBack(uint64_t offset, uint64_t size) override { return out_.readBack(offset, size); }
  int damaged = 0;

private:
  VectorPositionalSink out_;
  uint64_t offset_;
};

TEST(ArchiveBuilder, AStreamedPayloadIsVerifiedAsWrittenNotAsMade) {
  Bytes bf16 = committed("stories260K.bf16.safetensors");
  Bytes archive;
  DamagingSink sink(archive, kArchiveHeaderSize + 1000);
  ArchiveBuilder builder(sink);
  auto member = synthesizeMember("model.safetensors", bf16, CompressSettings{}, nullptr, &builder);
  ASSERT_TRUE(member) << member.error().message;
  ASSERT_TRUE(member->streamed);
  EXPECT_EQ(member->payload.size(), 0u);
  ASSERT_GT(member->checkpoint.payloadSize, 2000u);
  auto added = builder.add(*member, DecodeOptions{.threads = 2});
  EXPECT_EQ(sink.damaged, 1);
  ASSERT_FALSE(added);
  EXPECT_NE(added.error().message.find("as written does not decode to the input"), std::string::npos)
      << added.error().message;
}

/// The default strategy, counting the regions it is asked for.
class CountingStrategy final : public Strategy {
public:
  CountingStrategy() : inner_(std::move(*makeStrategy(kDefaultStrategy))) {}
  void prepare(std::span<const RegionInput> regions, unsigned threads) override { inner_->prepare(regions, threads); }
  RegionProgram synthesize(const RegionInput &region) const override {
    ++calls;
    return inner_->synthesize(region);
  }
  mutable std::atomic<int> calls{0};

private:
  std::unique_ptr<Strategy> inner_;
};

TEST(ArchiveBuilder, AFailedPayloadWriteStopsTheSynthesis) {
  Bytes bf16 = committed("stories260K.bf16.safetensors");
  CountingStrategy all, failing;
  SynthOutput whole = synthesizeCheckpoint(bf16, "m", "m.bin", all, SynthOptions{.threads = 1});
  ASSERT_GT(all.calls.load(), 10);
  int writes = 0;
  SynthOptions options{.threads = 1};
  options.payloadWriter = [&](ByteSpan) -> Result<void> {
    ++writes;
    return Error{"no space left"};
  };
  SynthOutput out = synthesizeCheckpoint(bf16, "m", "m.bin", failing, options);
  ASSERT_TRUE(out.payloadError);
  EXPECT_EQ(out.payloadError->message, "no space left");
  EXPECT_EQ(writes, 1);
  EXPECT_LE(failing.calls.load(), 1); // at most the region joined first
  EXPECT_TRUE(out.payload.empty());
}

TEST(ArchiveBuilder, DigestsByDecodingEqualDigestsOfTheOriginal) {
  Bytes bf16 = committed("stories260K.bf16.safetensors");
  MemberSource m = memberOf("model.safetensors", bf16);
  auto decoded = regionDigestsByDecoding(m.checkpoint, m.payload);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, m.digests);
  m.checkpoint.source.xxh64 ^= 1; // a program whose source line disagrees is refused
  EXPECT_FALSE(regionDigestsByDecoding(m.checkpoint, m.payload));
}

TEST(ArchiveReader, DecodesAPartOfALargeTensorFromItsPiecesAlone) {
  // An embedding of 5000 x 2048 BF16 words (20 MB) spans two 16 MiB pieces. The archive's index
  // holds both pieces' hashes, so a part inside one piece decodes that piece alone, checked.
  std::string source = ::testing::TempDir() + "/api-large.safetensors";
  gen::SyntheticOptions options;
  options.targetBytes = 24u << 20;
  options.vocab = 5000;
  ASSERT_TRUE(gen::writeSyntheticCheckpoint(source, options, /*overwrite=*/true));
  auto file = readFile(source);
  ASSERT_TRUE(file);
  std::remove(source.c_str());
  std::string path = ::testing::TempDir() + "/api-large.brv";
  {
    auto builder = ArchiveBuilder::create(path, /*overwrite=*/true);
    ASSERT_TRUE(builder);
    ASSERT_TRUE((*builder)->add(memberOf("large.safetensors", *file, /*level=*/1), DecodeOptions{.threads = 2}));
    ASSERT_TRUE((*builder)->finish(/*directory=*/false));
  }
  auto archive = ArchiveReader::open(path);
  ASSERT_TRUE(archive) << archive.error().message;
  uint64_t largeRegions = 0, pieces = 0;
  for (const Region &r : archive->checkpoint(0).regions) {
    largeRegions += r.bytes.size > kDigestPieceBytes;
    pieces += indexedPieces(r.bytes.size);
  }
  ASSERT_GE(largeRegions, 1u);
  EXPECT_EQ(archive->member(0).pieceHashes.size(), pieces);

  auto tensors = archive->tensors();
  auto embed = std::max_element(tensors.begin(), tensors.end(),
                                [](const TensorInfo &a, const TensorInfo &b) { return a.bytes < b.bytes; });
  ASSERT_GT(embed->bytes, kDigestPieceBytes);
  const Region &region = archive->checkpoint(0).regions[embed->region];
  auto original = [&](ByteRange r) {
    auto at = file->begin() + static_cast<long>(region.bytes.offset + r.offset);
    return Bytes(at, at + static_cast<long>(r.size));
  };
  struct Case {
    ByteRange part, decoded;
  };
  const uint64_t P = kDigestPieceBytes, n = embed->bytes;
  for (const Case &c : {Case{{100, 4096}, {0, P}}, Case{{P + 5, 10}, {P, n - P}}, Case{{P - 2, 4}, {0, n}},
                        Case{{0, n}, {0, n}}, Case{{7, 0}, {0, 0}}})
    for (unsigned threads : {1u, 2u}) {
      const ByteRange decoded = archive->tensorPartToDecode(*embed, c.part);
      EXPECT_EQ(decoded, c.decoded) << c.part.offset << "+" << c.part.size;
      Bytes out(decoded.size);
      VectorPositionalSink sink(out);
      auto read = archive->readTensorPart(*embed, c.part, sink, DecodeOptions{.threads = threads});
      ASSERT_TRUE(read) << read.error().message;
      EXPECT_TRUE(out == original(decoded)) << c.part.offset << "+" << c.part.size;
    }

  // A piece whose bytes do not match its hash is reported by its byte range.
  std::vector<uint64_t> damaged = archive->member(0).pieceHashes;
  size_t firstOfEmbed = 0;
  for (size_t k = 0; k < embed->region; ++k) firstOfEmbed += indexedPieces(archive->checkpoint(0).regions[k].bytes.size);
  damaged[firstOfEmbed + 1] ^= 1;
  DiscardPositionalSink discard;
  DecodeJob job = archive->decodeJob(0, discard);
  job.pieceHashes = damaged;
  job.onlyRegions = {embed->region};
  job.onlyBytes = ByteRange{P, 1};
  auto wrong = decodeJobs(std::span(&job, 1), DecodeOptions{});
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find(fmt::format("the decoded bytes {} to {} do not match their checksum", P, n)),
            std::string::npos)
      << wrong.error().message;
  job.onlyBytes = ByteRange{0, 1}; // the undamaged piece still decodes
  EXPECT_TRUE(decodeJobs(std::span(&job, 1), DecodeOptions{}));

  // An index whose piece hashes do not make their region's digest is refused on opening.
  auto raw = readArchive(*MappedFile::open(path), path);
  ASSERT_TRUE(raw);
  ArchiveMember member = raw->members[0];
  member.digests[member.digests.size() - 1] ^= 1; // the last entry: a piece hash
  auto refused = checkMemberProgram(archive->checkpoint(0), member, path);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("piece checksums of region"), std::string::npos) << refused.error().message;
  std::remove(path.c_str());
}

TEST(ArchiveReader, APartOfATensorInAnArchiveWithoutPieceHashesIsTheWholeTensor) {
  // Version 3 (committed): its index holds region digests only, so only the whole can be checked.
  auto archive = ArchiveReader::open(std::string(BREVIS_TEST_DATA) + "/zeros-2g.u8.safetensors.brv");
  ASSERT_TRUE(archive) << archive.error().message;
  auto big = archive->findTensor("big");
  ASSERT_TRUE(big);
  ASSERT_GT(big->bytes, 2 * kDigestPieceBytes);
  EXPECT_TRUE(archive->member(0).pieceHashes.empty());
  EXPECT_EQ(archive->tensorPartToDecode(*big, ByteRange{kDigestPieceBytes, 10}), (ByteRange{0, big->bytes}));
}
