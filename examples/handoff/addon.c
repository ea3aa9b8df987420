/*
 * An example addon that takes dpctl-memory's memory objects through include/dpctl_memory.h.
 * Built by __test__/handoff.spec.mjs with the machine's C compiler against Node's own
 * headers (no node-gyp needed):
 *
 *   cc -shared -fPIC -O2 -I<node>/include/node -I../../include addon.c -o handoff.node
 *
 * fill(mem, byte): writes `byte` into every byte of host-accessible memory through the
 *   pointer, from C (on a CPU device every kind is host-accessible).
 * describe(mem): { status, nbytes, kind, backend, filterString, hasQueue, hostAccessible }.
 * hold(mem) / releaseHeld(): takes a reference that keeps the allocation alive past
 *   free() and GC, and lets it go; heldSum() reads the held memory's bytes meanwhile.
 * status(value): dpctl_memory_get's status for any value (0 ok, 1 not memory, 2 freed).
 * cudaFill(mem, byte): on CUDA memory, writes `byte` into every byte with a kernel launched
 *   through the CUDA driver on the hand-off's own context and stream (libcuda is opened
 *   at run time and the few driver types are declared here, so no CUDA headers are
 *   needed to build it); returns the bytes written once the stream is done.
 */
#include <dlfcn.h>
#include <node_api.h>
#include <stdio.h>
#include <string.h>

#include "dpctl_memory.h"

static dpctl_memory_ref held; /* zero: no reference (DPCTL_MEMORY_REF_NONE) */

static napi_value number(napi_env env, double value) {
  napi_value out;
  napi_create_double(env, value, &out);
  return out;
}

static int arg(napi_env env, napi_callback_info cb, size_t want, napi_value *argv) {
  size_t argc = want;
  if (napi_get_cb_info(env, cb, &argc, argv, NULL, NULL) != napi_ok || argc < want) {
    napi_throw_type_error(env, NULL, "missing argument");
    return 0;
  }
  return 1;
}

static napi_value status(napi_env env, napi_callback_info cb) {
  napi_value argv[1];
  if (!arg(env, cb, 1, argv)) return NULL;
  dpctl_memory_info info;
  return number(env, dpctl_memory_get(env, argv[0], &info, NULL));
}

/* The (memory, byte) arguments of fill and cudaFill: 1 with *info and *byte, or 0 with a
 * JS exception pending. */
static int memory_and_byte(napi_env env, napi_callback_info cb, dpctl_memory_info *info, uint32_t *byte) {
  napi_value argv[2];
  if (!arg(env, cb, 2, argv)) return 0;
  *byte = 0;
  napi_get_value_uint32(env, argv[1], byte);
  int s = dpctl_memory_get(env, argv[0], info, NULL);
  if (s != DPCTL_MEMORY_OK) {
    char text[64];
    snprintf(text, sizeof text, "dpctl_memory_get failed with status %d", s);
    napi_throw_error(env, NULL, text);
    return 0;
  }
  return 1;
}

static napi_value fill(napi_env env, napi_callback_info cb) {
  dpctl_memory_info info;
  uint32_t byte;
  if (!memory_and_byte(env, cb, &info, &byte)) return NULL;
  if (!info.host_accessible || info.read_only) {
    napi_throw_error(env, NULL, "this memory cannot be written from the CPU");
    return NULL;
  }
  memset(info.pointer, (int)byte, (size_t)info.nbytes);
  return number(env, (double)info.nbytes);
}

static void set(napi_env env, napi_value obj, const char *name, napi_value value) {
  napi_set_named_property(env, obj, name, value);
}

static napi_value describe(napi_env env, napi_callback_info cb) {
  napi_value argv[1];
  if (!arg(env, cb, 1, argv)) return NULL;
  dpctl_memory_info info;
  int s = dpctl_memory_get(env, argv[0], &info, NULL);
  napi_value out, text, flag;
  napi_create_object(env, &out);
  set(env, out, "status", number(env, s));
  if (s == DPCTL_MEMORY_OK) {
    set(env, out, "nbytes", number(env, (double)info.nbytes));
    set(env, out, "kind", number(env, info.kind));
    set(env, out, "backend", number(env, info.backend));
    napi_create_string_utf8(env, info.filter_string, NAPI_AUTO_LENGTH, &text);
    set(env, out, "filterString", text);
    napi_get_boolean(env, info.sycl_queue != NULL || info.cuda_stream != NULL, &flag);
    set(env, out, "hasQueue", flag);
    napi_get_boolean(env, info.host_accessible != 0, &flag);
    set(env, out, "hostAccessible", flag);
  }
  return out;
}

static napi_value hold(napi_env env, napi_callback_info cb) {
  napi_value argv[1];
  if (!arg(env, cb, 1, argv)) return NULL;
  dpctl_memory_info info;
  dpctl_memory_release(held);
  held = DPCTL_MEMORY_REF_NONE;
  return number(env, dpctl_memory_get(env, argv[0], &info, &held));
}

static napi_value held_sum(napi_env env, napi_callback_info cb) {
  (void)cb;
  dpctl_memory_info info;
  if (dpctl_memory_ref_info(held, &info) != DPCTL_MEMORY_OK || !info.host_accessible) return number(env, -1);
  double sum = 0;
  const unsigned char *p = (const unsigned char *)info.pointer;
  for (uint64_t i = 0; i < info.nbytes; i++) sum += p[i];
  return number(env, sum);
}

static napi_value release_held(napi_env env, napi_callback_info cb) {
  (void)cb;
  int s = dpctl_memory_release(held);
  held = DPCTL_MEMORY_REF_NONE;
  return number(env, s);
}

/* ---- The CUDA half: a kernel through the driver API, on the memory's context and stream. */

typedef int CUresult; /* CUDA_SUCCESS is 0 */
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUmodule;
typedef void *CUfunction;

/* fill_bytes(p, value, n): p[i] = value for i < n, one thread a byte; what NVRTC makes of
 * `if (i < n) p[i] = value;`, in PTX ISA 7.0, which the driver compiles for its GPU. */
static const char FILL_PTX[] =
    ".version 7.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry fill_bytes(.param .u64 p, .param .u32 value, .param .u64 n) {\n"
    "  .reg .pred %p<2>; .reg .b32 %r<5>; .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd2, [p]; ld.param.u32 %r1, [value]; ld.param.u64 %rd3, [n];\n"
    "  mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mul.wide.u32 %rd4, %r2, %r3;\n"
    "  mov.u32 %r4, %tid.x; cvt.u64.u32 %rd5, %r4; add.s64 %rd1, %rd4, %rd5;\n"
    "  setp.ge.u64 %p1, %rd1, %rd3; @%p1 bra DONE;\n"
    "  cvta.to.global.u64 %rd6, %rd2; add.s64 %rd7, %rd6, %rd1; st.global.u8 [%rd7], %r1;\n"
    "DONE:\n  ret;\n}\n";

static struct {
  int loaded;
  CUresult (*push)(CUcontext);
  CUresult (*pop)(CUcontext *);
  CUresult (*load)(CUmodule *, const void *);
  CUresult (*unload)(CUmodule);
  CUresult (*function)(CUfunction *, CUmodule, const char *);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                     void **, void **);
  CUresult (*sync)(CUstream);
} cu;

static const char *open_driver(void) {
  if (cu.loaded) return NULL;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) return "libcuda.so.1 (the NVIDIA driver) is not on this machine";
  /* The ABI names of the versioned entry points, as cuda.h maps them. */
  *(void **)&cu.push = dlsym(lib, "cuCtxPushCurrent_v2");
  *(void **)&cu.pop = dlsym(lib, "cuCtxPopCurrent_v2");
  *(void **)&cu.load = dlsym(lib, "cuModuleLoadData");
  *(void **)&cu.unload = dlsym(lib, "cuModuleUnload");
  *(void **)&cu.function = dlsym(lib, "cuModuleGetFunction");
  *(void **)&cu.launch = dlsym(lib, "cuLaunchKernel");
  *(void **)&cu.sync = dlsym(lib, "cuStreamSynchronize");
  if (!cu.push || !cu.pop || !cu.load || !cu.unload || !cu.function || !cu.launch || !cu.sync) {
    return "the CUDA driver lacks an entry point this example uses";
  }
  cu.loaded = 1;
  return NULL;
}

static napi_value cuda_fill(napi_env env, napi_callback_info cb) {
  dpctl_memory_info info;
  uint32_t byte;
  if (!memory_and_byte(env, cb, &info, &byte)) return NULL;
  if (info.backend != DPCTL_MEMORY_BACKEND_CUDA || info.read_only) {
    napi_throw_error(env, NULL, "cudaFill takes writable memory of a CUDA device");
    return NULL;
  }
  const char *problem = open_driver();
  if (problem != NULL) {
    napi_throw_error(env, NULL, problem);
    return NULL;
  }
  /* The memory's own context, pushed for these calls and popped after (the caller's
   * current context, if any, is left as it was); the memory's own stream, so the kernel
   * orders with dpctl-memory's work on that queue. */
  CUresult r = cu.push((CUcontext)info.cuda_context);
  if (r != 0) {
    napi_throw_error(env, NULL, "cuCtxPushCurrent failed");
    return NULL;
  }
  CUmodule module = NULL;
  CUfunction function = NULL;
  r = cu.load(&module, FILL_PTX);
  if (r == 0) r = cu.function(&function, module, "fill_bytes");
  if (r == 0) {
    unsigned long long pointer = (unsigned long long)(uintptr_t)info.pointer;
    unsigned long long n = info.nbytes;
    unsigned value = byte & 0xff;
    void *params[] = {&pointer, &value, &n};
    unsigned blocks = (unsigned)((n + 255) / 256);
    r = cu.launch(function, blocks, 1, 1, 256, 1, 1, 0, (CUstream)info.cuda_stream, params, NULL);
    if (r == 0) r = cu.sync((CUstream)info.cuda_stream);
  }
  if (module != NULL) cu.unload(module);
  CUcontext popped;
  cu.pop(&popped);
  if (r != 0) {
    char text[64];
    snprintf(text, sizeof text, "a CUDA driver call failed with %d", r);
    napi_throw_error(env, NULL, text);
    return NULL;
  }
  return number(env, (double)info.nbytes);
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
      {"status", NULL, status, NULL, NULL, NULL, napi_default, NULL},
      {"fill", NULL, fill, NULL, NULL, NULL, napi_default, NULL},
      {"describe", NULL, describe, NULL, NULL, NULL, napi_default, NULL},
      {"hold", NULL, hold, NULL, NULL, NULL, napi_default, NULL},
      {"heldSum", NULL, held_sum, NULL, NULL, NULL, napi_default, NULL},
      {"releaseHeld", NULL, release_held, NULL, NULL, NULL, napi_default, NULL},
      {"cudaFill", NULL, cuda_fill, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
