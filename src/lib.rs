//! dpctl-memory: Python's `dpctl.memory` for Node.js.
//!
//! Layers point one way: `js` (napi classes) → `memory` (Node-free model) →
//! `provider` (SYCL through the shim, CUDA through the driver) → FFI.
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub(crate) mod error;
pub(crate) mod host;
pub mod js;
pub(crate) mod memory;
pub(crate) mod provider;
pub(crate) mod runtime;
mod sync;
