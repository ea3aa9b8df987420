// @ts-check
'use strict';
// The public surface: every export, defined once here.
const errors = require('./errors.js');
const device = require('./device.js');
const memory = require('./memory.js');
const pool = require('./pool.js');
const registration = require('./registration.js');
const ipc = require('./ipc.js');
const share = require('./share.js');
const program = require('./program.js');
const observe = require('./observe.js');
const transport = require('./transport.js');
require('./handoff.js'); // the __dpctl_memory_handoff__ getter of memory objects

module.exports = {
  _Memory: memory._Memory,
  MemoryUSMDevice: memory.MemoryUSMDevice,
  MemoryUSMHost: memory.MemoryUSMHost,
  MemoryUSMShared: memory.MemoryUSMShared,
  asUsmMemory: memory.asUsmMemory,
  openShared: memory.openShared,
  revokeShared: share.revokeShared,
  IPCMemoryHandle: ipc.IPCMemoryHandle,
  MemoryIPCDevice: ipc.MemoryIPCDevice,
  SyclDevice: device.SyclDevice,
  SyclContext: device.SyclContext,
  SyclQueue: device.SyclQueue,
  getDevices: device.getDevices,
  getRuntimeDiagnostics: device.getRuntimeDiagnostics,
  poolStats: pool.poolStats,
  poolTrim: pool.poolTrim,
  registerHost: registration.registerHost,
  HostRegistration: registration.HostRegistration,
  ErrorCode: errors.ErrorCode,
  USMAllocationError: errors.USMAllocationError,
  SyclQueueCreationError: errors.SyclQueueCreationError,
  SyclDeviceCreationError: errors.SyclDeviceCreationError,
  // Kernels (lib/program.js)
  SyclProgram: program.SyclProgram,
  SyclKernel: program.SyclKernel,
  SyclEvent: program.SyclEvent,
  KernelArg: program.KernelArg,
  SyclProgramCompilationError: program.SyclProgramCompilationError,
  kernelArg: program.kernelArg,
  createProgramFromSource: program.createProgramFromSource,
  createProgramFromSpirv: program.createProgramFromSpirv,
  createProgramFromPtx: program.createProgramFromPtx,
  createProgramFromCuda: program.createProgramFromCuda,
  createProgramFromSycl: program.createProgramFromSycl,
  // Seeing memory (lib/observe.js).
  memoryStats: observe.memoryStats,
  resetPeakStats: observe.resetPeakStats,
  recordMemoryHistory: observe.recordMemoryHistory,
  memorySnapshot: observe.memorySnapshot,
  onOutOfMemory: observe.onOutOfMemory,
  // The UCX transport (lib/transport.js).
  ucx: transport.ucx,
  UcxEndpoint: transport.UcxEndpoint,
  UcxListener: transport.UcxListener,
  UcxMemoryMap: transport.UcxMemoryMap,
  UcxRemoteKey: transport.UcxRemoteKey,
};
