// libstdc++ 11 and later read glibc 2.32's `__libc_single_threaded` to skip atomic reference
// counting in single-threaded processes, and that one read ties the shim to GLIBC_2.32. This
// hidden copy, always 0 ("threads may exist"), binds the read inside the shim: reference
// counts stay atomic, which is correct in every process, and the shim loads on the glibc
// the SYCL runtime itself needs (its wheels are manylinux_2_28).
extern "C" {
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;
}

// libstdc++ 11 and later have `new T[n]` and vector growth call
// `std::__throw_bad_array_new_length`, a GLIBCXX_3.4.29 symbol; the SYCL 2026 headers'
// kernel-compiler types reach it. This hidden copy throws what that one throws, so the shim
// keeps the runtime's own libstdc++ floor.
#include <new>
namespace std {
[[noreturn]] __attribute__((visibility("hidden"))) void __throw_bad_array_new_length() {
  throw bad_array_new_length();
}
}  // namespace std
