// ESM entry: the very objects of the CommonJS entry (no dual-package hazard).
import lib from './index.js';

export const {
  _Memory,
  MemoryUSMDevice,
  MemoryUSMHost,
  MemoryUSMShared,
  asUsmMemory,
  openShared,
  revokeShared,
  IPCMemoryHandle,
  MemoryIPCDevice,
  SyclDevice,
  SyclContext,
  SyclQueue,
  getDevices,
  getRuntimeDiagnostics,
  poolStats,
  poolTrim,
  registerHost,
  HostRegistration,
  ErrorCode,
  USMAllocationError,
  SyclQueueCreationError,
  SyclDeviceCreationError,
  // Kernels
  SyclProgram,
  SyclKernel,
  SyclEvent,
  KernelArg,
  SyclProgramCompilationError,
  kernelArg,
  createProgramFromSource,
  createProgramFromSpirv,
  createProgramFromPtx,
  createProgramFromCuda,
} = lib;
export default lib;
