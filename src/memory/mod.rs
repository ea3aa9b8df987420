//! The Node-free model: allocations, memory objects, the device registry and the
//! parsers of filter strings and `__sycl_usm_array_interface__`.
pub mod allocation;
pub mod consume;
pub mod filter;
pub mod interface;
#[cfg(test)]
mod interface_props;
pub mod kind;
pub mod pool;
pub mod registry;
pub mod usm;
