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
} = lib;
export default lib;
