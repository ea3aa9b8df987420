//! The event-loop side of the UCX transport: a libuv poll handle on the worker's event fd
//! in this environment's loop, whose callback calls one JS function (the transport's
//! drain, `lib/transport.js`) through `napi_make_callback`, so that microtasks run and a
//! throw is reported as uncaught, as for any native callback. libuv's functions are
//! Node's own, resolved from the process (`dlsym`) once; the handle is referenced (keeps
//! the loop alive) only while the transport has work (`set_active`), and it never spins:
//! libuv waits on the fd.

use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::OnceLock;

use napi::{sys, Env, JsValue};

/// `UV_POLL` of `uv_handle_type`, and `UV_READABLE`.
const UV_POLL: c_int = 8;
const UV_READABLE: c_int = 1;

type PollCb = unsafe extern "C" fn(*mut c_void, c_int, c_int);
type CloseCb = unsafe extern "C" fn(*mut c_void);

struct Uv {
    handle_size: unsafe extern "C" fn(c_int) -> usize,
    poll_init: unsafe extern "C" fn(*mut c_void, *mut c_void, c_int) -> c_int,
    poll_start: unsafe extern "C" fn(*mut c_void, c_int, PollCb) -> c_int,
    poll_stop: unsafe extern "C" fn(*mut c_void) -> c_int,
    close: unsafe extern "C" fn(*mut c_void, Option<CloseCb>),
    ref_: unsafe extern "C" fn(*mut c_void),
    unref: unsafe extern "C" fn(*mut c_void),
    set_data: unsafe extern "C" fn(*mut c_void, *mut c_void),
    get_data: unsafe extern "C" fn(*const c_void) -> *mut c_void,
}

fn uv() -> Result<&'static Uv, String> {
    static UV: OnceLock<Result<Uv, String>> = OnceLock::new();
    UV.get_or_init(|| {
        let this = libloading::os::unix::Library::this();
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: libuv's exported function of this name, whose signature (uv.h)
                // is the field's type.
                *unsafe { this.get($name) }.map_err(|e| format!("libuv symbol missing from the process: {e:?}"))?
            };
        }
        Ok(Uv {
            handle_size: sym!(b"uv_handle_size"),
            poll_init: sym!(b"uv_poll_init"),
            poll_start: sym!(b"uv_poll_start"),
            poll_stop: sym!(b"uv_poll_stop"),
            close: sym!(b"uv_close"),
            ref_: sym!(b"uv_ref"),
            unref: sym!(b"uv_unref"),
            set_data: sym!(b"uv_handle_set_data"),
            get_data: sym!(b"uv_handle_get_data"),
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// What the poll callback needs: the environment and the JS function to call.
struct Target {
    env: sys::napi_env,
    drain: sys::napi_ref,
    context: sys::napi_async_context,
}

/// A poll handle on an fd, calling a JS function when it is readable.
pub struct FdWatch {
    handle: *mut c_void,
    active: bool,
}

unsafe extern "C" fn on_readable(handle: *mut c_void, _status: c_int, _events: c_int) {
    let Ok(uv) = uv() else { return };
    // SAFETY: the handle's data is its `Target`, set before the poll started and freed
    // only in the close callback.
    let target = unsafe { &*((uv.get_data)(handle) as *const Target) };
    // SAFETY: Node-API calls on the loop thread of `env`, inside a handle scope. The
    // receiver is the global object: `napi_make_callback` needs an object.
    unsafe {
        let mut scope = ptr::null_mut();
        if sys::napi_open_handle_scope(target.env, &mut scope) != sys::Status::napi_ok {
            return;
        }
        let mut func = ptr::null_mut();
        let mut recv = ptr::null_mut();
        let mut result = ptr::null_mut();
        if sys::napi_get_reference_value(target.env, target.drain, &mut func) == sys::Status::napi_ok
            && !func.is_null()
            && sys::napi_get_global(target.env, &mut recv) == sys::Status::napi_ok
            && sys::napi_make_callback(target.env, target.context, recv, func, 0, ptr::null(), &mut result)
                == sys::Status::napi_pending_exception
        {
            let mut error = ptr::null_mut();
            if sys::napi_get_and_clear_last_exception(target.env, &mut error) == sys::Status::napi_ok {
                sys::napi_fatal_exception(target.env, error);
            }
        }
        sys::napi_close_handle_scope(target.env, scope);
    }
}

unsafe extern "C" fn on_closed(handle: *mut c_void) {
    let Ok(uv) = uv() else { return };
    // SAFETY: the `Target` boxed in `FdWatch::new`, and the handle's memory allocated
    // there; libuv is done with both once the close callback runs.
    unsafe {
        let target = (uv.get_data)(handle) as *mut Target;
        if !target.is_null() {
            drop(Box::from_raw(target));
        }
        libc::free(handle);
    }
}

impl FdWatch {
    /// Watches `fd` in `env`'s loop, calling `drain` (a JS function) when it is readable.
    /// The handle starts unreferenced.
    pub fn new(env: &Env, fd: c_int, drain: &napi::bindgen_prelude::Unknown) -> Result<FdWatch, String> {
        let uv = uv()?;
        let raw = env.raw();
        let uv_loop = env.get_uv_event_loop().map_err(|e| e.to_string())? as *mut c_void;
        // SAFETY: Node-API calls on this environment's thread with live values.
        let target = unsafe {
            let mut reference = ptr::null_mut();
            if sys::napi_create_reference(raw, drain.raw(), 1, &mut reference) != sys::Status::napi_ok {
                return Err("napi_create_reference failed".into());
            }
            let mut name = ptr::null_mut();
            sys::napi_create_string_utf8(raw, c"dpctl-memory:ucx".as_ptr(), 16, &mut name);
            let mut context = ptr::null_mut();
            if sys::napi_async_init(raw, ptr::null_mut(), name, &mut context) != sys::Status::napi_ok {
                return Err("napi_async_init failed".into());
            }
            Box::new(Target { env: raw, drain: reference, context })
        };
        // SAFETY: a block of the size libuv says its poll handle has, initialised by
        // `uv_poll_init` before any other use; freed in `on_closed`.
        unsafe {
            let handle = libc::calloc(1, (uv.handle_size)(UV_POLL));
            if handle.is_null() {
                return Err("out of memory for a poll handle".into());
            }
            let status = (uv.poll_init)(uv_loop, handle, fd);
            if status != 0 {
                libc::free(handle);
                return Err(format!("uv_poll_init failed ({status})"));
            }
            (uv.set_data)(handle, Box::into_raw(target) as *mut c_void);
            let status = (uv.poll_start)(handle, UV_READABLE, on_readable);
            (uv.unref)(handle);
            let watch = FdWatch { handle, active: false };
            if status != 0 {
                return Err(format!("uv_poll_start failed ({status})"));
            }
            Ok(watch)
        }
    }

    /// Keeps the loop alive (work pending) or lets it end.
    pub fn set_active(&mut self, active: bool) {
        if active == self.active {
            return;
        }
        let Ok(uv) = uv() else { return };
        // SAFETY: a live, initialised handle of this thread's loop.
        unsafe {
            if active {
                (uv.ref_)(self.handle)
            } else {
                (uv.unref)(self.handle)
            }
        };
        self.active = active;
    }
}

impl Drop for FdWatch {
    fn drop(&mut self) {
        let Ok(uv) = uv() else { return };
        // SAFETY: a live handle, stopped and closed once; `on_closed` frees it. At
        // environment teardown the loop may never run the close callback: the handle and
        // its target are then left to the process (the JS reference with the environment).
        unsafe {
            (uv.poll_stop)(self.handle);
            (uv.close)(self.handle, Some(on_closed));
        }
    }
}
