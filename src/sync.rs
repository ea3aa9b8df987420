//! Locking shared by the whole crate.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, tolerating poison. Every mutex of this crate guards data that each critical
/// section leaves consistent (single map or counter updates, no panicking calls while
/// locked), so a lock poisoned by a panic elsewhere still holds valid data, and refusing
/// it would only turn one failure into many (or a panic across the Node boundary).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
