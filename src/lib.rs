//! dpctl-memory: Python's `dpctl.memory` for Node.js.
//!
//! Layers point one way: `js` (the binding: functions over handles) → `memory` (the
//! Node-free model) → `host` (CPU copies) → `runtime` (the traits and plain types); the
//! binding hands `provider`'s implementations (SYCL through the shim, CUDA through the
//! driver) to the model, which never imports them. `ARCHITECTURE.md` has the whole map.
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub(crate) mod error;
pub(crate) mod host;
pub mod js;
pub(crate) mod memory;
pub(crate) mod provider;
pub(crate) mod runtime;
mod sync;
