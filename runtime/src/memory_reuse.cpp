#include "loom/runtime/memory_reuse.hpp"

#include <cstdlib>  // defines __GLIBC__ where glibc is the C library

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace loom::runtime {

void keep_freed_memory() {
#if defined(__GLIBC__)
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // blocks up to 32 MiB (glibc's most) from the heap, reused once freed
    mallopt(M_TRIM_THRESHOLD, -1);        // the heap never shrinks
    mallopt(M_TOP_PAD, 64 << 20);         // and grows in large steps
    return true;
  }();
  (void)done;
#endif
}

}  // namespace loom::runtime
