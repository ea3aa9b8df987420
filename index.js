'use strict';
// CommonJS entry. Each export is assigned by name so that Node's ESM loader sees every
// one of them (`import { MemoryUSMHost } from 'dpctl-memory'`); index.mjs re-exports them.
const lib = require('./lib/index.js');

exports._Memory = lib._Memory;
exports.MemoryUSMDevice = lib.MemoryUSMDevice;
exports.MemoryUSMHost = lib.MemoryUSMHost;
exports.MemoryUSMShared = lib.MemoryUSMShared;
exports.asUsmMemory = lib.asUsmMemory;
exports.openShared = lib.openShared;
exports.revokeShared = lib.revokeShared;
exports.IPCMemoryHandle = lib.IPCMemoryHandle;
exports.MemoryIPCDevice = lib.MemoryIPCDevice;
exports.SyclDevice = lib.SyclDevice;
exports.SyclContext = lib.SyclContext;
exports.SyclQueue = lib.SyclQueue;
exports.getDevices = lib.getDevices;
exports.getRuntimeDiagnostics = lib.getRuntimeDiagnostics;
exports.poolStats = lib.poolStats;
exports.poolTrim = lib.poolTrim;
exports.registerHost = lib.registerHost;
exports.HostRegistration = lib.HostRegistration;
exports.ErrorCode = lib.ErrorCode;
exports.USMAllocationError = lib.USMAllocationError;
exports.SyclQueueCreationError = lib.SyclQueueCreationError;
exports.SyclDeviceCreationError = lib.SyclDeviceCreationError;
// Kernels (lib/program.js)
exports.SyclProgram = lib.SyclProgram;
exports.SyclKernel = lib.SyclKernel;
exports.SyclEvent = lib.SyclEvent;
exports.KernelArg = lib.KernelArg;
exports.SyclProgramCompilationError = lib.SyclProgramCompilationError;
exports.kernelArg = lib.kernelArg;
exports.createProgramFromSource = lib.createProgramFromSource;
exports.createProgramFromSpirv = lib.createProgramFromSpirv;
exports.createProgramFromPtx = lib.createProgramFromPtx;
exports.createProgramFromCuda = lib.createProgramFromCuda;
exports.createProgramFromSycl = lib.createProgramFromSycl;
// Seeing memory.
exports.memoryStats = lib.memoryStats;
exports.resetPeakStats = lib.resetPeakStats;
exports.recordMemoryHistory = lib.recordMemoryHistory;
exports.memorySnapshot = lib.memorySnapshot;
exports.onOutOfMemory = lib.onOutOfMemory;
// The UCX transport.
exports.ucx = lib.ucx;
exports.UcxEndpoint = lib.UcxEndpoint;
exports.UcxListener = lib.UcxListener;
exports.UcxMemoryMap = lib.UcxMemoryMap;
exports.UcxRemoteKey = lib.UcxRemoteKey;
