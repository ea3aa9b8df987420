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

    /// The end of the last JS environment, and the end of the process (the binding calls
    /// it then, `js::state`): gives back every cached block, the idle host scratch and the
    /// providers' staging buffers, so that a leak checker sees only what is still in use.
    /// Live memory stays with its holders: an environment still running, a share token
    /// not yet opened, an exporter's IPC handle, a kernel or copy in flight; and the
    /// process goes on working (the next use makes what it needs again). What is still
    /// held afterwards.
    pub fn release_idle(&self) -> StillHeld {
        self.pool.trim();
        self.still_held()
    }

    /// What the process holds from the runtimes now (see [`StillHeld`]).
    pub fn still_held(&self) -> StillHeld {
        let (blocks, bytes) = self.pool.held_from_runtime();
        let staging_bytes = self
            .registry
            .matching(None)
            .unwrap_or_default()
            .iter()
            .filter_map(|d| d.staging())
            .fold(0u64, |sum, held| sum.saturating_add(held.figures().bytes.current));
        let scratch_bytes = self.host_copies.scratch.held().figures().bytes.current;
        StillHeld { blocks, bytes, staging_bytes, scratch_bytes }
    }
}

/// What the process holds from the runtimes: the pool's blocks (live, cached or being given
/// back) and their bytes, and the bytes of the providers' staging buffers and of the host
/// scratch of copies. All zero once everything was freed and [`ProcessRuntime::release_idle`]
/// ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StillHeld {
    pub blocks: u64,
    pub bytes: u64,
    pub staging_bytes: u64,
    pub scratch_bytes: u64,
}

impl PoolOwner for ProcessRuntime {
    fn trim_spare(&self) -> u64 {
        self.host_copies.scratch.trim_idle().saturating_add(self.registry.trim_spare())
    }

    fn device_name(&self, device: &dyn Device) -> String {
        self.registry.filter_string_of(device)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::memory::usm::UsmMemory;
    use crate::runtime::fake::{FakeContext, FakeDevice, FakeProvider};
    use crate::runtime::{Provider, UsmKind};

    const MIB: u64 = 1 << 20;

    /// A process value over one fake device, leaked as the binding's is.
    fn process(pooling: bool) -> (&'static ProcessRuntime, Arc<FakeDevice>) {
        let device = FakeDevice::new(1 << 34, 1 << 34);
        let provider: Arc<dyn Provider> = Arc::new(FakeProvider {
            devices: vec![device.clone()],
            superseded_by_backend: None,
            applies_device_selector: false,
        });
        let load = ProviderLoad { name: "fake", provider: Ok(provider), runtime_present: true };
        (ProcessRuntime::new(vec![load], None, pooling).leak(), device)
    }

    #[test]
    fn release_idle_gives_back_every_cached_block_staging_buffer_and_scratch_block() {
        for pooling in [true, false] {
            let (process, device) = process(pooling);
            let context = FakeContext::new(3001, device.clone());
            let queue = context.queue();
            let objects: Vec<UsmMemory> = [UsmKind::Device, UsmKind::Host, UsmKind::Shared]
                .into_iter()
                .flat_map(|kind| [100, 4099, 2 * MIB + 1].map(|n| (kind, n)))
                .map(|(kind, n)| UsmMemory::allocate(process.pool(), &queue, kind, n, 0).unwrap())
                .collect();
            // A provider's staging buffers, and a scratch block that went back to its store.
            device.staging.made(4 * MIB, 2);
            drop(crate::host::Scratch::new(&process.host_copies().scratch, 64 << 10).unwrap());
            assert_eq!(process.still_held().blocks, 9);
            assert!(process.still_held().scratch_bytes > 0, "the scratch block is kept idle");
            // An environment ends: what it held is dropped, into the cache.
            drop(objects);
            let cached = if pooling { 9 } else { 0 };
            assert_eq!(process.still_held().blocks, cached, "pooling {pooling}");
            assert_eq!(context.counts().live.len() as u64, cached);
            // The fake's staging is freed by hand (the provider frees its own in `trim_spare`).
            device.staging.freed(4 * MIB, 2);
            let held = process.release_idle();
            assert_eq!(held, StillHeld::default(), "pooling {pooling}");
            assert!(context.counts().live.is_empty(), "every block the runtime made was freed");
            assert_eq!(context.counts().bad_frees, 0);
            // The process goes on working after it.
            let again = UsmMemory::allocate(process.pool(), &queue, UsmKind::Device, 100, 0).unwrap();
            assert_eq!(process.still_held().blocks, 1);
            drop(again);
            assert_eq!(process.release_idle(), StillHeld::default());
        }
    }

    #[test]
    fn release_idle_keeps_live_memory_and_memory_held_by_a_share_token() {
        let (process, device) = process(true);
        let context = FakeContext::new(3002, device);
        let queue = context.queue();
        let live = UsmMemory::allocate(process.pool(), &queue, UsmKind::Shared, 1000, 0).unwrap();
        let shared = UsmMemory::allocate(process.pool(), &queue, UsmKind::Device, 2000, 0).unwrap();
        let token = process.shares().share_token(&shared, Some(60_000.0)).unwrap();
        // The sharing environment ends: its object goes, the token still holds the memory.
        drop(shared);
        let held = process.release_idle();
        assert_eq!((held.blocks, held.bytes), (2, 1024 + 2048), "live and shared memory stay");
        assert_eq!(context.counts().live.len(), 2);
        // Another environment opens the token: the memory is intact and usable.
        let opened = process.shares().open_token(&token.text(), UsmKind::Device, 2000).unwrap();
        assert_eq!(opened.nbytes(), 2000);
        drop((live, opened));
        assert_eq!(process.release_idle(), StillHeld::default());
        assert!(context.counts().live.is_empty());
    }
}
