//! Finds a system library by its soname as the dynamic loader's search would, but with
//! absolute paths only, so that the addon never `dlopen`s a bare name: an empty element of
//! `LD_LIBRARY_PATH` (`/opt/x/lib:`, the common result of
//! `LD_LIBRARY_PATH=/opt/x/lib:$LD_LIBRARY_PATH` where it was unset) or a relative one
//! (`lib`) makes the loader search the working directory, and a program started in an
//! untrusted folder would run that folder's library.
//!
//! Order, as `ld.so(8)` says for a name without a slash (the addon has no rpath): each
//! absolute element of `LD_LIBRARY_PATH` (empty and relative ones skipped), the entries of
//! ldconfig's cache `/etc/ld.so.cache` (the baseline ones: an entry for a CPU extension's
//! `glibc-hwcaps` folder is left to the loader), then the system folders. A file counts only
//! if it is an ELF shared object of this process's class and machine, as the loader skips
//! others. Used for UCX's `libucp.so.0` and NVRTC's `libnvrtc.so.N`.

use std::path::{Path, PathBuf};

/// The system folders the loader searches last (glibc's built-in list, with Debian's
/// multiarch folders).
fn system_dirs() -> Vec<PathBuf> {
    let triple = format!("{}-linux-gnu", std::env::consts::ARCH);
    ["/lib", "/usr/lib"]
        .iter()
        .map(|dir| Path::new(dir).join(&triple))
        .chain(["/lib64", "/usr/lib64", "/lib", "/usr/lib"].iter().map(PathBuf::from))
        .collect()
}

/// The elements of `LD_LIBRARY_PATH` that are absolute paths, in order, and the ones
/// skipped (empty, written `""`, or relative), for messages. glibc splits on `:` and `;`.
pub fn ld_library_path() -> (Vec<PathBuf>, Vec<String>) {
    let value = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
    split_ld_library_path(&value.to_string_lossy())
}

fn split_ld_library_path(value: &str) -> (Vec<PathBuf>, Vec<String>) {
    let (mut used, mut skipped) = (Vec::new(), Vec::new());
    if value.is_empty() {
        return (used, skipped);
    }
    for element in value.split([':', ';']) {
        if Path::new(element).is_absolute() {
            used.push(PathBuf::from(element));
        } else {
            skipped.push(if element.is_empty() { "\"\"".to_string() } else { element.to_string() });
        }
    }
    (used, skipped)
}

/// Finds `soname` (a file name, no slash): the first match in the order of the module's
/// doc, an absolute path. `None` when no location holds it.
pub fn find(soname: &str) -> Option<PathBuf> {
    if soname.is_empty() || soname.contains('/') {
        return None;
    }
    let (dirs, _) = ld_library_path();
    let cached = std::fs::read("/etc/ld.so.cache").map(|bytes| ld_so_cache_lookup(&bytes, soname)).unwrap_or_default();
    dirs.into_iter()
        .map(|dir| dir.join(soname))
        .chain(cached)
        .chain(system_dirs().into_iter().map(|dir| dir.join(soname)))
        .find(|path| path.is_absolute() && is_loadable_elf(path))
}

/// Why a system library was not looked for in the working directory, for the messages of
/// a search that found nothing: the `LD_LIBRARY_PATH` elements skipped. Empty when none was.
pub fn skipped_note() -> String {
    let (_, skipped) = ld_library_path();
    if skipped.is_empty() {
        String::new()
    } else {
        format!(
            " (LD_LIBRARY_PATH's empty or relative elements {} skipped: they name the working directory)",
            skipped.join(", ")
        )
    }
}

/// Whether `path` is a regular file holding an ELF shared object of this process's class
/// (64 or 32 bits), byte order and machine: its header says so.
fn is_loadable_elf(path: &Path) -> bool {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else { return false };
    if !file.metadata().is_ok_and(|meta| meta.is_file()) {
        return false;
    }
    let mut header = [0u8; 20];
    if file.read_exact(&mut header).is_err() || header[..4] != *b"\x7fELF" {
        return false;
    }
    let class = if cfg!(target_pointer_width = "64") { 2 } else { 1 };
    let order = if cfg!(target_endian = "little") { 1 } else { 2 };
    let machine_bytes = [header[18], header[19]];
    let machine = if order == 1 { u16::from_le_bytes(machine_bytes) } else { u16::from_be_bytes(machine_bytes) };
    let type_bytes = [header[16], header[17]];
    let elf_type = if order == 1 { u16::from_le_bytes(type_bytes) } else { u16::from_be_bytes(type_bytes) };
    // ET_DYN: a shared object.
    header[4] == class && header[5] == order && elf_type == 3 && Some(machine) == this_machine()
}

/// This build's ELF `e_machine`.
fn this_machine() -> Option<u16> {
    match std::env::consts::ARCH {
        "x86_64" => Some(62),
        "aarch64" => Some(183),
        "x86" => Some(3),
        "powerpc64" => Some(21),
        "riscv64" => Some(243),
        "s390x" => Some(22),
        _ => None,
    }
}

/// The paths ldconfig's cache (`bytes`, glibc's `glibc-ld.so.cache1.1` layout, alone or
/// after the old `ld.so-1.7.0` one) gives for `soname`, in its order, leaving out the
/// entries of a CPU extension (`hwcap` set: a `glibc-hwcaps` folder). Empty for a cache of
/// another layout.
fn ld_so_cache_lookup(bytes: &[u8], soname: &str) -> Vec<PathBuf> {
    const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
    const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
    const NEW_HEADER: usize = 48;
    const NEW_ENTRY: usize = 24;
    let u32_at = |at: usize| -> Option<u32> {
        let b = bytes.get(at..at.checked_add(4)?)?;
        Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |at: usize| -> Option<u64> {
        let b = bytes.get(at..at.checked_add(8)?)?;
        Some(u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    };
    // The new layout's start: the file's, or after the old layout's entries (12 bytes
    // each after a 16-byte header), aligned to 8.
    let start = if bytes.starts_with(NEW_MAGIC) {
        0
    } else if bytes.starts_with(OLD_MAGIC) {
        let Some(count) = u32_at(12).and_then(|n| usize::try_from(n).ok()) else { return Vec::new() };
        let Some(end) = count.checked_mul(12).and_then(|n| n.checked_add(16)) else { return Vec::new() };
        end.div_ceil(8) * 8
    } else {
        return Vec::new();
    };
    if !bytes.get(start..).is_some_and(|rest| rest.starts_with(NEW_MAGIC)) {
        return Vec::new();
    }
    let Some(count) = u32_at(start + 20).and_then(|n| usize::try_from(n).ok()) else { return Vec::new() };
    // A string: NUL-terminated, at an offset from the new layout's start.
    let string_at = |offset: u32| -> Option<&[u8]> {
        let from = start.checked_add(usize::try_from(offset).ok()?)?;
        let rest = bytes.get(from..)?;
        Some(&rest[..rest.iter().position(|&b| b == 0)?])
    };
    let mut out = Vec::new();
    for i in 0..count {
        let Some(at) = i.checked_mul(NEW_ENTRY).and_then(|n| n.checked_add(start + NEW_HEADER)) else { break };
        let (Some(key), Some(value), Some(hwcap)) = (u32_at(at + 4), u32_at(at + 8), u64_at(at + 16)) else { break };
        if hwcap != 0 || string_at(key) != Some(soname.as_bytes()) {
            continue;
        }
        if let Some(path) = string_at(value).and_then(|v| std::str::from_utf8(v).ok()) {
            out.push(PathBuf::from(path));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_relative_ld_library_path_elements_are_skipped() {
        let (used, skipped) = split_ld_library_path("/opt/a/lib::lib;/b:.:");
        assert_eq!(used, vec![PathBuf::from("/opt/a/lib"), PathBuf::from("/b")]);
        assert_eq!(skipped, vec!["\"\"", "lib", ".", "\"\""]);
        assert_eq!(split_ld_library_path(""), (vec![], vec![]));
    }

    #[test]
    fn the_c_library_is_found_by_absolute_path_through_ldconfigs_cache() {
        let bytes = std::fs::read("/etc/ld.so.cache").expect("this system has an ldconfig cache");
        let found = ld_so_cache_lookup(&bytes, "libc.so.6");
        assert!(!found.is_empty(), "libc.so.6 is in the cache");
        assert!(found.iter().all(|p| p.is_absolute() && p.ends_with("libc.so.6")), "{found:?}");
        assert!(ld_so_cache_lookup(&bytes, "libno-such-library.so.0").is_empty());
        // Every truncation of the cache parses without a panic.
        for cut in [0, 5, 20, 47, 48, 60, bytes.len() / 2] {
            let _ = ld_so_cache_lookup(&bytes[..cut.min(bytes.len())], "libc.so.6");
        }
        let libc = find("libc.so.6").expect("libc.so.6 is found");
        assert!(libc.is_absolute() && is_loadable_elf(&libc), "{}", libc.display());
        assert_eq!(find("./libc.so.6"), None, "a name with a slash is not a soname");
        assert!(!is_loadable_elf(Path::new("/etc/hostname")));
    }
}
