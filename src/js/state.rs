//! What the binding keeps per JS environment (the main thread and each worker): the
//! built-ins it makes values with, and the values behind its handles. It lives in the
//! environment's instance data, so it goes with the environment; thread-locals would
//! outlive a worker's environment and release references into a freed one.
//!
//! **Teardown.** An environment that ends (a worker that exits or is terminated, the main
//! thread at the end of its event loop) gives back what its handles held: memory objects
//! never freed are freed unless something else holds them (a view of another
//! environment, a share token, a kernel or copy in flight). When the last environment
//! ends, and at process exit, the process gives back what it keeps idle
//! (`ProcessRuntime::release_idle`: cached blocks, staging buffers, scratch). Node runs
//! no environment teardown on `process.exit()` or an uncaught exception, so a hook of
//! `exit()` (registered after the runtimes loaded, so it runs before their destructors)
//! releases the handles of the environments of the thread that exits (Node stops and
//! joins every worker first; an environment of another thread is left alone). With
//! `DPCTL_MEMORY_EXIT_REPORT=1` the hook prints what the process still holds from the
//! runtimes, last, on stderr (`dpctl-memory exit: {...}`), for leak tests.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, OnceLock};

use napi::{sys, Env};

use crate::js::ffi::{self, JsRef};
use crate::js::handles::Handles;
use crate::memory::process::ProcessRuntime;
use crate::memory::program::Pending;
use crate::memory::registry::Registry;
use crate::sync::lock;

/// The binding's per-environment state (see the module documentation).
pub struct EnvState {
    /// `{ Uint8Array, makeError }`, taken at load time so that code which replaces
    /// globals later cannot run in the middle of a call.
    pub builtins: JsRef,
    /// The values behind the handles the JS layer holds.
    pub handles: RefCell<Handles>,
    /// The environment's asynchronous submissions that have not finished: its teardown
    /// waits for them, so the work a gone environment started does not run on, and their
    /// operands are let go before the handles.
    pub pending: Arc<Pending>,
}

/// What the instance data holds: the state, and which environment it is (for the list of
/// live environments).
struct Slot {
    env: usize,
    state: EnvState,
}

/// The environments alive now (their `napi_env`, and their thread as `ffi::os_thread`
/// names it), for the last one's teardown and the process's exit.
static LIVE: Mutex<Vec<(usize, u64)>> = Mutex::new(Vec::new());

/// The variable that makes the exit hook print what is still held.
const EXIT_REPORT_VAR: &str = "DPCTL_MEMORY_EXIT_REPORT";

/// Stores the state for this environment (once, at module init).
pub fn install(env: &Env, state: EnvState) -> napi::Result<()> {
    let raw = env.raw() as usize;
    ffi::set_instance_data(env, Slot { env: raw, state }, teardown)?;
    lock(&LIVE).push((raw, ffi::os_thread()));
    Ok(())
}

/// The environment's teardown (Node calls it with the instance data).
fn teardown(Slot { env, state: EnvState { builtins, handles, pending } }: Slot) {
    // At teardown the environment releases every reference itself; deleting them here
    // could touch it after that, so the references are forgotten instead.
    std::mem::forget(builtins);
    pending.wait_all();
    release(handles.into_inner());
    let last = {
        let mut live = lock(&LIVE);
        live.retain(|&(e, _)| e != env);
        live.is_empty()
    };
    if last {
        if let Some(process) = PROCESS.get() {
            process.release_idle();
        }
    }
}

/// Gives back what `handles` held, without calling into the environment.
fn release(mut handles: Handles) {
    handles.forget_references();
    drop(handles);
}

/// At `exit()` (see the module documentation). Never unwinds: a panic here would abort.
extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(|| {
        // `try_lock`: never wait at exit (nothing holds it while JS runs, so this is moot).
        let here = ffi::os_thread();
        let left: Vec<usize> = LIVE
            .try_lock()
            .map(|mut live| {
                let (mine, others): (Vec<_>, Vec<_>) = live.iter().partition(|&&(_, thread)| thread == here);
                *live = others;
                mine.into_iter().map(|(env, _)| env).collect()
            })
            .unwrap_or_default();
        for raw in left {
            let env = Env::from_raw(raw as sys::napi_env);
            let Some(slot) = ffi::instance_data::<Slot>(&env) else { continue };
            // Borrowed: the exit came from inside a call that holds them; leave them.
            if let Ok(mut handles) = slot.state.handles.try_borrow_mut() {
                let mut handles = std::mem::take(&mut *handles);
                handles.kernels.leak_at_exit();
                release(handles);
            }
        }
        let Some(process) = PROCESS.get() else { return };
        let held = process.release_idle();
        if std::env::var_os(EXIT_REPORT_VAR).is_some_and(|v| !v.is_empty() && v != "0") {
            eprintln!(
                "dpctl-memory exit: {{\"blocks\":{},\"bytes\":{},\"staging\":{},\"scratch\":{}}}",
                held.blocks, held.bytes, held.staging_bytes, held.scratch_bytes
            );
        }
    });
}

/// This environment's state.
pub fn state(env: &Env) -> napi::Result<&'static EnvState> {
    ffi::instance_data::<Slot>(env)
        .map(|slot| &slot.state)
        .ok_or_else(|| napi::Error::new(napi::Status::GenericFailure, "dpctl-memory: the module state is missing"))
}

static PROCESS: OnceLock<&'static ProcessRuntime> = OnceLock::new();

/// The process's runtime state, made at the first call of any environment over every
/// provider (the binding is where the providers are named; the model only sees the
/// runtime interface), and shared by all of them: memory made in one thread is used and
/// freed in others. This is the one place it is kept. It finds the other copies of this
/// package through the binding's rendezvous (`js::copies_ffi`).
pub fn process() -> &'static ProcessRuntime {
    PROCESS.get_or_init(|| {
        let process = ProcessRuntime::from_environment(crate::provider::load_all()).leak();
        process.set_others(crate::js::copies_ffi::finder(process.pool()));
        // After the providers loaded their runtimes: `exit()` runs this hook before the
        // destructors those libraries registered.
        ffi::at_process_exit(at_exit);
        process
    })
}

/// The process's device registry.
pub fn registry() -> &'static Registry {
    process().registry()
}
