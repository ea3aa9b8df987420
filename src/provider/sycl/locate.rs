//! Finds the SYCL runtime: one search, shared by `build.rs` (which includes this file with
//! `#[path]`, so it uses `std` only) and the run-time loader.
//!
//! Order, first match wins:
//! 1. `DPCTL_MEMORY_SYCL_ROOT`, `SYCL_ROOT`, `CMPLR_ROOT`, `ONEAPI_ROOT`: each as given and
//!    as `<root>/compiler/latest` (the layout of a full oneAPI installation);
//! 2. the per-user cache that `scripts/install-runtime.js` fills:
//!    `${DPCTL_MEMORY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dpctl-memory}/sycl-runtime-<version>`,
//!    the version being `runtime.json`'s, which the install script reads too.
//!
//! A candidate counts when it holds what the caller needs ([`Need`]): the headers to build
//! the shim, or `lib/libsycl.so.8` to run it.

use std::path::{Path, PathBuf};

/// The runtime manifest at the repository root, shared with `scripts/install-runtime.js`.
const RUNTIME_MANIFEST: &str = include_str!("../../../runtime.json");

/// The runtime version the install script installs: `runtime.json`'s top-level `version`,
/// evaluated at compile time, so a manifest without one fails the build rather than a run.
pub const RUNTIME_VERSION: &str = top_level_version(RUNTIME_MANIFEST);

/// The string value of the first `"version"` key of `json`: the top-level one, since the
/// manifest writes it before the wheel list. A `const fn` over bytes: no JSON parser in a
/// build script that may use `std` only.
const fn top_level_version(json: &str) -> &str {
    const KEY: &[u8] = b"\"version\"";
    let bytes = json.as_bytes();
    let mut i = 0;
    while i + KEY.len() <= bytes.len() {
        let mut k = 0;
        while k < KEY.len() && bytes[i + k] == KEY[k] {
            k += 1;
        }
        if k == KEY.len() {
            // Skip `: "` (any spacing), then take everything up to the closing quote.
            let mut start = i + KEY.len();
            while start < bytes.len() && (bytes[start] == b' ' || bytes[start] == b':') {
                start += 1;
            }
            assert!(start < bytes.len() && bytes[start] == b'"', "runtime.json: `version` is not a string");
            start += 1;
            let mut end = start;
            while end < bytes.len() && bytes[end] != b'"' {
                end += 1;
            }
            let (_, rest) = bytes.split_at(start);
            let (value, _) = rest.split_at(end - start);
            return match std::str::from_utf8(value) {
                Ok(version) => version,
                Err(_) => panic!("runtime.json: `version` is not UTF-8"),
            };
        }
        i += 1;
    }
    panic!("runtime.json has no `version`")
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_version_is_the_top_level_one() {
        let json = r#"{ "$comment": "x", "version" : "1.2.3", "wheels": [{ "name": "a", "version": "9" }] }"#;
        assert_eq!(top_level_version(json), "1.2.3");
        assert!(!RUNTIME_VERSION.is_empty() && RUNTIME_VERSION.chars().all(|c| c.is_ascii_digit() || c == '.'));
        assert!(cache_dir().is_none_or(|dir| dir.ends_with(format!("sycl-runtime-{RUNTIME_VERSION}"))));
    }
}
