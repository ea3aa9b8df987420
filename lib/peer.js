// @ts-check
'use strict';
// Peer access between devices (dpctl 0.20+'s `can_access_peer`, `enable_peer_access`,
// `disable_peer_access`): the argument checks and the binding calls behind the
// `SyclDevice` methods. The rules (which backends, a device and itself) are the model's.
const { native } = require('./native.js');
const { ErrorCode, typeError, fromNative } = require('./errors.js');
const { display } = require('./values.js');

/** dpctl's `value` argument of `can_access_peer`: whether atomics are asked about. */
function atomicsAsked(value) {
  if (typeof value !== 'string') throw typeError(`Expected \`value\` to be of type str, got ${display(value)}`);
  if (value === 'access_supported') return false;
  if (value === 'atomics_supported') return true;
  throw typeError(`\`value\` must be 'access_supported' or 'atomics_supported', got ${display(value)}`, ErrorCode.InvalidArgValue);
}

/** `device.canAccessPeer(peer, value)` over device handles. */
function canAccessPeer(device, peer, value) {
  const atomics = atomicsAsked(value);
  try {
    return native.deviceCanAccessPeer(device, peer, atomics);
  } catch (error) {
    throw fromNative(error);
  }
}

/** `device.enablePeerAccess(peer)` over device handles. */
function enablePeerAccess(device, peer) {
  try {
    native.deviceEnablePeerAccess(device, peer);
  } catch (error) {
    throw fromNative(error);
  }
}

/** `device.disablePeerAccess(peer)` over device handles. */
function disablePeerAccess(device, peer) {
  try {
    native.deviceDisablePeerAccess(device, peer);
  } catch (error) {
    throw fromNative(error);
  }
}

module.exports = { canAccessPeer, enablePeerAccess, disablePeerAccess };
