// A strict consumer of the typings (compiled with strict, isolatedModules, module
// nodenext by __test__/types.spec.mjs). Every line must type-check; the
// `@ts-expect-error` lines must not.
import {
  createProgramFromSource,
  createProgramFromSpirv,
  kernelArg,
  SyclEvent,
  SyclProgramCompilationError,
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
  type PeerAccessQuery,
  poolTrim,
  ErrorCode,
  USMAllocationError,
  SyclQueueCreationError,
  SyclDeviceCreationError,
  type ErrorCodeValue,
  type HostBuffer,
  type MemoryOptions,
  type PoolStats,
  type PoolDeviceStats,
  type SyclUsmArrayInterface,
  type UsmType,
  type SharedMemoryToken,
  type ShareOptions,
  type IPCOpenOptions,
} from 'dpctl-memory';

const queue: SyclQueue = new SyclQueue();
const device: SyclDevice = queue.syclDevice;
const context: SyclContext = new SyclContext(device);
const devices: SyclDevice[] = getDevices('cpu');
const why: string[] = getRuntimeDiagnostics();
const options: MemoryOptions = { queue, alignment: 64 };
const host = new MemoryUSMHost(16, options);
const shared = new MemoryUSMShared(16n);
const dev = new MemoryUSMDevice(host, { copy: true, queue });
const base: _Memory = dev;
const bytes: Uint8Array = host.copyToHost();
const floats: Float32Array = host.copyToHost(new Float32Array(4));
const shared2: SharedArrayBuffer = host.copyToHost(new SharedArrayBuffer(16));
const later: Promise<Uint8Array> = host.copyToHostAsync();
const laterInto: Promise<DataView> = host.copyToHostAsync(new DataView(new ArrayBuffer(16)));
const kind: UsmType = host.getUsmType(queue);
const kindNumber: 0 | 1 | 2 | 3 = host.getUsmTypeEnum(context);
const iface: SyclUsmArrayInterface = host.__sycl_usm_array_interface__;
const pointer: bigint = host.pointer;
const view: MemoryUSMDevice | MemoryUSMHost | MemoryUSMShared = asUsmMemory({ __sycl_usm_array_interface__: iface });
const buffer: ArrayBuffer = shared.buffer;
const source: HostBuffer = buffer;
host.copyFromHost(source);
dev.copyFromDevice(host);
const stats: PoolStats = poolStats();
const freed: number = poolTrim();
// Several GPUs.
const peerQuery: PeerAccessQuery = 'atomics_supported';
const canPeer: boolean = device.canAccessPeer(devices[0] ?? device, peerQuery) && device.canAccessPeer(device);
if (canPeer) device.enablePeerAccess(device);
device.disablePeerAccess(device);
const peerCode: ErrorCodeValue = ErrorCode.PeerAccessUnsupported;
const perDevice: PoolDeviceStats | undefined = stats.byDevice[0];
const perDeviceHits: number = (perDevice?.device.hits ?? 0) + (perDevice?.filterString.length ?? 0);
const code: ErrorCodeValue = ErrorCode.UsmFreed;
const allocationCode: ErrorCodeValue = new USMAllocationError('x').code;
const queueError: Error = new SyclQueueCreationError('x', { code: 'ERR_QUEUE_CREATION' });
const deviceError: Error = new SyclDeviceCreationError('x');
const reference: object | null = view.referenceObj;
const shareOptions: ShareOptions = { timeout: 5000 };
const hostToken: SharedMemoryToken<'host'> = host.share(shareOptions);
const anyToken: SharedMemoryToken = base.share();
const openedHost: MemoryUSMHost = openShared(hostToken);
const openedAny: MemoryUSMDevice | MemoryUSMHost | MemoryUSMShared = openShared(anyToken);
const revoked: boolean = revokeShared(dev.share({ timeout: null }));
// @ts-expect-error a host token opens into host memory, not device memory
const wrongKind: MemoryUSMDevice = openShared(hostToken);
const ipcDevice = new SyclDevice();
const ipcHandle = new IPCMemoryHandle(dev);
const ipcBytes: Uint8Array = ipcHandle.toBytes();
const ipcOptions: IPCOpenOptions = { device: ipcDevice, nbytes: ipcHandle.nbytes };
const ipcOpened: MemoryIPCDevice = IPCMemoryHandle.open(ipcBytes, ipcOptions);
const ipcAsDevice: MemoryUSMDevice = ipcOpened;
const ipcAvailable: boolean = IPCMemoryHandle.isAvailable(ipcDevice) || IPCMemoryHandle.isAvailable();
// @ts-expect-error open needs nbytes
IPCMemoryHandle.open(ipcBytes, { device: ipcDevice });
// @ts-expect-error IPC handle bytes are a Uint8Array, not an array of numbers
IPCMemoryHandle.open([1, 2], { nbytes: 16 });
// @ts-expect-error MemoryIPCDevice is made by IPCMemoryHandle.open only
new MemoryIPCDevice(16);
host[Symbol.dispose]();
dev.free();
// @ts-expect-error a string is no byte count
new MemoryUSMHost('16');
// @ts-expect-error an unknown option
new MemoryUSMHost(16, { bogus: true });
// @ts-expect-error ErrorCode holds codes, not arbitrary strings
const wrong: ErrorCodeValue = 'ERR_NOT_A_CODE';
// @ts-expect-error _Memory is abstract
new _Memory();
export { bytes, floats, shared2, later, laterInto, kind, kindNumber, pointer, stats, freed, code, allocationCode, queueError, deviceError, reference, devices, why, base, wrong };
export { ipcAsDevice, ipcAvailable };

// Kernels
const kq = new SyclQueue('opencl:cpu', { property: ['in_order', 'enable_profiling'] });
const kprogram = createProgramFromSource(kq, '__kernel void k(__global float *y, float a) {}', { options: '-DN=4' });
createProgramFromSpirv(kq, new Uint8Array(0));
const kkernel = kprogram.getKernel('k');
const kargs: number = kkernel.numArgs;
const kmem = new MemoryUSMShared(64, { queue: kq });
const kevent: SyclEvent = kq.submit(kkernel, [kmem, kernelArg.float32(2)], [16], [8]);
const kstart: bigint = kevent.profilingInfoStart;
const kpending: Promise<SyclEvent> = kq.submitAsync(kkernel, [kmem, kernelArg.float32(2)], [4, 4], null, [kevent]);
kq.submitBarrier([kpending, kevent]).wait();
kq.fill(kmem, kernelArg.uint16(7));
const kordered: boolean = kq.isInOrder && kq.hasEnableProfiling;
const klog: string = new Error() instanceof SyclProgramCompilationError ? '' : kprogram.buildLog;
// @ts-expect-error a plain number does not say its type
kq.submit(kkernel, [kmem, 2], [16]);
// @ts-expect-error a range has 1 to 3 dimensions
kq.submit(kkernel, [kmem], [1, 2, 3, 4]);
export { kargs, kstart, kordered, klog };
// Seeing memory.
import { memoryStats, resetPeakStats, recordMemoryHistory, memorySnapshot, onOutOfMemory, type MemoryStats, type MemorySnapshot, type OutOfMemoryInfo } from 'dpctl-memory';
const memStats: MemoryStats = memoryStats();
const peak: number = memoryStats('opencl:cpu').host.allocatedBytes.peak + memStats.all.reservedBytes.current;
resetPeakStats();
recordMemoryHistory({ maxEntries: 1000, stacks: true });
const snap: MemorySnapshot = memorySnapshot();
const firstStack: string | undefined = snap.stacks[snap.liveBlocks[0]?.stack ?? 0];
recordMemoryHistory({ enabled: false });
const stopObserving: () => void = onOutOfMemory((info: OutOfMemoryInfo) => {
  const asked: number = info.nbytes;
  const held: number | undefined = info.stats?.all.allocatedBytes.current;
  void asked, held, info.error.code;
});
stopObserving();
// @ts-expect-error maxEntries is a number
recordMemoryHistory({ maxEntries: '10' });
export { memStats, peak, snap, firstStack };
