// Large allocations on transparent huge pages.
//
// Compressing and decompressing move whole tensors through buffers of megabytes: fields split
// out of a tensor, encoded literals, payloads, decoded pieces. Each fresh 4 KiB page of such a
// buffer costs a page fault and a zeroing in the kernel, and glibc returns large blocks to the
// kernel when they are freed, so the next tensor faults its pages in again: on a 134 MB BF16
// checkpoint at level 1, 64,000 faults and 0.74 s of the 1.72 s of system time.
// Where the kernel offers transparent huge pages only on request ("madvise", Debian's default),
// asking for them on every block of 2 MiB or more makes one fault per 2 MiB.
//
// Freed memory is kept for the next tensor: glibc hands blocks from 128 KiB up to a threshold
// that grows to 32 MiB back to the kernel when they are freed (each one mmap'd afresh) and trims
// the heap's top whenever 2x that is free, so every tensor's buffers came as new pages again
// (on a 134 MB checkpoint at level 1, 0.15 s of system time in 0.5 s). Blocks below 32 MiB now
// always come from the heap, which is never trimmed; larger ones are still mapped and unmapped
// (a tensor that large is worth its own pages, and keeping them would hold its size twice).
//
// This file replaces the global operator new of the executables that link it (brevisc,
// brevis-bench, brevis-gen): the block still comes from malloc, so that the library's operator
// delete (free) releases it; only the advice is added. Not linked in sanitizer builds, whose
// runtimes replace operator new themselves and check that what it returned is released by it.
#include <malloc.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>

namespace {

constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

/// Advises huge pages for the whole 2 MiB pages inside [p, p + n). The kernel applies the advice
/// to the mapping (the block's own mmap, or the heap's part of it), where a page is faulted in
/// whole when it lies inside the mapping; a failure (a kernel without them) changes nothing.
void adviseHugePages(void *p, std::size_t n) {
  const auto begin = (reinterpret_cast<std::uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + n) & ~(kHugePage - 1);
  if (begin < end) ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_HUGEPAGE);
}

constexpr int kLargestHeapBlock = 32 << 20; // glibc's largest mmap threshold (HEAP_MAX_SIZE / 2)

/// Sets the allocation policy above before main runs.
[[maybe_unused]] const bool kHeapKept = [] {
  ::mallopt(M_MMAP_THRESHOLD, kLargestHeapBlock);
  ::mallopt(M_TRIM_THRESHOLD, INT32_MAX);
  return true;
}();

} // namespace

void *operator new(std::size_t n) {
  void *p;
  while ((p = std::malloc(n != 0 ? n : 1)) == nullptr) {
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
  if (n >= kHugePage) adviseHugePages(p, n);
  return p;
}
