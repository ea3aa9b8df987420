// libstdc++ 11 and later read glibc 2.32's `__libc_single_threaded` to skip atomic reference
// counting in single-threaded processes, and that one read ties the shim to GLIBC_2.32. This
// hidden copy, always 0 ("threads may exist"), binds the read inside the shim: reference
// counts stay atomic, which is correct in every process, and the shim loads on the glibc
// the SYCL runtime itself needs (its wheels are manylinux_2_28).
extern "C" {
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;
}
