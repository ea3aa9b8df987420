//! Finds UCX's `libucp`. First match wins:
//! 1. `DPCTL_MEMORY_UCX_ROOT`: `<root>/lib/libucp.so.0` (a UCX install prefix) or
//!    `<root>/libucp.so.0`;
//! 2. a system UCX: `libucp.so.0` as the dynamic loader finds it (ldconfig's cache,
//!    `LD_LIBRARY_PATH`), a cluster's build with InfiniBand, say;
//! 3. the per-user cache that `scripts/install-ucx.js` fills from the `libucx-cu12` wheel:
//!    `${DPCTL_MEMORY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dpctl-memory}/ucx-<version>/libucx/lib/libucp.so.0`,
//!    the version being `runtime.json`'s `ucx.version`.
//!
//! The wheel's `libucp` finds its `libucs`/`libuct`/`libucm` through its own rpath and its
//! transport modules (`lib/ucx/libuct_*.so`) beside itself, so nothing else is set.

use std::path::PathBuf;

const LIBUCP: &str = "libucp.so.0";

/// Where `libucp` was found, and what named it.
pub struct Found {
    pub libucp: PathBuf,
    pub source: &'static str,
}

/// `runtime.json`'s `ucx.version`.
pub fn manifest_version() -> Option<&'static str> {
    crate::provider::manifest_version_of("ucx")
}

/// The folder the install script fills (the wheel unpacked), if a cache root is known.
pub fn cache_dir() -> Option<PathBuf> {
    Some(crate::provider::sycl::locate::cache_root()?.join(format!("ucx-{}", manifest_version()?)))
}

fn var(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// Whether the dynamic loader finds `libucp.so.0` by name. A library found stays loaded
/// (the caller loads it next): UCX's initialisers install memory hooks in the process's
/// other libraries, and unloading it after they ran can leave those hooks pointing into
/// unmapped code, a crash at the next call of a hooked function.
fn system_has_libucp() -> bool {
    let Ok(name) = std::ffi::CString::new(LIBUCP) else { return false };
    // SAFETY: loads the library by name, which runs its initialisers (UCX's own, as the
    // load that follows would); the handle is never closed.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
    !handle.is_null()
}

/// Finds `libucp`; `Err` is a message listing what was searched and what to install.
pub fn locate() -> Result<Found, String> {
    let mut searched = Vec::new();
    if let Some(root) = var("DPCTL_MEMORY_UCX_ROOT") {
        let root = PathBuf::from(root);
        for candidate in [root.join("lib").join(LIBUCP), root.join(LIBUCP)] {
            if candidate.is_file() {
                return Ok(Found { libucp: candidate, source: "DPCTL_MEMORY_UCX_ROOT" });
            }
        }
        searched.push(format!("{} (DPCTL_MEMORY_UCX_ROOT): no lib/{LIBUCP}", root.display()));
    }
    if system_has_libucp() {
        return Ok(Found { libucp: PathBuf::from(LIBUCP), source: "the system's library path" });
    }
    searched.push(format!("the system's library path: no {LIBUCP}"));
    match cache_dir() {
        Some(dir) => {
            let candidate = dir.join("libucx").join("lib").join(LIBUCP);
            if candidate.is_file() {
                return Ok(Found { libucp: candidate, source: "the per-user cache" });
            }
            searched.push(format!("{}: not installed", dir.display()));
        }
        None => searched.push("the per-user cache (DPCTL_MEMORY_CACHE, XDG_CACHE_HOME and HOME are all unset)".into()),
    }
    Err(format!(
        "UCX is not installed: run `npx dpctl-memory-install-runtime --with ucx` (UCX {} from the libucx-cu12 wheel), \
         install your system's UCX (libucp.so.0), or point DPCTL_MEMORY_UCX_ROOT at a UCX prefix. Searched: {}",
        manifest_version().unwrap_or("?"),
        searched.join("; ")
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_system_libucp_found_by_the_probe_stays_loaded() {
        if !system_has_libucp() {
            eprintln!("no libucp.so.0 on the library path: nothing to check");
            return;
        }
        let name = std::ffi::CString::new(LIBUCP).unwrap();
        // SAFETY: RTLD_NOLOAD loads nothing: it only asks whether the library is loaded.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        assert!(!handle.is_null(), "the probe unloaded UCX after its initialisers ran");
    }

    #[test]
    fn the_manifest_names_a_ucx_version() {
        let version = manifest_version().expect("runtime.json has ucx.version");
        assert!(
            version.split('.').count() >= 2 && version.chars().all(|c| c.is_ascii_digit() || c == '.'),
            "{version}"
        );
        assert!(cache_dir().is_none_or(|dir| dir.ends_with(format!("ucx-{version}"))));
    }
}
