//! UCX (the transport of Open MPI, Dask/RAPIDS through ucxx, NIXL): `ucp.h` loaded at run
//! time (`ucp.rs`, found by `locate.rs`), and one worker per JS thread over it
//! (`worker.rs`). Nothing else in the crate needs UCX: without it the transport's calls
//! fail with `ERR_UCX_UNAVAILABLE`, saying what to install.

pub(crate) mod locate;
pub(crate) mod ucp;
pub(crate) mod worker;

pub(crate) use worker::{Event, UcxError, Worker};

/// Whether UCX can be loaded, or the message saying what to install.
pub(crate) fn available() -> Result<String, String> {
    ucp::ucp()
        .map(|u| format!("UCX {}.{}.{} from {}", u.version.0, u.version.1, u.version.2, u.origin))
        .map_err(str::to_string)
}
