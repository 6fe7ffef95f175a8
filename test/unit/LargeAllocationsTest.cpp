// Large allocations on transparent huge pages (runtime/common/LargeAllocations.cpp): a block of
// 2 MiB or more, and malloc's heap, carry the huge-page advice, seen by the kernel as the `hg`
// flag of their mapping; memory freed stays in the heap for the next block, which then faults no
// new pages in.
#include "ProcessMappings.h"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using brevis::test_support::flagsOfMappingAt;

// First in this file, as the next one: a block of 2 MiB or more freed by another test would
// leave its advice on the heap's pages.
/// The VmFlags of the mapping of the third of three 1 MiB blocks taken by the calling thread: too
/// small for advice of their own, from its heap, the third past the heap's first 2 MiB.
std::string flagsOfAHeapBlock() {
  std::vector<std::unique_ptr<uint8_t[]>> blocks;
  for (int k = 0; k < 3; ++k) blocks.push_back(std::make_unique<uint8_t[]>(size_t{1} << 20));
  return flagsOfMappingAt(blocks.back().get() + (size_t{1} << 19));
}

TEST(LargeAllocations, TheHeapAsksForHugePages) {
#if !BREVIS_LARGE_ALLOCATIONS
  GTEST_SKIP() << "not linked in this build (sanitizers replace operator new)";
#endif
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage")) GTEST_SKIP() << "no transparent huge pages";
  const std::string flags = flagsOfAHeapBlock();
  ASSERT_FALSE(flags.empty()) << "no mapping found for the block";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  // Another thread allocates from a heap of its own.
  std::string threadFlags;
  std::thread([&] { threadFlags = flagsOfAHeapBlock(); }).join();
  ASSERT_FALSE(threadFlags.empty()) << "no mapping found for the other thread's block";
  EXPECT_NE(threadFlags.find(" hg"), std::string::npos) << threadFlags;
}

TEST(LargeAllocations, TheHeapsFirstBlocksLieOnHugePages) {
#if !BREVIS_LARGE_ALLOCATIONS
  GTEST_SKIP() << "not linked in this build (sanitizers replace operator new)";
#endif
  // A heap's start is not on a huge page (the main one's is anywhere; a thread's holds its own
  // header in its first page), so its first blocks would lie on pages faulted in 4 KiB at a
  // time. The memory up to the first whole huge page is kept aside: the first block a new
  // thread allocates begins there.
  std::uintptr_t at = 0;
  std::thread([&] {
    auto block = std::make_unique_for_overwrite<uint8_t[]>(size_t{1} << 20);
    at = reinterpret_cast<std::uintptr_t>(block.get());
  }).join();
  EXPECT_EQ(at % (std::uintptr_t{2} << 20), 0u) << std::hex << at;
}

TEST(LargeAllocations, BlocksOfTwoMebibytesOrMoreAskForHugePages) {
#if !BREVIS_LARGE_ALLOCATIONS
  GTEST_SKIP() << "not linked in this build (sanitizers replace operator new)";
#endif
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage")) GTEST_SKIP() << "no transparent huge pages";
  // Past malloc's heap (blocks up to 32 MiB come from it, whose pages have the advice anyway; so
  // do larger ones once as much is free in it, hence this test before those that free blocks).
  constexpr size_t kBytes = size_t{40} << 20;
  auto block = std::make_unique<uint8_t[]>(kBytes); // zeroed: every page touched
  for (size_t i = 0; i < kBytes; i += 4096) block[i] = static_cast<uint8_t>(i >> 12);
  const std::string flags = flagsOfMappingAt(block.get() + kBytes / 2);
  ASSERT_FALSE(flags.empty()) << "no mapping found for the block";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  for (size_t i = 0; i < kBytes; i += 4096) ASSERT_EQ(block[i], static_cast<uint8_t>(i >> 12));
}

/// Page faults of this process so far.
long pageFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt + usage.ru_majflt;
}

/// Blocks of `sizes` with every page written.
std::vector<std::unique_ptr<uint8_t[]>> touchedBlocks(const std::vector<size_t> &sizes) {
  std::vector<std::unique_ptr<uint8_t[]>> blocks;
  for (size_t bytes : sizes) {
    blocks.push_back(std::make_unique_for_overwrite<uint8_t[]>(bytes));
    for (size_t i = 0; i < bytes; i += 4096) blocks.back()[i] = static_cast<uint8_t>(i >> 12);
  }
  return blocks;
}

// Before any test that frees a block of 32 MiB or less: glibc's own thresholds move with the blocks
// freed before (a test that frees 8 MiB first would hide their default).
TEST(LargeAllocations, AFreedBlockIsReusedWithoutNewPages) {
#if !BREVIS_LARGE_ALLOCATIONS
  GTEST_SKIP() << "not linked in this build (sanitizers replace operator new)";
#endif
  // Blocks glibc would map afresh (from 128 KiB on; after a larger block is freed, from its size
  // on), or give back to the kernel when freed at the top of its heap (more than twice the
  // largest block freed): 64 pages to 20,480.
  const std::vector<std::vector<size_t>> cases = {
      {size_t{256} << 10}, {size_t{1} << 20}, {size_t{4} << 20}, {size_t{31} << 20}, std::vector<size_t>(5, 16 << 20)};
  for (const std::vector<size_t> &sizes : cases) {
    touchedBlocks(sizes).clear();
    const long before = pageFaults();
    auto again = touchedBlocks(sizes);
    const long faults = pageFaults() - before;
    EXPECT_LT(faults, 8) << sizes.size() << " blocks of " << sizes[0] << " bytes: the ones freed before were not reused";
    for (size_t b = 0; b < sizes.size(); ++b)
      for (size_t i = 0; i < sizes[b]; i += 4096) ASSERT_EQ(again[b][i], static_cast<uint8_t>(i >> 12));
  }
}

TEST(LargeAllocations, SmallAndEmptyBlocksAreOrdinary) {
  std::vector<std::unique_ptr<uint8_t[]>> blocks;
  for (size_t n : {size_t{0}, size_t{1}, size_t{4096}, (size_t{2} << 20) - 1}) {
    blocks.push_back(std::make_unique<uint8_t[]>(n));
    ASSERT_NE(blocks.back().get(), nullptr);
  }
  for (size_t i = 1; i < blocks.size(); ++i) EXPECT_NE(blocks[i].get(), blocks[i - 1].get());
}

} // namespace
