//! The rendezvous of the copies of this package in one process (`memory::copies` is the
//! policy): every addon exports one versioned C-ABI table, [`dpctl_memory_copy_v1`], and
//! finds the other copies' tables through the dynamic linker's list of loaded objects
//! (`dl_iterate_phdr`, then `dlopen(RTLD_NOLOAD)` and `dlsym` on each), which works for
//! addons that Node loads `RTLD_LOCAL`: no environment variable, no lock, no election.
//! A table never changes once published; a later layout is a new symbol (`_v2`) that a
//! newer copy exports beside this one, so copies of any versions keep answering each
//! other through the layout they share.
//!
//! What crosses: addresses and sizes as `u64`, and a hold, an opaque pointer that only the
//! copy that made it reads (an `Arc<Allocation>` of that copy, given back by that copy's
//! `release`). Every `unsafe` of the rendezvous is in this file.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Arc, Mutex, OnceLock};

use crate::memory::allocation::{answer_own, Allocation, OwnAnswer};
use crate::memory::copies::{OtherAnswer, OtherCopies, OtherHold};
use crate::memory::pool::Pool;
use crate::runtime::Address;

/// The layout's version, and the symbol that publishes it.
const VERSION: u32 = 1;
const SYMBOL: &CStr = c"dpctl_memory_copy_v1";

/// `lookup`'s answers.
const FOREIGN: c_int = 0;
const LIVE: c_int = 1;
const UNOWNED: c_int = 2;

/// The table each copy publishes (layout 1). `size` is `size_of::<CopyTableV1>()`; a
/// reader uses only the fields it knows.
#[repr(C)]
pub struct CopyTableV1 {
    pub version: u32,
    pub size: u32,
    /// What this copy's own book says of `address`: `LIVE` (with `*base` and `*size` of the
    /// live allocation, and `*hold`, which the caller must give to `release`), `UNOWNED`
    /// (`*base`: the block's start) or `FOREIGN`.
    pub lookup: unsafe extern "C" fn(address: u64, base: *mut u64, size: *mut u64, hold: *mut *mut c_void) -> c_int,
    /// Gives back a hold `lookup` made.
    pub release: unsafe extern "C" fn(hold: *mut c_void),
}

static TABLE: CopyTableV1 = CopyTableV1 {
    version: VERSION,
    size: std::mem::size_of::<CopyTableV1>() as u32,
    lookup: table_lookup,
    release: table_release,
};

/// This copy's table, for the other copies.
#[no_mangle]
pub extern "C" fn dpctl_memory_copy_v1() -> *const CopyTableV1 {
    &TABLE
}

/// # Safety
///
/// `base`, `size` and `hold` must be valid for writes (the other copy's locals).
unsafe extern "C" fn table_lookup(address: u64, base: *mut u64, size: *mut u64, hold: *mut *mut c_void) -> c_int {
    // A panic must not unwind into another copy's frames.
    let answer =
        std::panic::catch_unwind(|| ANSWERED_BY.get().map_or(OwnAnswer::Foreign, |pool| answer_own(pool, address)))
            .unwrap_or(OwnAnswer::Foreign);
    match answer {
        OwnAnswer::Live(allocation) => {
            // SAFETY: the caller passes pointers to its own locals, valid for writes.
            unsafe {
                *base = allocation.address();
                *size = allocation.nbytes();
                *hold = Arc::into_raw(allocation).cast_mut().cast::<c_void>();
            }
            LIVE
        }
        OwnAnswer::Unowned { block_base } => {
            // SAFETY: as above.
            unsafe { *base = block_base };
            UNOWNED
        }
        OwnAnswer::Foreign => FOREIGN,
    }
}

/// # Safety
///
/// `hold` must be a hold that [`table_lookup`] of this copy made, given back once.
unsafe extern "C" fn table_release(hold: *mut c_void) {
    if hold.is_null() {
        return;
    }
    // SAFETY: `hold` came from `Arc::into_raw` of an `Arc<Allocation>` in `table_lookup`
    // and is given back once (the `OtherHold` that carries it is dropped once).
    let allocation = unsafe { Arc::from_raw(hold.cast_const().cast::<Allocation>()) };
    // The last holder gives the block back to this copy's pool: never unwind from here.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(allocation)));
}

/// A hold on another copy's allocation: given back to that copy when dropped.
struct ForeignHold {
    release: unsafe extern "C" fn(*mut c_void),
    hold: *mut c_void,
}

// SAFETY: the pointer is an opaque token of the other copy, which only that copy's
// `release` reads (an `Arc` of a `Send + Sync` allocation); nothing here touches it.
unsafe impl Send for ForeignHold {}
// SAFETY: as above: shared references to it do nothing with the pointer.
unsafe impl Sync for ForeignHold {}

impl Drop for ForeignHold {
    fn drop(&mut self) {
        // SAFETY: `hold` is the token the other copy's `lookup` made with this `release`,
        // given back once (this value is dropped once).
        unsafe { (self.release)(self.hold) };
    }
}

/// The tables of the other copies found so far, and the loader's count of loads when the
/// objects were last listed (a new copy is looked for only when something was loaded).
#[derive(Default)]
struct Found {
    tables: Vec<&'static CopyTableV1>,
    adds: Option<u64>,
}

/// The finder `memory::copies` asks.
#[derive(Default)]
struct LoadedCopies {
    found: Mutex<Found>,
}

impl OtherCopies for LoadedCopies {
    fn lookup(&self, address: Address) -> OtherAnswer {
        let tables = {
            let mut found = self.found.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let adds = loads_so_far();
            if found.adds != Some(adds) {
                found.tables = other_tables();
                found.adds = Some(adds);
            }
            found.tables.clone()
        };
        for table in tables {
            let (mut base, mut size, mut hold) = (0u64, 0u64, std::ptr::null_mut());
            // SAFETY: a table of layout 1 (checked when it was found), whose functions
            // take pointers to these locals.
            let answer = unsafe { (table.lookup)(address, &mut base, &mut size, &mut hold) };
            match answer {
                LIVE => {
                    let hold = OtherHold::new(Box::new(ForeignHold { release: table.release, hold }));
                    return OtherAnswer::Live { base, size, hold };
                }
                UNOWNED => return OtherAnswer::Unowned { block_base: base },
                _ => {}
            }
        }
        OtherAnswer::Foreign
    }
}

/// The pool whose book this copy's table answers from: the process value's, published
/// when it is made (before that this copy allocated nothing, and answers foreign). The
/// table is a symbol of the loaded library, so what it reads is the library's too.
static ANSWERED_BY: OnceLock<&'static Pool> = OnceLock::new();

/// The finder of the other copies, for the process value (`js::state::process`), whose
/// `pool` this copy's own table answers from from now on.
pub fn finder(pool: &'static Pool) -> Box<dyn OtherCopies> {
    let _ = ANSWERED_BY.set(pool);
    Box::new(LoadedCopies::default())
}

/// The loader's count of objects loaded so far (`dlpi_adds`).
fn loads_so_far() -> u64 {
    unsafe extern "C" fn first(info: *mut libc::dl_phdr_info, _size: libc::size_t, data: *mut c_void) -> c_int {
        // SAFETY: the loader passes a valid `info`; `data` is the `u64` below.
        unsafe { *data.cast::<u64>() = (*info).dlpi_adds };
        1
    }
    let mut adds = 0u64;
    // SAFETY: the callback only reads `info` and writes `adds`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut adds as *mut u64).cast()) };
    adds
}

/// The tables of layout 1 that loaded objects other than this copy export.
fn other_tables() -> Vec<&'static CopyTableV1> {
    unsafe extern "C" fn collect(info: *mut libc::dl_phdr_info, _size: libc::size_t, data: *mut c_void) -> c_int {
        // SAFETY: the loader passes a valid `info` whose name is NUL-terminated (or null);
        // `data` is the Vec below.
        unsafe {
            let name = (*info).dlpi_name;
            if !name.is_null() && *name != 0 {
                (*data.cast::<Vec<Vec<u8>>>()).push(CStr::from_ptr(name).to_bytes_with_nul().to_vec());
            }
        }
        0
    }
    let mut names: Vec<Vec<u8>> = Vec::new();
    // SAFETY: the callback only reads `info` and pushes to `names`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(collect), (&mut names as *mut Vec<Vec<u8>>).cast()) };
    let own = dpctl_memory_copy_v1 as extern "C" fn() -> *const CopyTableV1 as *const c_void;
    let mut tables: Vec<&'static CopyTableV1> = Vec::new();
    for name in names {
        // SAFETY: `name` is NUL-terminated; RTLD_NOLOAD only finds an object already
        // loaded (no constructor runs). The handle is kept: the object stays loaded while
        // its table is used.
        let handle = unsafe { libc::dlopen(name.as_ptr().cast::<c_char>(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
        if handle.is_null() {
            continue;
        }
        // SAFETY: a handle dlopen returned; the symbol name is NUL-terminated.
        let symbol = unsafe { libc::dlsym(handle, SYMBOL.as_ptr()) };
        if symbol.is_null() || symbol.cast_const() == own {
            // SAFETY: the handle dlopen returned above, not used again.
            unsafe { libc::dlclose(handle) };
            continue;
        }
        // SAFETY: an object that exports this symbol is a copy of this package, whose
        // symbol has this signature (the layout version is in its name).
        let publish: extern "C" fn() -> *const CopyTableV1 = unsafe { std::mem::transmute(symbol) };
        let table = publish();
        // SAFETY: a copy's table is a static of that copy, which stays loaded (the handle
        // is kept); its header is read before any field beyond it.
        let Some(table) = (unsafe { table.as_ref() }) else { continue };
        let fits = table.version >= VERSION && table.size as usize >= std::mem::size_of::<CopyTableV1>();
        if fits && !tables.iter().any(|known| std::ptr::eq(*known, table)) {
            tables.push(table);
        }
    }
    tables
}
