//! Finds the SYCL runtime: one search, shared by `build.rs` (which includes this file with
//! `#[path]`, so it uses `std` only) and the run-time loader.
//!
//! Order, first match wins:
//! 1. `DPCTL_MEMORY_SYCL_ROOT`, `SYCL_ROOT`, `CMPLR_ROOT`, `ONEAPI_ROOT`: each as given and
//!    as `<root>/compiler/latest` (the layout of a full oneAPI installation);
//! 2. the per-user cache that `scripts/install-runtime.js` fills:
//!    `${DPCTL_MEMORY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dpctl-memory}/sycl-runtime-<version>`,
//!    the version being `runtime.json`'s, which the install script reads too (where the
//!    cache is, and its trust rules: `provider/cache_trust.rs`).
//!
//! A candidate counts when it holds what the caller needs ([`Need`]): the headers to build
//! the shim, or a `lib/libsycl.so.<N>` of an ABI this addon knows ([`ABIS`]: DPC++ 2025's
//! `.so.8`, 2026's `.so.9`) to run it. A root named by a variable is the user's choice: when
//! it holds no usable runtime the search ends there with why, rather than silently using
//! another. Before anything is built or loaded from the cache, [`check_trusted`] checks its
//! folders as ssh checks its own files, and every file of `lib/` against the install
//! script's record.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub use crate::provider::cache_trust::{
    cache_root, check_cache_private, effective_uid, ignored_cache_vars, private_problem,
};
use crate::provider::cache_trust::{non_empty_var, refusal, tree_problems, UNTRUSTED_HINT};

/// The runtime manifest at the repository root, shared with `scripts/install-runtime.js`.
const RUNTIME_MANIFEST: &str = include_str!("../../../runtime.json");

/// The runtime version the install script installs: `runtime.json`'s top-level `version`,
/// evaluated at compile time, so a manifest without one fails the build rather than a run.
pub const RUNTIME_VERSION: &str = top_level_version(RUNTIME_MANIFEST);

/// The SYCL 2026 runtime (`libsycl.so.9`) that `install-runtime.js --sycl 2026` installs and
/// `npm test` runs the SYCL tests on a second time: `runtime.json`'s `sycl2026.version`. Used
/// only where a variable names its folder; build.rs builds its shim when it is cached.
pub const RUNTIME_2026_VERSION: &str = version_after(RUNTIME_MANIFEST, "\"sycl2026\"");

/// The string value of the first `"version"` key of `json`: the top-level one, since the
/// manifest writes it before the wheel list.
const fn top_level_version(json: &str) -> &str {
    version_after(json, "{")
}

/// The string value of the first `"version"` key of `json` after the first `after`. A
/// `const fn` over bytes: no JSON parser in a build script that may use `std` only.
const fn version_after<'a>(json: &'a str, after: &str) -> &'a str {
    const KEY: &[u8] = b"\"version\"";
    let bytes = json.as_bytes();
    let marker = after.as_bytes();
    let mut i = 0;
    'find: while i + marker.len() <= bytes.len() {
        let mut k = 0;
        while k < marker.len() {
            if bytes[i + k] != marker[k] {
                i += 1;
                continue 'find;
            }
            k += 1;
        }
        break;
    }
    assert!(i + marker.len() <= bytes.len(), "runtime.json lacks a section this build reads");
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

/// A SYCL ABI: the `libsycl` SONAME of a DPC++ release line, and the shim built for it
/// (the same source compiled against that release's headers).
#[derive(Debug, PartialEq, Eq)]
pub struct Abi {
    /// The SONAME the shim links against.
    pub libsycl: &'static str,
    /// The shim's file name, beside the addon.
    pub shim: &'static str,
    /// The release line, for messages.
    pub releases: &'static str,
    /// Whether its shim compiles SYCL source (the kernel_compiler extension: 2026's; the
    /// 2025 runtime from PyPI lacks the device library it links).
    pub sycl_source: bool,
}

/// The ABIs this addon knows, newest last. The 2025 shim keeps the name it always had.
pub const ABIS: [Abi; 2] = [
    Abi { libsycl: "libsycl.so.8", shim: "dpctl_memory_shim.so", releases: "DPC++ 2025", sycl_source: false },
    Abi { libsycl: "libsycl.so.9", shim: "dpctl_memory_shim_sycl9.so", releases: "DPC++ 2026", sycl_source: true },
];

/// The ABI of the runtime in `root`: the newest whose `lib/libsycl.so.<N>` is there.
pub fn abi_of(root: &Path) -> Option<&'static Abi> {
    ABIS.iter().rev().find(|abi| root.join("lib").join(abi.libsycl).is_file())
}

/// The `libsycl.so.<N>` files of `root/lib` (any N), for saying what a root holds instead.
fn libsycl_names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join("lib"))
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| {
            name.strip_prefix("libsycl.so.").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    names.sort();
    names
}

/// Every `libsycl` SONAME this addon knows, for messages (`libsycl.so.8 (DPC++ 2025), ...`).
pub fn known_abis() -> String {
    ABIS.iter().map(|abi| format!("{} ({})", abi.libsycl, abi.releases)).collect::<Vec<_>>().join(", ")
}

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
    /// `include/sycl/sycl.hpp` and `lib/libsycl.so` (to compile and link the shim), besides
    /// the library.
    #[allow(dead_code, reason = "build.rs, which includes this file, asks for it")]
    Headers,
    /// A `lib/libsycl.so.<N>` of a known ABI (to load the runtime).
    Library,
}

impl Need {
    fn files(self) -> &'static [&'static str] {
        match self {
            Need::Headers => &["include/sycl/sycl.hpp", "lib/libsycl.so"],
            Need::Library => &[],
        }
    }
}

/// A found runtime root, and where the search looked.
#[derive(Debug, Clone)]
pub struct Found {
    pub root: PathBuf,
    /// What named it (an environment variable, or "cache").
    pub source: String,
    /// Its ABI: which `libsycl` it has, and so which shim serves it.
    pub abi: &'static Abi,
}

/// The place the install script puts the runtime: the versioned per-user cache directory.
/// `None` when neither `DPCTL_MEMORY_CACHE`, `XDG_CACHE_HOME` nor `HOME` is an absolute path.
pub fn cache_dir() -> Option<PathBuf> {
    Some(cache_root()?.join(format!("sycl-runtime-{RUNTIME_VERSION}")))
}

/// Whether `found` is one of the cache's own runtimes: found there, or named by a variable
/// (the 2026 one is used only by being named). Those are checked, and their adapters pinned,
/// as the cache's; another named root is the user's.
pub fn is_cache_runtime(found: &Found) -> bool {
    let canonical = |p: &Path| std::fs::canonicalize(p).ok();
    found.source == "cache"
        || cached_runtimes().iter().filter_map(|dir| canonical(dir)).any(|dir| canonical(&found.root) == Some(dir))
}

/// The cache folders of every runtime `runtime.json` names (the default, then 2026's): build.rs
/// builds a shim for each one there, and a named root that is one of them is checked as the
/// cache is.
pub fn cached_runtimes() -> Vec<PathBuf> {
    let Some(root) = cache_root() else { return Vec::new() };
    [RUNTIME_VERSION, RUNTIME_2026_VERSION].iter().map(|version| root.join(format!("sycl-runtime-{version}"))).collect()
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

/// The runtime in `root` when it holds everything `need` asks for.
pub fn satisfies(root: &Path, need: Need) -> Option<&'static Abi> {
    abi_of(root).filter(|_| need.files().iter().all(|file| root.join(file).is_file()))
}

/// What `root` lacks for `need`, in words.
fn lacks(root: &Path, need: Need) -> String {
    let mut missing: Vec<String> =
        need.files().iter().filter(|f| !root.join(f).is_file()).map(|f| format!("no {f}")).collect();
    if abi_of(root).is_none() {
        let others = libsycl_names(root);
        missing.push(if others.is_empty() {
            format!("no lib/libsycl.so.<N> (this addon knows {})", known_abis())
        } else {
            format!("{} only: an ABI this addon does not know (it knows {})", others.join(", "), known_abis())
        });
    }
    missing.join(", ")
}

/// Finds the runtime. `Err` lists every place searched (one line each, saying what was
/// missing there), for an error message. A variable that names a root ends the search
/// there, found or not: the runtime a user names is never silently replaced by another.
pub fn locate(need: Need) -> Result<Found, Vec<String>> {
    let mut searched = Vec::new();
    let candidates = candidates();
    // The first variable set is the user's choice: its two forms, and nothing after.
    let named = candidates.first().map(|(source, _)| source.clone()).filter(|source| source != "cache");
    for (source, root) in
        candidates.into_iter().take_while(|(source, _)| named.as_ref().is_none_or(|var| var == source))
    {
        if let Some(abi) = satisfies(&root, need) {
            return Ok(Found { root, source, abi });
        }
        searched.push(format!("{} ({source}): {}", root.display(), lacks(&root, need)));
    }
    if let Some(var) = named {
        searched.push(format!(
            "nothing else was searched (the other variables, the per-user cache): {var} names the runtime to use"
        ));
    }
    let ignored = ignored_cache_vars();
    if !ignored.is_empty() {
        searched.push(format!(
            "not a cache relative to the working directory ({}: ignored, as the XDG base directory specification says)",
            ignored.join(", ")
        ));
    }
    if cache_dir().is_none() {
        searched.push(
            "the per-user cache (none of DPCTL_MEMORY_CACHE, XDG_CACHE_HOME and HOME is an absolute path)".to_string(),
        );
    }
    Err(searched)
}

/// The file in the runtime folder where the install script records what it installed.
pub const RECORD_FILE: &str = ".dpctl-memory-record";
/// The first line of a record of this layout.
const RECORD_HEADER: &str = "dpctl-memory runtime record 1";

/// One recorded file: what identifies the very file that was hashed at install.
#[derive(Debug, PartialEq, Eq)]
struct Recorded {
    size: u64,
    inode: u64,
    ctime: (i64, i64),
}

/// Parses a record: `path -> Recorded` for each line `<sha256> <size> <inode> <ctime s>
/// <ctime ns> <path relative to the runtime folder>`.
fn parse_record(text: &str) -> Result<Vec<(String, Recorded)>, String> {
    let mut lines = text.lines();
    if lines.next() != Some(RECORD_HEADER) {
        return Err(format!("its record is not of the layout `{RECORD_HEADER}`"));
    }
    let mut out = Vec::new();
    for line in lines.filter(|line| !line.is_empty()) {
        let fields: Vec<&str> = line.splitn(6, ' ').collect();
        let parsed = match fields.as_slice() {
            [sha, size, inode, secs, nanos, path]
                if sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()) && !path.is_empty() =>
            {
                (|| {
                    let ctime = (secs.parse().ok()?, nanos.parse().ok()?);
                    Some(Recorded { size: size.parse().ok()?, inode: inode.parse().ok()?, ctime })
                })()
                .map(|recorded| (path.to_string(), recorded))
            }
            _ => None,
        };
        out.push(parsed.ok_or_else(|| format!("its record has a malformed line: {line:?}"))?);
    }
    Ok(out)
}

/// Checks the libraries of the runtime `dir` against its record: every entry of `lib/`
/// (the folder the runtime loads its libraries, adapters and OpenCL driver from) is a
/// regular file owned by `uid` and writable by nobody else, is in the record, and is the
/// very file that was recorded (same size, inode and change time: any write, rename over
/// it, chmod or chown gives it another change time, which no user can set back). The
/// install script hashed each one (sha256) when it recorded it, and checks the hash again
/// when the change time differs. Folders inside `lib/` are [`check_subfolders`]'s.
pub fn check_record(dir: &Path, uid: u32) -> Result<(), Vec<String>> {
    let record_path = dir.join(RECORD_FILE);
    if let Some(problem) = private_problem(&record_path, uid) {
        let missing = !record_path.exists() && std::fs::symlink_metadata(&record_path).is_err();
        return Err(vec![if missing {
            format!("it holds no record of what was installed ({RECORD_FILE}: made before records, or not by the install script)")
        } else {
            problem
        }]);
    }
    let text = std::fs::read_to_string(&record_path).map_err(|e| vec![format!("{}: {e}", record_path.display())])?;
    let mut recorded = parse_record(&text).map_err(|e| vec![e])?;
    let mut problems = Vec::new();
    let lib = dir.join("lib");
    let entries = std::fs::read_dir(&lib).map_err(|e| vec![format!("{}: {e}", lib.display())])?;
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                problems.push(format!("{}: {e}", lib.display()));
                continue;
            }
        };
        let path = entry.path();
        let name = format!("lib/{}", entry.file_name().to_string_lossy());
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) => {
                problems.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        if meta.is_dir() {
            continue;
        }
        if let Some(problem) = private_problem(&path, uid) {
            problems.push(problem);
            continue;
        }
        if !meta.is_file() {
            problems.push(format!("{} is not a regular file", path.display()));
            continue;
        }
        let Some(index) = recorded.iter().position(|(recorded_name, _)| *recorded_name == name) else {
            problems.push(format!("{} is not in the record: the install script did not install it", path.display()));
            continue;
        };
        let (_, expected) = recorded.swap_remove(index);
        let found = Recorded { size: meta.size(), inode: meta.ino(), ctime: (meta.ctime(), meta.ctime_nsec()) };
        if found != expected {
            problems.push(format!("{} changed since it was installed and recorded", path.display()));
        }
    }
    problems.extend(recorded.iter().map(|(name, _)| format!("{} is recorded but missing", dir.join(name).display())));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Checks the folders inside the runtime's `subdirs` (`lib`, `include`) to their last
/// entry ([`tree_problems`]): the dynamic loader searches sub-folders of `lib/`
/// (`x86_64/`, `tls/`, `glibc-hwcaps/...`) before `lib/` itself, and the install script
/// puts no library in any, so a library there is refused whoever owns it. The files
/// directly in `lib/` are [`check_record`]'s.
pub fn check_subfolders(dir: &Path, subdirs: &[&str], uid: u32) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    for sub in subdirs {
        let folder = dir.join(sub);
        if *sub != "lib" {
            tree_problems(&folder, uid, false, &mut problems);
            continue;
        }
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) => {
                problems.push(format!("{}: {e}", folder.display()));
                continue;
            }
        };
        for entry in entries {
            let Ok(path) = entry.map(|entry| entry.path()) else {
                problems.push(format!("{}: unreadable entry", folder.display()));
                continue;
            };
            if !std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_dir()) {
                continue;
            }
            match private_problem(&path, uid) {
                Some(problem) => problems.push(problem),
                None => tree_problems(&path, uid, true, &mut problems),
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Checks a runtime that [`locate`] found before it is built against or loaded: a
/// runtime of the cache by [`check_cache_private`], [`check_subfolders`] and
/// [`check_record`]; one that an environment variable names is the user's choice and is
/// taken as it is. `subdirs`: the folders of the runtime that are read (`lib`, and
/// `include` for a build). `Err` is the whole message, with how to fix it.
pub fn check_trusted(found: &Found, subdirs: &[&str]) -> Result<(), String> {
    if !is_cache_runtime(found) {
        return Ok(());
    }
    let dir = &found.root;
    let untrusted_fix = format!("{UNTRUSTED_HINT} `npx dpctl-memory-install-runtime` again");
    let refused = |problems: Vec<String>, fix: &str| refusal("the SYCL runtime", dir, problems, fix);
    let Some(root) = cache_root() else {
        return Err(refused(vec!["the cache folder is not known".to_string()], &untrusted_fix));
    };
    let Some(uid) = effective_uid() else {
        return Err(refused(vec!["this process's user id is unknown (no /proc/self)".to_string()], &untrusted_fix));
    };
    check_cache_private(&root, dir, subdirs, uid).map_err(|problems| refused(problems, &untrusted_fix))?;
    check_subfolders(dir, subdirs, uid).map_err(|problems| refused(problems, &untrusted_fix))?;
    check_record(dir, uid).map_err(|problems| refused(problems, RECORD_HINT))
}

/// What the fix of a runtime whose files do not match their record is, for messages.
pub const RECORD_HINT: &str =
    "run `npx dpctl-memory-install-runtime` (in a clone: `node scripts/install-runtime.js`): \
     it checks every library against the sha256 recorded when it was installed (or against the \
     wheels' own records) and records it again, or says which file to remove; deleting the \
     folder and running it again reinstalls the runtime";

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_manifest_version_is_the_top_level_one() {
        let json = r#"{ "$comment": "x", "version" : "1.2.3", "wheels": [{ "name": "a", "version": "9" }] }"#;
        assert_eq!(top_level_version(json), "1.2.3");
        assert!(!RUNTIME_VERSION.is_empty() && RUNTIME_VERSION.chars().all(|c| c.is_ascii_digit() || c == '.'));
        assert!(cache_dir().is_none_or(|dir| dir.ends_with(format!("sycl-runtime-{RUNTIME_VERSION}"))));
    }

    #[test]
    fn the_2026_version_is_its_section_s_and_each_cached_runtime_has_its_folder() {
        let json = r#"{ "version": "1", "wheels": [], "sycl2026": { "$comment": "y", "version": "2026.1.2" } }"#;
        assert_eq!(version_after(json, "\"sycl2026\""), "2026.1.2");
        assert!(RUNTIME_2026_VERSION.starts_with("2026."));
        let cached = cached_runtimes();
        assert!(cached.is_empty() || cached.len() == 2);
        assert!(cached
            .iter()
            .zip([RUNTIME_VERSION, RUNTIME_2026_VERSION])
            .all(|(dir, v)| dir.ends_with(format!("sycl-runtime-{v}"))));
    }

    #[test]
    fn a_root_s_abi_is_its_newest_known_libsycl_and_what_it_lacks_is_said() {
        let base = std::env::temp_dir().join(format!("dpctl-memory-abi-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let lib = base.join("lib");
        std::fs::create_dir_all(&lib).unwrap();
        assert_eq!(abi_of(&base), None);
        assert!(lacks(&base, Need::Library)
            .contains("no lib/libsycl.so.<N> (this addon knows libsycl.so.8 (DPC++ 2025), libsycl.so.9 (DPC++ 2026))"));
        // A newer release than this addon knows: named, and refused.
        std::fs::write(lib.join("libsycl.so.10"), "").unwrap();
        assert_eq!(satisfies(&base, Need::Library), None);
        assert!(lacks(&base, Need::Library).contains("libsycl.so.10 only: an ABI this addon does not know"));
        std::fs::write(lib.join("libsycl.so.8"), "").unwrap();
        assert_eq!(satisfies(&base, Need::Library).map(|abi| abi.shim), Some("dpctl_memory_shim.so"));
        std::fs::write(lib.join("libsycl.so.9"), "").unwrap();
        assert_eq!(satisfies(&base, Need::Library).map(|abi| abi.shim), Some("dpctl_memory_shim_sycl9.so"));
        // The headers need the unversioned link name and sycl.hpp besides.
        assert_eq!(satisfies(&base, Need::Headers), None);
        assert!(lacks(&base, Need::Headers).contains("no include/sycl/sycl.hpp, no lib/libsycl.so"));
        std::fs::remove_dir_all(&base).unwrap();
    }

    fn set_mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A record line for `name` as the install script writes it (the hash is not read here).
    fn record_line(dir: &Path, name: &str) -> String {
        let meta = std::fs::symlink_metadata(dir.join(name)).unwrap();
        format!("{} {} {} {} {} {name}\n", "0".repeat(64), meta.size(), meta.ino(), meta.ctime(), meta.ctime_nsec())
    }

    fn write_record(dir: &Path, names: &[&str]) {
        let mut text = format!("{RECORD_HEADER}\n");
        for name in names {
            text.push_str(&record_line(dir, name));
        }
        std::fs::write(dir.join(RECORD_FILE), text).unwrap();
        set_mode(&dir.join(RECORD_FILE), 0o644);
    }

    fn joined(result: Result<(), Vec<String>>) -> String {
        result.err().map(|problems| problems.join("; ")).unwrap_or_default()
    }

    #[test]
    fn locate_a_private_recorded_cache_passes_and_each_breach_is_named() {
        let uid = effective_uid().expect("/proc/self");
        let base = std::env::temp_dir().join(format!("dpctl-memory-locate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("cache");
        let dir = root.join("sycl-runtime-test");
        let lib = dir.join("lib");
        std::fs::create_dir_all(lib.join("python3")).unwrap();
        for folder in [&base, &root, &dir, &lib] {
            set_mode(folder, 0o755);
        }
        for name in ["libsycl.so.8", "libintelocl.so"] {
            std::fs::write(lib.join(name), name).unwrap();
            set_mode(&lib.join(name), 0o644);
        }
        write_record(&dir, &["lib/libsycl.so.8", "lib/libintelocl.so"]);
        assert_eq!(check_cache_private(&root, &dir, &["lib"], uid), Ok(()));
        assert_eq!(check_record(&dir, uid), Ok(()));

        // A folder, or a library, writable by the group: refused, and named.
        for (path, file_mode) in [(&root, 0o775), (&lib, 0o775), (&base, 0o777)] {
            set_mode(path, file_mode);
            let problems = joined(check_cache_private(&root, &dir, &["lib"], uid));
            assert!(problems.contains("writable by its group or by others"), "{problems}");
            set_mode(path, 0o755);
        }
        set_mode(&lib.join("libsycl.so.8"), 0o664);
        assert!(joined(check_record(&dir, uid)).contains("libsycl.so.8 is writable by its group"));
        set_mode(&lib.join("libsycl.so.8"), 0o644);
        // Back to its mode, but its change time moved: not the recorded file any more.
        assert!(joined(check_record(&dir, uid)).contains("libsycl.so.8 changed since it was installed"));
        write_record(&dir, &["lib/libsycl.so.8", "lib/libintelocl.so"]);
        // A sticky folder above the cache (as /tmp) is fine.
        set_mode(&base, 0o1777);
        assert_eq!(check_cache_private(&root, &dir, &["lib"], uid), Ok(()));
        set_mode(&base, 0o755);

        // A library planted beside the recorded ones, or a symbolic link: refused.
        std::fs::write(lib.join("libur_adapter_planted.so.0"), "x").unwrap();
        set_mode(&lib.join("libur_adapter_planted.so.0"), 0o644);
        assert!(joined(check_record(&dir, uid)).contains("libur_adapter_planted.so.0 is not in the record"));
        std::fs::remove_file(lib.join("libur_adapter_planted.so.0")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", lib.join("libumf.so.1")).unwrap();
        assert!(joined(check_record(&dir, uid)).contains("libumf.so.1 is a symbolic link"));
        std::fs::remove_file(lib.join("libumf.so.1")).unwrap();
        assert_eq!(check_record(&dir, uid), Ok(()));

        // A recorded library replaced (renamed over) or rewritten in place: refused.
        let replacement = lib.join(".new");
        std::fs::write(&replacement, "libsycl.so.8").unwrap();
        set_mode(&replacement, 0o644);
        std::fs::rename(&replacement, lib.join("libsycl.so.8")).unwrap();
        assert!(joined(check_record(&dir, uid)).contains("libsycl.so.8 changed since it was installed"));
        write_record(&dir, &["lib/libsycl.so.8", "lib/libintelocl.so"]);
        assert_eq!(check_record(&dir, uid), Ok(()));
        std::fs::write(lib.join("libintelocl.so"), "libintelocl.sX").unwrap();
        assert!(joined(check_record(&dir, uid)).contains("libintelocl.so changed since it was installed"));
        // A recorded file that is gone, a malformed record, no record: refused.
        std::fs::remove_file(lib.join("libintelocl.so")).unwrap();
        assert!(joined(check_record(&dir, uid)).contains("libintelocl.so is recorded but missing"));
        std::fs::write(dir.join(RECORD_FILE), format!("{RECORD_HEADER}\nnot a line\n")).unwrap();
        assert!(joined(check_record(&dir, uid)).contains("malformed line"));
        std::fs::remove_file(dir.join(RECORD_FILE)).unwrap();
        assert!(joined(check_record(&dir, uid)).contains("holds no record"));
        // Issue 39.14: folders inside lib/ (the loader searches x86_64/, tls/,
        // glibc-hwcaps/... before lib/): the wheels' private folders pass; a library in
        // one, a folder writable by others or another user's, a link: refused, and named.
        std::fs::create_dir_all(lib.join("python3").join("site-packages")).unwrap();
        std::fs::write(lib.join("python3/site-packages/RECORD"), "x").unwrap();
        set_mode(&lib.join("python3/site-packages/RECORD"), 0o644);
        set_mode(&lib.join("python3/site-packages"), 0o755);
        assert_eq!(check_subfolders(&dir, &["lib"], uid), Ok(()));
        let hwcap = lib.join("x86_64");
        std::fs::create_dir(&hwcap).unwrap();
        set_mode(&hwcap, 0o755);
        assert_eq!(check_subfolders(&dir, &["lib"], uid), Ok(()), "an empty private folder loads nothing");
        std::fs::write(hwcap.join("libur_loader.so.0"), "x").unwrap();
        set_mode(&hwcap.join("libur_loader.so.0"), 0o644);
        let problems = joined(check_subfolders(&dir, &["lib"], uid));
        assert!(problems.contains("x86_64/libur_loader.so.0 is a library in a sub-folder"), "{problems}");
        set_mode(&hwcap, 0o777);
        let problems = joined(check_subfolders(&dir, &["lib"], uid));
        assert!(problems.contains(&format!("{} is writable by its group or by others", hwcap.display())), "{problems}");
        set_mode(&hwcap, 0o755);
        if uid == 0 {
            std::os::unix::fs::chown(lib.join("python3/site-packages"), Some(65534), None).unwrap();
            let problems = joined(check_subfolders(&dir, &["lib"], uid));
            assert!(problems.contains("site-packages is owned by uid 65534"), "{problems}");
            std::os::unix::fs::chown(lib.join("python3/site-packages"), Some(0), None).unwrap();
        }
        std::fs::remove_dir_all(&hwcap).unwrap();
        write_record(&dir, &["lib/libsycl.so.8"]);
        std::os::unix::fs::symlink(&base, lib.join("tls")).unwrap();
        assert!(joined(check_record(&dir, uid)).contains("lib/tls is a symbolic link"), "check_record names it");
        std::fs::remove_file(lib.join("tls")).unwrap();
        assert_eq!(check_subfolders(&dir, &["lib"], uid), Ok(()));
        assert_eq!(check_record(&dir, uid), Ok(()));

        // A runtime folder that is a symbolic link inside the cache: refused.
        let elsewhere = base.join("elsewhere");
        std::fs::rename(&dir, &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
        assert!(joined(check_cache_private(&root, &dir, &["lib"], uid)).contains("is a symbolic link"));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
