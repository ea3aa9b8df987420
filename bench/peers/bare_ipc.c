/*
 * The CUDA driver's IPC open and close, and its host registration, called from Node with
 * no library between: a Node-API module for bench/ipc-bare-child.js (a Node child doing
 * exactly what a CuPy child does) and bench/register-bare.js (`registerHost` against the
 * driver's call on the same buffer in the same process). Not part of the addon. Build (a
 * machine with Node's headers; the module loads libcuda.so.1 at run time, so it builds
 * without CUDA):
 *   gcc -O2 -shared -fPIC -I"$(dirname "$(command -v node)")/../include/node" \
 *       -o bench/peers/bare_ipc.node bench/peers/bare_ipc.c -ldl
 * init() makes the first device's primary context current; open(Uint8Array of 64 bytes)
 * returns the mapped address (a Number); range(address) returns the size of the mapping
 * that holds it (`cuMemGetAddressRange`, which our open also calls); close(address);
 * register(typedArray, flags) and unregister(typedArray) (`cuMemHostRegister` of the view's
 * bytes and `cuMemHostUnregister`); ourDriverCalls(Uint8Array of 64 bytes): in one call,
 * every driver and Node-API call an open + free of ours makes, none of our own code
 * between (`cuCtxGetCurrent`, `cuIpcOpenMemHandle`, `cuMemGetAddressRange`, the mapping's
 * report to V8 and its withdrawal, `cuCtxGetCurrent`, `cuIpcCloseMemHandle`), for
 * bench/ipc-cold.js. Each throws on a failed call.
 */
#include <dlfcn.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct { char reserved[64]; } ipc_handle;
typedef int (*cu_init_t)(unsigned);
typedef int (*cu_device_get_t)(int *, int);
typedef int (*cu_retain_t)(void **, int);
typedef int (*cu_set_current_t)(void *);
typedef int (*cu_open_t)(uint64_t *, ipc_handle, unsigned);
typedef int (*cu_close_t)(uint64_t);
typedef int (*cu_range_t)(uint64_t *, size_t *, uint64_t);
typedef int (*cu_register_t)(void *, size_t, unsigned);
typedef int (*cu_get_current_t)(void **);
typedef int (*cu_unregister_t)(void *);

static cu_open_t ipc_open;
static cu_close_t ipc_close;
static cu_range_t address_range;
static cu_register_t host_register;
static cu_unregister_t host_unregister;
static cu_get_current_t get_current;

static napi_value fail(napi_env env, const char *call, int status) {
  char text[96];
  snprintf(text, sizeof text, "%s failed: CUDA error %d", call, status);
  napi_throw_error(env, NULL, text);
  return NULL;
}

static napi_value js_init(napi_env env, napi_callback_info info) {
  (void)info;
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cuda) return fail(env, "dlopen libcuda.so.1", -1);
  cu_init_t init = (cu_init_t)dlsym(cuda, "cuInit");
  cu_device_get_t device_get = (cu_device_get_t)dlsym(cuda, "cuDeviceGet");
  cu_retain_t retain = (cu_retain_t)dlsym(cuda, "cuDevicePrimaryCtxRetain");
  cu_set_current_t set_current = (cu_set_current_t)dlsym(cuda, "cuCtxSetCurrent");
  ipc_open = (cu_open_t)dlsym(cuda, "cuIpcOpenMemHandle_v2");
  ipc_close = (cu_close_t)dlsym(cuda, "cuIpcCloseMemHandle");
  address_range = (cu_range_t)dlsym(cuda, "cuMemGetAddressRange_v2");
  host_register = (cu_register_t)dlsym(cuda, "cuMemHostRegister_v2");
  host_unregister = (cu_unregister_t)dlsym(cuda, "cuMemHostUnregister");
  get_current = (cu_get_current_t)dlsym(cuda, "cuCtxGetCurrent");
  if (!init || !device_get || !retain || !set_current || !ipc_open || !ipc_close || !address_range || !host_register ||
      !host_unregister || !get_current) {
    return fail(env, "dlsym", -1);
  }
  int device, status;
  void *context;
  if ((status = init(0))) return fail(env, "cuInit", status);
  if ((status = device_get(&device, 0))) return fail(env, "cuDeviceGet", status);
  if ((status = retain(&context, device))) return fail(env, "cuDevicePrimaryCtxRetain", status);
  if ((status = set_current(context))) return fail(env, "cuCtxSetCurrent", status);
  return NULL;
}

/* The 64-byte handle argument of open and ourDriverCalls; false (a TypeError thrown) where there is none. */
static int handle_arg(napi_env env, napi_callback_info info, ipc_handle *handle) {
  size_t argc = 1;
  napi_value arg;
  napi_typedarray_type type;
  size_t length;
  void *data;
  if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_typedarray_info(env, arg, &type, &length, &data, NULL, NULL) != napi_ok || type != napi_uint8_array ||
      length != 64) {
    napi_throw_type_error(env, NULL, "a Uint8Array of 64 bytes is needed");
    return 0;
  }
  memcpy(handle->reserved, data, sizeof handle->reserved);
  return 1;
}

static napi_value js_open(napi_env env, napi_callback_info info) {
  ipc_handle handle;
  napi_value result;
  if (!handle_arg(env, info, &handle)) return NULL;
  uint64_t address = 0;
  int status = ipc_open(&address, handle, 1 /* CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS */);
  if (status) return fail(env, "cuIpcOpenMemHandle", status);
  napi_create_double(env, (double)address, &result);
  return result;
}

static napi_value js_our_driver_calls(napi_env env, napi_callback_info info) {
  ipc_handle handle;
  void *context;
  uint64_t address = 0, base;
  size_t size;
  int64_t reported;
  int status;
  if (!handle_arg(env, info, &handle)) return NULL;
  if ((status = get_current(&context))) return fail(env, "cuCtxGetCurrent", status);
  if ((status = ipc_open(&address, handle, 1))) return fail(env, "cuIpcOpenMemHandle", status);
  if ((status = address_range(&base, &size, address))) {
    ipc_close(address);
    return fail(env, "cuMemGetAddressRange", status);
  }
  napi_adjust_external_memory(env, (int64_t)size, &reported);
  napi_adjust_external_memory(env, -(int64_t)size, &reported);
  if ((status = get_current(&context))) {
    ipc_close(address);
    return fail(env, "cuCtxGetCurrent", status);
  }
  if ((status = ipc_close(address))) return fail(env, "cuIpcCloseMemHandle", status);
  return NULL;
}

/* The address argument of range and close; false (a TypeError thrown) where there is none. */
static int address_arg(napi_env env, napi_callback_info info, uint64_t *address) {
  size_t argc = 1;
  napi_value arg;
  double value;
  if (napi_get_cb_info(env, info, &argc, &arg, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_double(env, arg, &value) != napi_ok) {
    napi_throw_type_error(env, NULL, "an address is needed");
    return 0;
  }
  *address = (uint64_t)value;
  return 1;
}

static napi_value js_range(napi_env env, napi_callback_info info) {
  uint64_t address, base;
  size_t size;
  napi_value result;
  if (!address_arg(env, info, &address)) return NULL;
  int status = address_range(&base, &size, address);
  if (status) return fail(env, "cuMemGetAddressRange", status);
  napi_create_double(env, (double)size, &result);
  return result;
}

static napi_value js_close(napi_env env, napi_callback_info info) {
  uint64_t address;
  if (!address_arg(env, info, &address)) return NULL;
  int status = ipc_close(address);
  if (status) return fail(env, "cuIpcCloseMemHandle", status);
  return NULL;
}

/* The bytes of the typed array argument 0, and the unsigned argument 1 (0 if absent). */
static int view_arg(napi_env env, napi_callback_info info, void **data, size_t *nbytes, uint32_t *flags) {
  size_t argc = 2;
  napi_value args[2];
  napi_typedarray_type type;
  *flags = 0;
  if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_typedarray_info(env, args[0], &type, nbytes, data, NULL, NULL) != napi_ok ||
      type != napi_uint8_array || (argc > 1 && napi_get_value_uint32(env, args[1], flags) != napi_ok)) {
    napi_throw_type_error(env, NULL, "a Uint8Array (and flags) are needed");
    return 0;
  }
  return 1;
}

static napi_value js_register(napi_env env, napi_callback_info info) {
  void *data;
  size_t nbytes;
  uint32_t flags;
  if (!view_arg(env, info, &data, &nbytes, &flags)) return NULL;
  int status = host_register(data, nbytes, flags);
  if (status) return fail(env, "cuMemHostRegister", status);
  return NULL;
}

static napi_value js_unregister(napi_env env, napi_callback_info info) {
  void *data;
  size_t nbytes;
  uint32_t flags;
  if (!view_arg(env, info, &data, &nbytes, &flags)) return NULL;
  int status = host_unregister(data);
  if (status) return fail(env, "cuMemHostUnregister", status);
  return NULL;
}

NAPI_MODULE_INIT() {
  static const struct { const char *name; napi_callback fn; } functions[] = {
      {"init", js_init},   {"open", js_open},         {"range", js_range},
      {"close", js_close}, {"register", js_register}, {"unregister", js_unregister},
      {"ourDriverCalls", js_our_driver_calls}};
  for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) {
    napi_value fn;
    napi_create_function(env, functions[i].name, NAPI_AUTO_LENGTH, functions[i].fn, NULL, &fn);
    napi_set_named_property(env, exports, functions[i].name, fn);
  }
  return exports;
}
