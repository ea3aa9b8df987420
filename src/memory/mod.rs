//! The Node-free model: allocations, memory objects, the device registry and the
//! parsers of filter strings and `__sycl_usm_array_interface__`.
pub(crate) mod allocation;
pub(crate) mod consume;
pub(crate) mod copies;
#[cfg(test)]
mod copies_tests;
pub(crate) mod filter;
pub(crate) mod history;
pub(crate) mod interface;
#[cfg(test)]
mod interface_props;
pub(crate) mod ipc;
pub(crate) mod ipc_mapping;
pub(crate) mod observe;
pub(crate) mod peer;
pub(crate) mod pool;
pub(crate) mod process;
pub(crate) mod program;
pub(crate) mod registration;
pub(crate) mod registry;
pub(crate) mod share;
pub(crate) mod snapshot;
pub(crate) mod stats;
pub(crate) mod usm;
// The UCX transport's policy (issue 19).
pub(crate) mod transport;
