//! CUDA provider (stub, to be replaced): devices through the CUDA driver API.
use std::sync::Arc;

use crate::error::{MemoryError, Result};
use crate::provider::Provider;

/// Loads libcuda.so.1 at run time. `Err` when there is no driver or no device.
pub fn load() -> Result<Arc<dyn Provider>> {
    Err(MemoryError::CudaDriver("CUDA provider not built yet".into()))
}
