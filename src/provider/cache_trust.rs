//! The per-user cache's trust rules, one implementation for every library loaded from it:
//! the SYCL runtime (`sycl/locate.rs`, which adds its record of every file of `lib/`), UCX
//! (`ucx/locate.rs`) and NVRTC (`cuda/nvrtc.rs`). `build.rs` includes this file too (as
//! `provider::cache_trust`, through `sycl/locate.rs`), so it uses `std` only.
//!
//! Where the cache is: `${DPCTL_MEMORY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dpctl-memory}`.
//! A relative value of any of the three variables is ignored, as the XDG base directory
//! specification says (it would make the cache depend on the working directory: a program
//! started in an untrusted folder would load that folder's libraries).
//!
//! What is loaded from it, as ssh checks its own files: the cache folder and every folder
//! and file below it down to what is loaded are real (no symbolic link), owned by this
//! user and writable by nobody else; the folders above the cache are owned by this user or
//! root and writable by nobody else unless sticky (as `/tmp`). The dynamic loader searches
//! sub-folders of a library's folder (`x86_64/`, `tls/`, `glibc-hwcaps/...`) before the
//! folder itself, so [`tree_problems`] checks a library folder to its last entry.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The variables that name the cache, in priority order (the same as the install scripts').
pub const CACHE_VARS: [&str; 3] = ["DPCTL_MEMORY_CACHE", "XDG_CACHE_HOME", "HOME"];

/// Problems listed in one message at most.
pub const PROBLEMS_SHOWN: usize = 6;

/// Entries [`tree_problems`] visits at most: a cache folder holds a few hundred; one with
/// more is refused rather than walked for ever.
const TREE_LIMIT: usize = 100_000;

/// How the fix of a cache with the wrong owner or modes starts, for messages; the install
/// command that remakes the folder follows it.
pub const UNTRUSTED_HINT: &str = "make every folder of the cache yours and writable by you alone \
     (`chmod -R go-w` on it; `chown` what another user owns), or delete the folder and run";

/// The per-user cache folder (`.../dpctl-memory`) that holds the runtime and its siblings:
/// from the first of [`CACHE_VARS`] that is set to an absolute path. `None` when none is.
pub fn cache_root() -> Option<PathBuf> {
    if let Some(dir) = absolute_var("DPCTL_MEMORY_CACHE") {
        Some(dir)
    } else if let Some(xdg) = absolute_var("XDG_CACHE_HOME") {
        Some(xdg.join("dpctl-memory"))
    } else {
        Some(absolute_var("HOME")?.join(".cache").join("dpctl-memory"))
    }
}

/// The cache variables that are set but ignored because they are relative, each as
/// `NAME=value` (for messages).
pub fn ignored_cache_vars() -> Vec<String> {
    CACHE_VARS
        .iter()
        .filter_map(|name| {
            let value = non_empty_var(name)?;
            (!Path::new(&value).is_absolute()).then(|| format!("{name}={}", Path::new(&value).display()))
        })
        .collect()
}

/// An environment variable's value, when set and not empty.
pub fn non_empty_var(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// An environment variable's value when it is an absolute path; a relative one is ignored
/// (it would resolve against the working directory).
pub fn absolute_var(name: &str) -> Option<PathBuf> {
    non_empty_var(name).map(PathBuf::from).filter(|path| path.is_absolute())
}

/// Why `path` may not hold what this process loads, or `None`: it must be a real folder
/// or file (not a symbolic link), owned by `uid`, and writable by nobody else (no group or
/// other write bit). The rules of ssh's `StrictModes` for its own files.
pub fn private_problem(path: &Path, uid: u32) -> Option<String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) => return Some(format!("{}: {e}", path.display())),
    };
    let mode = meta.permissions().mode();
    if meta.file_type().is_symlink() {
        Some(format!("{} is a symbolic link (never followed in the cache)", path.display()))
    } else if meta.uid() != uid {
        Some(format!("{} is owned by uid {}, not by this user (uid {uid})", path.display(), meta.uid()))
    } else if mode & 0o022 != 0 {
        Some(format!("{} is writable by its group or by others (mode {:o})", path.display(), mode & 0o7777))
    } else {
        None
    }
}

/// Why a folder above the cache lets someone else replace it, or `None`: it must be owned
/// by `uid` or by root, and writable by nobody else unless it is sticky (as `/tmp` is:
/// there only an entry's owner may rename or delete it).
fn ancestor_problem(dir: &Path, uid: u32) -> Option<String> {
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(e) => return Some(format!("{}: {e}", dir.display())),
    };
    let mode = meta.permissions().mode();
    if meta.uid() != uid && meta.uid() != 0 {
        Some(format!(
            "{} (above the cache) is owned by uid {}, neither this user (uid {uid}) nor root",
            dir.display(),
            meta.uid()
        ))
    } else if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        Some(format!(
            "{} (above the cache) is writable by its group or by others and not sticky (mode {:o})",
            dir.display(),
            mode & 0o7777
        ))
    } else {
        None
    }
}

/// Checks the folders `dir` is loaded from: the cache folder `root` and every folder from
/// it down to `dir` and `dir`'s `subdirs` (no symbolic link, owned by `uid`, writable by
/// nobody else), and every folder above `root` (owned by `uid` or root, not writable by
/// others unless sticky). `Err` lists every problem. What is inside the folders is checked
/// by [`tree_problems`] or by whoever reads it.
pub fn check_cache_private(root: &Path, dir: &Path, subdirs: &[&str], uid: u32) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let Ok(below) = dir.strip_prefix(root) else {
        return Err(vec![format!("{} is not inside the cache {}", dir.display(), root.display())]);
    };
    // The cache folder itself may be reached through a link of the user's (a `~/.cache`
    // moved to another disk): the folders are checked where they really are.
    let real_root = match std::fs::canonicalize(root) {
        Ok(real) => real,
        Err(e) => return Err(vec![format!("{}: {e}", root.display())]),
    };
    let mut inside = vec![real_root.clone()];
    let mut current = real_root.clone();
    for part in below.components() {
        current = current.join(part);
        inside.push(current.clone());
    }
    for sub in subdirs {
        inside.push(current.join(sub));
    }
    problems.extend(inside.iter().filter_map(|path| private_problem(path, uid)));
    problems.extend(real_root.ancestors().skip(1).filter_map(|dir| ancestor_problem(dir, uid)));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Adds to `problems` every entry below the folder `dir`, at any depth, that breaks
/// [`private_problem`]'s rules or is neither a regular file nor a folder (a socket, a
/// device, a pipe), and, where `no_libraries` is set, every shared library (a name with
/// `.so`) in it: the dynamic loader searches sub-folders of a library's folder before the
/// folder. Symbolic links are reported, never followed. `dir` itself is not checked.
pub fn tree_problems(dir: &Path, uid: u32, no_libraries: bool, problems: &mut Vec<String>) {
    let mut pending = vec![dir.to_path_buf()];
    let mut visited = 0usize;
    while let Some(folder) = pending.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) => {
                problems.push(format!("{}: {e}", folder.display()));
                continue;
            }
        };
        for entry in entries {
            visited += 1;
            if visited > TREE_LIMIT {
                problems.push(format!("{} holds more than {TREE_LIMIT} entries (not walked further)", dir.display()));
                return;
            }
            let path = match entry {
                Ok(entry) => entry.path(),
                Err(e) => {
                    problems.push(format!("{}: {e}", folder.display()));
                    continue;
                }
            };
            if let Some(problem) = private_problem(&path, uid) {
                problems.push(problem);
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            if meta.is_dir() {
                pending.push(path);
            } else if !meta.is_file() {
                problems.push(format!("{} is neither a regular file nor a folder", path.display()));
            } else if no_libraries && is_library_name(&path) {
                problems.push(format!(
                    "{} is a library in a sub-folder, which the dynamic loader searches before the folder itself \
                     (the install script puts none there)",
                    path.display()
                ));
            }
        }
    }
}

/// Whether a file name is a shared library's as the dynamic loader looks one up: `*.so`
/// or `*.so.<version>`.
fn is_library_name(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.ends_with(".so") || name.contains(".so.")
}

/// Checks a folder of the cache that a library is loaded from, and everything in it:
/// [`check_cache_private`] from `root` down to `dir`, then [`tree_problems`] over `dir`.
pub fn check_library_folder(root: &Path, dir: &Path, uid: u32) -> Result<(), Vec<String>> {
    let mut problems = match check_cache_private(root, dir, &[], uid) {
        Ok(()) => Vec::new(),
        Err(problems) => problems,
    };
    // A folder that is itself refused (a symbolic link, say) is not walked into.
    if problems.is_empty() {
        tree_problems(dir, uid, false, &mut problems);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// The message of a refusal: `what` (`"UCX"`), the folder, the first
/// [`PROBLEMS_SHOWN`] problems (each names its path and why), and the fix.
pub fn refusal(what: &str, dir: &Path, problems: Vec<String>, fix: &str) -> String {
    let more = problems.len().saturating_sub(PROBLEMS_SHOWN);
    let mut shown = problems.into_iter().take(PROBLEMS_SHOWN).collect::<Vec<_>>().join("; ");
    if more > 0 {
        shown.push_str(&format!("; and {more} more"));
    }
    format!("dpctl-memory refused to load {what} in its cache {}: {shown}. To fix it, {fix}", dir.display())
}

/// Checks the cache folder `dir` (below [`cache_root`]) before `what` is loaded from it:
/// [`check_library_folder`] for this process's user. `Err` is the whole message
/// ([`refusal`]), ending with `install` (the command that installs it again).
pub fn check_cached_library(what: &str, dir: &Path, install: &str) -> Result<(), String> {
    let fix = format!("{UNTRUSTED_HINT} `{install}` again");
    let Some(root) = cache_root() else {
        return Err(refusal(what, dir, vec!["the cache folder is not known".to_string()], &fix));
    };
    let Some(uid) = effective_uid() else {
        return Err(refusal(what, dir, vec!["this process's user id is unknown (no /proc/self)".to_string()], &fix));
    };
    check_library_folder(&root, dir, uid).map_err(|problems| refusal(what, dir, problems, &fix))
}

/// The effective user id of this process, without FFI: the owner of `/proc/self` (Linux
/// makes it the process's effective uid).
pub fn effective_uid() -> Option<u32> {
    std::fs::metadata("/proc/self").ok().map(|meta| meta.uid())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn set_mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn joined(result: Result<(), Vec<String>>) -> String {
        result.err().map(|problems| problems.join("; ")).unwrap_or_default()
    }

    /// A cache `base/cache` with a library folder `ucx-test/libucx/lib/ucx` as an install
    /// leaves it: private folders, 0755 libraries.
    fn cache(name: &str) -> (PathBuf, PathBuf, PathBuf) {
        let base = std::env::temp_dir().join(format!("dpctl-memory-trust-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("cache");
        let dir = root.join("ucx-test");
        let modules = dir.join("libucx").join("lib").join("ucx");
        std::fs::create_dir_all(&modules).unwrap();
        for folder in [&base, &root, &dir, &dir.join("libucx"), &dir.join("libucx").join("lib"), &modules] {
            set_mode(folder, 0o755);
        }
        for file in [dir.join("libucx/lib/libucp.so.0"), modules.join("libuct_cma.so.0")] {
            std::fs::write(&file, "ELF").unwrap();
            set_mode(&file, 0o755);
        }
        (base, root, dir)
    }

    #[test]
    fn a_private_library_folder_passes_and_every_breach_below_it_is_named() {
        let uid = effective_uid().expect("/proc/self");
        let (base, root, dir) = cache("tree");
        assert_eq!(check_library_folder(&root, &dir, uid), Ok(()));
        let modules = dir.join("libucx/lib/ucx");
        // Writable by others at any depth: the folder, a nested folder, a library in it.
        for path in [dir.clone(), modules.clone(), modules.join("libuct_cma.so.0")] {
            set_mode(&path, 0o777);
            let problems = joined(check_library_folder(&root, &dir, uid));
            assert!(problems.contains(&format!("{} is writable by its group or by others (mode 777)", path.display())));
            set_mode(&path, 0o755);
        }
        // A folder the loader searches first, planted with another owner's library.
        let hwcap = dir.join("libucx/lib/x86_64");
        std::fs::create_dir(&hwcap).unwrap();
        std::fs::write(hwcap.join("libucs.so.0"), "ELF").unwrap();
        set_mode(&hwcap, 0o755);
        set_mode(&hwcap.join("libucs.so.0"), 0o644);
        assert_eq!(check_library_folder(&root, &dir, uid), Ok(()), "the user's own files are the user's");
        if uid == 0 {
            std::os::unix::fs::chown(&hwcap, Some(65534), None).unwrap();
            let problems = joined(check_library_folder(&root, &dir, uid));
            assert!(problems.contains(&format!("{} is owned by uid 65534", hwcap.display())), "{problems}");
            std::os::unix::fs::chown(&hwcap, Some(0), None).unwrap();
        }
        // With libraries not allowed below (the SYCL runtime's lib/), the same file is refused.
        let mut problems = Vec::new();
        tree_problems(&dir.join("libucx/lib"), uid, true, &mut problems);
        assert!(problems.iter().any(|p| p.contains("x86_64/libucs.so.0 is a library in a sub-folder")), "{problems:?}");
        std::fs::remove_dir_all(&hwcap).unwrap();
        // A symbolic link inside, or as the folder itself: refused, never followed.
        std::os::unix::fs::symlink("/etc", modules.join("etc")).unwrap();
        assert!(joined(check_library_folder(&root, &dir, uid)).contains("ucx/etc is a symbolic link"));
        std::fs::remove_file(modules.join("etc")).unwrap();
        let elsewhere = base.join("elsewhere");
        std::fs::rename(&dir, &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
        let problems = joined(check_library_folder(&root, &dir, uid));
        assert!(problems.contains("ucx-test is a symbolic link"), "{problems}");
        std::fs::remove_file(&dir).unwrap();
        std::fs::rename(&elsewhere, &dir).unwrap();
        // A folder above the cache writable by others: refused unless sticky.
        set_mode(&base, 0o777);
        assert!(joined(check_library_folder(&root, &dir, uid)).contains("(above the cache) is writable"));
        set_mode(&base, 0o1777);
        assert_eq!(check_library_folder(&root, &dir, uid), Ok(()));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_refusal_names_each_problem_and_counts_the_rest() {
        let problems: Vec<String> = (0..9).map(|i| format!("/c/f{i} is a symbolic link")).collect();
        let message = refusal("UCX", Path::new("/c"), problems, "do this");
        assert!(message.starts_with("dpctl-memory refused to load UCX in its cache /c: /c/f0 is a symbolic link"));
        assert!(message.contains("/c/f5") && !message.contains("/c/f6"));
        assert!(message.ends_with("; and 3 more. To fix it, do this"), "{message}");
        assert!(is_library_name(Path::new("a/libx.so")) && is_library_name(Path::new("libx.so.0.1")));
        assert!(!is_library_name(Path::new("umf-config.cmake")) && !is_library_name(Path::new("RECORD")));
    }
}
