//! NVRTC, the CUDA runtime compiler, loaded at run time: CUDA C++ source compiled to PTX
//! for `createProgramFromCuda` (the driver then loads the PTX as any other). The addon
//! never links NVRTC, so everything else works without it; without it a CUDA C build is
//! `ERR_NVRTC_UNAVAILABLE`, whose message says what to install. This is the one module
//! that calls NVRTC.
//!
//! Which library (every one found is asked its version, and one is chosen for the driver):
//! 1. `DPCTL_MEMORY_NVRTC_ROOT`: a CUDA toolkit prefix (`lib64/`, `lib/`) or the folder
//!    of `libnvrtc.so.N` itself;
//! 2. a CUDA toolkit: `$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda` (`lib64/`,
//!    `targets/x86_64-linux/lib/`);
//! 3. `libnvrtc.so.13` and `libnvrtc.so.12` where the dynamic loader's search finds them
//!    (`LD_LIBRARY_PATH`, ldconfig's cache, the system folders), searched by
//!    `provider/system_lib.rs` with absolute paths only, never loaded by a bare name (an
//!    empty element of `LD_LIBRARY_PATH` is the working directory);
//! 4. the per-user cache that `scripts/install-nvrtc.js` fills from the pinned
//!    `nvidia-cuda-nvrtc-cu12` wheel (`runtime.json`'s `nvrtc`), only when the cache's
//!    trust rules pass on its whole `nvrtc-<version>` folder (`provider/cache_trust.rs`).
//!
//! Relative roots (`DPCTL_MEMORY_NVRTC_ROOT`, `CUDA_HOME`, `CUDA_PATH`) are ignored: they
//! would name a folder of the working directory.
//!
//! PTX carries the ISA version of the NVRTC that made it, and a driver loads only PTX of
//! its own CUDA version or older: so the first library (in the order above) whose version
//! is at most the driver's is chosen; failing that, one of the driver's major version (its
//! PTX may need a newer driver, which the load's error then says).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The sonames of the NVRTC majors this addon uses, newest first (12 and 13 share the API
/// used here).
const SONAMES: [&str; 2] = ["libnvrtc.so.13", "libnvrtc.so.12"];

type NvrtcResult = c_int;
type NvrtcProgram = *mut c_void;
const NVRTC_SUCCESS: NvrtcResult = 0;
const NVRTC_ERROR_COMPILATION: NvrtcResult = 6;

/// NVRTC's entry points (`nvrtc.h`, stable since CUDA 11.2).
struct Table {
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> NvrtcResult,
    num_supported_archs: unsafe extern "C" fn(*mut c_int) -> NvrtcResult,
    supported_archs: unsafe extern "C" fn(*mut c_int) -> NvrtcResult,
    create: unsafe extern "C" fn(
        *mut NvrtcProgram,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> NvrtcResult,
    compile: unsafe extern "C" fn(NvrtcProgram, c_int, *const *const c_char) -> NvrtcResult,
    log_size: unsafe extern "C" fn(NvrtcProgram, *mut usize) -> NvrtcResult,
    log: unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> NvrtcResult,
    ptx_size: unsafe extern "C" fn(NvrtcProgram, *mut usize) -> NvrtcResult,
    ptx: unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> NvrtcResult,
    destroy: unsafe extern "C" fn(*mut NvrtcProgram) -> NvrtcResult,
    error_string: unsafe extern "C" fn(NvrtcResult) -> *const c_char,
}

impl Table {
    /// # Safety
    /// `lib` is an NVRTC library: each symbol is given its `nvrtc.h` signature.
    unsafe fn resolve(lib: &libloading::Library) -> Result<Self, String> {
        macro_rules! get {
            ($name:literal) => {
                // SAFETY: the field's type is the documented signature of this symbol (the
                // caller vouches that `lib` is NVRTC).
                *unsafe { lib.get($name.as_bytes()) }.map_err(|e| format!("it has no symbol {}: {e}", $name))?
            };
        }
        Ok(Table {
            version: get!("nvrtcVersion"),
            num_supported_archs: get!("nvrtcGetNumSupportedArchs"),
            supported_archs: get!("nvrtcGetSupportedArchs"),
            create: get!("nvrtcCreateProgram"),
            compile: get!("nvrtcCompileProgram"),
            log_size: get!("nvrtcGetProgramLogSize"),
            log: get!("nvrtcGetProgramLog"),
            ptx_size: get!("nvrtcGetPTXSize"),
            ptx: get!("nvrtcGetPTX"),
            destroy: get!("nvrtcDestroyProgram"),
            error_string: get!("nvrtcGetErrorString"),
        })
    }
}

/// A loaded NVRTC.
pub(super) struct Nvrtc {
    table: Table,
    /// `(major, minor)` as `nvrtcVersion` says.
    pub version: (i32, i32),
    /// The virtual architectures it compiles for (`52` for `compute_52`), ascending.
    pub archs: Vec<i32>,
    /// Where it was loaded from, and what named it.
    pub path: PathBuf,
    pub source: &'static str,
    // Last: the table's pointers are into it.
    _lib: libloading::Library,
}

/// A successful compilation: the PTX and NVRTC's log (warnings; often empty).
#[derive(Debug)]
pub(super) struct Compiled {
    pub ptx: String,
    pub log: String,
}

/// The outcome of a compilation that ran: the PTX, or the compiler's log of the errors.
pub(super) type Compilation = Result<Compiled, String>;

/// One library to try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Candidate {
    pub path: PathBuf,
    pub source: &'static str,
}

/// What names a library of the cache (the error lists why one was refused).
const CACHE_SOURCE: &str = "the per-user cache (nvidia-cuda-nvrtc-cu12)";

/// `runtime.json`'s `nvrtc.version`.
pub(super) fn manifest_version() -> Option<&'static str> {
    crate::provider::manifest_version_of("nvrtc")
}

/// The folder the install script fills (the wheel unpacked), if a cache root is known.
pub(super) fn cache_dir() -> Option<PathBuf> {
    Some(crate::provider::cache_trust::cache_root()?.join(format!("nvrtc-{}", manifest_version()?)))
}

/// Every library file that exists in the search order (see the module's doc), each an
/// absolute path; the cache's last. Those of the cache are checked by [`open`] before they
/// are loaded.
pub(super) fn candidates() -> Vec<Candidate> {
    use crate::provider::cache_trust::absolute_var;
    let mut out = Vec::new();
    let mut in_folder = |folder: PathBuf, source: &'static str| {
        for soname in SONAMES {
            let path = folder.join(soname);
            if path.is_file() && !out.iter().any(|c: &Candidate| c.path == path) {
                out.push(Candidate { path, source });
            }
        }
    };
    if let Some(root) = absolute_var("DPCTL_MEMORY_NVRTC_ROOT") {
        for folder in [root.join("lib64"), root.join("lib"), root.clone()] {
            in_folder(folder, "DPCTL_MEMORY_NVRTC_ROOT");
        }
    }
    let toolkits = [
        (absolute_var("CUDA_HOME"), "CUDA_HOME"),
        (absolute_var("CUDA_PATH"), "CUDA_PATH"),
        (Some(PathBuf::from("/usr/local/cuda")), "the CUDA toolkit in /usr/local/cuda"),
    ];
    for (root, source) in toolkits {
        if let Some(root) = root {
            in_folder(root.join("lib64"), source);
            in_folder(root.join("targets").join("x86_64-linux").join("lib"), source);
        }
    }
    for soname in SONAMES {
        if let Some(path) = crate::provider::system_lib::find(soname) {
            if !out.iter().any(|c| c.path == path) {
                out.push(Candidate { path, source: "the system's library path" });
            }
        }
    }
    if let Some(dir) = cache_dir() {
        let folder = dir.join("nvidia").join("cuda_nvrtc").join("lib");
        for soname in SONAMES {
            let path = folder.join(soname);
            // Whatever is there (a link too) is a candidate: the check says why it is refused.
            if std::fs::symlink_metadata(&path).is_ok() {
                out.push(Candidate { path, source: CACHE_SOURCE });
            }
        }
    }
    out
}

/// Whether the cache's `candidate` may be loaded: the cache's trust rules on all of the
/// `nvrtc-<version>` folder. `Err` is the refusal, naming each path and why.
fn check_cached(candidate: &Candidate) -> Result<(), String> {
    if candidate.source != CACHE_SOURCE {
        return Ok(());
    }
    let Some(dir) = cache_dir() else { return Err("the cache folder is not known".to_string()) };
    crate::provider::cache_trust::check_cached_library("NVRTC", &dir, "npx dpctl-memory-install-runtime --with nvrtc")
}

/// Which of the loaded `versions` (in search order) to use with a driver of CUDA
/// `driver` (`(major, minor)`; `None`: no driver, any will do): the first no newer than the
/// driver, else the first of its major version.
pub(super) fn choose(versions: &[(i32, i32)], driver: Option<(i32, i32)>) -> Option<usize> {
    let Some(driver) = driver else { return (!versions.is_empty()).then_some(0) };
    versions.iter().position(|v| *v <= driver).or_else(|| versions.iter().position(|v| v.0 == driver.0))
}

/// The virtual architecture to compile for on a device of compute capability `cc`
/// (`major * 10 + minor`): the newest `archs` has that is no newer than the device (the
/// driver compiles the PTX for the device it has).
pub(super) fn arch_for(archs: &[i32], cc: i32) -> Option<i32> {
    archs.iter().copied().filter(|&a| a <= cc).max()
}

/// Whether the user's options already say an architecture.
pub(super) fn names_arch(options: &[String]) -> bool {
    options.iter().any(|o| o == "-arch" || o.starts_with("-arch=") || o.starts_with("--gpu-architecture"))
}

static NVRTC: OnceLock<Result<Nvrtc, String>> = OnceLock::new();

/// The process's NVRTC, chosen for a driver of CUDA `driver` at the first call (the
/// driver is the same for the life of the process). `Err` says what was searched and
/// what to install.
pub(super) fn load(driver: Option<(i32, i32)>) -> Result<&'static Nvrtc, String> {
    NVRTC.get_or_init(|| open(driver)).as_ref().map_err(Clone::clone)
}

fn open(driver: Option<(i32, i32)>) -> Result<Nvrtc, String> {
    let mut loaded = Vec::new();
    let mut problems = Vec::new();
    for candidate in candidates() {
        if let Err(refused) = check_cached(&candidate) {
            problems.push(refused);
            continue;
        }
        match open_one(&candidate) {
            Ok(nvrtc) => loaded.push(nvrtc),
            Err(problem) => problems.push(format!("{}: {problem}", candidate.path.display())),
        }
    }
    let versions: Vec<(i32, i32)> = loaded.iter().map(|n| n.version).collect();
    if let Some(index) = choose(&versions, driver) {
        return Ok(loaded.swap_remove(index));
    }
    let found = if loaded.is_empty() {
        "none was found".to_string()
    } else {
        let list: Vec<String> =
            loaded.iter().map(|n| format!("{}.{} at {}", n.version.0, n.version.1, n.path.display())).collect();
        let driver = driver.map_or(String::new(), |(a, b)| format!(", newer than this driver's CUDA {a}.{b}"));
        format!("found {}{driver}, whose PTX it cannot load", list.join(", "))
    };
    let problems = if problems.is_empty() { String::new() } else { format!(" ({})", problems.join("; ")) };
    Err(format!(
        "CUDA C needs NVRTC (libnvrtc.so.12 or .13), and {found}{problems}: run `npx dpctl-memory-install-runtime --with \
         nvrtc` (NVRTC {} from the nvidia-cuda-nvrtc-cu12 wheel), install a CUDA toolkit, or point \
         DPCTL_MEMORY_NVRTC_ROOT at one; PTX (createProgramFromPtx) needs none",
        manifest_version().unwrap_or("?")
    ))
}

fn open_one(candidate: &Candidate) -> Result<Nvrtc, String> {
    // SAFETY: loading NVRTC runs only its own initialisers (it starts no threads and
    // touches no GPU), as any program that links it does.
    let lib = unsafe { libloading::Library::new(&candidate.path) }.map_err(|e| e.to_string())?;
    // SAFETY: a library of NVRTC's soname, found where NVRTC is installed.
    let table = unsafe { Table::resolve(&lib) }?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: valid out-pointers.
    let r = unsafe { (table.version)(&mut major, &mut minor) };
    if r != NVRTC_SUCCESS {
        return Err(format!("nvrtcVersion failed ({r})"));
    }
    let mut count: c_int = 0;
    // SAFETY: a valid out-pointer.
    let r = unsafe { (table.num_supported_archs)(&mut count) };
    let mut archs = vec![0; usize::try_from(count).unwrap_or(0)];
    // SAFETY: `archs` has room for the `count` entries NVRTC writes.
    if r != NVRTC_SUCCESS || (!archs.is_empty() && unsafe { (table.supported_archs)(archs.as_mut_ptr()) } != 0) {
        return Err("nvrtcGetSupportedArchs failed".into());
    }
    archs.sort_unstable();
    Ok(Nvrtc {
        table,
        version: (major, minor),
        archs,
        path: candidate.path.clone(),
        source: candidate.source,
        _lib: lib,
    })
}

/// An `nvrtcProgram`, destroyed when dropped.
struct ProgramGuard<'a> {
    nvrtc: &'a Nvrtc,
    raw: NvrtcProgram,
}

impl Drop for ProgramGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: made by nvrtcCreateProgram, destroyed once.
        let _ = unsafe { (self.nvrtc.table.destroy)(&mut self.raw) };
    }
}

impl Nvrtc {
    fn error_text(&self, code: NvrtcResult) -> String {
        // SAFETY: nvrtcGetErrorString returns a static NUL-terminated string (or NULL).
        let text = unsafe { (self.table.error_string)(code) };
        if text.is_null() {
            return format!("NVRTC error {code}");
        }
        // SAFETY: non-NULL: a static NUL-terminated string of NVRTC's.
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    }

    /// Reads a string NVRTC sizes with `size` and writes with `read` (the log, the PTX).
    fn read_string(
        &self,
        program: &ProgramGuard<'_>,
        size: unsafe extern "C" fn(NvrtcProgram, *mut usize) -> NvrtcResult,
        read: unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> NvrtcResult,
        what: &str,
    ) -> Result<String, String> {
        let mut len = 0usize;
        // SAFETY: a live program and a valid out-pointer.
        let r = unsafe { size(program.raw, &mut len) };
        if r != NVRTC_SUCCESS {
            return Err(format!("reading NVRTC's {what}: {}", self.error_text(r)));
        }
        let mut buffer = vec![0u8; len.max(1)];
        // SAFETY: `buffer` holds the `len` bytes (NUL included) NVRTC said it writes.
        let r = unsafe { read(program.raw, buffer.as_mut_ptr().cast()) };
        if r != NVRTC_SUCCESS {
            return Err(format!("reading NVRTC's {what}: {}", self.error_text(r)));
        }
        let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
        Ok(String::from_utf8_lossy(&buffer[..end]).trim_end().to_string())
    }

    /// Compiles `source` (named `name` in messages) with `options`: `Ok(Ok(..))` the PTX,
    /// `Ok(Err(log))` a compilation error with NVRTC's log, `Err` anything else (a NUL in
    /// the text, NVRTC out of memory).
    pub(super) fn compile(&self, source: &str, name: &str, options: &[String]) -> Result<Compilation, String> {
        let text = CString::new(source).map_err(|_| "the CUDA C source holds a NUL character".to_string())?;
        let name = CString::new(name).map_err(|_| "the program name holds a NUL character".to_string())?;
        let options: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()))
            .collect::<Result<_, _>>()
            .map_err(|_| "a compiler option holds a NUL character".to_string())?;
        let pointers: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let mut raw: NvrtcProgram = std::ptr::null_mut();
        // SAFETY: NUL-terminated source and name that outlive the call, no headers (two
        // NULL arrays of length 0), a valid out-pointer.
        let r = unsafe {
            (self.table.create)(&mut raw, text.as_ptr(), name.as_ptr(), 0, std::ptr::null(), std::ptr::null())
        };
        if r != NVRTC_SUCCESS || raw.is_null() {
            return Err(format!("nvrtcCreateProgram failed: {}", self.error_text(r)));
        }
        let program = ProgramGuard { nvrtc: self, raw };
        let count = c_int::try_from(pointers.len()).map_err(|_| "too many compiler options".to_string())?;
        let options_ptr = if pointers.is_empty() { std::ptr::null() } else { pointers.as_ptr() };
        // SAFETY: a live program; `count` NUL-terminated options that outlive the call.
        let r = unsafe { (self.table.compile)(program.raw, count, options_ptr) };
        let log = self.read_string(&program, self.table.log_size, self.table.log, "log")?;
        match r {
            NVRTC_SUCCESS => {
                let ptx = self.read_string(&program, self.table.ptx_size, self.table.ptx, "PTX")?;
                Ok(Ok(Compiled { ptx, log }))
            }
            NVRTC_ERROR_COMPILATION => Ok(Err(log)),
            // An invalid option is the user's, as a compile error is: say NVRTC's word for it.
            other => Ok(Err(format!("{}{}{log}", self.error_text(other), if log.is_empty() { "" } else { "\n" }))),
        }
    }
}

/// Splits a build-options string into NVRTC's options: on white space, with `"..."` or
/// `'...'` keeping spaces inside one option (`-DNAME="a b"`).
pub(super) fn split_options(options: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in options.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                started = false;
            }
            (None, c) => current.push(c),
        }
    }
    if started || !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_library_no_newer_than_the_driver_is_chosen() {
        // Search order: a toolkit's 13.0, then the wheel's 12.4.
        let found = [(13, 0), (12, 4)];
        assert_eq!(choose(&found, Some((13, 0))), Some(0));
        assert_eq!(choose(&found, Some((12, 8))), Some(1), "a CUDA 12 driver cannot load CUDA 13's PTX");
        assert_eq!(choose(&found, Some((12, 2))), Some(1), "none is as old as the driver: the one of its major");
        assert_eq!(choose(&[(13, 0)], Some((12, 8))), None, "CUDA 13's PTX does not load on a CUDA 12 driver");
        assert_eq!(choose(&[(12, 9)], Some((12, 2))), Some(0), "same major, newer minor: used, the load says if not");
        assert_eq!(choose(&found, None), Some(0));
        assert_eq!(choose(&[], None), None);
    }

    #[test]
    fn the_architecture_is_the_newest_the_device_runs() {
        let archs = [50, 52, 60, 70, 75, 80, 86, 89, 90];
        assert_eq!(arch_for(&archs, 90), Some(90));
        assert_eq!(arch_for(&archs, 120), Some(90), "a GPU newer than NVRTC gets its newest PTX, JIT-compiled");
        assert_eq!(arch_for(&archs, 87), Some(86));
        assert_eq!(arch_for(&archs, 35), None);
        assert!(names_arch(&["-arch=compute_80".into()]));
        assert!(names_arch(&["--gpu-architecture=sm_90".into()]));
        assert!(!names_arch(&["-O3".into(), "--use_fast_math".into()]));
    }

    #[test]
    fn options_split_on_spaces_outside_quotes() {
        assert_eq!(split_options("  -O3  --use_fast_math "), vec!["-O3", "--use_fast_math"]);
        assert_eq!(split_options(r#"-DMSG="a b" -DX='1'"#), vec!["-DMSG=a b", "-DX=1"]);
        assert!(split_options("").is_empty());
    }

    #[test]
    fn the_manifest_names_an_nvrtc_version_and_the_cache_is_searched() {
        let version = manifest_version().expect("runtime.json has nvrtc.version");
        assert!(version.starts_with("12."), "the pinned wheel is CUDA 12's (its PTX loads on 12 and 13 drivers)");
        if let Some(dir) = cache_dir() {
            assert!(dir.ends_with(format!("nvrtc-{version}")));
        }
        assert!(candidates().iter().all(|c| c.path.is_absolute()), "no library is loaded by a bare name");
    }

    /// A library whose constructor writes the file `PLANTED_MARK` names, built with `cc`
    /// into `path`; false where no C compiler is present.
    fn plant(path: &std::path::Path) -> bool {
        use std::io::Write;
        let source =
            "#include <stdio.h>\n#include <stdlib.h>\n__attribute__((constructor)) static void planted(void) {\n\
             const char *m = getenv(\"PLANTED_MARK\"); FILE *f = m ? fopen(m, \"w\") : NULL; if (f) fclose(f); }\n";
        let child = std::process::Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()))
            .args(["-shared", "-fPIC", "-x", "c", "-", "-o"])
            .arg(path)
            .stdin(std::process::Stdio::piped())
            .spawn();
        let Ok(mut child) = child else { return false };
        let written = child.stdin.take().is_some_and(|mut stdin| stdin.write_all(source.as_bytes()).is_ok());
        written && child.wait().is_ok_and(|status| status.success())
    }

    /// Issue 39.13: NVRTC was taken from the cache by `is_file()` alone. A planted
    /// `libnvrtc.so.12` in a cache folder of mode 777, of another owner or reached through
    /// a symbolic link, and one in the working directory with `LD_LIBRARY_PATH` ending in
    /// `:`, must not run; the private cache (the control) does. Each case runs this test
    /// binary again as a child with its own environment.
    #[test]
    fn a_planted_nvrtc_runs_only_from_a_private_cache() {
        if std::env::var_os("DPCTL_MEMORY_NVRTC_CHILD").is_some() {
            match open(None) {
                Ok(nvrtc) => println!("CHILD: loaded {}", nvrtc.path.display()),
                Err(message) => println!("CHILD: {message}"),
            }
            return;
        }
        use std::os::unix::fs::PermissionsExt;
        let set_mode = |path: &std::path::Path, mode: u32| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        let base = std::env::temp_dir().join(format!("dpctl-memory-nvrtc-trust-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("cache");
        let dir = root.join(format!("nvrtc-{}", manifest_version().unwrap()));
        let lib = dir.join("nvidia").join("cuda_nvrtc").join("lib");
        let cwd = base.join("cwd");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        if !plant(&lib.join("libnvrtc.so.12")) || !plant(&cwd.join("libnvrtc.so.12")) {
            eprintln!("no C compiler (cc) to build a planted library: skipped");
            return;
        }
        for folder in [&base, &root, &dir, &dir.join("nvidia"), &dir.join("nvidia/cuda_nvrtc"), &lib] {
            set_mode(folder, 0o755);
        }
        let run = |ld_library_path: &str| -> (bool, String) {
            let mark = base.join("ran");
            let _ = std::fs::remove_file(&mark);
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "provider::cuda::nvrtc::tests::a_planted_nvrtc_runs_only_from_a_private_cache"])
                .args(["--nocapture", "--test-threads=1"])
                .current_dir(&cwd)
                .env("DPCTL_MEMORY_NVRTC_CHILD", "1")
                .env("DPCTL_MEMORY_CACHE", &root)
                .env("PLANTED_MARK", &mark)
                .env("LD_LIBRARY_PATH", ld_library_path)
                .env_remove("DPCTL_MEMORY_NVRTC_ROOT")
                .env_remove("CUDA_HOME")
                .env_remove("CUDA_PATH")
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            // The harness prints `test ... ` before the child's line, on the same line.
            let said = stdout.lines().filter_map(|l| l.split_once("CHILD: ").map(|(_, said)| said.to_string()));
            (mark.exists(), said.collect::<Vec<_>>().join("\n"))
        };
        if std::path::Path::new("/usr/local/cuda").exists()
            || crate::provider::system_lib::find("libnvrtc.so.12").is_some()
        {
            eprintln!("this machine has an NVRTC of its own, which would be chosen first: skipped");
            return;
        }
        // The control: a private cache is loaded (the planted library's constructor runs).
        let (ran, said) = run("");
        assert!(ran, "a private cache's library is loaded: {said}");
        // LD_LIBRARY_PATH naming the working directory (an empty, a relative element):
        // the working directory's library never runs (the cache, removed, has none).
        std::fs::rename(lib.join("libnvrtc.so.12"), base.join("aside")).unwrap();
        for value in ["/nonexistent:", ":", ".", "lib:/nonexistent"] {
            let (ran, said) = run(value);
            assert!(!ran, "LD_LIBRARY_PATH={value:?}: the working directory's library ran: {said}");
            assert!(said.contains("none was found"), "{said}");
        }
        std::fs::rename(base.join("aside"), lib.join("libnvrtc.so.12")).unwrap();
        // A folder of the cache writable by others, at any depth: refused, and named.
        for folder in [&dir, &lib] {
            set_mode(folder, 0o777);
            let (ran, said) = run("");
            assert!(!ran, "{}: mode 777: {said}", folder.display());
            assert!(
                said.contains("refused to load NVRTC in its cache")
                    && said.contains(&format!("{} is writable by its group or by others (mode 777)", folder.display())),
                "{said}"
            );
            set_mode(folder, 0o755);
        }
        // Owned by another user (as root, the tests' CI user, a folder can be given away).
        if crate::provider::cache_trust::effective_uid() == Some(0) {
            std::os::unix::fs::chown(&lib, Some(65534), Some(65534)).unwrap();
            let (ran, said) = run("");
            assert!(!ran && said.contains("is owned by uid 65534"), "{said}");
            std::os::unix::fs::chown(&lib, Some(0), Some(0)).unwrap();
        }
        // The version folder reached through a symbolic link.
        let elsewhere = base.join("elsewhere");
        std::fs::rename(&dir, &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
        let (ran, said) = run("");
        assert!(!ran && said.contains("is a symbolic link"), "{said}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// Compiles CUDA C with whichever NVRTC is installed (no GPU needed). `npm test`
    /// installs the pinned wheel first (scripts/setup.js); where none can be found the test
    /// says so and fails, unless DPCTL_MEMORY_NO_NVRTC=1 says this machine has none on purpose.
    #[test]
    fn compiles_cuda_c_to_ptx_and_reports_errors_with_the_log() {
        let nvrtc = match open(None) {
            Ok(n) => n,
            Err(message) if std::env::var_os("DPCTL_MEMORY_NO_NVRTC").is_some() => {
                eprintln!("skipped (DPCTL_MEMORY_NO_NVRTC): {message}");
                return;
            }
            Err(message) => panic!("{message}"),
        };
        let arch = arch_for(&nvrtc.archs, 80).expect("NVRTC compiles for compute_80");
        let source = r#"extern "C" __global__ void saxpy(float *y, const float *x, float a, unsigned n) {
            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] = a * x[i] + y[i];
        }"#;
        let compiled =
            nvrtc.compile(source, "saxpy.cu", &[format!("--gpu-architecture=compute_{arch}")]).unwrap().unwrap();
        assert!(compiled.ptx.contains(".entry saxpy"), "{}", compiled.ptx);
        assert!(compiled.ptx.contains(&format!(".target sm_{arch}")), "{}", compiled.ptx);
        let failed = nvrtc.compile("__global__ void broken( { }", "broken.cu", &[]).unwrap().unwrap_err();
        assert!(failed.contains("broken.cu") && failed.contains("error"), "{failed}");
        let bad_option = nvrtc.compile(source, "saxpy.cu", &["--no-such-option".into()]).unwrap().unwrap_err();
        assert!(!bad_option.is_empty());
        assert!(nvrtc.compile("a\0b", "nul.cu", &[]).is_err());
    }
}
