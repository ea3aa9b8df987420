//! SYCL provider (stub, to be replaced): devices through the C++ shim.
use std::sync::Arc;

use crate::error::{MemoryError, Result};
use crate::provider::Provider;

/// Loads the shim and the SYCL runtime. `Err` says what was searched and how to install.
pub fn load() -> Result<Arc<dyn Provider>> {
    Err(MemoryError::QueueCreation("SYCL provider not built yet".into()))
}
