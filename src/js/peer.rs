//! Peer access in the binding: `SyclDevice.canAccessPeer`, `enablePeerAccess` and
//! `disablePeerAccess` over device handles. The rules are `memory::peer`'s.

use std::sync::Arc;

use napi::Env;
use napi_derive::napi;

use crate::js::errors::OrThrow;
use crate::js::lookup::lookup;
use crate::memory::peer;
use crate::runtime::peer::PeerQuery;
use crate::runtime::Device;

/// The devices of two live handles of this environment.
fn pair(env: &Env, device_id: f64, peer_id: f64) -> napi::Result<(Arc<dyn Device>, Arc<dyn Device>)> {
    lookup(env, |h| Ok((h.device(device_id)?, h.device(peer_id)?)))
}

/// `device.canAccessPeer(peer, value)`: `atomics` asks dpctl's `'atomics_supported'`.
#[napi]
pub fn device_can_access_peer(env: &Env, device_id: f64, peer_id: f64, atomics: bool) -> napi::Result<bool> {
    let (device, other) = pair(env, device_id, peer_id)?;
    let query = if atomics { PeerQuery::AtomicsSupported } else { PeerQuery::AccessSupported };
    peer::can_access_peer(device.as_ref(), other.as_ref(), query).or_throw(env)
}

/// `device.enablePeerAccess(peer)`.
#[napi]
pub fn device_enable_peer_access(env: &Env, device_id: f64, peer_id: f64) -> napi::Result<()> {
    let (device, other) = pair(env, device_id, peer_id)?;
    peer::enable_peer_access(device.as_ref(), other.as_ref()).or_throw(env)
}

/// `device.disablePeerAccess(peer)`.
#[napi]
pub fn device_disable_peer_access(env: &Env, device_id: f64, peer_id: f64) -> napi::Result<()> {
    let (device, other) = pair(env, device_id, peer_id)?;
    peer::disable_peer_access(device.as_ref(), other.as_ref()).or_throw(env)
}
