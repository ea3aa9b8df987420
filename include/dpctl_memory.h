/*
 * dpctl_memory.h: the native hand-off of dpctl-memory's memory objects to other Node
 * addons (C or C++, over Node-API). Header only, and stateless: include it in as many
 * files of an addon as you like, call dpctl_memory_get().
 *
 *   #include <node_api.h>
 *   #include "dpctl_memory.h"   // node_modules/dpctl-memory/include
 *
 *   dpctl_memory_info info;
 *   dpctl_memory_ref ref;                // or NULL below if you need none
 *   int status = dpctl_memory_get(env, argv[0], &info, &ref);
 *   if (status != DPCTL_MEMORY_OK) ... // not a memory object, freed, ...
 *   ... use info.pointer, info.nbytes, info.kind, info.sycl_queue / info.cuda_stream ...
 *   dpctl_memory_release(ref);           // from any thread and any file, once, when done
 *
 * How objects are recognised: every memory object has a getter,
 * `__dpctl_memory_handoff__`, that returns an external value made by dpctl-memory's own
 * addon and marked with napi_type_tag_object(DPCTL_MEMORY_TYPE_TAG). The memory object
 * itself carries a type tag of its own, which the value names; JS code can make neither
 * (it cannot type-tag), so an object that merely looks like memory (duck typing), or
 * carries a value read from another object, is refused with DPCTL_MEMORY_NOT_MEMORY. The
 * value names the memory, not a copy of it: once the object is freed (free() /
 * Symbol.dispose), any of its values says DPCTL_MEMORY_FREED, never a dangling pointer.
 *
 * Lifetimes: `info` is valid while the memory object is reachable from JS and not freed
 * (for the call that received it). A reference (`ref`) keeps the allocation, its queue
 * and (SYCL) context and device, or (CUDA) context and stream, alive until
 * dpctl_memory_release(ref), even if JS frees the object or drops it meanwhile: take one
 * for any use that outlives the call (a kernel still running when the call returns, a
 * worker thread). A reference is a plain value (copy it, store it, pass it to another
 * file or thread): it names the dpctl-memory that made it and an id there, never a
 * pointer, so a reference read after its release, or released again, is
 * DPCTL_MEMORY_RELEASED, not a crash. Release it once, from any thread.
 *
 * Several copies of dpctl-memory in one process (npm installs a second when two
 * dependents need incompatible versions) are each served: every hand-off value and every
 * reference carries the function table of the copy that made it, so one addon takes,
 * reads and releases the memory of either. The header keeps no state of its own (no
 * `static` variable), so nothing depends on which file or copy was seen first. A copy
 * that speaks another version of this API gives DPCTL_MEMORY_VERSION.
 *
 * Needs Node-API 8 (napi_type_tag_object; Node >= 14.8 / 12.19).
 */
#ifndef DPCTL_MEMORY_H
#define DPCTL_MEMORY_H

#include <node_api.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header's structs and functions; a dpctl-memory that speaks another
 * gives DPCTL_MEMORY_VERSION (version 1 kept the table in a per-file `static` and made
 * references raw pointers: rebuild an addon made with it). */
#define DPCTL_MEMORY_API_VERSION 2
#define DPCTL_MEMORY_HANDOFF_MAGIC 0x44504d48u /* 'DPMH' */

/* The type tag of the hand-off values (a UUID, fixed for this API). */
static const napi_type_tag DPCTL_MEMORY_TYPE_TAG = {0x6470637463746c6dULL, 0x656d6f7279000001ULL};

/* Statuses. */
#define DPCTL_MEMORY_OK 0
#define DPCTL_MEMORY_NOT_MEMORY 1 /* not a dpctl-memory memory object (or not an object) */
#define DPCTL_MEMORY_FREED 2      /* the object was freed (free() / Symbol.dispose) */
#define DPCTL_MEMORY_VERSION 3    /* the loaded dpctl-memory speaks another version */
#define DPCTL_MEMORY_NAPI 4       /* a Node-API call failed (an exception may be pending) */
#define DPCTL_MEMORY_ARG 5        /* a NULL argument, or an empty reference read */
#define DPCTL_MEMORY_RELEASED 6   /* the reference was released already (or never made) */

/* USM kinds (dpctl's values). */
#define DPCTL_MEMORY_KIND_DEVICE 1
#define DPCTL_MEMORY_KIND_SHARED 2
#define DPCTL_MEMORY_KIND_HOST 3

/* Backends. */
#define DPCTL_MEMORY_BACKEND_SYCL 1
#define DPCTL_MEMORY_BACKEND_CUDA 2

/* What a memory object is. Every pointer stays valid while the object (or a reference)
 * keeps the memory. */
typedef struct dpctl_memory_info {
  uint32_t struct_size;   /* sizeof(dpctl_memory_info) of the library that filled it */
  void *pointer;          /* the USM / device address (CPU devices: host-addressable) */
  uint64_t nbytes;
  int32_t kind;           /* DPCTL_MEMORY_KIND_* */
  int32_t read_only;      /* 1: made from a read-only interface: never write through it */
  int32_t backend;        /* DPCTL_MEMORY_BACKEND_* */
  int32_t host_accessible; /* 1: the CPU may read and write `pointer` directly */
  char filter_string[64]; /* the device, as SYCL filter strings write it: "opencl:cpu:0" */
  /* SYCL: sycl::queue *, sycl::context *, sycl::device * of the memory's queue (objects of
   * the SYCL runtime dpctl-memory loaded; use them only with that libsycl). NULL on CUDA. */
  void *sycl_queue;
  void *sycl_context;
  void *sycl_device;
  /* CUDA: CUcontext and CUstream of the memory's queue, and the device ordinal (-1 on
   * SYCL). Make the context current (cuCtxPushCurrent) before using the stream. */
  void *cuda_context;
  void *cuda_stream;
  int32_t cuda_device;
  int32_t reserved;
} dpctl_memory_info;

typedef struct dpctl_memory_api dpctl_memory_api;

/* A reference: the table of the dpctl-memory that made it and its id there. Copy it
 * freely; `api == NULL` is no reference (what a failed dpctl_memory_get leaves, and
 * DPCTL_MEMORY_REF_NONE). Change neither field. */
typedef struct dpctl_memory_ref {
  const dpctl_memory_api *api;
  uint64_t id;
} dpctl_memory_ref;

#ifdef __cplusplus
#define DPCTL_MEMORY_REF_NONE (dpctl_memory_ref{NULL, 0})
#else
#define DPCTL_MEMORY_REF_NONE ((dpctl_memory_ref){NULL, 0})
#endif

/* The functions a dpctl-memory addon provides, reached through the hand-off value. */
struct dpctl_memory_api {
  uint32_t version; /* DPCTL_MEMORY_API_VERSION it implements */
  uint32_t struct_size;
  /* Checks that `object` is the memory object `record` was made for, fills *info and,
   * when id is not NULL, makes a reference: its id in *id. A status. */
  int (*get)(napi_env env, napi_value object, const void *record, dpctl_memory_info *info, uint64_t *id);
  /* Fills *info from a live reference: DPCTL_MEMORY_OK or DPCTL_MEMORY_RELEASED. */
  int (*ref_info)(uint64_t id, dpctl_memory_info *info);
  /* Releases a reference (any thread): DPCTL_MEMORY_OK or DPCTL_MEMORY_RELEASED. */
  int (*release)(uint64_t id);
};

/* What the external hand-off value points to. `magic` and `version` stay the first two
 * fields in every version, so any header can tell a version it does not speak. */
typedef struct dpctl_memory_handoff {
  uint32_t magic;   /* DPCTL_MEMORY_HANDOFF_MAGIC */
  uint32_t version; /* DPCTL_MEMORY_API_VERSION */
  const dpctl_memory_api *api;
  const void *record;
} dpctl_memory_handoff;

/* Reads the memory object `value`: fills *info and, when ref is not NULL, *ref with a new
 * reference (release it with dpctl_memory_release; on any status but DPCTL_MEMORY_OK,
 * *ref is DPCTL_MEMORY_REF_NONE). Call it on the JS thread, inside a Node-API callback. */
static inline int dpctl_memory_get(napi_env env, napi_value value, dpctl_memory_info *info, dpctl_memory_ref *ref) {
  napi_valuetype type;
  napi_value handoff;
  bool tagged = false;
  bool has = false;
  void *data = NULL;
  const dpctl_memory_handoff *h;
  uint64_t id = 0;
  int status;
  if (ref != NULL) {
    ref->api = NULL;
    ref->id = 0;
  }
  if (env == NULL || value == NULL || info == NULL) return DPCTL_MEMORY_ARG;
  if (napi_typeof(env, value, &type) != napi_ok) return DPCTL_MEMORY_NAPI;
  if (type != napi_object) return DPCTL_MEMORY_NOT_MEMORY;
  if (napi_has_named_property(env, value, "__dpctl_memory_handoff__", &has) != napi_ok) return DPCTL_MEMORY_NAPI;
  if (!has) return DPCTL_MEMORY_NOT_MEMORY;
  if (napi_get_named_property(env, value, "__dpctl_memory_handoff__", &handoff) != napi_ok) return DPCTL_MEMORY_NAPI;
  if (napi_typeof(env, handoff, &type) != napi_ok) return DPCTL_MEMORY_NAPI;
  if (type != napi_external) return DPCTL_MEMORY_NOT_MEMORY;
  if (napi_check_object_type_tag(env, handoff, &DPCTL_MEMORY_TYPE_TAG, &tagged) != napi_ok) return DPCTL_MEMORY_NAPI;
  if (!tagged) return DPCTL_MEMORY_NOT_MEMORY;
  if (napi_get_value_external(env, handoff, &data) != napi_ok || data == NULL) return DPCTL_MEMORY_NAPI;
  h = (const dpctl_memory_handoff *)data;
  if (h->magic != DPCTL_MEMORY_HANDOFF_MAGIC) return DPCTL_MEMORY_NOT_MEMORY;
  if (h->version != DPCTL_MEMORY_API_VERSION || h->api == NULL || h->api->version != DPCTL_MEMORY_API_VERSION) {
    return DPCTL_MEMORY_VERSION;
  }
  memset(info, 0, sizeof *info);
  status = h->api->get(env, value, h->record, info, ref != NULL ? &id : NULL);
  if (status == DPCTL_MEMORY_OK && ref != NULL) {
    ref->api = h->api;
    ref->id = id;
  }
  return status;
}

/* What a reference holds (any thread, any file): DPCTL_MEMORY_OK, DPCTL_MEMORY_RELEASED,
 * or DPCTL_MEMORY_ARG for no reference. */
static inline int dpctl_memory_ref_info(dpctl_memory_ref ref, dpctl_memory_info *info) {
  if (info == NULL) return DPCTL_MEMORY_ARG;
  memset(info, 0, sizeof *info);
  if (ref.api == NULL) return DPCTL_MEMORY_ARG;
  return ref.api->ref_info(ref.id, info);
}

/* Releases a reference from dpctl_memory_get (any thread, any file): DPCTL_MEMORY_OK, or
 * DPCTL_MEMORY_RELEASED if it was released already. No reference (DPCTL_MEMORY_REF_NONE)
 * is DPCTL_MEMORY_OK, like free(NULL). */
static inline int dpctl_memory_release(dpctl_memory_ref ref) {
  if (ref.api == NULL) return DPCTL_MEMORY_OK;
  return ref.api->release(ref.id);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DPCTL_MEMORY_H */
