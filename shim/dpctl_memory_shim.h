/*
 * dpctl_memory_shim.h: the narrow C ABI between dpctl-memory (Rust) and the SYCL runtime.
 *
 * The shim is a shared object (dpctl_memory_shim.so) built by build.rs with the machine's
 * g++ against the SYCL runtime's headers and linked against libsycl.so.8. The Rust side
 * dlopen()s libsycl.so.8 (RTLD_GLOBAL) and then this shim at run time, so the .node file
 * has no load-time dependency on either.
 *
 * Rules every entry point keeps:
 *  - No C++ exception ever leaves the shim: each body runs inside one catch-all guard.
 *  - Functions returning `int` return a DPM_* status. On anything but DPM_OK the
 *    calling thread's error text (dpm_last_error()) says what happened; on DPM_OK the
 *    out parameters are written and the error text is empty.
 *  - Out parameters are written only on DPM_OK.
 *  - Handles (dpm_device, dpm_context, dpm_queue) are opaque, heap-allocated, owned by
 *    the caller, and freed exactly once with the matching *_free function. A handle is a
 *    copy of a SYCL object (which is itself a reference-counted handle): freeing it never
 *    invalidates other handles to the same device/context, or memory allocated through it.
 *  - SYCL objects are thread-safe (SYCL 2020, 4.3.1), and so is every entry point here;
 *    a handle may be used from several threads at once, but freed only once, by one thread,
 *    after every other use.
 *  - Addresses passed to memcpy/memset/free must be valid for the operation: the shim
 *    cannot check them (pointer queries below never touch memory and are safe on any value).
 */
#ifndef DPCTL_MEMORY_SHIM_H
#define DPCTL_MEMORY_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change to this file; the Rust side refuses a shim of another version. */
#define DPM_ABI_VERSION 7

/* Status codes. */
#define DPM_OK 0
#define DPM_ERR_SYCL 1    /* a sycl::exception was thrown (text: its what() and code) */
#define DPM_ERR_STD 2     /* another std::exception (e.g. std::bad_alloc) */
#define DPM_ERR_UNKNOWN 3 /* something else was thrown */
#define DPM_ERR_ALLOC 4   /* a sycl::malloc_* returned nullptr */
#define DPM_ERR_ARG 5     /* a NULL handle or out pointer, an unknown USM kind */
#define DPM_ERR_BUILD 6   /* a program did not build: its log is written to *log */
#define DPM_ERR_NOT_FOUND 7 /* no kernel of that name in the program */
#define DPM_ERR_OPENCL 8  /* an OpenCL call failed (text: the call and its CL_* code) */
#define DPM_ERR_UNSUPPORTED 9 /* this runtime or device cannot do it (text: why) */

/* USM kinds: dpctl's DPCTLSyclUSMType values (not sycl::usm::alloc's). */
#define DPM_USM_UNKNOWN 0
#define DPM_USM_DEVICE 1
#define DPM_USM_SHARED 2
#define DPM_USM_HOST 3

/* Device types. */
#define DPM_DEVICE_TYPE_UNKNOWN 0
#define DPM_DEVICE_TYPE_CPU 1
#define DPM_DEVICE_TYPE_GPU 2
#define DPM_DEVICE_TYPE_ACCELERATOR 3
#define DPM_DEVICE_TYPE_CUSTOM 4

/* Opaque handles. */
typedef struct dpm_device_s dpm_device;   /* a sycl::device */
typedef struct dpm_context_s dpm_context; /* a sycl::context */
typedef struct dpm_queue_s dpm_queue;     /* a sycl::queue + its async errors */

/* What a device says about itself. Every string is NUL-terminated UTF-8, malloc'ed by the
 * shim and owned by the struct: release them all with dpm_device_info_free(). */
typedef struct dpm_device_info {
  char *name;
  char *vendor;
  char *backend;        /* filter-string name: opencl, level_zero, cuda, hip, native_cpu,
                           offload, or unknown */
  char *driver_version;
  char *aspects;        /* SYCL aspect names the device has, separated by single spaces */
  uint32_t device_type; /* DPM_DEVICE_TYPE_* */
  uint64_t global_mem_size;
  uint64_t max_mem_alloc_size;
  uint64_t local_mem_size;   /* bytes of work-group local memory */
} dpm_device_info;

/* --- Library ------------------------------------------------------------------------ */

/* DPM_ABI_VERSION of the built shim. Never fails. */
uint32_t dpm_abi_version(void);

/* The calling thread's error text for the last failed dpm_* call ("" after a success).
 * Owned by the shim (thread-local storage); valid until the next dpm_* call on the same
 * thread. Never NULL. Long messages are truncated. */
const char *dpm_last_error(void);

/* --- Devices ------------------------------------------------------------------------ */

/* Enumerates sycl::device::get_devices() (ONEAPI_DEVICE_SELECTOR applies). Writes up to
 * `cap` new handles into `out` (which may be NULL when cap is 0) and the total number of
 * devices into *count. Call with cap 0 to size the array. The caller owns every handle
 * written and frees each with dpm_device_free(). */
int dpm_get_devices(dpm_device **out, size_t cap, size_t *count);

/* Frees a device handle. NULL is ignored. */
void dpm_device_free(dpm_device *dev);

/* Fills *out (owned by the caller afterwards; release with dpm_device_info_free()). */
int dpm_device_get_info(const dpm_device *dev, dpm_device_info *out);

/* Frees the strings of *info and sets them to NULL. NULL or already-freed is ignored. */
void dpm_device_info_free(dpm_device_info *info);

/* *out = 1 when a and b are the same SYCL device, else 0. */
int dpm_device_equal(const dpm_device *a, const dpm_device *b, int *out);

/* *out = a new handle to the default context of the device's platform (the context that
 * every queue made from a device alone shares). Free with dpm_context_free(). */
int dpm_device_default_context(const dpm_device *dev, dpm_context **out);

/* --- Contexts ----------------------------------------------------------------------- */

/* *out = a new, distinct sycl::context(dev). Free with dpm_context_free(). */
int dpm_context_create(const dpm_device *dev, dpm_context **out);

/* Frees a context handle (the context lives on while queues or other handles use it).
 * NULL is ignored. */
void dpm_context_free(dpm_context *ctx);

/* *out = 1 when a and b are the same SYCL context, else 0. */
int dpm_context_equal(const dpm_context *a, const dpm_context *b, int *out);

/* The devices of the context, with dpm_get_devices()'s contract for out/cap/count. */
int dpm_context_get_devices(const dpm_context *ctx, dpm_device **out, size_t cap, size_t *count);

/* Frees USM memory allocated in ctx (sycl::free). ptr NULL is a no-op. ptr must be a live
 * allocation of ctx. */
int dpm_free(const dpm_context *ctx, void *ptr);

/* *out = the DPM_USM_* kind of ptr in ctx (sycl::get_pointer_type). Any value of ptr is
 * fine: stack, heap, NULL and other contexts' memory give DPM_USM_UNKNOWN. */
int dpm_pointer_type(const dpm_context *ctx, const void *ptr, int *out);

/* *out = a new handle to the device that USM pointer ptr of ctx belongs to
 * (sycl::get_pointer_device). A pointer ctx does not know is an error (DPM_ERR_SYCL),
 * not a crash. Free the handle with dpm_device_free(). */
int dpm_pointer_device(const dpm_context *ctx, const void *ptr, dpm_device **out);

/* --- Queues ------------------------------------------------------------------------- */

/* *out = a new (out-of-order) queue on (ctx, dev); dev must be a device of ctx. The queue has
 * its own async handler: asynchronous errors are kept and reported by the next
 * dpm_memcpy / dpm_memset / dpm_queue_wait on it. Free with dpm_queue_free(). */
int dpm_queue_create(const dpm_context *ctx, const dpm_device *dev, dpm_queue **out);

/* Frees a queue handle (work already finished; the shim only submits synchronous work).
 * NULL is ignored. */
void dpm_queue_free(dpm_queue *q);

/* *out = nbytes of USM memory of `kind` (DPM_USM_DEVICE/SHARED/HOST) on the queue's device
 * and context: sycl::malloc_* when alignment is 0, else sycl::aligned_alloc_* (alignment a
 * power of two). A nullptr from the runtime is DPM_ERR_ALLOC. The caller owns the memory
 * and frees it with dpm_free() on the queue's context. */
int dpm_malloc(const dpm_queue *q, int kind, size_t nbytes, size_t alignment, void **out);

/* Copies nbytes from src to dst on q and waits (wait_and_throw: asynchronous errors are
 * returned here). nbytes 0 does nothing. */
int dpm_memcpy(dpm_queue *q, void *dst, const void *src, size_t nbytes);

/* Fills nbytes at dst with (unsigned char)value on q and waits, as dpm_memcpy. */
int dpm_memset(dpm_queue *q, void *dst, int value, size_t nbytes);

/* Waits for all work on q (wait_and_throw) and reports asynchronous errors. */
int dpm_queue_wait(dpm_queue *q);

/* --- Registered host memory and shared-memory hints ---------------------------------- */

/* Registers nbytes of host memory at ptr with ctx for device copies
 * (sycl::ext::oneapi::experimental::prepare_for_device_copy). *registered = 1 when the
 * runtime did (undo with dpm_host_unregister), 0 when the backend does not support it
 * (it answers UNSUPPORTED_FEATURE: nothing was done, nothing to undo). ptr must stay mapped until
 * it is unregistered. */
int dpm_host_register(const dpm_context *ctx, void *ptr, size_t nbytes, int *registered);

/* Ends a registration dpm_host_register made (release_from_device_copy). */
int dpm_host_unregister(const dpm_context *ctx, void *ptr);

/* Prefetches nbytes of shared memory at ptr to the queue's device (queue::prefetch) and
 * waits. *applied = 0 when the runtime does nothing for this backend (OpenCL: its memory
 * model has no migration) or the target: SYCL 2020 prefetches to the device only, so
 * to_host != 0 calls nothing and reports 0. */
int dpm_prefetch(dpm_queue *q, const void *ptr, size_t nbytes, int to_host, int *applied);

/* queue::mem_advise(ptr, nbytes, advice) and waits; advice is a ur_usm_advice_flags_t
 * value (the unified runtime's, which every backend adapter maps to its own). *applied = 0
 * for the OpenCL backend, whose adapter ignores advice. */
int dpm_mem_advise(dpm_queue *q, const void *ptr, size_t nbytes, int advice, int *applied);


/* --- Queue properties, programs, kernels, submissions, events -------------------------
 *
 * Programs are built by the OpenCL runtime under the device's SYCL backend (OpenCL only:
 * other backends answer DPM_ERR_ARG), reached through SYCL's interop with OpenCL; the
 * OpenCL library (libOpenCL.so.1) is dlopen'ed at the first program, never linked.
 * Kernels run through SYCL itself (handler::set_arg and parallel_for over an interop
 * kernel), so their events order with the queue's other work and carry its profiling.
 * At exit the process waits for every event these functions handed out and for every
 * pending dpm_event_on_complete callback (an atexit handler registered at the first
 * submission, so it runs before the runtime's own teardown, which crashes under running
 * commands).
 */

/* Queue properties (flags). */
#define DPM_QUEUE_IN_ORDER 1
#define DPM_QUEUE_ENABLE_PROFILING 2

/* As dpm_queue_create, with DPM_QUEUE_* flags (another bit is DPM_ERR_ARG). */
int dpm_queue_create_with(const dpm_context *ctx, const dpm_device *dev, int properties, dpm_queue **out);

/* *out = the DPM_QUEUE_* flags the queue was made with. */
int dpm_queue_properties(const dpm_queue *q, int *out);

/* The addresses of the queue's sycl::queue, sycl::context and sycl::device (objects of
 * this libsycl), valid while the queue handle lives: what other addons get through
 * include/dpctl_memory.h. */
int dpm_queue_native(const dpm_queue *q, void **queue, void **context, void **device);

typedef struct dpm_program_s dpm_program; /* a built program (a cl_program, or a SYCL kernel bundle) of one context and device */
typedef struct dpm_kernel_s dpm_kernel;   /* a sycl::kernel over a cl_kernel, with its arg info */
typedef struct dpm_event_s dpm_event;     /* a sycl::event */

/* Program formats. */
#define DPM_PROGRAM_OPENCL_C 1 /* data: OpenCL C source text (len bytes, no NUL needed; 0: empty) */
#define DPM_PROGRAM_SPIRV 2    /* data: a SPIR-V module (len bytes) */

/* Builds a program for dev (a device of ctx) with the build options `options` (NUL-
 * terminated, may be NULL). On DPM_OK *out is a new program (free with
 * dpm_program_free). *log (may be NULL when not wanted) receives the build log, a
 * malloc'ed NUL-terminated string the caller frees with dpm_string_free, on DPM_OK and on
 * DPM_ERR_BUILD (the one status that writes an out parameter on failure); NULL otherwise. */
int dpm_program_create(const dpm_context *ctx, const dpm_device *dev, int format, const void *data, size_t len,
                       const char *options, dpm_program **out, char **log);

/* Builds SYCL source (`len` bytes of C++ with free-function kernels, the kernel_compiler
 * extension) for dev (a device of ctx): with nheaders virtual include files
 * (header_names[i], header_contents[i]: NUL-terminated), the nregistered name expressions
 * of registered[] (template instantiations to build), and the noptions compiler flags of
 * options[] (one flag each). *out and *log as for dpm_program_create (DPM_ERR_BUILD writes
 * the compiler's message to *log). DPM_ERR_UNSUPPORTED where the shim's runtime has no
 * SYCL-source compilation (the DPC++ 2025 shim) or the device cannot compile SYCL. The
 * program's kernels are found by name (dpm_kernel_create). */
int dpm_program_create_sycl(const dpm_context *ctx, const dpm_device *dev, const char *source, size_t len,
                            const char *const *header_names, const char *const *header_contents, size_t nheaders,
                            const char *const *registered, size_t nregistered, const char *const *options,
                            size_t noptions, dpm_program **out, char **log);

/* *out = 1 when the shim's runtime can compile SYCL source for dev (its kernel_compiler
 * extension says so), else 0. */
int dpm_device_can_compile_sycl(const dpm_device *dev, int *out);

/* Frees a program handle (kernels made from it stay valid). NULL is ignored. */
void dpm_program_free(dpm_program *p);

/* *out = the program's kernel names separated by ';' (malloc'ed; dpm_string_free); "" for none. */
int dpm_program_kernel_names(const dpm_program *p, char **out);

/* Frees a string the shim returned. NULL is ignored. */
void dpm_string_free(char *s);

/* *out = a new kernel `name` of p; DPM_ERR_NOT_FOUND when p has none of that name. Free
 * with dpm_kernel_free. */
int dpm_kernel_create(const dpm_program *p, const char *name, dpm_kernel **out);

/* Frees a kernel handle. Submissions already made keep what they need. NULL is ignored. */
void dpm_kernel_free(dpm_kernel *k);

/* What the runtime says of a kernel on its program's device. */
typedef struct dpm_kernel_info {
  uint32_t num_args;
  uint64_t work_group_size;           /* the largest work-group this kernel can run with */
  uint64_t preferred_work_group_size_multiple;
  uint64_t private_mem_size;          /* bytes per work item */
  uint64_t local_mem_size;            /* bytes of local memory the kernel itself uses */
  uint64_t compile_work_group_size[3]; /* reqd_work_group_size, or zeros */
} dpm_kernel_info;

int dpm_kernel_get_info(const dpm_kernel *k, dpm_kernel_info *out);

/* Argument kinds, as OpenCL's argument info says (DPM_ARG_UNKNOWN where it says nothing:
 * a program built without argument info). */
#define DPM_ARG_UNKNOWN 0
#define DPM_ARG_GLOBAL 1 /* a __global or __constant pointer */
#define DPM_ARG_LOCAL 2  /* a __local pointer */
#define DPM_ARG_VALUE 3  /* passed by value (a scalar, vector or struct) */

/* *kind = the DPM_ARG_* kind of argument `index`; *type_name = its type as the source
 * wrote it (malloc'ed, dpm_string_free; "" when unknown). */
int dpm_kernel_arg_info(const dpm_kernel *k, uint32_t index, int *kind, char **type_name);

/* One argument of a submission. */
#define DPM_KARG_POINTER 1 /* value: a USM address */
#define DPM_KARG_SCALAR 2  /* size 1, 2, 4 or 8 bytes: the low `size` bytes of value (its bits) */
#define DPM_KARG_LOCAL 3   /* value: bytes of work-group local memory */
typedef struct dpm_kernel_arg {
  int kind;
  uint32_t size;
  uint64_t value;
} dpm_kernel_arg;

/* Submits k over `dims` (1..3) dimensions of global[] work items (work-groups of local[],
 * or the runtime's choice when local is NULL; entry 0 is OpenCL's dimension 0, the one
 * get_global_id(0) counts) after every event of deps, with args[0..nargs)
 * as its arguments. *out = the submission's event (free with dpm_event_free). The kernel
 * reads and writes what the pointers address until the event completes: the caller keeps
 * that memory alive until then. */
int dpm_submit(dpm_queue *q, const dpm_kernel *k, const dpm_kernel_arg *args, size_t nargs, uint32_t dims,
               const uint64_t *global, const uint64_t *local, const dpm_event *const *deps, size_t ndeps,
               dpm_event **out);

/* As dpm_submit after no event, then waits for the kernel; no event is made for the
 * caller. On an out-of-order queue without profiling the kernel runs on an in-order queue
 * of the same context and device that the queue keeps for these waits (made at the first
 * one): waiting on a whole in-order queue is cheaper in the runtime than waiting on one
 * event, and a submission after no event has no order to keep with the queue's others.
 * Returns once the kernel completed (or with its error); the memory the pointers address
 * must stay allocated until then. */
int dpm_submit_wait(dpm_queue *q, const dpm_kernel *k, const dpm_kernel_arg *args, size_t nargs, uint32_t dims,
                    const uint64_t *global, const uint64_t *local);

/* Asynchronous queue operations, each after every event of deps, each giving its event: a
 * copy, a fill of count elements of a pattern of pattern_size (1, 2, 4, 8 or 16) bytes, and
 * a barrier (every earlier submission when ndeps is 0). Memory stays the caller's to keep
 * alive until the event completes. */
int dpm_memcpy_async(dpm_queue *q, void *dst, const void *src, size_t nbytes, const dpm_event *const *deps,
                     size_t ndeps, dpm_event **out);
int dpm_fill_async(dpm_queue *q, void *dst, const void *pattern, size_t pattern_size, size_t count,
                   const dpm_event *const *deps, size_t ndeps, dpm_event **out);
int dpm_barrier(dpm_queue *q, const dpm_event *const *deps, size_t ndeps, dpm_event **out);

/* Calls done(user, status) once, when the event completes (status 0) or fails (non-zero),
 * from a runtime thread, or from this thread when it has completed already. done must not
 * call back into the SYCL or OpenCL runtime (a blocking call there may deadlock) and must
 * return quickly. On a failure status nothing is called. */
int dpm_event_on_complete(const dpm_event *e, void (*done)(void *user, int status), void *user);

/* Waits for the event; its failure, or an asynchronous error of q, is the status. */
int dpm_event_wait(dpm_queue *q, const dpm_event *e);

/* *out = 0 submitted, 1 running, 2 complete. */
int dpm_event_status(const dpm_event *e, int *out);

/* Nanosecond timestamps of a completed event of a profiling queue (else DPM_ERR_SYCL). */
int dpm_event_profiling(const dpm_event *e, uint64_t *submit, uint64_t *start, uint64_t *end);

/* Frees an event handle (the work goes on). NULL is ignored. */
void dpm_event_free(dpm_event *e);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DPCTL_MEMORY_SHIM_H */
