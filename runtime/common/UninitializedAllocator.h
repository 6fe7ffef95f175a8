#pragma once
// An allocator whose resize leaves new elements as they are, for buffers written whole after
// every resize: field buffers in synthesis (clearing them was a sixteenth of level 1's
// instructions) and decoding's write buffers (clearing fresh ones was a memset, and its page
// faults, on every buffer a file was decoded into).
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace brevis {

template <typename T> struct UninitializedAllocator : std::allocator<T> {
  template <typename U> struct rebind {
    using other = UninitializedAllocator<U>;
  };
  using std::allocator<T>::allocator;
  template <typename U, typename... Args> void construct(U *p, Args &&...args) {
    if constexpr (sizeof...(Args) == 0) ::new (static_cast<void *>(p)) U;
    else ::new (static_cast<void *>(p)) U(std::forward<Args>(args)...);
  }
};

/// A vector of T whose resize does not clear what it adds.
template <typename T> using UninitializedVector = std::vector<T, UninitializedAllocator<T>>;

} // namespace brevis
