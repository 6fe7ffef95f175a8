// Unit tests for runtime/containers: safetensors layout parsing, the archive's framing and
// corruption checks, and checksums.
#include "runtime/containers/Archive.h"
#include "runtime/containers/Checksum.h"
#include "runtime/containers/Safetensors.h"
#include "runtime/containers/Xxh3Variants.h"

#include <xxhash.h>
#include <zstd.h>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace brevis;

namespace {
Bytes safetensors(const std::string &json, size_t dataBytes) {
  Bytes file;
  for (int i = 0; i < 8; ++i) file.push_back(static_cast<uint8_t>(json.size() >> (8 * i)));
  for (char ch : json) file.push_back(static_cast<uint8_t>(ch));
  file.resize(file.size() + dataBytes, 0x5a);
  return file;
}
} // namespace

TEST(Safetensors, ParsesLayoutSortedByOffset) {
  auto file = safetensors(R"({"__metadata__":{"format":"pt"},)"
                          R"("b":{"dtype":"BF16","shape":[2,2],"data_offsets":[4,12]},)"
                          R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                          12);
  auto layout = parseSafetensors(file);
  ASSERT_TRUE(layout) << layout.error().message;
  ASSERT_EQ(layout->tensors.size(), 2u);
  EXPECT_EQ(layout->tensors[0].name, "a");
  EXPECT_EQ(layout->tensors[1].name, "b");
  EXPECT_EQ(layout->tensors[1].dtype, DType::BF16);
  EXPECT_EQ(layout->tensors[1].begin, layout->headerSize + 4);
}

// Each of the format's rules, on both sides: what it allows is parsed as tensors, what it
// forbids is refused with the reason (and then compressed as bytes by the synthesizer).
TEST(Safetensors, AcceptsWhatTheFormatAllows) {
  // An empty tensor at the start of another (sorting [4,4] after [4,8] once made this an overlap).
  auto empty = parseSafetensors(safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                            R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                                            R"("z":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]}})",
                                            8));
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(empty->tensors.size(), 3u);
  // Any header length (no 8-byte alignment), trailing spaces, any key order, string metadata.
  auto padded = parseSafetensors(safetensors(R"({"__metadata__":{"format":"pt","x":""},"a":{"shape":[3],)"
                                             R"("data_offsets":[0,3],"dtype":"U8"}}   )",
                                             3));
  ASSERT_TRUE(padded) << padded.error().message;
  // No tensors at all, and a scalar (shape []) of one element.
  EXPECT_TRUE(parseSafetensors(safetensors("{}", 0)));
  // Null metadata, which the safetensors library reads as none.
  auto nullMetadata = parseSafetensors(safetensors(R"({"__metadata__":null,"a":{"dtype":"U8","shape":[1],)"
                                                   R"("data_offsets":[0,1]}})",
                                                   1));
  ASSERT_TRUE(nullMetadata) << nullMetadata.error().message;
  EXPECT_EQ(nullMetadata->tensors.size(), 1u);
  EXPECT_TRUE(parseSafetensors(safetensors(R"({"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]}})", 8)));
  // Dtypes the format defines without DSL words are valid; their bytes are kept apart.
  auto opaque = parseSafetensors(safetensors(R"({"f4":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]},)"
                                             R"("e":{"dtype":"F8_E8M0","shape":[2],"data_offsets":[3,5]},)"
                                             R"("a":{"dtype":"BF16","shape":[1],"data_offsets":[5,7]}})",
                                             7));
  ASSERT_TRUE(opaque) << opaque.error().message;
  ASSERT_EQ(opaque->tensors.size(), 1u);
  EXPECT_EQ(opaque->tensors[0].name, "a");
  ASSERT_EQ(opaque->opaque.size(), 2u);
  EXPECT_EQ(opaque->opaque[0].name, "f4");
}

TEST(Safetensors, RefusesWhatTheFormatForbids) {
  auto reason = [](const Bytes &file) {
    auto layout = parseSafetensors(file);
    return layout ? std::string("accepted") : layout.error().message;
  };
  Bytes tooLong(8, 0);
  tooLong[3] = 0x10; // 2^28 > 100,000,000
  EXPECT_EQ(reason(tooLong), "header length 268435456 is more than the format allows (100000000)");
  EXPECT_EQ(reason(safetensors(R"( {"a":1})", 0)), "header does not start with '{'");
  EXPECT_EQ(reason(safetensors(std::string("{\"") + char(0xff) + "\":{}}", 0)), "header is not UTF-8");
  EXPECT_EQ(reason(safetensors(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                               R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                               2)),
            "header names \"a\" twice");
  EXPECT_EQ(reason(safetensors(R"({"__metadata__":{"n":1}})", 0)), "__metadata__ value \"n\" is not a string");
  EXPECT_EQ(reason(safetensors(R"({"__metadata__":[]})", 0)), "__metadata__ is not an object");
  // Where a header stops being JSON, as a byte of the file.
  EXPECT_EQ(reason(safetensors(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}x})", 1)).substr(0, 30),
            "header is not JSON at byte 60:");
  EXPECT_EQ(reason(safetensors(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", 2)),
            "1 bytes before tensor a belong to no tensor");
  EXPECT_EQ(reason(safetensors(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 2)),
            "1 bytes after the last tensor belong to no tensor");
  EXPECT_EQ(reason(safetensors(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2)),
            "tensor a has 2 bytes, which does not match its shape and dtype"); // 12 bits
  EXPECT_EQ(reason(safetensors(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                               R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                               6)),
            "tensors a and b overlap");
  EXPECT_EQ(reason(safetensors(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", 1)),
            "tensor a has a shape that is not unsigned integers");
}

// The header is read as a JSON object reads: of a repeated field the last counts, entries are
// judged in the order of their names (the first fault in that order is the one reported), and
// only an entry's own fields describe it.
TEST(Safetensors, ReadsTheHeaderAsAJsonObject) {
  auto reason = [](const std::string &json, size_t data) {
    auto layout = parseSafetensors(safetensors(json, data));
    return layout ? std::string("accepted") : layout.error().message;
  };
  EXPECT_EQ(reason(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1],"dtype":"U8"}})", 1), "accepted");
  EXPECT_EQ(reason(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"dtype":1}})", 1),
            "tensor a lacks dtype, shape or data_offsets");
  EXPECT_EQ(reason(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1],"shape":[1]}})", 1), "accepted");
  EXPECT_EQ(reason(R"({"__metadata__":{"k":1,"k":"v"},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1),
            "accepted");
  EXPECT_EQ(reason(R"({"__metadata__":{"z":1,"k":[]}})", 0), "__metadata__ value \"k\" is not a string");
  // By name: "B" < "__metadata__" < "a", whatever the text's order.
  EXPECT_EQ(reason(R"({"a":1,"__metadata__":[],"B":2})", 0), "tensor B is not described by an object");
  EXPECT_EQ(reason(R"({"a":1,"__metadata__":[]})", 0), "__metadata__ is not an object");
  EXPECT_EQ(reason(R"({"b":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"Q5"}})", 1),
            "tensor a lacks dtype, shape or data_offsets");
  // Two offsets that are not integers are two offsets; nested arrays and objects are not numbers.
  EXPECT_EQ(reason(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":["0",1.5]}})", 1),
            "tensor a has data_offsets that are not non-negative integers");
  EXPECT_EQ(reason(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,[1]]}})", 1),
            "tensor a has data_offsets that are not non-negative integers");
  EXPECT_EQ(reason(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", 1),
            "tensor a has 3 data_offsets, not 2 (its first and last byte)");
  EXPECT_EQ(reason(R"({"a":{"dtype":"U8","shape":[[1]],"data_offsets":[0,1]}})", 1),
            "tensor a has a shape that is not unsigned integers");
  EXPECT_EQ(reason(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":{"shape":[-1],"dtype":"Q4"}}})", 1),
            "accepted");
  EXPECT_EQ(reason(R"({"a":[{"dtype":"U8","shape":[1],"data_offsets":[0,1]}]})", 1),
            "tensor a is not described by an object");
  // Empty tensors at one offset keep the order of their names.
  auto empties = parseSafetensors(safetensors(R"({"c":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},)"
                                              R"("b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                                              R"("a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})",
                                              1));
  ASSERT_TRUE(empties) << empties.error().message;
  std::vector<std::string> order;
  for (const TensorEntry &t : empties->tensors) order.push_back(t.name);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "c", "b"}));
}

TEST(Safetensors, RejectsInconsistentHeaders) {
  EXPECT_FALSE(parseSafetensors(Bytes{1, 2, 3}));
  EXPECT_FALSE(parseSafetensors(safetensors("not json", 0)));
  EXPECT_FALSE(parseSafetensors(safetensors(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", 1)));
  auto wrongSize = parseSafetensors(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8));
  ASSERT_FALSE(wrongSize);
  EXPECT_EQ(wrongSize.error().message, "tensor a has 4 bytes, which does not match its shape and dtype");
  EXPECT_FALSE(parseSafetensors(safetensors(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                                            R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                                            6)));
  Bytes huge(8, 0xff); // header length far beyond the file
  EXPECT_FALSE(parseSafetensors(huge));
}

namespace {

ArchiveMember fakeMember(std::string path, std::string text, uint64_t sourceSize) {
  ArchiveMember m;
  m.path = std::move(path);
  m.programText = std::move(text);
  m.sourceSize = sourceSize;
  m.sourceXxh64 = 0x1122334455667788 ^ sourceSize;
  m.digests.push_back(0xabcdef);
  return m;
}

/// An archive of members with the given payloads (program texts are not parsed by the reader).
Bytes buildArchive(std::vector<ArchiveMember> members, const std::vector<Bytes> &payloads, bool directory) {
  Bytes out;
  VectorPositionalSink sink(out);
  ArchiveWriter writer(sink);
  for (size_t i = 0; i < members.size(); ++i) members[i].payloadRange = *writer.appendPayload(payloads[i]);
  EXPECT_TRUE(writer.finish(members, directory));
  return out;
}

std::string readFailure(const Bytes &archive, bool whole = false) {
  auto r = readArchive(MappedFile::fromBytes(archive), "a.brv", ArchiveReadOptions{.verifyWholeFile = whole});
  return r ? std::string("accepted") : r.error().message;
}

} // namespace

TEST(Archive, RoundTripsMembersIndexAndPayloads) {
  std::vector<Bytes> payloads{Bytes(1000, 0x42), Bytes{}, Bytes(7, 0x07)};
  Bytes archive = buildArchive({fakeMember("a.safetensors", "brevis 1\n# a\n", 12345), fakeMember("config.json", "x", 10),
                                fakeMember("sub/b.safetensors", "yz", 99)},
                               payloads, /*directory=*/true);
  auto back = readArchive(MappedFile::fromBytes(archive), "a.brv", ArchiveReadOptions{.verifyWholeFile = true});
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(back->directory);
  ASSERT_EQ(back->members.size(), 3u);
  EXPECT_EQ(back->members[0].programText, "brevis 1\n# a\n");
  EXPECT_EQ(back->members[2].path, "sub/b.safetensors");
  EXPECT_EQ(back->members[2].sourceSize, 99u);
  EXPECT_EQ(back->members[1].digests.at(0), 0xabcdefu);
  for (size_t i = 0; i < payloads.size(); ++i) {
    const Payload &p = back->members[i].payload;
    EXPECT_EQ(Bytes(p.data(), p.data() + p.size()), payloads[i]);
  }
  EXPECT_EQ(back->fileSize, archive.size());
}

namespace {

/// Records where each write went.
class RecordingSink final : public PositionalSink {
public:
  explicit RecordingSink(Bytes &out) : inner_(out) {}
  Result<void> writeAt(uint64_t offset, const uint8_t *data, size_t size) override {
    writes.push_back({offset, size});
    return inner_.writeAt(offset, data, size);
  }
  bool canReadBack() const override { return true; }
  Result<WrittenBytes> readBack(uint64_t offset, uint64_t size) override { return inner_.readBack(offset, size); }
  std::vector<std::pair<uint64_t, uint64_t>> writes;

private:
  VectorPositionalSink inner_;
};

/// Payload parts of `sizes` bytes, each its own pattern.
std::vector<Bytes> payloadParts(std::initializer_list<size_t> sizes) {
  std::vector<Bytes> parts;
  for (size_t size : sizes) {
    Bytes part(size);
    for (size_t i = 0; i < size; ++i) part[i] = static_cast<uint8_t>(i * 13 + parts.size() * 101 + i / 4099);
    parts.push_back(std::move(part));
  }
  return parts;
}

} // namespace

TEST(Archive, ReachesItsOutputInWholeAlignedBlocks) {
  constexpr size_t B = kArchiveWriteBlock;
  // Small parts that fill blocks between them, a part that straddles two boundaries, a part
  // arriving on a boundary with whole blocks of its own, and an empty one.
  // The sixth part ends the fourth block (the header's 72 bytes come first).
  const size_t toFourBlocks = 4 * B - kArchiveHeaderSize - 1000 - 2 * (B / 3) - B / 2 - (2 * B + 5);
  std::vector<Bytes> parts = payloadParts({1000, B / 3, B / 3, B / 2, 2 * B + 5, toFourBlocks, 3 * B, 0, 77});
  Bytes out;
  RecordingSink sink(out);
  ArchiveWriter writer(sink);
  Bytes payload;
  for (const Bytes &part : parts) {
    ASSERT_TRUE(writer.appendPayload(part));
    payload.insert(payload.end(), part.begin(), part.end());
  }
  const size_t beforeFinish = sink.writes.size();
  ArchiveMember m = fakeMember("m.safetensors", "brevis 1\n", payload.size());
  m.payloadRange = ByteRange{0, payload.size()};
  ASSERT_TRUE(writer.finish({m}, false));
  // Every write of the payload covered whole blocks at their offsets; finish wrote the rest in
  // one write (the last block, short), then the header over the zeros at the start.
  for (size_t i = 0; i < beforeFinish; ++i) {
    EXPECT_EQ(sink.writes[i].first % B, 0u) << i;
    EXPECT_EQ(sink.writes[i].second % B, 0u) << i;
    EXPECT_GT(sink.writes[i].second, 0u) << i;
  }
  // The part of three blocks went straight through, in one write.
  EXPECT_TRUE(std::any_of(sink.writes.begin(), sink.writes.end(), [](auto w) { return w.second == 3 * B; }));
  ASSERT_EQ(sink.writes.size(), beforeFinish + 2);
  EXPECT_EQ(sink.writes[beforeFinish].first % B, 0u);
  EXPECT_EQ(sink.writes[beforeFinish].first + sink.writes[beforeFinish].second, out.size());
  EXPECT_EQ(sink.writes.back(), (std::pair<uint64_t, uint64_t>{0, kArchiveHeaderSize}));
  auto back = readArchive(MappedFile::fromBytes(out), "a.brv", ArchiveReadOptions{.verifyWholeFile = true});
  ASSERT_TRUE(back) << back.error().message;
  const Payload &p = back->members.at(0).payload;
  EXPECT_EQ(Bytes(p.data(), p.data() + p.size()), payload);
}

TEST(Archive, APayloadReadBackMidBlockIsWhatWasAppended) {
  constexpr size_t B = kArchiveWriteBlock;
  std::vector<Bytes> parts = payloadParts({5000, B, 300, B / 2 + 7, 40});
  Bytes out;
  RecordingSink sink(out);
  ArchiveWriter writer(sink);
  std::vector<ArchiveMember> members;
  for (size_t i = 0; i < parts.size(); ++i) {
    auto range = writer.appendPayload(parts[i]);
    ASSERT_TRUE(range);
    // Read back while its block is still being gathered: it is written first.
    auto written = writer.readPayloadBack(*range);
    ASSERT_TRUE(written) << written.error().message;
    EXPECT_EQ(Bytes(written->data(), written->data() + written->size()), parts[i]) << i;
    EXPECT_TRUE(std::all_of(written->data() + written->size(), written->data() + written->size() + kPayloadSlack,
                            [](uint8_t b) { return b == 0; }));
    members.push_back(fakeMember(fmt::format("m{}.safetensors", i), "x", parts[i].size()));
    members.back().payloadRange = *range;
  }
  ASSERT_TRUE(writer.finish(members, true));
  auto back = readArchive(MappedFile::fromBytes(out), "a.brv", ArchiveReadOptions{.verifyWholeFile = true});
  ASSERT_TRUE(back) << back.error().message;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Payload &p = back->members.at(i).payload;
    EXPECT_EQ(Bytes(p.data(), p.data() + p.size()), parts[i]) << i;
  }
}

TEST(Archive, DetectsDamage) {
  Bytes archive = buildArchive({fakeMember("m.safetensors", "brevis 1\n", 5000)}, {Bytes(1000, 0x42)}, false);
  using ::testing::HasSubstr;
  EXPECT_EQ(readFailure(archive, true), "accepted");
  EXPECT_THAT(readFailure(Bytes{}), HasSubstr("is empty, not a brevis archive"));
  EXPECT_THAT(readFailure(Bytes(archive.begin(), archive.begin() + 10)), HasSubstr("is truncated"));
  for (size_t cut : {kArchiveHeaderSize, kArchiveHeaderSize + 500, archive.size() - 1})
    EXPECT_THAT(readFailure(Bytes(archive.begin(), archive.begin() + static_cast<long>(cut))),
                HasSubstr("truncated"))
        << cut;
  Bytes appended = archive;
  appended.push_back(0);
  EXPECT_THAT(readFailure(appended), HasSubstr("truncated or corrupt"));
  auto flip = [&](size_t pos, bool whole = false) {
    Bytes flipped = archive;
    flipped[pos] ^= 0x10;
    return readFailure(flipped, whole);
  };
  EXPECT_THAT(flip(8), HasSubstr(fmt::format("archive format version {}", kArchiveVersion ^ 0x10)));
  EXPECT_THAT(flip(12), HasSubstr("flags 0x10"));
  // Header fields, the metadata after the payload, the metadata checksum itself.
  for (size_t pos : {size_t{20}, size_t{66}, kArchiveHeaderSize + 1000 + 16 + 3, archive.size() - 20})
    EXPECT_THAT(flip(pos), ::testing::AnyOf(HasSubstr("checksum of its header and index"), HasSubstr("truncated or corrupt")))
        << "flip at " << pos;
  // The payload is covered by the archive checksum (read by verify) and by the region digests.
  EXPECT_EQ(flip(kArchiveHeaderSize + 10), "accepted");
  EXPECT_THAT(flip(kArchiveHeaderSize + 10, true), HasSubstr("archive checksum mismatch"));
  EXPECT_THAT(flip(archive.size() - 1, true), HasSubstr("archive checksum mismatch"));
  EXPECT_THAT(flip(kArchiveHeaderSize + 1000 + 2), HasSubstr("padding after the payload"));
  EXPECT_EQ(readFailure(Bytes(100, 0)), "a.brv is not a brevis archive (bad magic)");
}

TEST(Archive, ProgramTextIsPackedAtItsLevelUpToTheLimitAndFasterAbove) {
  // Text like a program's: lines of names and channel constants, which zstd's levels pack
  // differently.
  std::mt19937 rng(7);
  std::string text;
  while (text.size() < 3 * kProgramZstdLevelMaxText) {
    text += fmt::format("  t{} = map add [", text.size() % 977);
    for (int k = 0; k < 24; ++k) text += fmt::format("{}, ", 100 + rng() % 40);
    text += "] (lit huffman bf16)\n";
  }
  auto packedAt = [](std::string_view t, int level) {
    Bytes out(ZSTD_compressBound(t.size()));
    out.resize(ZSTD_compress(out.data(), out.size(), t.data(), t.size(), level));
    return out;
  };
  for (size_t size : {kProgramZstdLevelMaxText / 4, kProgramZstdLevelMaxText, kProgramZstdLevelMaxText + 1,
                      3 * kProgramZstdLevelMaxText}) {
    const std::string_view t = std::string_view(text).substr(0, size);
    const bool small = size <= kProgramZstdLevelMaxText;
    const Bytes packed = packProgramText(t);
    EXPECT_EQ(packed, packedAt(t, small ? kProgramZstdLevel : kProgramZstdLargeLevel)) << size;
    EXPECT_NE(packed, packedAt(t, small ? kProgramZstdLargeLevel : kProgramZstdLevel)) << size;
    std::string back(t.size(), '\0');
    EXPECT_EQ(ZSTD_decompress(back.data(), back.size(), packed.data(), packed.size()), t.size());
    EXPECT_EQ(back, t);
  }
}

TEST(Archive, RejectsUnusableMemberPaths) {
  auto withPaths = [](std::vector<std::string> paths) {
    std::vector<ArchiveMember> members;
    std::vector<Bytes> payloads;
    for (auto &p : paths) {
      members.push_back(fakeMember(p, "t", 1));
      payloads.push_back(Bytes(3, 1));
    }
    return readFailure(buildArchive(members, payloads, true));
  };
  using ::testing::HasSubstr;
  EXPECT_EQ(withPaths({"a", "b/c", "b/d"}), "accepted");
  for (const char *bad : {"/abs", "../up", "a/../b", "a//b", "./a", "a/", ""})
    EXPECT_THAT(withPaths({bad}), HasSubstr("unusable path")) << bad;
  EXPECT_THAT(withPaths({"a", "a"}), HasSubstr("appears twice"));
  EXPECT_THAT(withPaths({"a", "a/b"}), HasSubstr("both a file and a directory"));
  // A single-file archive holds exactly one member.
  std::vector<ArchiveMember> two{fakeMember("a", "t", 1), fakeMember("b", "t", 1)};
  EXPECT_THAT(readFailure(buildArchive(two, {Bytes(3, 1), Bytes(3, 1)}, false)), HasSubstr("several members"));
}

TEST(Checksum, RegionDigestIsTheHashOfPieceHashes) {
  Bytes data(kDigestPieceBytes + 1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + (i >> 13));
  uint64_t pieces[2] = {xxh3(ByteSpan(data).first(kDigestPieceBytes)), xxh3(ByteSpan(data).subspan(kDigestPieceBytes))};
  EXPECT_EQ(regionDigest(data), combinePieceHashes(pieces));
  EXPECT_NE(regionDigest(data), xxh3(data));
  data.back() ^= 1;
  EXPECT_NE(regionDigest(data), combinePieceHashes(pieces));
  EXPECT_EQ(regionDigest({}), combinePieceHashes({}));
}

TEST(Checksum, StreamingMatchesOneShot) {
  Bytes data(10000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31);
  Xxh64Stream s;
  s.update(data.data(), 3000);
  s.update(data.data() + 3000, 7000);
  EXPECT_EQ(s.digest(), xxh64(data));
  EXPECT_NE(xxh64(ByteSpan(data).first(9999)), xxh64(data));
}

TEST(Checksum, Xxh3VariantsMatchTheLibraryAtEverySplit) {
  // The checksums in archives are XXH3; decoding hashes with AVX-512 or AVX2 builds of it where
  // the CPU has them. Each must give the library's hash for any length and any way the bytes
  // arrive (the stream's internal buffer and stripe boundaries are at 64, 256 and 1024 bytes).
  std::mt19937_64 rng(41);
  Bytes data(70000);
  for (auto &b : data) b = static_cast<uint8_t>(rng());
  struct Variant {
    const char *name;
    bool available;
    void (*update)(void *, const void *, size_t);
    uint64_t (*digest)(const void *);
    uint64_t (*oneShot)(const void *, size_t);
  };
  const Variant variants[] = {
      {"avx2", __builtin_cpu_supports("avx2") != 0, detail::xxh3UpdateAvx2, detail::xxh3DigestAvx2,
       detail::xxh3OneShotAvx2},
      {"avx512", __builtin_cpu_supports("avx512f") != 0, detail::xxh3UpdateAvx512, detail::xxh3DigestAvx512,
       detail::xxh3OneShotAvx512}};
  const size_t lengths[] = {0, 1, 3, 16, 17, 128, 129, 240, 241, 1024, 1025, 4096, 65536 + 13, 70000};
  size_t checked = 0;
  for (const Variant &v : variants) {
    if (!v.available) continue;
    for (size_t n : lengths) {
      const uint64_t want = XXH3_64bits(data.data(), n);
      EXPECT_EQ(v.oneShot(data.data(), n), want) << v.name << ", " << n << " bytes";
      for (int trial = 0; trial < 3; ++trial) {
        XXH3_state_t *state = XXH3_createState();
        XXH3_64bits_reset(state);
        for (size_t at = 0; at < n;) {
          size_t take = std::min<size_t>(n - at, 1 + rng() % (trial == 0 ? 7 : trial == 1 ? 300 : 20000));
          v.update(state, data.data() + at, take);
          at += take;
        }
        EXPECT_EQ(v.digest(state), want) << v.name << ", " << n << " bytes, trial " << trial;
        XXH3_freeState(state);
      }
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "neither AVX2 nor AVX-512 on this CPU";
  // And what the runtime picked agrees too.
  Xxh3Stream stream;
  stream.update(data.data(), 12345);
  stream.update(data.data() + 12345, data.size() - 12345);
  EXPECT_EQ(stream.digest(), XXH3_64bits(data.data(), data.size()));
  EXPECT_EQ(xxh3(data), XXH3_64bits(data.data(), data.size()));
}
