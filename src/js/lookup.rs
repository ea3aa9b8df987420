//! The one way a binding function reaches this environment's handles: borrowed for one
//! lookup or insertion at a time, with the error of the lookup thrown.

use std::cell::RefMut;

use napi::Env;

use crate::error::{MemoryError, Result};
use crate::js::errors::OrThrow;
use crate::js::handles::Handles;
use crate::js::state::state;

/// This environment's handles, borrowed; `ERR_USM_BUSY` if a call that holds them
/// re-entered the binding (none should: no function holds the borrow while anything
/// can call back into JS).
pub fn handles(env: &Env) -> napi::Result<RefMut<'static, Handles>> {
    state(env)?.handles.try_borrow_mut().map_err(|_| MemoryError::Busy).or_throw(env)
}

/// `f` over this environment's handles, its error thrown: how a binding function looks
/// a handle up (`lookup(env, |h| h.memory(id))`) or stores a new one.
pub fn lookup<T>(env: &Env, f: impl FnOnce(&mut Handles) -> Result<T>) -> napi::Result<T> {
    let result = f(&mut *handles(env)?);
    result.or_throw(env)
}
