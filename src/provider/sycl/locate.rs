//! Finds the SYCL runtime: one search, shared by `build.rs` (which includes this file with
//! `#[path]`, so it uses `std` only) and the run-time loader.
//!
//! Order, first match wins:
//! 1. `DPCTL_MEMORY_SYCL_ROOT`, `SYCL_ROOT`, `CMPLR_ROOT`, `ONEAPI_ROOT`: each as given and
//!    as `<root>/compiler/latest` (the layout of a full oneAPI installation);
//! 2. the per-user cache that `scripts/install-runtime.js` fills:
//!    `${DPCTL_MEMORY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dpctl-memory}/sycl-runtime-2025.3.3`.
//!
//! A candidate counts when it holds what the caller needs ([`Need`]): the headers to build
//! the shim, or `lib/libsycl.so.8` to run it.

use std::path::{Path, PathBuf};

/// The runtime version `scripts/install-runtime.js` installs (keep the two in step).
pub const RUNTIME_VERSION: &str = "2025.3.3";

/// The SONAME the shim links against (libsycl of DPC++ 2025.x).
pub const LIBSYCL: &str = "libsycl.so.8";

/// Environment variables naming a runtime root, in priority order.
pub const ROOT_VARS: [&str; 4] = ["DPCTL_MEMORY_SYCL_ROOT", "SYCL_ROOT", "CMPLR_ROOT", "ONEAPI_ROOT"];

/// Every environment variable the search reads (for `cargo:rerun-if-env-changed`).
#[allow(dead_code, reason = "read by build.rs, which includes this file")]
pub const SEARCH_VARS: [&str; 7] = [
    "DPCTL_MEMORY_SYCL_ROOT",
    "SYCL_ROOT",
    "CMPLR_ROOT",
    "ONEAPI_ROOT",
    "DPCTL_MEMORY_CACHE",
    "XDG_CACHE_HOME",
    "HOME",
];

/// What a root must contain to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// `include/sycl/sycl.hpp` and `lib/libsycl.so` (to compile and link the shim).
    #[allow(dead_code, reason = "build.rs, which includes this file, asks for it")]
    Headers,
    /// `lib/libsycl.so.8` (to load the runtime).
    Library,
}

impl Need {
    fn files(self) -> &'static [&'static str] {
        match self {
            Need::Headers => &["include/sycl/sycl.hpp", "lib/libsycl.so"],
            Need::Library => &["lib/libsycl.so.8"],
        }
    }
}

/// A found runtime root, and where the search looked.
#[derive(Debug, Clone)]
pub struct Found {
    pub root: PathBuf,
    /// What named it (an environment variable, or "cache").
    pub source: String,
}

/// The place the install script puts the runtime: the versioned per-user cache directory.
/// `None` when neither `DPCTL_MEMORY_CACHE`, `XDG_CACHE_HOME` nor `HOME` is set.
pub fn cache_dir() -> Option<PathBuf> {
    let root = if let Some(dir) = non_empty_var("DPCTL_MEMORY_CACHE") {
        PathBuf::from(dir)
    } else if let Some(xdg) = non_empty_var("XDG_CACHE_HOME") {
        PathBuf::from(xdg).join("dpctl-memory")
    } else {
        PathBuf::from(non_empty_var("HOME")?).join(".cache").join("dpctl-memory")
    };
    Some(root.join(format!("sycl-runtime-{RUNTIME_VERSION}")))
}

/// Candidate roots in search order, each with what named it.
pub fn candidates() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for var in ROOT_VARS {
        if let Some(value) = non_empty_var(var) {
            let root = PathBuf::from(value);
            out.push((var.to_string(), root.clone()));
            out.push((var.to_string(), root.join("compiler").join("latest")));
        }
    }
    if let Some(cache) = cache_dir() {
        out.push(("cache".to_string(), cache));
    }
    out
}

/// Whether `root` holds everything `need` asks for.
pub fn satisfies(root: &Path, need: Need) -> bool {
    need.files().iter().all(|file| root.join(file).is_file())
}

/// Finds the runtime. `Err` lists every place searched (one line each, saying what was
/// missing there), for an error message.
pub fn locate(need: Need) -> Result<Found, Vec<String>> {
    let mut searched = Vec::new();
    for (source, root) in candidates() {
        if satisfies(&root, need) {
            return Ok(Found { root, source });
        }
        let missing: Vec<&str> = need.files().iter().copied().filter(|f| !root.join(f).is_file()).collect();
        searched.push(format!("{} ({source}): no {}", root.display(), missing.join(", no ")));
    }
    if cache_dir().is_none() {
        searched.push("the per-user cache (DPCTL_MEMORY_CACHE, XDG_CACHE_HOME and HOME are all unset)".to_string());
    }
    Err(searched)
}

fn non_empty_var(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}
