// counting_new: replaces the global operator new/delete with malloc/free
// ones that count each allocation made by the calling thread, so that a
// benchmark (herald-filter-bench) or a test (tests/wire/tags_filter.cpp) can
// show that a loop allocates nothing. Defines the replacement functions, not
// inline ones: include it in exactly one .cpp of an executable.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace herald::loadtest {

/// Heap allocations (operator new, throwing and nothrow) made so far by the
/// calling thread.
inline std::size_t& thread_allocations() noexcept {
  thread_local std::size_t n = 0;
  return n;
}

} // namespace herald::loadtest

// GCC 12 takes the free() in these replacements for a mismatch with the
// replaced operator new (-Wmismatched-new-delete); the pairs are this file's own.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  ++herald::loadtest::thread_allocations();
  if (void* p = std::malloc(n == 0 ? 1 : n))
    return p;
  throw std::bad_alloc{};
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// The nothrow forms too (Catch uses them), so that every delete frees what
// this malloc-based new allocated (ASan checks the pairing).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  ++herald::loadtest::thread_allocations();
  return std::malloc(n == 0 ? 1 : n);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
#pragma GCC diagnostic pop
