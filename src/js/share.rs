//! Sharing memory with other threads of the process (`lib/share.js`, over
//! `crate::memory::share`): a token that holds the allocation until another
//! environment opens it, it is revoked, or it times out.

use std::sync::Arc;

use napi::Env;
use napi_derive::napi;

use crate::js::errors::OrThrow;
use crate::js::handles::MemoryHandle;
use crate::js::lookup::lookup;
use crate::js::state::{process, registry};
use crate::runtime::UsmKind;

/// Holds the memory under a new share token and returns the token's text; `timeout_ms`
/// `None` gives the default timeout.
#[napi]
pub fn mem_share(env: &Env, memory_id: f64, timeout_ms: Option<f64>) -> napi::Result<String> {
    let memory = lookup(env, |h| h.memory(memory_id))?;
    Ok(process().shares().share_token(&memory, timeout_ms).or_throw(env)?.text())
}

/// Opens a share token (made in any thread) into memory of this environment, which
/// holds the allocation from now on; returns its memory handle (`memSharedFacts` and
/// `memQueue` tell the rest: a returned typed array would cost more than the open).
#[napi]
pub fn mem_open_shared(env: &Env, token: String, kind: u32, nbytes: f64) -> napi::Result<f64> {
    let kind = UsmKind::from_allocated_value(kind).or_throw(env)?;
    let memory = process().shares().open_token(&token, kind, nbytes as u64).or_throw(env)?;
    // Reported to V8 as an allocation of this thread: dropped here without free(), it
    // must drive this thread's collections.
    let handle = MemoryHandle::allocated(env, memory);
    lookup(env, |h| h.add_memory(handle))
}

/// `cachedQueueKey * 2 + (readOnly ? 1 : 0)` of memory opened from a token. The key is 0
/// unless the memory's queue is its device's cached queue; then it is a number that
/// stands for that queue for the life of the process (the address of the registry's
/// queue, below 2^48), so the JS layer can give it this realm's one object for that
/// queue without making a queue handle or looking the device up.
#[napi]
pub fn mem_shared_facts(env: &Env, memory_id: f64) -> napi::Result<f64> {
    let memory = lookup(env, |h| h.memory(memory_id))?;
    let queue = memory.queue();
    let cached = registry().cached_queue(&queue.device()).is_ok_and(|cached| Arc::ptr_eq(&cached, queue));
    let key = if cached { Arc::as_ptr(queue).cast::<()>() as usize as f64 } else { 0.0 };
    Ok(key * 2.0 + f64::from(u8::from(memory.read_only())))
}

/// Revokes a share token still pending (`true`); `false` when it was already opened,
/// revoked or expired.
#[napi]
pub fn mem_revoke_shared(env: &Env, token: String) -> napi::Result<bool> {
    process().shares().revoke_token(&token).or_throw(env)
}
