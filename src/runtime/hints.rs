//! Migration hints for shared (managed) memory: an optional capability of a `Queue`
//! (`shared_memory_hints()`), as SYCL's `queue::prefetch`/`queue::mem_advise` and CUDA's
//! `cuMemPrefetchAsync`/`cuMemAdvise`. Hints move pages, never change their contents.

use crate::error::Result;
use crate::runtime::ReadBytes;

/// Where pages should go or be preferred.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// The queue's device.
    Device,
    Host,
}

/// A usage hint (`memAdvise`), as CUDA and SYCL's unified runtime both name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// Mostly read: the runtime may keep read-only copies where it is read.
    ReadMostly(bool),
    /// Where the pages should preferably live.
    PreferredLocation(Location, bool),
    /// The pages are accessed from `Location`: keep them mapped there.
    AccessedBy(Location, bool),
}

impl Advice {
    /// The names `memAdvise` takes, in the order of `Advice::from_name`'s table.
    pub const NAMES: [&'static str; 6] = [
        "read-mostly",
        "unset-read-mostly",
        "preferred-location",
        "unset-preferred-location",
        "accessed-by",
        "unset-accessed-by",
    ];

    /// The advice a name and location stand for; `None` for a name not in `NAMES`.
    pub fn from_name(name: &str, location: Location) -> Option<Advice> {
        Some(match name {
            "read-mostly" => Advice::ReadMostly(true),
            "unset-read-mostly" => Advice::ReadMostly(false),
            "preferred-location" => Advice::PreferredLocation(location, true),
            "unset-preferred-location" => Advice::PreferredLocation(location, false),
            "accessed-by" => Advice::AccessedBy(location, true),
            "unset-accessed-by" => Advice::AccessedBy(location, false),
            _ => return None,
        })
    }
}

/// What a hint did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HintOutcome {
    /// The runtime acted on it.
    Applied,
    /// The runtime was asked and does nothing for this device (the OpenCL CPU device:
    /// its memory is host memory), or has no call for this hint.
    NoOp,
}

/// The capability to migrate shared (managed) memory and advise the runtime about it.
pub trait SharedMemoryHints: Send + Sync {
    /// Migrates `bytes` (shared memory of the queue's context) to `to`, and waits.
    fn prefetch(&self, bytes: ReadBytes<'_>, to: Location) -> Result<HintOutcome>;
    /// Gives the runtime `advice` about `bytes` (shared memory of the queue's context).
    fn advise(&self, bytes: ReadBytes<'_>, advice: Advice) -> Result<HintOutcome>;
}
