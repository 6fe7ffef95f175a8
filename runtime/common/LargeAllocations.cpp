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
// Smaller blocks come from malloc's heap, and memory touched for the first time is expensive
// there too: a fault for every 4 KiB page (12 µs each on the virtual machines of benchmarks.md, where
// decoding a page's worth of words takes a few). glibc gives freed memory at the top of its heap
// back to the kernel and maps blocks from 128 KiB on afresh, so that each literal's decoding
// buffers, each tensor's tables, were new pages again. The heap keeps what is freed now (up to
// 256 MiB at its top), for the next block to reuse, and blocks up to 32 MiB come from it; the
// advice above then applies to the heap's pages under them. The price is the heap's
// fragmentation: peak memory of level 5 on a 134 MB checkpoint 310 → 340 MB.
//
// This file replaces the global operator new of the executables that link it (brevisc,
// brevis-bench, brevis-gen): the block still comes from malloc, so that the library's operator
// delete (free) releases it; only the advice is added. Not linked in sanitizer builds, whose
// runtimes replace operator new themselves and check that what it returned is released by it.
#include <malloc.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <new>

namespace {

constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
// malloc's header before each block on 64-bit glibc: a block of n bytes ending 16 bytes before
// an address leaves the next free memory's first byte there.
constexpr std::uintptr_t kChunkHeaderBytes = 16;

/// The address of the first huge page that begins at or after `p`.
std::uintptr_t firstHugePageAt(const void *p) {
  return (reinterpret_cast<std::uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
}

/// Advises huge pages for the whole 2 MiB pages inside [p, p + n). The kernel applies the advice
/// to the mapping (the block's own mmap, or the heap's part of it), where a page is faulted in
/// whole when it lies inside the mapping; a failure (a kernel without them) changes nothing.
void adviseHugePages(void *p, std::size_t n) {
  const auto begin = firstHugePageAt(p);
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + n) & ~(kHugePage - 1);
  if (begin < end) ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_HUGEPAGE);
}

/// The heads kept by adviseHugePagesForThisThreadsHeap, one per thread that advised its heap (up to
/// a bound), held here so that leak checkers see them reachable.
std::atomic<void *> keptHeads[256];
std::atomic<size_t> keptHeadCount{0};
void keepHead(void *head) {
  const size_t slot = keptHeadCount.fetch_add(1, std::memory_order_relaxed);
  if (slot < std::size(keptHeads)) keptHeads[slot].store(head, std::memory_order_relaxed);
}

/// Asks for huge pages on the first 30 MiB of the calling thread's malloc heap (threads allocate
/// from arenas, heaps, of their own: up to eight per core, later threads reusing those of threads
/// gone), where its pages are then faulted in 2 MiB at a time when the kernel has huge pages to
/// give; glibc's `glibc.malloc.hugetlb=1`, which only the environment can set, advises every
/// heap whole. A free block taken from the heap, advised and freed touches none of its pages
/// (unless MALLOC_PERTURB_ asks malloc to fill blocks); the heap keeps it, as address space (the
/// trim threshold is above it). Level 5 on the corpus took 80 K page faults, 20 K so, a tenth
/// less time.
///
/// The heap's free memory then starts where the block did, which is not on a huge page: the main
/// heap begins anywhere, a thread's with its own header in its first page. Its pages up to the
/// first whole huge page (1 MiB on average) would be faulted in 4 KiB at a time, 256 faults a
/// MiB, most of a small file's. The block is shrunk in place to end there and kept, untouched
/// address space (under 2 MiB for each thread that advises a heap): the heap's next blocks begin
/// on a huge page. A thread that allocates less than the head now faults in a 2 MiB page where it
/// faulted a few of 4 KiB.
void adviseHugePagesForThisThreadsHeap() {
  constexpr std::size_t kAdvisedHeap = std::size_t{30} << 20; // below the mmap threshold: in the heap
  void *p = std::malloc(kAdvisedHeap);
  if (!p) return;
  adviseHugePages(p, kAdvisedHeap);
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const auto firstHugePage = firstHugePageAt(p);
  if (firstHugePage - at > kChunkHeaderBytes) {
    void *head = std::realloc(p, firstHugePage - at - kChunkHeaderBytes); // shrinks in place
    if (head == p) {
      keepHead(head);
      return;
    }
    if (head) p = head; // moved after all (a malloc that does not shrink in place): nothing to keep
  }
  std::free(p);
}

/// Whether this thread's heap has the advice (for threads but the main one: at their first
/// operator new, which is before most of their allocations).
thread_local bool heapAdvised = false;

/// Sets malloc's thresholds and advises the main thread's heap, before main() allocates.
[[gnu::constructor(101)]] void setUpTheHeap() { // before other static initializers allocate
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
  heapAdvised = true;
  adviseHugePagesForThisThreadsHeap();
}

} // namespace

void *operator new(std::size_t n) {
  if (!heapAdvised) [[unlikely]] {
    heapAdvised = true;
    adviseHugePagesForThisThreadsHeap();
  }
  void *p;
  while ((p = std::malloc(n != 0 ? n : 1)) == nullptr) {
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
  if (n >= kHugePage) adviseHugePages(p, n);
  return p;
}
