/*
 * dpctl_memory.h: the native hand-off of dpctl-memory's memory objects to other Node
 * addons (C or C++, over Node-API). Header only: include it, call dpctl_memory_get().
 *
 *   #include <node_api.h>
 *   #include "dpctl_memory.h"   // node_modules/dpctl-memory/include
 *
 *   dpctl_memory_info info;
 *   dpctl_memory_ref *ref = NULL;
 *   int status = dpctl_memory_get(env, argv[0], &info, &ref);
 *   if (status != DPCTL_MEMORY_OK) ... // not a memory object, freed, ...
 *   ... use info.pointer, info.nbytes, info.kind, info.sycl_queue / info.cuda_stream ...
 *   dpctl_memory_release(ref);           // from any thread, once, when done
 *
 * How objects are recognised: every memory object has a getter,
 * `__dpctl_memory_handoff__`, that returns an external value made by dpctl-memory's own
 * addon and marked with napi_type_tag_object(DPCTL_MEMORY_TYPE_TAG). JS code cannot make
 * or forge such a value (it cannot type-tag), so an object that merely looks like memory
 * (duck typing) is refused with DPCTL_MEMORY_NOT_MEMORY. The getter of a freed object
 * returns a tagged value that says so: DPCTL_MEMORY_FREED, never a dangling pointer.
 *
 * Lifetimes: `info` is valid while the memory object is reachable from JS and not freed
 * (for the call that received it). A reference (`ref`) keeps the allocation, its queue
 * and (SYCL) context and device, or (CUDA) context and stream, alive until
 * dpctl_memory_release(ref), even if JS frees the object or drops it meanwhile: take one
 * for any use that outlives the call (a kernel still running when the call returns, a
 * worker thread). Release it exactly once, from any thread.
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

/* The version of this header's structs; dpctl-memory refuses none older than itself
 * claims to support (see dpctl_memory_handoff.version). */
#define DPCTL_MEMORY_API_VERSION 1
#define DPCTL_MEMORY_HANDOFF_MAGIC 0x44504d48u /* 'DPMH' */

/* The type tag of the hand-off values (a UUID, fixed for this API). */
static const napi_type_tag DPCTL_MEMORY_TYPE_TAG = {0x6470637463746c6dULL, 0x656d6f7279000001ULL};

/* Statuses. */
#define DPCTL_MEMORY_OK 0
#define DPCTL_MEMORY_NOT_MEMORY 1 /* not a dpctl-memory memory object (or not an object) */
#define DPCTL_MEMORY_FREED 2      /* the object was freed (free() / Symbol.dispose) */
#define DPCTL_MEMORY_VERSION 3    /* the loaded dpctl-memory speaks another version */
#define DPCTL_MEMORY_NAPI 4       /* a Node-API call failed (an exception may be pending) */
#define DPCTL_MEMORY_ARG 5        /* a NULL argument */

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

typedef struct dpctl_memory_ref dpctl_memory_ref;

/* The functions dpctl-memory's addon provides, reached through the hand-off value. */
typedef struct dpctl_memory_api {
  uint32_t version; /* DPCTL_MEMORY_API_VERSION it implements */
  uint32_t struct_size;
  /* Fills *info from a hand-off record: DPCTL_MEMORY_OK or DPCTL_MEMORY_FREED. */
  int (*info)(const void *record, dpctl_memory_info *info);
  /* A new reference to the record's memory (NULL for a freed record). */
  dpctl_memory_ref *(*retain)(const void *record);
  /* Fills *info from a reference. */
  int (*ref_info)(const dpctl_memory_ref *ref, dpctl_memory_info *info);
  /* Releases a reference (from any thread, once). */
  void (*release)(dpctl_memory_ref *ref);
} dpctl_memory_api;

/* What the external hand-off value points to. */
typedef struct dpctl_memory_handoff {
  uint32_t magic;   /* DPCTL_MEMORY_HANDOFF_MAGIC */
  uint32_t version; /* DPCTL_MEMORY_API_VERSION */
  const dpctl_memory_api *api;
  const void *record;
} dpctl_memory_handoff;

/* The api of the last hand-off seen (for dpctl_memory_release). One dpctl-memory addon
 * per process serves every environment, so one table is enough. */
static const dpctl_memory_api *dpctl_memory_api_seen = NULL;

/* Reads the memory object `value`: fills *info and, when ref is not NULL, *ref with a new
 * reference (release it with dpctl_memory_release). Call it on the JS thread, inside a
 * Node-API callback. */
static inline int dpctl_memory_get(napi_env env, napi_value value, dpctl_memory_info *info, dpctl_memory_ref **ref) {
  napi_valuetype type;
  napi_value handoff;
  bool tagged = false;
  bool has = false;
  void *data = NULL;
  const dpctl_memory_handoff *h;
  int status;
  if (env == NULL || value == NULL || info == NULL) return DPCTL_MEMORY_ARG;
  if (ref != NULL) *ref = NULL;
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
  dpctl_memory_api_seen = h->api;
  memset(info, 0, sizeof *info);
  status = h->api->info(h->record, info);
  if (status != DPCTL_MEMORY_OK) return status;
  if (ref != NULL) {
    *ref = h->api->retain(h->record);
    if (*ref == NULL) return DPCTL_MEMORY_FREED;
  }
  return DPCTL_MEMORY_OK;
}

/* What a reference holds (any thread). */
static inline int dpctl_memory_ref_info(const dpctl_memory_ref *ref, dpctl_memory_info *info) {
  if (ref == NULL || info == NULL || dpctl_memory_api_seen == NULL) return DPCTL_MEMORY_ARG;
  memset(info, 0, sizeof *info);
  return dpctl_memory_api_seen->ref_info(ref, info);
}

/* Releases a reference from dpctl_memory_get (any thread; NULL is ignored). */
static inline void dpctl_memory_release(dpctl_memory_ref *ref) {
  if (ref != NULL && dpctl_memory_api_seen != NULL) dpctl_memory_api_seen->release(ref);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DPCTL_MEMORY_H */
