//! Finds UCX's `libucp`. First match wins:
//! 1. `DPCTL_MEMORY_UCX_ROOT`, when absolute (a relative one would name a folder of the
//!    working directory: ignored, and said): `<root>/lib/libucp.so.0` (a UCX install
//!    prefix) or `<root>/libucp.so.0`;
//! 2. a system UCX: `libucp.so.0` where the dynamic loader's search finds it
//!    (`LD_LIBRARY_PATH`, ldconfig's cache, the system folders), a cluster's build with
//!    InfiniBand, say; searched by `provider/system_lib.rs` with absolute paths only, never
//!    loaded by its bare name (an empty element of `LD_LIBRARY_PATH` is the working
//!    directory);
//! 3. the per-user cache that `scripts/install-ucx.js` fills from the `libucx-cu12` wheel:
//!    `${DPCTL_MEMORY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dpctl-memory}/ucx-<version>/libucx/lib/libucp.so.0`,
//!    the version being `runtime.json`'s `ucx.version`; loaded only when the cache's trust
//!    rules pass on the whole `ucx-<version>` folder (`provider/cache_trust.rs`).
//!
//! The wheel's `libucp` finds its `libucs`/`libuct`/`libucm` through its own rpath and its
//! transport modules (`lib/ucx/libuct_*.so`) beside itself, so nothing else is set.

use std::path::{Path, PathBuf};

const LIBUCP: &str = "libucp.so.0";

/// Where `libucp` was found (an absolute path), and what named it.
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
    Some(crate::provider::cache_trust::cache_root()?.join(format!("ucx-{}", manifest_version()?)))
}

/// Finds `libucp`; `Err` is a message listing what was searched and what to install, or
/// why the cache's UCX was refused.
pub fn locate() -> Result<Found, String> {
    let mut searched = Vec::new();
    if let Some(root) = crate::provider::cache_trust::non_empty_var("DPCTL_MEMORY_UCX_ROOT").map(PathBuf::from) {
        if root.is_absolute() {
            for candidate in [root.join("lib").join(LIBUCP), root.join(LIBUCP)] {
                if candidate.is_file() {
                    return Ok(Found { libucp: candidate, source: "DPCTL_MEMORY_UCX_ROOT" });
                }
            }
            searched.push(format!("{} (DPCTL_MEMORY_UCX_ROOT): no lib/{LIBUCP}", root.display()));
        } else {
            searched.push(format!(
                "DPCTL_MEMORY_UCX_ROOT={} (ignored: a relative path names the working directory's folder)",
                root.display()
            ));
        }
    }
    if let Some(libucp) = crate::provider::system_lib::find(LIBUCP) {
        return Ok(Found { libucp, source: "the system's library path" });
    }
    searched.push(format!("the system's library path: no {LIBUCP}{}", crate::provider::system_lib::skipped_note()));
    match cache_dir() {
        Some(dir) => {
            let candidate = dir.join("libucx").join("lib").join(LIBUCP);
            if std::fs::symlink_metadata(&candidate).is_ok() || std::fs::symlink_metadata(&dir).is_ok() {
                return cached(&dir, candidate);
            }
            searched.push(format!("{}: not installed", dir.display()));
        }
        None => searched.push(
            "the per-user cache (none of DPCTL_MEMORY_CACHE, XDG_CACHE_HOME and HOME is an absolute path)".into(),
        ),
    }
    Err(format!(
        "UCX is not installed: run `npx dpctl-memory-install-runtime --with ucx` (UCX {} from the libucx-cu12 wheel), \
         install your system's UCX (libucp.so.0), or point DPCTL_MEMORY_UCX_ROOT at a UCX prefix. Searched: {}",
        manifest_version().unwrap_or("?"),
        searched.join("; ")
    ))
}

/// The cache's UCX in `dir`, once the cache's trust rules pass on all of it.
fn cached(dir: &Path, libucp: PathBuf) -> Result<Found, String> {
    crate::provider::cache_trust::check_cached_library("UCX", dir, "npx dpctl-memory-install-runtime --with ucx")?;
    if !libucp.is_file() {
        return Err(format!(
            "UCX's cache folder {} holds no libucx/lib/{LIBUCP}: delete it and run \
             `npx dpctl-memory-install-runtime --with ucx` again",
            dir.display()
        ));
    }
    Ok(Found { libucp, source: "the per-user cache" })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_system_libucp_is_named_by_an_absolute_path() {
        match crate::provider::system_lib::find(LIBUCP) {
            Some(path) => assert!(path.is_absolute() && path.ends_with(LIBUCP), "{}", path.display()),
            None => eprintln!("no libucp.so.0 on the library path: nothing to check"),
        }
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
