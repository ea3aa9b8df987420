//! Other copies of this package in the same process. npm installs a second copy when two
//! dependents need incompatible versions; each copy's addon has its own pool and address
//! book, so without this module copy B would call copy A's memory foreign: a view B makes
//! of it would neither be bounded by A's allocation nor hold it, and could outlive it.
//!
//! Every copy answers, for any address, what its own book says (`allocation::answer_own`: live,
//! with the allocation's extent; unowned, for a cached or releasing block or slack; or
//! foreign), and hands out a hold on a live allocation that keeps it alive until dropped.
//! A copy whose own book says foreign asks the others (the process value's
//! `ProcessRuntime::others`) before it asks
//! the runtime: the owning copy's own book answers, under its own lock, so two copies
//! always agree about which addresses are live, cached or released, and a view across
//! copies is bounded by and holds its allocation exactly as one within a copy.
//!
//! How copies find each other is the binding's (`src/js/copies_ffi.rs`: a versioned C-ABI
//! table that each addon exports, found through the dynamic linker's list of loaded
//! objects); this module is the seam ([`OtherCopies`]; tests bring their own, in
//! `copies_tests.rs`), and `allocation::provenance` the policy that asks it.

use std::sync::Arc;

use crate::runtime::Address;

/// A hold on an allocation of another copy: the allocation stays live until the last
/// clone is dropped.
#[derive(Clone)]
pub struct OtherHold(#[allow(dead_code, reason = "held for its Drop, which gives the hold back")] Arc<dyn Send + Sync>);

impl OtherHold {
    /// Wraps whatever gives the hold back when dropped.
    pub fn new(release_on_drop: Box<dyn Send + Sync>) -> Self {
        OtherHold(Arc::from(release_on_drop))
    }
}

impl std::fmt::Debug for OtherHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OtherHold")
    }
}

/// What another copy's book says of an address.
#[derive(Debug)]
pub enum OtherAnswer {
    /// Inside the bytes of a live allocation of that copy (`base`, `size`: what it asked
    /// for), now held by `hold`.
    Live { base: Address, size: u64, hold: OtherHold },
    /// A block of that copy that no live allocation owns at this address (cached,
    /// releasing, or slack after a request): no view may touch it.
    Unowned { block_base: Address },
    /// Not memory of any other copy.
    Foreign,
}

/// The other copies of the package in this process.
pub trait OtherCopies: Send + Sync {
    /// What the copy whose book holds `address` says of it (`Foreign` when none does).
    fn lookup(&self, address: Address) -> OtherAnswer;
}

/// No other copy (the model's tests, and a process value until the binding gives it the
/// real finder).
pub struct NoOthers;

impl OtherCopies for NoOthers {
    fn lookup(&self, _address: Address) -> OtherAnswer {
        OtherAnswer::Foreign
    }
}
