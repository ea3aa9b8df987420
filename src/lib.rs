//! dpctl-memory: Python's `dpctl.memory` for Node.js.
//!
//! Layers point one way: `js` (napi classes) → `memory` (Node-free model) →
//! `provider` (SYCL through the shim, CUDA through the driver) → FFI.
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod error;
pub mod memory;
pub mod provider;
pub mod js;
