// Large allocations on transparent huge pages, and freed memory kept for the next one.
//
// A 1024-NPU synthesis holds a few vectors of tens to hundreds of megabytes (transfers, routes,
// the matcher's events). On kernels whose transparent huge pages are in `madvise` mode (Debian's
// default), each 4 KiB page of them costs a page fault when first touched, a large share of a
// synthesis' CPU. glibc asks for
// huge pages only when told to (the glibc.malloc.hugetlb tunable, read at process start), so the
// binary's operator new advises them itself for blocks of 4 MiB and more; memory still comes from
// and returns to malloc, so everything else (sanitizers included) sees plain malloc and free.
//
// A search makes and drops algorithms of the same sizes over and over (one per chunk count and
// method). glibc maps a block of its own for each allocation of 128 KiB and more at first, and
// gives a heap top of more than 128 KiB back to the kernel; it raises both limits only as such
// blocks are freed, so the first searches of a process fault their pages in again and again. The
// binary sets them where glibc's own adjustment ends: blocks under 32 MiB (its largest mmap
// threshold) come from the heap, and the heap is trimmed only past 64 MiB free at its top (twice
// that, as glibc would). Blocks of 32 MiB and more are still mapped and unmapped, so a 1024-NPU
// run's peak grows by a few percent only (the heap holds the smaller blocks it freed).
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#ifdef __GLIBC__  // defined by the headers above
#include <malloc.h>
#endif

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kAdviseFrom = std::size_t{4} << 20;

void* allocate(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (!p) throw std::bad_alloc();
  if (n >= kAdviseFrom) {
    // The whole huge pages inside the block; an error only means no huge pages.
    const auto begin = (reinterpret_cast<std::uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(p) + n) & ~(kHugePage - 1);
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  }
  return p;
}

#ifdef __GLIBC__
// Before main: the settings apply to every allocation after static initialization.
[[maybe_unused]] const bool kHeapKept = [] {
  constexpr int kMapFrom = 32 << 20;
  ::mallopt(M_MMAP_THRESHOLD, kMapFrom);
  ::mallopt(M_TRIM_THRESHOLD, 2 * kMapFrom);
  return true;
}();
#endif

}  // namespace

void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& tag) noexcept {
  return operator new(n, tag);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
