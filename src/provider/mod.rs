//! The providers: implementations of the runtime interface (`crate::runtime`). SYCL goes
//! through the C++ shim; CUDA through the driver API. Each loads on its own; a provider
//! that cannot load (no runtime, no driver) says why and leaves the others working.

use crate::runtime::ProviderLoad;

// The per-user cache's trust rules (every library loaded from it), and the system search
// by absolute paths (no library is loaded by a bare name).
pub(crate) mod cache_trust;
pub(crate) mod cuda;
pub(crate) mod sycl;
pub(crate) mod system_lib;
// The UCX transport: not a device provider, the library the transport loads.
pub(crate) mod ucx;

/// `runtime.json`'s `<section>.version` (`"ucx"`, `"nvrtc"`): the first `"version"` after
/// the section's key, for the libraries installed beside the SYCL runtime on request.
pub(crate) fn manifest_version_of(section: &str) -> Option<&'static str> {
    const RUNTIME_MANIFEST: &str = include_str!("../../runtime.json");
    let after = &RUNTIME_MANIFEST[RUNTIME_MANIFEST.find(&format!("\"{section}\""))?..];
    let key = after.find("\"version\"")?;
    let rest = after[key + "\"version\"".len()..].trim_start_matches([' ', ':']);
    let rest = rest.strip_prefix('"')?;
    Some(&rest[..rest.find('"')?])
}

/// Every provider, loaded, in the registry's order: SYCL's devices first, then CUDA's.
pub(crate) fn load_all() -> Vec<ProviderLoad> {
    vec![
        // A missing SYCL runtime is the first thing to fix: always named.
        ProviderLoad { name: "SYCL", provider: sycl::load(), runtime_present: true },
        ProviderLoad { name: "CUDA", provider: cuda::load(), runtime_present: cuda::driver_present() },
    ]
}
