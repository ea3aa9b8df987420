/* The Node-API floor of a zero-copy view (bench/napi-floor.js builds it with cc against
 * the running Node's headers): an external ArrayBuffer over existing bytes, with a
 * finalizer and its hint (as the addon's lease), then detached, as `buffer` and `free()`
 * must. No allocation of the bytes: only what Node-API itself costs. */
#include <node_api.h>
#include <stdlib.h>

static char block[1 << 20];

static void finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)data;
  free(hint);
}

/* view(length): an external ArrayBuffer over the first `length` bytes of `block`. */
static napi_value view(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  uint32_t length = 0;
  napi_value buffer = NULL;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_uint32(env, argv[0], &length) != napi_ok || length > sizeof block) {
    napi_throw_error(env, NULL, "view(length): a length of at most 1 MiB");
    return NULL;
  }
  void *hint = malloc(16);
  if (hint == NULL || napi_create_external_arraybuffer(env, block, length, finalize, hint, &buffer) != napi_ok) {
    free(hint);
    napi_throw_error(env, NULL, "napi_create_external_arraybuffer failed");
    return NULL;
  }
  return buffer;
}

/* detach(buffer) */
static napi_value detach(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_detach_arraybuffer(env, argv[0]) != napi_ok) {
    napi_throw_error(env, NULL, "detach(buffer): not a detachable ArrayBuffer");
  }
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor calls[] = {
    {"view", NULL, view, NULL, NULL, NULL, napi_default, NULL},
    {"detach", NULL, detach, NULL, NULL, NULL, napi_default, NULL},
  };
  if (napi_define_properties(env, exports, 2, calls) != napi_ok) return NULL;
  return exports;
}
