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
 */
#include <node_api.h>
#include <stdio.h>
#include <string.h>

#include "dpctl_memory.h"

static dpctl_memory_ref *held = NULL;

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

static napi_value fill(napi_env env, napi_callback_info cb) {
  napi_value argv[2];
  if (!arg(env, cb, 2, argv)) return NULL;
  uint32_t byte = 0;
  napi_get_value_uint32(env, argv[1], &byte);
  dpctl_memory_info info;
  int s = dpctl_memory_get(env, argv[0], &info, NULL);
  if (s != DPCTL_MEMORY_OK) {
    char text[64];
    snprintf(text, sizeof text, "dpctl_memory_get failed with status %d", s);
    napi_throw_error(env, NULL, text);
    return NULL;
  }
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
  held = NULL;
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
  dpctl_memory_release(held);
  held = NULL;
  return number(env, 0);
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
      {"status", NULL, status, NULL, NULL, NULL, napi_default, NULL},
      {"fill", NULL, fill, NULL, NULL, NULL, napi_default, NULL},
      {"describe", NULL, describe, NULL, NULL, NULL, napi_default, NULL},
      {"hold", NULL, hold, NULL, NULL, NULL, napi_default, NULL},
      {"heldSum", NULL, held_sum, NULL, NULL, NULL, napi_default, NULL},
      {"releaseHeld", NULL, release_held, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
