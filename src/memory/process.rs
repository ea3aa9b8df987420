//! The process's runtime state, in one value: the device registry over the loaded
//! providers, the caching pool (with its sink of memory events, `memory::observe`), the
//! IPC book, the share table, the host registrations and scratch of copies through host
//! memory, and the finder of the other copies of this package. The binding makes one
//! per process (`js::state::process`) and hands it, or the part a call needs, to the
//! model by reference; the model keeps no process-wide state of its own. Tests make their
//! own over the fake provider, so they run in parallel without sharing a pool or a book.
//!
//! Adding process-wide state: a field here (private, with an accessor that returns a
//! `&'static` part), made in [`ProcessRuntime::new`]; model functions take that part as
//! a parameter. A value that must reach the process value from a thread it starts takes
//! `&'static self` (the share table's reaper does).

use std::sync::{Arc, OnceLock};

use crate::memory::copies::{NoOthers, OtherCopies};
use crate::memory::ipc_mapping::IpcBook;
use crate::memory::observe::{self, Sink};
use crate::memory::pool::{enabled_from, Limits, Pool, PoolOwner, ENV_VAR};
use crate::memory::program::Completions;
use crate::memory::registration::{HostCopies, RegistrationBook};
use crate::memory::registry::Registry;
use crate::memory::share::ShareTable;
use crate::runtime::{Device, ProviderLoad};

/// The process's runtime state (see the module documentation).
pub struct ProcessRuntime {
    registry: Registry,
    pool: Pool,
    ipc: IpcBook,
    shares: ShareTable,
    /// How this copy asks the other copies of the package (set once by the binding).
    others: OnceLock<Box<dyn OtherCopies>>,
    host_copies: HostCopies,
    completions: Completions,
}

impl ProcessRuntime {
    /// The state over `providers` (in the registry's order), with `selector`
    /// (`ONEAPI_DEVICE_SELECTOR`) applied to the providers whose runtime does not apply it,
    /// and a pool that caches when `pooling`, reporting to a sink that keeps statistics.
    pub fn new(providers: Vec<ProviderLoad>, selector: Option<&str>, pooling: bool) -> ProcessRuntime {
        ProcessRuntime::with_sink(providers, selector, pooling, Sink::default())
    }

    /// [`ProcessRuntime::new`] whose pool reports to `sink`.
    pub fn with_sink(
        providers: Vec<ProviderLoad>,
        selector: Option<&str>,
        pooling: bool,
        sink: Sink,
    ) -> ProcessRuntime {
        ProcessRuntime {
            registry: Registry::new(providers, selector),
            pool: Pool::new(pooling, Limits::default()).with_sink(Arc::new(sink)),
            ipc: IpcBook::default(),
            shares: ShareTable::default(),
            others: OnceLock::new(),
            host_copies: HostCopies::default(),
            completions: Completions::default(),
        }
    }

    /// The state over `providers`, configured from the environment as the binding's is:
    /// `ONEAPI_DEVICE_SELECTOR`, [`ENV_VAR`] (the pool on unless it says off) and
    /// [`observe::ENV_VAR`] (the sink on unless it says off).
    pub fn from_environment(providers: Vec<ProviderLoad>) -> ProcessRuntime {
        let selector = std::env::var("ONEAPI_DEVICE_SELECTOR").ok();
        let pooling = enabled_from(std::env::var_os(ENV_VAR).as_deref());
        // The sink's variable reads as the pool's does (`0`, `false`, `off`, `no`: off).
        let sink = Sink::new(!enabled_from(std::env::var_os(observe::ENV_VAR).as_deref()));
        ProcessRuntime::with_sink(providers, selector.as_deref(), pooling, sink)
    }

    /// Sets how this copy finds the other copies of the package in the process (the
    /// binding's rendezvous), once: a later call changes nothing.
    pub fn set_others(&self, others: Box<dyn OtherCopies>) {
        let _ = self.others.set(others);
    }

    /// Puts the state where it lives for the rest of the process (allocations and
    /// mappings refer back to their pool and book, and the share reaper runs on), and
    /// ties the pool's trim to the other memory kept idle: host scratch of async copies
    /// and what the providers stage through.
    pub fn leak(self) -> &'static ProcessRuntime {
        let process: &'static ProcessRuntime = Box::leak(Box::new(self));
        process.pool.set_owner(process);
        process
    }

    /// The devices of the loaded providers, their rules and cached queues.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The caching allocator every allocation of this process comes from.
    pub fn pool(&'static self) -> &'static Pool {
        &self.pool
    }

    /// Where the pool reports every allocation, free and trim (statistics, history).
    pub fn sink(&'static self) -> &'static Sink {
        self.pool.sink()
    }

    /// The IPC handles this process exported and opened.
    pub fn ipc(&'static self) -> &'static IpcBook {
        &self.ipc
    }

    /// The share tokens of `share()`, for other threads of the process.
    pub fn shares(&'static self) -> &'static ShareTable {
        &self.shares
    }

    /// The host memory registered with a runtime (`registerHost`), which every copy with a
    /// host side consults.
    pub fn registrations(&'static self) -> &'static RegistrationBook {
        &self.host_copies.registrations
    }

    /// What copies through host memory consult: the registrations, and the scratch they
    /// bounce or stage through (also the async copies' bounce buffers).
    pub fn host_copies(&'static self) -> &'static HostCopies {
        &self.host_copies
    }

    /// The thread that lets go of asynchronous kernel submissions' operands and settles them.
    pub fn completions(&'static self) -> &'static Completions {
        &self.completions
    }

    /// The other copies of this package in the process (none until [`Self::set_others`]).
    pub fn others(&self) -> &dyn OtherCopies {
        self.others.get().map_or(&NoOthers, |others| others.as_ref())
    }

    /// Frees every cached block of the pool and the other idle memory (`poolTrim()`);
    /// the bytes released.
    pub fn trim(&self) -> u64 {
        self.pool.trim()
    }
}

impl PoolOwner for ProcessRuntime {
    fn trim_spare(&self) -> u64 {
        self.host_copies.scratch.trim_idle().saturating_add(self.registry.trim_spare())
    }

    fn device_name(&self, device: &dyn Device) -> String {
        self.registry.filter_string_of(device)
    }
}
