// Type declarations of dpctl-memory (written by hand, checked by __test__/types.spec.mjs
// and __test__/typescript-versions.spec.mjs). The API reference docs/api/ is generated from
// this file and its doc comments: after changing either, run `npm run docs` and commit
// docs/api (__test__/api-docs.spec.mjs fails until they agree).
/// <reference types="node" />

/** A host buffer a copy can read from or write into. */
export type HostBuffer = ArrayBuffer | SharedArrayBuffer | ArrayBufferView

/** Options of the memory constructors. */
export interface MemoryOptions {
  /** 0 (the runtime's default) or a power of two. Ignored when viewing existing memory. */
  alignment?: number | bigint
  /** The queue to allocate on; default: the cached queue of the default device. */
  queue?: SyclQueue
  /** Copy memory of another USM kind into a new allocation instead of failing. */
  copy?: boolean
}

/** The `__sycl_usm_array_interface__` protocol dictionary. */
export interface SyclUsmArrayInterface {
  /** `[pointer, readOnly]`. */
  data: readonly [bigint | number, boolean]
  shape: ReadonlyArray<number | bigint>
  strides?: ReadonlyArray<number | bigint> | null
  typestr: string
  version: 1
  offset?: number | bigint
  syclobj: SyclQueue | SyclContext | string
}

/** Anything that exposes `__sycl_usm_array_interface__`, such as the memory classes. */
export interface SyclUsmArrayInterfaceExporter {
  readonly __sycl_usm_array_interface__: SyclUsmArrayInterface
}

/** USM kinds as `getUsmType()` names them. */
export type UsmType = 'device' | 'shared' | 'host' | 'unknown'

/** Every `code` a dpctl-memory error can carry. */
export type ErrorCodeValue =
  | 'ERR_SUAI_MALFORMED'
  | 'ERR_SUAI_OFFSET'
  | 'ERR_SUAI_VERSION'
  | 'ERR_SUAI_DATA'
  | 'ERR_SUAI_SYCLOBJ'
  | 'ERR_SUAI_SHAPE'
  | 'ERR_SUAI_TYPESTR'
  | 'ERR_SUAI_STRIDES'
  | 'ERR_INVALID_ARG_TYPE'
  | 'ERR_INVALID_SIZE'
  | 'ERR_INVALID_ALIGNMENT'
  | 'ERR_INVALID_FILL_VALUE'
  | 'ERR_USM_ALLOCATION'
  | 'ERR_USM_FREED'
  | 'ERR_NOT_USM'
  | 'ERR_SUAI_FOREIGN_POINTER'
  | 'ERR_SUAI_OUT_OF_BOUNDS'
  | 'ERR_USM_KIND_MISMATCH'
  | 'ERR_UNKNOWN_USM_TYPE'
  | 'ERR_DESTINATION_TOO_SMALL'
  | 'ERR_SOURCE_TOO_LARGE'
  | 'ERR_NOT_HOST_ACCESSIBLE'
  | 'ERR_READ_ONLY'
  | 'ERR_INVALID_SYCLOBJ'
  | 'ERR_INVALID_FILTER'
  | 'ERR_DEVICE_NOT_FOUND'
  | 'ERR_QUEUE_CREATION'
  | 'ERR_SYCL_RUNTIME'
  | 'ERR_CUDA_DRIVER'
  | 'ERR_EXTERNAL_BUFFERS_UNSUPPORTED'
  | 'ERR_SHARED_BUFFER_UNSUPPORTED'
  | 'ERR_USM_BUSY'
  | 'ERR_CONSTRUCT_CALL_REQUIRED'
  | 'ERR_HOST_BUFFER_TOO_LARGE'
  | 'ERR_INVALID_THIS'
  | 'ERR_NOT_CLONEABLE'
  | 'ERR_HOST_RANGE_REGISTERED'
  | 'ERR_INVALID_ARG_VALUE'
  | 'ERR_INTERNAL'
  | 'ERR_SHARE_TOKEN_INVALID'
  | 'ERR_SHARE_TOKEN_OPENED'
  | 'ERR_SHARE_TOKEN_EXPIRED'
  | 'ERR_SHARE_TOKEN_REVOKED'
  | 'ERR_SHARE_NOT_OWNED'
  | 'ERR_INVALID_TIMEOUT'
  | 'ERR_IPC_UNAVAILABLE'
  | 'ERR_IPC_NOT_EXPORTABLE'
  | 'ERR_IPC_HANDLE_LENGTH'
  | 'ERR_IPC_HANDLE_INVALID'
  | 'ERR_IPC_HANDLE_OPEN'
  | 'ERR_IPC_OUT_OF_BOUNDS'
  | 'ERR_NO_NATIVE_BINARY'
  | 'ERR_PROGRAM_COMPILATION'
  | 'ERR_PROGRAMS_UNSUPPORTED'
  | 'ERR_KERNEL_NOT_FOUND'
  | 'ERR_KERNEL_ARG_COUNT'
  | 'ERR_KERNEL_ARG_TYPE'
  | 'ERR_KERNEL_QUEUE_MISMATCH'
  | 'ERR_INVALID_RANGE'
  | 'ERR_PROFILING_NOT_ENABLED'
  | 'ERR_UCX_UNAVAILABLE'
  | 'ERR_UCX'
  | 'ERR_UCX_CONNECTION_REFUSED'
  | 'ERR_UCX_BAD_ADDRESS'
  | 'ERR_UCX_PEER_FAILED'
  | 'ERR_UCX_TRUNCATED'
  | 'ERR_UCX_ENDPOINT_CLOSED'
  | 'ERR_UCX_RKEY_INVALID'
  | 'ERR_UCX_WRONG_THREAD'
  | 'ERR_UCX_RMA_DISABLED'
  | 'ERR_UCX_CONNECT_TIMEOUT'
  | 'ERR_UCX_CONFIG'
  | 'ERR_PEER_ACCESS_UNSUPPORTED'
  | 'ERR_NVRTC_UNAVAILABLE'

/**
 * The codes by name, e.g. `ErrorCode.UsmFreed === 'ERR_USM_FREED'` (a frozen object).
 * Its keys are PascalCase names, not the codes: `ErrorCode.ERR_USM_FREED` is `undefined`
 * in JS. Compare an error's `code` with `ErrorCode.UsmFreed` or with `'ERR_USM_FREED'`.
 */
export declare const ErrorCode: {
  readonly SuaiMalformed: 'ERR_SUAI_MALFORMED'
  readonly SuaiOffset: 'ERR_SUAI_OFFSET'
  readonly SuaiVersion: 'ERR_SUAI_VERSION'
  readonly SuaiData: 'ERR_SUAI_DATA'
  readonly SuaiSyclobj: 'ERR_SUAI_SYCLOBJ'
  readonly SuaiShape: 'ERR_SUAI_SHAPE'
  readonly SuaiTypestr: 'ERR_SUAI_TYPESTR'
  readonly SuaiStrides: 'ERR_SUAI_STRIDES'
  readonly InvalidArgType: 'ERR_INVALID_ARG_TYPE'
  readonly InvalidSize: 'ERR_INVALID_SIZE'
  readonly InvalidAlignment: 'ERR_INVALID_ALIGNMENT'
  readonly InvalidFillValue: 'ERR_INVALID_FILL_VALUE'
  readonly UsmAllocation: 'ERR_USM_ALLOCATION'
  readonly UsmFreed: 'ERR_USM_FREED'
  readonly NotUsm: 'ERR_NOT_USM'
  readonly SuaiForeignPointer: 'ERR_SUAI_FOREIGN_POINTER'
  readonly SuaiOutOfBounds: 'ERR_SUAI_OUT_OF_BOUNDS'
  readonly UsmKindMismatch: 'ERR_USM_KIND_MISMATCH'
  readonly UnknownUsmType: 'ERR_UNKNOWN_USM_TYPE'
  readonly DestinationTooSmall: 'ERR_DESTINATION_TOO_SMALL'
  readonly SourceTooLarge: 'ERR_SOURCE_TOO_LARGE'
  readonly NotHostAccessible: 'ERR_NOT_HOST_ACCESSIBLE'
  readonly ReadOnly: 'ERR_READ_ONLY'
  readonly InvalidSyclobj: 'ERR_INVALID_SYCLOBJ'
  readonly InvalidFilter: 'ERR_INVALID_FILTER'
  readonly DeviceNotFound: 'ERR_DEVICE_NOT_FOUND'
  readonly QueueCreation: 'ERR_QUEUE_CREATION'
  readonly SyclRuntime: 'ERR_SYCL_RUNTIME'
  readonly CudaDriver: 'ERR_CUDA_DRIVER'
  readonly ExternalBuffersUnsupported: 'ERR_EXTERNAL_BUFFERS_UNSUPPORTED'
  readonly SharedBufferUnsupported: 'ERR_SHARED_BUFFER_UNSUPPORTED'
  readonly UsmBusy: 'ERR_USM_BUSY'
  readonly ConstructCallRequired: 'ERR_CONSTRUCT_CALL_REQUIRED'
  readonly HostBufferTooLarge: 'ERR_HOST_BUFFER_TOO_LARGE'
  readonly InvalidThis: 'ERR_INVALID_THIS'
  readonly NotCloneable: 'ERR_NOT_CLONEABLE'
  readonly HostRangeRegistered: 'ERR_HOST_RANGE_REGISTERED'
  readonly InvalidArgValue: 'ERR_INVALID_ARG_VALUE'
  readonly Internal: 'ERR_INTERNAL'
  readonly ShareTokenInvalid: 'ERR_SHARE_TOKEN_INVALID'
  readonly ShareTokenOpened: 'ERR_SHARE_TOKEN_OPENED'
  readonly ShareTokenExpired: 'ERR_SHARE_TOKEN_EXPIRED'
  readonly ShareTokenRevoked: 'ERR_SHARE_TOKEN_REVOKED'
  readonly ShareNotOwned: 'ERR_SHARE_NOT_OWNED'
  readonly InvalidTimeout: 'ERR_INVALID_TIMEOUT'
  readonly IpcUnavailable: 'ERR_IPC_UNAVAILABLE'
  readonly IpcNotExportable: 'ERR_IPC_NOT_EXPORTABLE'
  readonly IpcHandleLength: 'ERR_IPC_HANDLE_LENGTH'
  readonly IpcHandleInvalid: 'ERR_IPC_HANDLE_INVALID'
  readonly IpcHandleOpen: 'ERR_IPC_HANDLE_OPEN'
  readonly IpcOutOfBounds: 'ERR_IPC_OUT_OF_BOUNDS'
  readonly NoNativeBinary: 'ERR_NO_NATIVE_BINARY'
  readonly ProgramCompilation: 'ERR_PROGRAM_COMPILATION'
  readonly ProgramsUnsupported: 'ERR_PROGRAMS_UNSUPPORTED'
  readonly KernelNotFound: 'ERR_KERNEL_NOT_FOUND'
  readonly KernelArgCount: 'ERR_KERNEL_ARG_COUNT'
  readonly KernelArgType: 'ERR_KERNEL_ARG_TYPE'
  readonly KernelQueueMismatch: 'ERR_KERNEL_QUEUE_MISMATCH'
  readonly InvalidRange: 'ERR_INVALID_RANGE'
  readonly ProfilingNotEnabled: 'ERR_PROFILING_NOT_ENABLED'
  readonly UcxUnavailable: 'ERR_UCX_UNAVAILABLE'
  readonly Ucx: 'ERR_UCX'
  readonly UcxConnectionRefused: 'ERR_UCX_CONNECTION_REFUSED'
  readonly UcxBadAddress: 'ERR_UCX_BAD_ADDRESS'
  readonly UcxPeerFailed: 'ERR_UCX_PEER_FAILED'
  readonly UcxTruncated: 'ERR_UCX_TRUNCATED'
  readonly UcxEndpointClosed: 'ERR_UCX_ENDPOINT_CLOSED'
  readonly UcxRkeyInvalid: 'ERR_UCX_RKEY_INVALID'
  readonly UcxWrongThread: 'ERR_UCX_WRONG_THREAD'
  readonly UcxRmaDisabled: 'ERR_UCX_RMA_DISABLED'
  readonly UcxConnectTimeout: 'ERR_UCX_CONNECT_TIMEOUT'
  readonly UcxConfig: 'ERR_UCX_CONFIG'
  readonly PeerAccessUnsupported: 'ERR_PEER_ACCESS_UNSUPPORTED'
  readonly NvrtcUnavailable: 'ERR_NVRTC_UNAVAILABLE'
}
/**
 * The type of every code (`ErrorCodeValue`), under the name of the `ErrorCode` object.
 * The object is keyed by PascalCase names, its values are the codes:
 * `ErrorCode.UsmFreed === 'ERR_USM_FREED'`, and `ErrorCode.ERR_USM_FREED` is `undefined`.
 */
export type ErrorCode = ErrorCodeValue

/** Options of the error classes' constructors. */
export interface DpctlErrorOptions {
  cause?: unknown
  /** Defaults to the class's own code. */
  code?: ErrorCodeValue
}

/** A USM allocation failed (too large, out of memory, or refused as unsafe). */
export declare class USMAllocationError extends Error {
  /**
   * An error of this class, as the library throws them (for tests and for libraries
   * that wrap this one); it never throws itself.
   * @param message What went wrong.
   * @param options `cause` (as `Error`'s) and `code` (default `'ERR_USM_ALLOCATION'`).
   */
  constructor(message?: string, options?: DpctlErrorOptions)
  /** `'ERR_USM_ALLOCATION'` unless given another. */
  code: ErrorCodeValue
}
/** No queue could be made: no matching device, a filter string it cannot understand, or no runtime. */
export declare class SyclQueueCreationError extends Error {
  /**
   * An error of this class, as the library throws them (for tests and for libraries
   * that wrap this one); it never throws itself.
   * @param message What went wrong.
   * @param options `cause` (as `Error`'s) and `code` (default `'ERR_QUEUE_CREATION'`).
   */
  constructor(message?: string, options?: DpctlErrorOptions)
  /** `'ERR_QUEUE_CREATION'` unless given another. */
  code: ErrorCodeValue
}
/** No device matches the filter string, or it cannot be understood. */
export declare class SyclDeviceCreationError extends Error {
  /**
   * An error of this class, as the library throws them (for tests and for libraries
   * that wrap this one); it never throws itself.
   * @param message What went wrong.
   * @param options `cause` (as `Error`'s) and `code` (default `'ERR_DEVICE_NOT_FOUND'`).
   */
  constructor(message?: string, options?: DpctlErrorOptions)
  /** `'ERR_DEVICE_NOT_FOUND'` unless given another. */
  code: ErrorCodeValue
}

/** Every error this package throws, `TypeError`s and `RangeError`s included, carries a code. */
export interface CodedError extends Error {
  code: ErrorCodeValue
}

/**
 * The field every memory, device, context and queue object carries so that structured
 * clone (`structuredClone`, `postMessage`) throws `ERR_NOT_CLONEABLE` instead of
 * delivering an empty object.
 */
export interface CloneGuarded {
  readonly __dpctlMemoryCloneGuard__: object
}

/** The USM kinds a memory object can be of (`getUsmType()` of each class). */
export type MemoryKind = 'device' | 'shared' | 'host'

/** Options of `share()`. */
export interface ShareOptions {
  /**
   * Milliseconds the token holds the memory unopened before it expires (an integer,
   * 1 ..= 2^31 - 1; default 30,000).
   */
  timeout?: number | null
}

/**
 * What `mem.share()` returns: a frozen plain object that `postMessage` and
 * `structuredClone` carry, opened once by `openShared(token)` in any thread of the
 * process that made it.
 */
export interface SharedMemoryToken<K extends MemoryKind = MemoryKind> {
  /** The token format's version. */
  readonly dpctlMemoryShare: 1
  /** The kind of the memory; `openShared` returns an object of its class. */
  readonly kind: K
  /** Extent of the shared memory in bytes. */
  readonly nbytes: number
  /** The share's id and check, as the binding wrote them (opaque). */
  readonly handle: string
}

/** The memory class of a kind. */
export type MemoryOfKind<K extends MemoryKind> = K extends 'device'
  ? MemoryUSMDevice
  : K extends 'host'
    ? MemoryUSMHost
    : MemoryUSMShared

/**
 * What all three memory classes share (dpctl's `_Memory`); not constructible itself
 * (`new _Memory()` throws `ERR_CONSTRUCT_CALL_REQUIRED`): `m instanceof _Memory` holds for
 * every memory object.
 *
 * Every getter and method throws `ERR_USM_FREED` after `free()` (only `free()`,
 * `toString()`, `toJSON()` and `util.inspect` still work), and `ERR_INVALID_THIS` when
 * called on an object that is not memory (`const { free } = mem; free()`).
 *
 * @example
 * ```js
 * import { MemoryUSMShared, MemoryUSMDevice } from 'dpctl-memory';
 * const shared = new MemoryUSMShared(1024);          // on the default device
 * new Uint8Array(shared.buffer).fill(7);             // host-visible, no copy
 * const dev = new MemoryUSMDevice(1024, { queue: shared.syclQueue });
 * dev.copyFromDevice(shared);                        // device to device
 * const bytes = await dev.copyToHostAsync();         // Uint8Array, off the main thread
 * shared.free(); dev.free();
 * ```
 */
export declare abstract class _Memory implements CloneGuarded {
  protected constructor()
  readonly __dpctlMemoryCloneGuard__: object
  /**
   * Extent of this USM buffer in bytes.
   * @throws `ERR_USM_FREED` after `free()`.
   */
  get nbytes(): number
  /**
   * Extent of this USM buffer in bytes (same as `nbytes`).
   * @throws `ERR_USM_FREED` after `free()`.
   */
  get size(): number
  /**
   * The USM address.
   * @throws `ERR_USM_FREED` after `free()`.
   */
  get pointer(): bigint
  /**
   * The object that keeps this memory alive (the exporter it was made from), or `null`.
   * @throws `ERR_USM_FREED` after `free()`.
   */
  get referenceObj(): object | null
  /**
   * The queue the memory is used through.
   * @throws `ERR_USM_FREED` after `free()`.
   */
  get syclQueue(): SyclQueue
  /**
   * The context the USM pointer is bound to.
   * @throws `ERR_USM_FREED` after `free()`.
   */
  get syclContext(): SyclContext
  /**
   * The device the memory belongs to.
   * @throws `ERR_USM_FREED` after `free()`.
   */
  get syclDevice(): SyclDevice
  /**
   * The zero-copy `ArrayBuffer` over host or shared memory: the same object on every
   * read, detached by `free()` (every view of it then has length 0).
   * @throws `ERR_NOT_HOST_ACCESSIBLE` for device memory (copy it with `copyToHost()`).
   * @throws `ERR_READ_ONLY` for memory from a read-only interface (JS has no read-only
   * `ArrayBuffer`).
   * @throws `ERR_HOST_BUFFER_TOO_LARGE` (a `RangeError`) for memory larger than an
   * `ArrayBuffer` may be.
   * @throws `ERR_EXTERNAL_BUFFERS_UNSUPPORTED` where the JS engine forbids external
   * buffers (Electron).
   * @throws `ERR_USM_FREED` after `free()`.
   */
  get buffer(): ArrayBuffer
  /**
   * A `SharedArrayBuffer` over host or shared memory, the same object on every read: post
   * it to workers with `postMessage` (no share token needed), view it with any TypedArray
   * there, and use `Atomics` on it. `free()` cannot take it back from other threads: the
   * memory stays allocated until every thread has dropped its copy.
   * @throws `ERR_NOT_HOST_ACCESSIBLE` for device memory.
   * @throws `ERR_READ_ONLY` for memory from a read-only interface.
   * @throws `ERR_SHARE_NOT_OWNED` for memory another library's exporter owns (it keeps
   * the memory alive for this thread alone).
   * @throws `ERR_HOST_BUFFER_TOO_LARGE` (a `RangeError`) for memory larger than a
   * `SharedArrayBuffer` may be.
   * @throws `ERR_SHARED_BUFFER_UNSUPPORTED` on a Node without
   * `node_api_create_external_sharedarraybuffer` (Node 20; 24.16, 26.1 and later have it).
   * @throws `ERR_USM_FREED` after `free()`.
   */
  get sharedBuffer(): SharedArrayBuffer
  /**
   * The USM kind in the context of `syclobj`, or in the memory's own context.
   * @param syclobj A queue or context to ask in (default: the memory's own context).
   * @throws `ERR_INVALID_SYCLOBJ` (a `TypeError`) when `syclobj` is neither a queue nor a context.
   */
  getUsmType(syclobj?: SyclQueue | SyclContext | null): UsmType
  /**
   * dpctl's enum value of `getUsmType()`: unknown 0, device 1, shared 2, host 3.
   * @param syclobj As `getUsmType`'s.
   * @throws `ERR_INVALID_SYCLOBJ` as `getUsmType`.
   */
  getUsmTypeEnum(syclobj?: SyclQueue | SyclContext | null): 0 | 1 | 2 | 3
  /**
   * Copies the memory into a new `Uint8Array`.
   * @throws `ERR_HOST_BUFFER_TOO_LARGE` (a `RangeError`) for memory larger than a
   * `Uint8Array` may be.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime's copy fails.
   */
  copyToHost(): Uint8Array
  /**
   * Copies the memory into the start of `dst` and returns `dst`.
   * @param dst An `ArrayBuffer`, `SharedArrayBuffer`, TypedArray, `DataView` or `Buffer`
   * of at least `nbytes` bytes.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `dst` is not one of those.
   * @throws `ERR_DESTINATION_TOO_SMALL` (a `RangeError`) when `dst` is shorter than `nbytes`.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime's copy fails.
   */
  copyToHost<T extends HostBuffer>(dst: T): T
  /**
   * Writes all of `src` at offset 0 (an empty `src` does nothing); the bytes after it
   * are left as they are.
   * @param src An `ArrayBuffer`, `SharedArrayBuffer`, TypedArray, `DataView` or `Buffer`
   * of at most `nbytes` bytes.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `src` is not one of those.
   * @throws `ERR_SOURCE_TOO_LARGE` (a `RangeError`) when `src` is longer than `nbytes`.
   * @throws `ERR_READ_ONLY` for memory from a read-only interface.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime's copy fails.
   */
  copyFromHost(src: HostBuffer): void
  /**
   * Copies all of `src` to offset 0, through the host when the two are in different
   * contexts (and as `memmove` where they overlap).
   * @param src Memory of any kind, or any object exposing `__sycl_usm_array_interface__`.
   * @throws `ERR_NOT_USM` (a `TypeError`) when `src` is neither.
   * @throws `ERR_SUAI_*` codes when `src`'s interface is malformed, or points outside
   * its allocation.
   * @throws `ERR_SOURCE_TOO_LARGE` (a `RangeError`) when `src` is longer than `nbytes`.
   * @throws `ERR_READ_ONLY` for memory from a read-only interface.
   */
  copyFromDevice(src: _Memory | SyclUsmArrayInterfaceExporter): void
  /**
   * Fills the memory with the byte `value`.
   * @param value An integer 0..255 (default 0).
   * @throws `ERR_INVALID_FILL_VALUE` (a `RangeError`) for any other value.
   * @throws `ERR_READ_ONLY` for memory from a read-only interface.
   */
  memset(value?: number): void
  /**
   * `copyToHost()` off the main thread, into a new `Uint8Array`.
   * @throws `ERR_HOST_BUFFER_TOO_LARGE` as `copyToHost()`.
   */
  copyToHostAsync(): Promise<Uint8Array>
  /**
   * `copyToHost(dst)` off the main thread: resolves to `dst` once the copy is done. The
   * memory and `dst` stay alive until it settles, even if this object is freed meanwhile.
   * @param dst As `copyToHost(dst)`'s: a host buffer of at least `nbytes` bytes.
   * @throws `ERR_INVALID_ARG_TYPE` at the call, as `copyToHost(dst)`.
   * @throws `ERR_DESTINATION_TOO_SMALL`: the Promise rejects at once, before any work,
   * with `copyToHost(dst)`'s error; also when a plain `ArrayBuffer` `dst` was detached
   * or shrunk while the copy ran.
   */
  copyToHostAsync<T extends HostBuffer>(dst: T): Promise<T>
  /**
   * `copyFromHost(src)` off the main thread; `src` stays alive until it settles.
   * @param src As `copyFromHost(src)`'s: a host buffer of at most `nbytes` bytes.
   * @throws `ERR_INVALID_ARG_TYPE` at the call, as `copyFromHost(src)`.
   * @throws `ERR_SOURCE_TOO_LARGE`, `ERR_READ_ONLY`: the Promise rejects at once, before
   * anything is copied, with `copyFromHost(src)`'s error.
   */
  copyFromHostAsync(src: HostBuffer): Promise<void>
  /**
   * `copyFromDevice(src)` off the main thread; both memories stay alive until it settles.
   * @param src As `copyFromDevice(src)`'s: memory, or an object exposing the interface.
   * @throws `ERR_NOT_USM` and `ERR_SUAI_*` at the call, as `copyFromDevice(src)`.
   * @throws `ERR_SOURCE_TOO_LARGE`, `ERR_READ_ONLY`: the Promise rejects at once, before
   * any work, with `copyFromDevice(src)`'s error.
   */
  copyFromDeviceAsync(src: _Memory | SyclUsmArrayInterfaceExporter): Promise<void>
  /**
   * `memset(value)` off the main thread.
   * @param value An integer 0..255 (default 0).
   * @throws `ERR_INVALID_FILL_VALUE` at the call, as `memset(value)`.
   * @throws `ERR_READ_ONLY`: the Promise rejects at once, as `memset(value)` throws.
   */
  memsetAsync(value?: number): Promise<void>
  /**
   * A copy of the memory as a `Buffer` of its own (`buffer.byteLength === nbytes`, never
   * a slice of Node's pool).
   * @throws `ERR_HOST_BUFFER_TOO_LARGE` (a `RangeError`) for memory larger than a
   * `Buffer` may be.
   */
  toBytes(): Buffer
  /**
   * `{ data: [pointer, readOnly], shape: [nbytes], strides: null, typestr: '|u1', version: 1, syclobj }`, new on every read.
   * @throws `ERR_USM_FREED` after `free()`.
   */
  get __sycl_usm_array_interface__(): SyclUsmArrayInterface
  /**
   * A token that another thread (or this one) opens with `openShared(token)` into a
   * memory object of its own over the same allocation, zero-copy. The token holds the
   * allocation until it is opened, revoked or its timeout passes; it opens once.
   * @param options `timeout`: milliseconds the token waits to be opened (default 30,000).
   * @throws `ERR_SHARE_NOT_OWNED` for memory another library's exporter owns.
   * @throws `ERR_INVALID_TIMEOUT` (a `RangeError`) for a `timeout` that is not an
   * integer from 1 to 2^31 - 1 ms; `ERR_INVALID_ARG_TYPE` for other options.
   */
  share(options?: ShareOptions | null): SharedMemoryToken
  /**
   * Releases this object's reference to the memory now and detaches its `buffer`.
   * Idempotent; every later use but `toString()` throws `ERR_USM_FREED`. Memory objects
   * made from this one keep the memory alive until they are freed too; memory never
   * freed is released by garbage collection.
   */
  free(): void
  /** Same as `free()`, for `using` declarations. */
  [Symbol.dispose](): void
  /** `<SYCL(TM) USM-host allocation of 16 bytes at 0x…>`, as dpctl's repr; after `free()`, `<SYCL(TM) USM-host allocation (freed)>`. */
  toString(): string
  /** What `JSON.stringify` writes: `toString()`. */
  toJSON(): string
}

/**
 * USM device memory: reachable from the host only through copies (`copyToHost`,
 * `copyFromHost`, their async forms), never through a `buffer`.
 *
 * @example
 * ```js
 * const { MemoryUSMDevice, SyclQueue } = require('dpctl-memory');
 * const queue = new SyclQueue();                         // the default device; or new SyclQueue('gpu')
 * const dev = new MemoryUSMDevice(4096, { queue });
 * dev.copyFromHost(new Float32Array(1024).fill(1.5));   // host to device
 * const back = new Float32Array(dev.copyToHost().buffer);
 * dev.free();
 * ```
 */
export declare class MemoryUSMDevice extends _Memory {
  /**
   * `new MemoryUSMDevice(nbytes, { alignment?, queue? })` allocates `nbytes` of USM
   * device memory; `new MemoryUSMDevice(usmObj, { copy?, queue? })` views the memory of
   * `usmObj` when it is USM device memory (zero-copy), or copies it into a new allocation
   * with `copy: true`.
   *
   * @param source A byte count (a positive safe integer `number`, or a `bigint`), or
   * memory of any kind, or any object exposing `__sycl_usm_array_interface__`. Host data
   * (an `ArrayBuffer` or a view) is not memory: allocate by size, then `copyFromHost` it.
   * @param options `alignment` (0, the default, or a power of two; ignored when viewing),
   * `queue` (default: the cached queue of the default device), `copy` (a boolean).
   * @throws `ERR_INVALID_SIZE` (a `RangeError`) when `nbytes` is not a positive integer.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) for a `source` or option of the wrong
   * type, an unknown option, or options that are not an object (`{ alignment: 16 }`, not
   * dpctl's positional `16`).
   * @throws `ERR_INVALID_ALIGNMENT` (a `RangeError`) for an alignment that is not 0 or a
   * power of two.
   * @throws `ERR_USM_ALLOCATION` (`USMAllocationError`) when the runtime cannot allocate
   * (the message names the device's `maxMemAllocSize` when `nbytes` is beyond it).
   * @throws `ERR_QUEUE_CREATION` (`SyclQueueCreationError`) when there is no default
   * device (no runtime installed; see `getRuntimeDiagnostics()`).
   * @throws `ERR_NOT_USM` (a `TypeError`) when `source` is an object that is not memory.
   * @throws `ERR_USM_KIND_MISMATCH` when `source` is memory of another kind and `copy`
   * is not `true`.
   * @throws `ERR_SUAI_*` codes when `source`'s interface is malformed, its pointer is not
   * USM memory of its `syclobj`'s context, or its bytes leave the allocation.
   * @throws `ERR_USM_FREED` when `source` is memory that was freed.
   */
  constructor(source: number | bigint | _Memory | SyclUsmArrayInterfaceExporter, options?: MemoryOptions)
  /**
   * As `_Memory.share`: a token that opens into a `MemoryUSMDevice`.
   * @param options `timeout`: milliseconds the token waits to be opened (default 30,000).
   * @throws `ERR_SHARE_NOT_OWNED` for memory another library's exporter owns.
   * @throws `ERR_INVALID_TIMEOUT` (a `RangeError`) for a bad `timeout`; `ERR_INVALID_ARG_TYPE`
   * for other options.
   * @throws `ERR_USM_FREED` after `free()`.
   */
  share(options?: ShareOptions | null): SharedMemoryToken<'device'>
}

/**
 * USM host memory: host memory (pinned, on a GPU) that the device reaches directly;
 * `buffer` views it with no copy, and copies between it and device memory go straight
 * to the runtime.
 *
 * @example
 * ```js
 * import { MemoryUSMHost, MemoryUSMDevice } from 'dpctl-memory';
 * const host = new MemoryUSMHost(4096);                   // on the default device
 * new Float32Array(host.buffer).fill(1.5);                // writes USM memory, no copy
 * const dev = new MemoryUSMDevice(host, { copy: true });  // a device copy of it
 * await host.copyFromDeviceAsync(dev);                    // and back, off the main thread
 * host.free(); dev.free();
 * ```
 */
export declare class MemoryUSMHost extends _Memory {
  /**
   * `new MemoryUSMHost(nbytes, { alignment?, queue? })` allocates `nbytes` of USM host
   * memory; `new MemoryUSMHost(usmObj, { copy?, queue? })` views the memory of `usmObj`
   * when it is USM host memory (zero-copy), or copies it into a new allocation with
   * `copy: true`.
   *
   * @param source A byte count (a positive safe integer `number`, or a `bigint`), or
   * memory of any kind, or any object exposing `__sycl_usm_array_interface__`. Host data
   * (an `ArrayBuffer` or a view) is not memory: allocate by size, then `copyFromHost` it.
   * @param options `alignment` (0, the default, or a power of two; ignored when viewing),
   * `queue` (default: the cached queue of the default device), `copy` (a boolean).
   * @throws `ERR_INVALID_SIZE` (a `RangeError`) when `nbytes` is not a positive integer.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) for a `source` or option of the wrong
   * type, an unknown option, or options that are not an object (`{ alignment: 16 }`, not
   * dpctl's positional `16`).
   * @throws `ERR_INVALID_ALIGNMENT` (a `RangeError`) for an alignment that is not 0 or a
   * power of two.
   * @throws `ERR_USM_ALLOCATION` (`USMAllocationError`) when the runtime cannot allocate
   * (the message names the device's `maxMemAllocSize` when `nbytes` is beyond it).
   * @throws `ERR_QUEUE_CREATION` (`SyclQueueCreationError`) when there is no default
   * device (no runtime installed; see `getRuntimeDiagnostics()`).
   * @throws `ERR_NOT_USM` (a `TypeError`) when `source` is an object that is not memory.
   * @throws `ERR_USM_KIND_MISMATCH` when `source` is memory of another kind and `copy`
   * is not `true`.
   * @throws `ERR_SUAI_*` codes when `source`'s interface is malformed, its pointer is not
   * USM memory of its `syclobj`'s context, or its bytes leave the allocation.
   * @throws `ERR_USM_FREED` when `source` is memory that was freed.
   */
  constructor(source: number | bigint | _Memory | SyclUsmArrayInterfaceExporter, options?: MemoryOptions)
  /**
   * As `_Memory.share`: a token that opens into a `MemoryUSMHost`.
   * @param options `timeout`: milliseconds the token waits to be opened (default 30,000).
   * @throws `ERR_SHARE_NOT_OWNED` for memory another library's exporter owns.
   * @throws `ERR_INVALID_TIMEOUT` (a `RangeError`) for a bad `timeout`; `ERR_INVALID_ARG_TYPE`
   * for other options.
   * @throws `ERR_USM_FREED` after `free()`.
   */
  share(options?: ShareOptions | null): SharedMemoryToken<'host'>
}

/**
 * USM shared memory: migrates between host and device as either touches it; `buffer`
 * views it with no copy. `prefetch()` and `memAdvise()` give the runtime placement hints.
 *
 * @example
 * ```js
 * import { MemoryUSMShared } from 'dpctl-memory';
 * const src = new Uint8Array([1, 2, 3, 4]);
 * const m = new MemoryUSMShared(src.byteLength, { alignment: 64 }); // allocated by size
 * m.copyFromHost(src);                                  // then filled
 * const view = new Uint8Array(m.buffer);                // zero-copy, not new Uint8Array(m)
 * await m.prefetch({ to: 'device' });                   // a hint: { applied }
 * m.free();                                             // view.length is 0 from here on
 * ```
 */
export declare class MemoryUSMShared extends _Memory {
  /**
   * `new MemoryUSMShared(nbytes, { alignment?, queue? })` allocates `nbytes` of USM
   * shared memory; `new MemoryUSMShared(usmObj, { copy?, queue? })` views the memory of
   * `usmObj` when it is USM shared memory (zero-copy), or copies it into a new allocation
   * with `copy: true`. On a CUDA device a request beyond the device's free memory is
   * refused before it is tried (oversubscribed managed memory can hang the GPU).
   *
   * @param source A byte count (a positive safe integer `number`, or a `bigint`), or
   * memory of any kind, or any object exposing `__sycl_usm_array_interface__`. Host data
   * (an `ArrayBuffer` or a view) is not memory: allocate by size, then `copyFromHost` it.
   * @param options `alignment` (0, the default, or a power of two; ignored when viewing),
   * `queue` (default: the cached queue of the default device), `copy` (a boolean).
   * @throws `ERR_INVALID_SIZE` (a `RangeError`) when `nbytes` is not a positive integer.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) for a `source` or option of the wrong
   * type, an unknown option, or options that are not an object (`{ alignment: 16 }`, not
   * dpctl's positional `16`).
   * @throws `ERR_INVALID_ALIGNMENT` (a `RangeError`) for an alignment that is not 0 or a
   * power of two.
   * @throws `ERR_USM_ALLOCATION` (`USMAllocationError`) when the runtime cannot allocate,
   * or refuses (managed memory beyond the device's free memory); the message names the
   * device's `maxMemAllocSize` when `nbytes` is beyond it.
   * @throws `ERR_QUEUE_CREATION` (`SyclQueueCreationError`) when there is no default
   * device (no runtime installed; see `getRuntimeDiagnostics()`).
   * @throws `ERR_NOT_USM` (a `TypeError`) when `source` is an object that is not memory.
   * @throws `ERR_USM_KIND_MISMATCH` when `source` is memory of another kind and `copy`
   * is not `true`.
   * @throws `ERR_SUAI_*` codes when `source`'s interface is malformed, its pointer is not
   * USM memory of its `syclobj`'s context, or its bytes leave the allocation.
   * @throws `ERR_USM_FREED` when `source` is memory that was freed.
   */
  constructor(source: number | bigint | _Memory | SyclUsmArrayInterfaceExporter, options?: MemoryOptions)
  /**
   * As `_Memory.share`: a token that opens into a `MemoryUSMShared`.
   * @param options `timeout`: milliseconds the token waits to be opened (default 30,000).
   * @throws `ERR_SHARE_NOT_OWNED` for memory another library's exporter owns.
   * @throws `ERR_INVALID_TIMEOUT` (a `RangeError`) for a bad `timeout`; `ERR_INVALID_ARG_TYPE`
   * for other options.
   * @throws `ERR_USM_FREED` after `free()`.
   */
  share(options?: ShareOptions | null): SharedMemoryToken<'shared'>
  /**
   * Migrates the memory to the device (the default) or the host. `applied` is `false`
   * where the runtime does nothing (the OpenCL CPU device; SYCL has no prefetch to the host).
   * @param options `to`: `'device'` (the default) or `'host'`.
   * @throws `ERR_INVALID_ARG_TYPE` or `ERR_INVALID_ARG_VALUE` (a `TypeError`) for bad options.
   */
  prefetch(options?: PrefetchOptions): Promise<HintResult>
  /**
   * A usage hint for the runtime's page placement; the contents never change.
   * @param advice One of the `MemAdvice` names.
   * @param options `location`: `'device'` (the default) or `'host'`, for the advice that takes one.
   * @throws `ERR_INVALID_ARG_TYPE` or `ERR_INVALID_ARG_VALUE` (a `TypeError`) for an
   * advice or location that is not one of the names.
   */
  memAdvise(advice: MemAdvice, options?: MemAdviseOptions): Promise<HintResult>
}

/** Where `prefetch()` moves pages, or where `memAdvise()`'s location-taking advice points. */
export type MemLocation = 'device' | 'host'

/** Options of `MemoryUSMShared.prototype.prefetch`. */
export interface PrefetchOptions {
  /** Default `'device'`. */
  to?: MemLocation
}

/** The advice `memAdvise()` takes (CUDA's `cuMemAdvise`, SYCL's `mem_advise`). */
export type MemAdvice =
  | 'read-mostly'
  | 'unset-read-mostly'
  | 'preferred-location'
  | 'unset-preferred-location'
  | 'accessed-by'
  | 'unset-accessed-by'

/** Options of `MemoryUSMShared.prototype.memAdvise`. */
export interface MemAdviseOptions {
  /** For `preferred-location` and `accessed-by` (and their `unset-` forms); default `'device'`. */
  location?: MemLocation
}

/** What a hint did: `applied` is whether the runtime acted on it. */
export interface HintResult {
  readonly applied: boolean
}

/** Options of `registerHost`. */
export interface RegisterHostOptions {
  /** The queue whose runtime registers; default: the cached queue of the default device. */
  queue?: SyclQueue
}

/**
 * A registration of host memory made by `registerHost`: while active, copies between
 * device memory and the registered buffer (or any view of it inside the registered
 * bytes) skip staging. It holds its buffer (the addon holds it weakly, so a registration
 * cached by its own buffer is collected with it). Collection of this object ends it, as
 * does `unregister()`.
 */
export declare class HostRegistration implements CloneGuarded {
  readonly __dpctlMemoryCloneGuard__: object
  private constructor()
  /** Whether the runtime pinned the memory; `false` where it needs none (a CPU device). */
  readonly registered: boolean
  /** The registered bytes. */
  readonly byteLength: number
  /** Ends the registration (after any copy in flight that uses it). Idempotent. */
  unregister(): void
  /**
   * Same as `unregister()`, for `using` declarations.
   */
  [Symbol.dispose](): void
}

/**
 * Registers the bytes of `buffer` with the runtime of `options.queue`'s device (CUDA
 * `cuMemHostRegister`, SYCL `prepare_for_device_copy`). A copy uses the registration only
 * while the buffer it is given is the registered buffer object, not detached, with the
 * registered data pointer and length; otherwise it takes the ordinary path.
 * @param buffer The host memory to register: an `ArrayBuffer`, `SharedArrayBuffer` or a view.
 * @param options `queue`: whose runtime registers (default: the default device's cached queue).
 * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `buffer` is not host memory, or for bad options.
 * @throws `ERR_INVALID_SIZE` (a `RangeError`) for an empty or detached buffer.
 * @throws `ERR_HOST_RANGE_REGISTERED` when the bytes overlap a live registration.
 * @throws `ERR_QUEUE_CREATION` (`SyclQueueCreationError`) when no `queue` is given and
 * there is no default device.
 */
export declare function registerHost(buffer: HostBuffer, options?: RegisterHostOptions): HostRegistration

/**
 * The memory `obj` exposes, in the class of its USM kind, without copying.
 * @param obj A memory object, or any object exposing `__sycl_usm_array_interface__`.
 * @throws `ERR_NOT_USM` (a `TypeError`) when `obj` is not memory and exposes no interface.
 * @throws `ERR_UNKNOWN_USM_TYPE` when the pointer's USM kind cannot be told.
 * @throws `ERR_SUAI_*` codes when the interface is malformed or leaves its allocation.
 */
export declare function asUsmMemory(obj: _Memory | SyclUsmArrayInterfaceExporter): MemoryUSMDevice | MemoryUSMHost | MemoryUSMShared

/**
 * Opens a token of `mem.share()` (made in any thread of this process) into a memory
 * object of its kind over the same allocation, with a `buffer` of its own for host and
 * shared memory; it holds the allocation until freed.
 * @example
 * <!-- example: fragment -->
 * ```js
 * // main thread
 * worker.postMessage(mem.share());
 * // worker
 * parentPort.once('message', (token) => { const mine = openShared(token); ...; mine.free(); });
 * ```
 * @param token What `mem.share()` returned (posted to this thread, or not).
 * @throws `ERR_SHARE_TOKEN_OPENED` when the token was opened before (a token opens once).
 * @throws `ERR_SHARE_TOKEN_EXPIRED` when its timeout passed before it was opened.
 * @throws `ERR_SHARE_TOKEN_REVOKED` after `revokeShared(token)`.
 * @throws `ERR_SHARE_TOKEN_INVALID` (a `TypeError`) for anything that is not a token
 * `share()` made in this process.
 */
export declare function openShared<K extends MemoryKind>(token: SharedMemoryToken<K>): MemoryOfKind<K>

/**
 * Revokes a token of `mem.share()` not yet opened, giving back what it held: `true`;
 * `false` when it was already opened, revoked or expired.
 * @param token What `mem.share()` returned.
 * @throws `ERR_SHARE_TOKEN_INVALID` (a `TypeError`) for anything that is not a token
 * `share()` made in this process.
 */
export declare function revokeShared(token: SharedMemoryToken): boolean

/** Options of `IPCMemoryHandle.open`: where to open the handle, and how many bytes. */
export interface IPCOpenOptions {
  /** The queue the memory is used through (else `device`'s cached queue). */
  queue?: SyclQueue | null
  /** The device to open on (else the default device); not with `queue`. */
  device?: SyclDevice | null
  /** Bytes to open: what the exporter sent with the handle, at most the exported size. */
  nbytes: number | bigint
}

/**
 * The IPC handle of USM device memory that owns its whole allocation: bytes another
 * process of this machine opens with `IPCMemoryHandle.open`. Making one marks the
 * allocation as exported: it is freed, never pooled, when it goes.
 * @example
 * <!-- example: fragment -->
 * ```js
 * // exporter
 * const handle = new IPCMemoryHandle(mem);
 * child.send({ bytes: [...handle.toBytes()], nbytes: handle.nbytes });
 * // importer (another process)
 * const opened = IPCMemoryHandle.open(Uint8Array.from(msg.bytes), { nbytes: msg.nbytes });
 * ```
 */
export declare class IPCMemoryHandle implements CloneGuarded {
  /**
   * Makes the IPC handle of `memory` and marks its allocation as exported.
   * @param memory USM device memory that owns its whole allocation (not a view of part
   * of one).
   * @throws `ERR_NOT_USM` (a `TypeError`) when `memory` is not a memory object.
   * @throws `ERR_IPC_NOT_EXPORTABLE` for memory that is not USM device memory owning its
   * whole allocation.
   * @throws `ERR_IPC_UNAVAILABLE` where the device's runtime has no IPC (every SYCL device
   * of the pinned runtime).
   */
  constructor(memory: MemoryUSMDevice)
  readonly __dpctlMemoryCloneGuard__: object
  /** The handle's bytes (CUDA: the driver's 64-byte `CUipcMemHandle`), a new copy each call. */
  toBytes(): Uint8Array
  /** Bytes of the exported memory, to send with the handle. */
  get nbytes(): number
  /**
   * Opens handle bytes another process exported.
   * @param bytes The handle's bytes, as `toBytes()` gave them in the exporting process.
   * @param options `nbytes` (required: what the exporter sent), and `queue` or `device`
   * (where to open; default: the default device).
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `bytes` is not a `Uint8Array`, or
   * for missing or bad options.
   * @throws `ERR_IPC_HANDLE_LENGTH` (a `RangeError`) for bytes of the wrong length.
   * @throws `ERR_IPC_HANDLE_INVALID` for bytes the runtime cannot open.
   * @throws `ERR_IPC_HANDLE_OPEN` when the handle is already open in this process.
   * @throws `ERR_IPC_OUT_OF_BOUNDS` (a `RangeError`) for `nbytes` beyond the export.
   * @throws `ERR_IPC_UNAVAILABLE` where the device's runtime has no IPC.
   */
  static open(bytes: Uint8Array, options: IPCOpenOptions): MemoryIPCDevice
  /**
   * Whether memory on `device` (default: the default device) can be shared with other processes.
   * @param device The device to ask about (default: the default device).
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `device` is not a `SyclDevice`.
   * @throws `ERR_DEVICE_NOT_FOUND` (`SyclDeviceCreationError`) when `device` is omitted and
   * there is no default device.
   */
  static isAvailable(device?: SyclDevice | null): boolean
  /** `IPCMemoryHandle(size=N)`. */
  toString(): string
}

/** Device memory another process exported, opened from its handle; `free()` closes the mapping once no view holds it. */
export declare class MemoryIPCDevice extends MemoryUSMDevice {
  private constructor()
}

/**
 * A SYCL device: a CPU or GPU that USM memory can live on. Its properties are read once
 * and kept.
 * @example
 * ```js
 * const { SyclDevice, getDevices } = require('dpctl-memory');
 * for (const d of getDevices()) console.log(d.filterString, d.name, d.globalMemSize);
 * const device = new SyclDevice();        // the default device; new SyclDevice('gpu') throws
 * device.hasAspect('usm_shared_allocations'); // SyclDeviceCreationError where there is no GPU
 * ```
 */
export declare class SyclDevice implements CloneGuarded {
  readonly __dpctlMemoryCloneGuard__: object
  /**
   * Selects a device by SYCL filter string (`backend:type:index`, every part optional:
   * `'cpu'`, `'gpu'`, `'opencl:cpu:0'`, `'cuda:gpu:1'`), or the default device (a GPU if
   * there is one).
   * @param filter A SYCL filter string; the default device when omitted or `null`.
   * @throws `ERR_DEVICE_NOT_FOUND` (`SyclDeviceCreationError`) when nothing matches or the
   * filter string cannot be understood.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `filter` is not a string.
   */
  constructor(filter?: string | null)
  /** The device's name, e.g. `'NVIDIA H200'`. */
  get name(): string
  /** The device's vendor, e.g. `'NVIDIA Corporation'`. */
  get vendor(): string
  /** The backend as filter strings write it: `'opencl'`, `'level_zero'`, `'cuda'`, ... */
  get backend(): string
  /** `'cpu'`, `'gpu'`, `'accelerator'`, `'custom'` or `'unknown'`. */
  get deviceType(): string
  /** The filter string that selects exactly this device, e.g. `'opencl:cpu:0'`. */
  get filterString(): string
  /** The version of the device's driver, as its runtime reports it. */
  get driverVersion(): string
  /** Global memory in bytes. */
  get globalMemSize(): number
  /** The largest single allocation in bytes. */
  get maxMemAllocSize(): number
  /**
   * Bytes of work-group local memory (dpctl's `local_mem_size`; on CUDA the shared memory
   * a block may opt in to; 0 where the runtime does not say): the `kernelArg.local`
   * arguments of one submission, beside the kernel's own, fit in it (`ERR_INVALID_SIZE`
   * otherwise).
   */
  get localMemSize(): number
  /**
   * Whether programs of `language` build for this device in this process (dpctl's
   * `can_compile`): OpenCL C and SPIR-V on a SYCL device of the OpenCL backend, SYCL
   * source where the DPC++ 2026 runtime compiles it for the device, PTX on a CUDA device,
   * CUDA C where NVRTC is found too.
   * @param language `'opencl'` (or `'ocl'`), `'spirv'` (or `'spv'`), `'sycl'`, `'ptx'` or `'cuda'`.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `language` is not a string.
   * @throws `ERR_INVALID_ARG_VALUE` (a `TypeError`) for another name.
   */
  canCompile(language: SourceLanguage): boolean
  /**
   * Whether the device has a SYCL aspect, e.g. `'usm_shared_allocations'`, `'fp64'`.
   * @param name The aspect's name as SYCL spells it; an unknown name is `false`.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `name` is not a string.
   */
  hasAspect(name: string): boolean
  /** The names of every aspect the device has (a new array on every read). */
  get aspects(): string[]
  /**
   * Whether `other` is the same device.
   * @param other Another device.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `other` is not a `SyclDevice`.
   */
  equals(other: SyclDevice): boolean
  // Peer access (dpctl 0.20+), see the README's "Several GPUs".
  /**
   * Whether this device can be given access to `peer`'s device memory
   * (`'access_supported'`, the default), or has native atomics on it once enabled
   * (`'atomics_supported'`). `false` for a device and itself, for two backends, and on
   * backends without peer access (only `cuda`, `hip` and `level_zero` have it).
   * @param peer The device whose memory would be accessed.
   * @param value `'access_supported'` (the default) or `'atomics_supported'`.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `peer` is not a `SyclDevice`.
   * @throws `ERR_INVALID_ARG_VALUE` (a `TypeError`) for another `value`.
   */
  canAccessPeer(peer: SyclDevice, value?: PeerAccessQuery): boolean
  /**
   * Lets this device (its default context's queues) access `peer`'s device memory, so
   * copies between them go device to device. Enabling twice is no error.
   * @param peer The device whose memory this one is to access.
   * @throws `ERR_PEER_ACCESS_UNSUPPORTED` for a device and itself, two backends, a backend
   * without peer access (OpenCL) and a pair whose `canAccessPeer` is false.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `peer` is not a `SyclDevice`.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime refuses.
   */
  enablePeerAccess(peer: SyclDevice): void
  /**
   * Ends what `enablePeerAccess(peer)` began; a pair that is not enabled is left as it
   * is (no error).
   * @param peer The device whose memory this one accessed.
   * @throws `ERR_PEER_ACCESS_UNSUPPORTED` as `enablePeerAccess`, for pairs that cannot
   * have peer access.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `peer` is not a `SyclDevice`.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime refuses.
   */
  disablePeerAccess(peer: SyclDevice): void
  /** `<SyclDevice opencl:cpu:0 'name'>`: its filter string and name. */
  toString(): string
  /** What `JSON.stringify` writes: `toString()`. */
  toJSON(): string
}

/** What `SyclDevice.canAccessPeer` asks (dpctl's `value` argument). */
export type PeerAccessQuery = 'access_supported' | 'atomics_supported'

/** A SYCL context: the scope in which USM pointers are valid. */
export declare class SyclContext implements CloneGuarded {
  readonly __dpctlMemoryCloneGuard__: object
  /**
   * With no argument, the default context of the default device (the one default
   * queues use). With a `SyclDevice` or filter string, a new context of its own for
   * that device, as dpctl's `SyclContext(device)`.
   * @param device A device or filter string; the default context of the default device when omitted.
   * @throws `ERR_DEVICE_NOT_FOUND` (`SyclDeviceCreationError`) when no device matches (or, with no argument, there is no default device).
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) for an argument of another type.
   */
  constructor(device?: SyclDevice | string | null)
  /** The devices of this context (a new array on every read). */
  get devices(): SyclDevice[]
  /** How many devices the context holds (dpctl's `device_count`). */
  get deviceCount(): number
  /**
   * Whether `other` is the same context.
   * @param other Another context.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `other` is not a `SyclContext`.
   */
  equals(other: SyclContext): boolean
  /** `<SyclContext for opencl:cpu:0>`: the filter strings of its devices. */
  toString(): string
  /** What `JSON.stringify` writes: `toString()`. */
  toJSON(): string
}

/**
 * A SYCL queue: where copies and fills run, and what allocations are made through.
 * @example
 * ```js
 * const { SyclQueue, MemoryUSMDevice } = require('dpctl-memory');
 * const queue = new SyclQueue();              // the default device; or new SyclQueue('cuda:gpu:0')
 * const mem = new MemoryUSMDevice(1 << 20, { queue });
 * console.log(queue.equals(mem.syclQueue)); // true
 * ```
 */
export declare class SyclQueue implements CloneGuarded {
  readonly __dpctlMemoryCloneGuard__: object
  /**
   * `new SyclQueue()`: the default device. `new SyclQueue('gpu')` or
   * `new SyclQueue(device)`: that device, in its default context.
   * `new SyclQueue(context, device?)`: in that context (on its first device if none is
   * given).
   * @throws `ERR_QUEUE_CREATION` (`SyclQueueCreationError`) when no device matches, the
   * filter string cannot be understood, or no runtime is installed (the message says
   * what was searched).
   * @param target A filter string, a device, or a context; the default device when omitted.
   * @param device With a context: the device of it (default: its first).
   * @param options `property`: `'in_order'`, `'enable_profiling'`, or both in an array.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) for arguments of other types, or an
   * unknown option; an unknown `property` name is `ERR_QUEUE_CREATION`.
   */
  constructor(target?: string | SyclDevice | SyclContext | null, device?: SyclDevice | string | null, options?: SyclQueueOptions)
  /**
   * `new SyclQueue('gpu', { property: 'in_order' })`: a queue of a filter string's
   * device, or of a device or context, with properties.
   * @param target A filter string, a device, or a context; the default device when omitted.
   * @param options `property`: `'in_order'`, `'enable_profiling'`, or both in an array.
   * @throws `ERR_QUEUE_CREATION` (`SyclQueueCreationError`) when no device matches, or for
   * an unknown `property` name.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) for arguments of other types, or an
   * unknown option.
   */
  constructor(target: string | SyclDevice | SyclContext | null | undefined, options: SyclQueueOptions)
  /**
   * `new SyclQueue({ property: 'enable_profiling' })`: a queue of the default device with
   * properties.
   * @param options `property`: `'in_order'`, `'enable_profiling'`, or both in an array.
   * @throws `ERR_QUEUE_CREATION` (`SyclQueueCreationError`) when there is no default
   * device, or for an unknown `property` name.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) for an unknown option or a `property`
   * of another type.
   */
  constructor(options: SyclQueueOptions)
  /** The device the queue runs on. */
  get syclDevice(): SyclDevice
  /** The context of the queue (USM pointers of it are valid here). */
  get syclContext(): SyclContext
  /**
   * Waits for everything submitted to the queue.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime reports that work of
   * the queue failed.
   */
  wait(): void
  /**
   * Whether `other` is the same queue.
   * @param other Another queue.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `other` is not a `SyclQueue`.
   */
  equals(other: SyclQueue): boolean
  /** `<SyclQueue on opencl:cpu:0>`: its device's filter string. */
  toString(): string
  /** What `JSON.stringify` writes: `toString()`. */
  toJSON(): string
}

/**
 * Every device that dpctl-memory can use, or those matching a filter string. Empty
 * (never an error) when no runtime is installed: `getRuntimeDiagnostics()` says why.
 * @param filter A SYCL filter string (`'gpu'`, `'cuda'`, `'opencl:cpu'`); every device when omitted.
 * @throws `ERR_INVALID_FILTER` (a `TypeError`) for a filter string that cannot be parsed.
 */
export declare function getDevices(filter?: string | null): SyclDevice[]

/** Why no device is available from each runtime that did not load (empty when all did). */
export declare function getRuntimeDiagnostics(): string[]

/**
 * What the caching pool did for one kind of USM memory (all counts since the process
 * started; byte counts are of blocks, i.e. requests rounded up to the pool's size class).
 */
export interface PoolKindStats {
  /** Allocations served from the cache. */
  hits: number
  /** Allocations the cache could not serve (they went to the runtime). */
  misses: number
  /** Freed blocks held in the cache now, ready for reuse. */
  cachedBlocks: number
  /** Bytes held in the cache now. */
  cachedBytes: number
  /** Bytes of the blocks held by live allocations. */
  inUseBytes: number
  /** Cached blocks freed to keep the cache under its cap. */
  evictions: number
}

/** Statistics of the caching allocator pool, per USM kind. */
export interface PoolStats {
  /**
   * `false` when the environment variable `DPCTL_MEMORY_POOL` was `0` (or `false`,
   * `off`, `no`) when the pool was first used.
   */
  enabled: boolean
  device: PoolKindStats
  host: PoolKindStats
  shared: PoolKindStats
  /** Idle host scratch blocks of async copies from and to plain `ArrayBuffer`s. */
  scratch: PoolScratchStats
  /**
   * The same figures for each device that allocated, in the order of its first
   * allocation (read from the memory statistics' counters: empty when
   * `DPCTL_MEMORY_STATS=0`). Each context's cache is its device's: a block freed on GPU 1
   * is only ever reused on GPU 1. `misses` here count the runtime's refusals too.
   */
  byDevice: PoolDeviceStats[]
}

/** `poolStats().byDevice`: one device's pool figures, per USM kind. */
export interface PoolDeviceStats {
  filterString: string
  name: string
  device: PoolKindStats
  host: PoolKindStats
  shared: PoolKindStats
}

/**
 * Idle host scratch blocks of async copies (at most 1 GiB in all); each is freed after
 * 5 s unused, or by `poolTrim()`.
 */
export interface PoolScratchStats {
  blocks: number
  bytes: number
}

/**
 * Statistics of the caching allocator pool: freed memory goes to a per-context, per-kind
 * cache of size classes, and a later allocation of the same class reuses it (not
 * zeroed). See the README's "Pool" section for its caps and `DPCTL_MEMORY_POOL`.
 */
export declare function poolStats(): PoolStats

/**
 * Frees every block held in the caching pool, every idle scratch buffer of async copies
 * and the pinned staging buffers of CUDA contexts not copying right now (memory in use is
 * untouched); returns the bytes released.
 */
export declare function poolTrim(): number

// ---------------------------------------------------------------------------------------
// Kernels: programs, kernels, submissions, events, the queue's own operations
// ---------------------------------------------------------------------------------------

/** dpctl's queue properties (`property=`). */
export type SyclQueueProperty = 'in_order' | 'enable_profiling' | 'default'

/** Options of `new SyclQueue(..., options)`. */
export interface SyclQueueOptions {
  /** `'in_order'`, `'enable_profiling'`, or both in an array. */
  property?: SyclQueueProperty | readonly SyclQueueProperty[]
}

/** Options of the program builders. */
export interface ProgramOptions {
  /** Compiler options: OpenCL's build options (`'-DN=4 -cl-fast-relaxed-math'`), the PTX
   * JIT's, or NVRTC's; a string or an array of strings. */
  options?: string | readonly string[]
}

/** The languages `SyclDevice.canCompile` names (dpctl's, with their short forms, and CUDA's). */
export type SourceLanguage = 'opencl' | 'ocl' | 'spirv' | 'spv' | 'sycl' | 'ptx' | 'cuda'

/** What `createProgramFromSycl` takes besides compiler flags (dpctl's `headers` and `registered_names`). */
export interface SyclProgramOptions extends ProgramOptions {
  /** Virtual include files: name to content, or `[name, content]` pairs; each name once. */
  headers?: Readonly<Record<string, string>> | readonly (readonly [string, string])[]
  /** Name expressions to instantiate and find by name, e.g. `'vector_add<int>'`. */
  registeredNames?: readonly string[]
}

/** A program that did not build: the compiler's log is `log` and ends the message. */
export declare class SyclProgramCompilationError extends Error {
  private constructor()
  /** `'ERR_PROGRAM_COMPILATION'`. */
  code: ErrorCodeValue
  /** The compiler's log. */
  log: string
}

/** A built program (dpctl's `SyclProgram`). */
export declare class SyclProgram implements CloneGuarded {
  private constructor()
  readonly __dpctlMemoryCloneGuard__: object
  /**
   * The kernel `name` of the program.
   * @param name The kernel's function name.
   * @throws `ERR_KERNEL_NOT_FOUND` when the program has no kernel of that name (the
   * message lists those it has).
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `name` is not a string.
   */
  getKernel(name: string): SyclKernel
  /**
   * Whether the program has a kernel `name`.
   * @param name The kernel's function name.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `name` is not a string.
   */
  hasKernel(name: string): boolean
  /** The names of its kernels (a new array on every read). */
  get kernelNames(): string[]
  /** The compiler's log of the build (warnings; often empty). */
  get buildLog(): string
  /** The queue the program was built with. */
  get syclQueue(): SyclQueue
  /** `<SyclProgram [kernel names]>`. */
  toString(): string
}

/** One parameter of a kernel as the runtime reports it. */
export interface KernelParameter {
  readonly kind: 'global' | 'local' | 'value' | 'unknown'
  /** Its type as the source wrote it (`'float*'`, `'int'`), or `''` when unknown. */
  readonly typeName: string
}

/** A kernel of a program (dpctl's `SyclKernel`). */
export declare class SyclKernel implements CloneGuarded {
  private constructor()
  readonly __dpctlMemoryCloneGuard__: object
  /** The kernel's function name. */
  get functionName(): string
  /** How many parameters the kernel declares. */
  get numArgs(): number
  /** The largest work-group the kernel can run with on its device. */
  get workGroupSize(): number
  /** The multiple of work-group sizes the device runs best (its warp or SIMD width). */
  get preferredWorkGroupSizeMultiple(): number
  /** Bytes of private memory per work item. */
  get privateMemSize(): number
  /** Bytes of local memory the kernel itself uses. */
  get localMemSize(): number
  /** `reqd_work_group_size`, or `[0, 0, 0]`. */
  get compileWorkGroupSize(): readonly [number, number, number]
  /** Each parameter as the runtime reports it (a frozen array). */
  get args(): readonly KernelParameter[]
  /** The program the kernel is of. */
  get program(): SyclProgram
  /** `<SyclKernel name(N args)>`, e.g. `<SyclKernel f(1 args)>`. */
  toString(): string
}

/** The scalar types of `kernelArg`. */
export type KernelScalarType =
  | 'int8'
  | 'uint8'
  | 'int16'
  | 'uint16'
  | 'int32'
  | 'uint32'
  | 'int64'
  | 'uint64'
  | 'float32'
  | 'float64'
  | 'float16'

/** One typed kernel argument (made by `kernelArg`). */
export declare class KernelArg implements CloneGuarded {
  private constructor()
  readonly __dpctlMemoryCloneGuard__: object
  /** The scalar type, or `'local'` for local memory. */
  get type(): KernelScalarType | 'local'
  /** The value, or the bytes of local memory. */
  get value(): number | bigint
  /** `<KernelArg int32 5>`, `<KernelArg local 8>`. */
  toString(): string
}

/**
 * Typed kernel arguments: a JS number does not say whether the kernel takes `int` or
 * `float`, so each scalar says it (checked against the kernel's declared parameter types
 * where the runtime reports them; `ERR_KERNEL_ARG_TYPE` for a value out of the type's range).
 * @namespace
 */
export declare const kernelArg: {
  /**
   * A C `int8_t` argument.
   * @param value An integer in -128..127 (a number or a bigint).
   * @throws `ERR_KERNEL_ARG_TYPE` (a `TypeError` for a value that is not a number or a
   * bigint, a `RangeError` for one that is not an integer of the range).
   */
  readonly int8: (value: number | bigint) => KernelArg
  /**
   * A C `uint8_t` argument.
   * @param value An integer in 0..255 (a number or a bigint).
   * @throws `ERR_KERNEL_ARG_TYPE` (a `TypeError` for a value that is not a number or a
   * bigint, a `RangeError` for one that is not an integer of the range).
   */
  readonly uint8: (value: number | bigint) => KernelArg
  /**
   * A C `int16_t` argument.
   * @param value An integer in -32768..32767 (a number or a bigint).
   * @throws `ERR_KERNEL_ARG_TYPE` (a `TypeError` for a value that is not a number or a
   * bigint, a `RangeError` for one that is not an integer of the range).
   */
  readonly int16: (value: number | bigint) => KernelArg
  /**
   * A C `uint16_t` argument.
   * @param value An integer in 0..65535 (a number or a bigint).
   * @throws `ERR_KERNEL_ARG_TYPE` (a `TypeError` for a value that is not a number or a
   * bigint, a `RangeError` for one that is not an integer of the range).
   */
  readonly uint16: (value: number | bigint) => KernelArg
  /**
   * A C `int32_t` argument.
   * @param value An integer in -2^31..2^31-1 (a number or a bigint).
   * @throws `ERR_KERNEL_ARG_TYPE` (a `TypeError` for a value that is not a number or a
   * bigint, a `RangeError` for one that is not an integer of the range).
   */
  readonly int32: (value: number | bigint) => KernelArg
  /**
   * A C `uint32_t` argument.
   * @param value An integer in 0..2^32-1 (a number or a bigint).
   * @throws `ERR_KERNEL_ARG_TYPE` (a `TypeError` for a value that is not a number or a
   * bigint, a `RangeError` for one that is not an integer of the range).
   */
  readonly uint32: (value: number | bigint) => KernelArg
  /**
   * A C `int64_t` argument.
   * @param value An integer in -2^63..2^63-1: a bigint, or a safe-integer number.
   * @throws `ERR_KERNEL_ARG_TYPE` (a `TypeError` for a value that is not a number or a
   * bigint, a `RangeError` for one out of the range or a number that is not a safe integer).
   */
  readonly int64: (value: number | bigint) => KernelArg
  /**
   * A C `uint64_t` argument.
   * @param value An integer in 0..2^64-1: a bigint, or a safe-integer number.
   * @throws `ERR_KERNEL_ARG_TYPE` (a `TypeError` for a value that is not a number or a
   * bigint, a `RangeError` for one out of the range or a number that is not a safe integer).
   */
  readonly uint64: (value: number | bigint) => KernelArg
  /**
   * A C `float` argument (rounded as a `Float32Array` element rounds it).
   * @param value A number.
   * @throws `ERR_KERNEL_ARG_TYPE` (a `TypeError`) when `value` is not a number.
   */
  readonly float32: (value: number) => KernelArg
  /**
   * A C `double` argument.
   * @param value A number.
   * @throws `ERR_KERNEL_ARG_TYPE` (a `TypeError`) when `value` is not a number.
   */
  readonly float64: (value: number) => KernelArg
  /**
   * A `half`, rounded as a `Float16Array` element rounds it: on a Node with
   * `Float16Array` (24 and later). A kernel parameter of that type needs a device with
   * half precision (OpenCL's `cl_khr_fp16`, aspect `fp16`); as a `fill` pattern it is two
   * bytes on any device.
   * @param value A number.
   * @throws `ERR_KERNEL_ARG_TYPE` (a `TypeError`) when `value` is not a number, or on a
   * Node without `Float16Array`; `submit` throws it for a device without half precision.
   */
  readonly float16: (value: number) => KernelArg
  /**
   * `nbytes` of work-group local memory: an OpenCL `__local` parameter; on CUDA, given
   * after the kernel's parameters, the launch's dynamic shared memory (`extern __shared__`).
   * @param nbytes A positive integer; `submit` checks it against the device's `localMemSize`.
   * @throws `ERR_KERNEL_ARG_TYPE` (a `RangeError`) when `nbytes` is not a positive integer.
   */
  readonly local: (nbytes: number) => KernelArg
}

/** What a kernel takes: memory (its device pointer) or a typed argument. */
export type KernelArgument = _Memory | SyclUsmArrayInterfaceExporter | KernelArg

/** A range of work items: one number (1-D), or 1 to 3 of them in SYCL's order, as dpctl's
 * `submit` takes them: entry 0 the slowest dimension, the last entry the fastest, which an
 * OpenCL kernel counts with `get_global_id(0)` and a CUDA kernel as x (`[rows, columns]`). */
export type WorkRange = number | readonly [number] | readonly [number, number] | readonly [number, number, number]

/** What a later operation may depend on: an event, or the Promise of an async operation. */
export type Dependency = SyclEvent | Promise<SyclEvent>

/** The options of `queue.writeValue`. */
export interface WriteValueOptions {
  /** Bytes into the memory (a multiple of the value's size); 0 when not given. */
  offset?: number
  /** What the write waits for besides the queue's earlier work. */
  dependsOn?: readonly Dependency[] | null
}

/** A submission's event (dpctl's `SyclEvent`). */
export declare class SyclEvent implements CloneGuarded {
  private constructor()
  readonly __dpctlMemoryCloneGuard__: object
  /**
   * Waits for the work (blocking this thread).
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime reports that the
   * work failed.
   */
  wait(): void
  /**
   * `'submitted'`, `'running'` or `'complete'`.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime cannot say.
   */
  get executionStatus(): 'submitted' | 'running' | 'complete'
  /**
   * Nanoseconds (on the device's clock) when the work was submitted, on a queue made with
   * `property: 'enable_profiling'`.
   * @throws `ERR_PROFILING_NOT_ENABLED` for an event of a queue without profiling.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime cannot say.
   */
  get profilingInfoSubmit(): bigint
  /**
   * Nanoseconds when the work started, as `profilingInfoSubmit`.
   * @throws `ERR_PROFILING_NOT_ENABLED` for an event of a queue without profiling.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime cannot say.
   */
  get profilingInfoStart(): bigint
  /**
   * Nanoseconds when the work ended, as `profilingInfoSubmit`.
   * @throws `ERR_PROFILING_NOT_ENABLED` for an event of a queue without profiling.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime cannot say.
   */
  get profilingInfoEnd(): bigint
  /** The queue the work was submitted to. */
  get syclQueue(): SyclQueue
  /**
   * `<SyclEvent complete>`: its `executionStatus`.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` as `executionStatus`.
   */
  toString(): string
}

/**
 * dpctl's `create_program_from_source`: OpenCL C for a SYCL device of the OpenCL backend.
 * @param queue The queue whose device and context the program is built for.
 * @param source The OpenCL C source.
 * @param options `options`: the compiler's options, a string or an array of strings.
 * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `queue` is not a `SyclQueue`, for a `source` of another type, or for bad options.
 * @throws `ERR_PROGRAM_COMPILATION` (`SyclProgramCompilationError`, with the compiler's
 * `log`) when the source does not build.
 * @throws `ERR_PROGRAMS_UNSUPPORTED` on a device that builds no OpenCL C (CUDA devices:
 * `createProgramFromCuda`, `createProgramFromPtx`).
 */
export declare function createProgramFromSource(queue: SyclQueue, source: string, options?: ProgramOptions): SyclProgram
/**
 * dpctl's `create_program_from_spirv`: a SPIR-V module for a SYCL device of the OpenCL backend.
 * @param queue The queue whose device and context the program is built for.
 * @param spirv The module's bytes (a whole number of 32-bit words).
 * @param options `options`: the compiler's options, a string or an array of strings.
 * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `queue` is not a `SyclQueue`, for a `spirv` of another type, or for bad options.
 * @throws `ERR_PROGRAM_COMPILATION` (`SyclProgramCompilationError`) for bytes that are
 * not a SPIR-V module, or a module the runtime does not build.
 * @throws `ERR_PROGRAMS_UNSUPPORTED` on a device that builds no SPIR-V (CUDA devices).
 */
export declare function createProgramFromSpirv(
  queue: SyclQueue,
  spirv: ArrayBuffer | SharedArrayBuffer | ArrayBufferView,
  options?: ProgramOptions,
): SyclProgram
/**
 * PTX for a CUDA device (loaded by the driver, which compiles it for its GPU).
 * @param queue The queue whose device and context the program is built for.
 * @param ptx The PTX text.
 * @param options `options`: the PTX JIT's options, a string or an array of strings.
 * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `queue` is not a `SyclQueue`, for a `ptx` of another type, or for bad options.
 * @throws `ERR_PROGRAM_COMPILATION` (`SyclProgramCompilationError`, with the JIT's `log`)
 * when the driver cannot load it.
 * @throws `ERR_PROGRAMS_UNSUPPORTED` on a SYCL device (they build OpenCL C and SPIR-V).
 */
export declare function createProgramFromPtx(queue: SyclQueue, ptx: string, options?: ProgramOptions): SyclProgram
/**
 * CUDA C++ for a CUDA device, compiled to PTX with NVRTC (loaded at run time: a CUDA
 * toolkit's, or `npx dpctl-memory-install-runtime --with nvrtc`), for the device's
 * architecture unless `options` name one (`-arch=compute_80`).
 * @param queue The queue whose device and context the program is built for.
 * @param source The CUDA C++ source (kernels `extern "C" __global__`).
 * @param options `options`: NVRTC's options, a string or an array of strings.
 * @throws `ERR_NVRTC_UNAVAILABLE` when no NVRTC the driver can use is installed.
 * @throws `ERR_PROGRAM_COMPILATION` (`SyclProgramCompilationError`, with NVRTC's `log`)
 * when the source does not compile or the driver cannot load the result.
 * @throws `ERR_PROGRAMS_UNSUPPORTED` on a SYCL device (they build OpenCL C and SPIR-V).
 * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `queue` is not a `SyclQueue`, for a `source` of another type, or for bad options.
 */
export declare function createProgramFromCuda(queue: SyclQueue, source: string, options?: ProgramOptions): SyclProgram

/**
 * Builds SYCL C++ source at run time for the queue's device (dpctl's
 * `create_kernel_bundle_from_sycl_source`, SYCL's kernel_compiler extension): kernels are
 * free functions (`extern "C" SYCL_EXTERNAL` with `nd_range_kernel<N>` or
 * `single_task_kernel` properties), found by name with `getKernel`; their parameters are
 * USM pointers (memory objects) and scalars (`kernelArg`). Needs the DPC++ 2026 runtime
 * (`device.canCompile('sycl')`); a build takes seconds.
 * @param queue The queue whose device and context the program is built for.
 * @param source The SYCL C++ source.
 * @param options `options`: compiler flags (split at spaces when a string); `headers`:
 * virtual include files; `registeredNames`: template instantiations to build.
 * @throws `ERR_PROGRAMS_UNSUPPORTED` where the runtime cannot compile SYCL source (DPC++
 * 2025's: the message says which runtime would), on a CUDA device, or for a device the
 * runtime says cannot.
 * @throws `ERR_PROGRAM_COMPILATION` (`SyclProgramCompilationError`, with the compiler's
 * `log`) when the source does not compile.
 * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `queue` is not a `SyclQueue`, for a
 * `source` of another type, or for bad options (headers not strings, a header named twice).
 * @throws `ERR_INVALID_ARG_VALUE` (a `RangeError`) for a NUL character in an option, a header
 * or a name, or for more than 65536 of them.
 */
export declare function createProgramFromSycl(queue: SyclQueue, source: string, options?: SyclProgramOptions): SyclProgram

export interface SyclQueue {
  /**
   * Runs `kernel` over `globalRange` (in work-groups of `localRange`) after `dependsOn`,
   * and waits (dpctl's `submit`). Every operand is held until the kernel finished.
   * @param kernel A kernel of a program built for this queue's context (`program.getKernel(name)`).
   * @param args One argument per kernel parameter, in order: a memory object (or an object
   * exposing `__sycl_usm_array_interface__`) for a pointer, a `kernelArg` for a scalar or
   * local memory; on CUDA one `kernelArg.local` more for the dynamic shared memory.
   * @param globalRange The work items: a positive integer, or 1 to 3 of them.
   * @param localRange The work-group size, of as many dimensions, dividing `globalRange`
   * (default: the runtime chooses).
   * @param dependsOn Events (or Promises of the async operations) to wait for first; they must be of this queue's context.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `kernel` is not a `SyclKernel`.
   * @throws `ERR_KERNEL_ARG_COUNT` (a `TypeError`) when `args` has more or fewer entries than
   * the kernel's parameters.
   * @throws `ERR_KERNEL_ARG_TYPE` (a `TypeError`) when `args` is not an array, an entry is
   * neither memory nor a `kernelArg` (a plain number says no type), or a scalar's type is not
   * the one the kernel declares.
   * @throws `ERR_INVALID_RANGE` for a range that is not 1 to 3 positive integers, or a
   * `localRange` that does not divide `globalRange`.
   * @throws `ERR_INVALID_SIZE` when the `kernelArg.local` arguments do not fit the device's
   * `localMemSize`.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `dependsOn` is not an array of events
   * or of their Promises.
   * @throws `ERR_KERNEL_QUEUE_MISMATCH` for memory or an event of another context than the queue's.
   * @throws `ERR_USM_FREED` for memory that was freed.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime refuses the work or it fails.
   */
  submit(
    kernel: SyclKernel,
    args: readonly KernelArgument[],
    globalRange: WorkRange,
    localRange?: WorkRange | null,
    dependsOn?: readonly Dependency[] | null,
  ): SyclEvent
  /**
   * As `submit` without waiting: settles once the kernel finished and let go of its
   * operands; usable at once as a dependency. Bad arguments throw at the call, as `submit`'s;
   * a failure of the work rejects.
   * @param kernel A kernel of a program built for this queue's context (`program.getKernel(name)`).
   * @param args One argument per kernel parameter, in order: a memory object (or an object
   * exposing `__sycl_usm_array_interface__`) for a pointer, a `kernelArg` for a scalar or
   * local memory; on CUDA one `kernelArg.local` more for the dynamic shared memory.
   * @param globalRange The work items: a positive integer, or 1 to 3 of them.
   * @param localRange The work-group size, of as many dimensions, dividing `globalRange`
   * (default: the runtime chooses).
   * @param dependsOn Events (or Promises of the async operations) to wait for first; they must be of this queue's context.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `kernel` is not a `SyclKernel`.
   * @throws `ERR_KERNEL_ARG_COUNT` (a `TypeError`) when `args` has more or fewer entries than
   * the kernel's parameters.
   * @throws `ERR_KERNEL_ARG_TYPE` (a `TypeError`) when `args` is not an array, an entry is
   * neither memory nor a `kernelArg` (a plain number says no type), or a scalar's type is not
   * the one the kernel declares.
   * @throws `ERR_INVALID_RANGE` for a range that is not 1 to 3 positive integers, or a
   * `localRange` that does not divide `globalRange`.
   * @throws `ERR_INVALID_SIZE` when the `kernelArg.local` arguments do not fit the device's
   * `localMemSize`.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `dependsOn` is not an array of events
   * or of their Promises.
   * @throws `ERR_KERNEL_QUEUE_MISMATCH` for memory or an event of another context than the queue's.
   * @throws `ERR_USM_FREED` for memory that was freed.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime refuses the work or it fails.
   */
  submitAsync(
    kernel: SyclKernel,
    args: readonly KernelArgument[],
    globalRange: WorkRange,
    localRange?: WorkRange | null,
    dependsOn?: readonly Dependency[] | null,
  ): Promise<SyclEvent>
  /**
   * Copies `nbytes` from `src` to `dst` on this queue, and waits.
   * @param dst The memory copied into (a memory object, or an object exposing the interface).
   * @param src The memory copied from.
   * @param nbytes Bytes to copy (a non-negative integer), within both.
   * @param dependsOn Events (or Promises of the async operations) to wait for first; they must be of this queue's context.
   * @throws `ERR_NOT_USM` (a `TypeError`) when `dst` or `src` is not memory.
   * @throws `ERR_INVALID_SIZE` (a `RangeError`) when `nbytes` is not a non-negative integer.
   * @throws `ERR_INVALID_RANGE` (a `RangeError`) when `nbytes` reaches past the end of `dst` or `src`.
   * @throws `ERR_READ_ONLY` when `dst` comes from a read-only interface.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `dependsOn` is not an array of events
   * or of their Promises.
   * @throws `ERR_KERNEL_QUEUE_MISMATCH` for memory or an event of another context than the queue's.
   * @throws `ERR_USM_FREED` for memory that was freed.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime refuses the work or it fails.
   */
  memcpy(dst: KernelArgument, src: KernelArgument, nbytes: number, dependsOn?: readonly Dependency[] | null): SyclEvent
  /**
   * As `memcpy` without waiting: settles once the copy is done. Bad arguments throw at
   * the call, as `memcpy`'s.
   * @param dst The memory copied into (a memory object, or an object exposing the interface).
   * @param src The memory copied from.
   * @param nbytes Bytes to copy (a non-negative integer), within both.
   * @param dependsOn Events (or Promises of the async operations) to wait for first; they must be of this queue's context.
   * @throws `ERR_NOT_USM` (a `TypeError`) when `dst` or `src` is not memory.
   * @throws `ERR_INVALID_SIZE` (a `RangeError`) when `nbytes` is not a non-negative integer.
   * @throws `ERR_INVALID_RANGE` (a `RangeError`) when `nbytes` reaches past the end of `dst` or `src`.
   * @throws `ERR_READ_ONLY` when `dst` comes from a read-only interface.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `dependsOn` is not an array of events
   * or of their Promises.
   * @throws `ERR_KERNEL_QUEUE_MISMATCH` for memory or an event of another context than the queue's.
   * @throws `ERR_USM_FREED` for memory that was freed.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime refuses the work or it fails.
   */
  memcpyAsync(dst: KernelArgument, src: KernelArgument, nbytes: number, dependsOn?: readonly Dependency[] | null): Promise<SyclEvent>
  /**
   * Sets `nbytes` (all of `dst` when not given) to `value` (0..255), and waits.
   * @param dst The memory to set (a memory object, or an object exposing the interface).
   * @param value The byte, an integer 0..255.
   * @param nbytes Bytes to set from the start (all of a memory object when not given;
   * required for other exporters).
   * @param dependsOn Events (or Promises of the async operations) to wait for first; they must be of this queue's context.
   * @throws `ERR_NOT_USM` (a `TypeError`) when `dst` is not memory.
   * @throws `ERR_INVALID_FILL_VALUE` (a `RangeError`) for a `value` that is not an integer 0..255.
   * @throws `ERR_INVALID_SIZE` (a `RangeError`) when `nbytes` is not a non-negative integer.
   * @throws `ERR_INVALID_RANGE` (a `RangeError`) when `nbytes` reaches past the end of `dst`.
   * @throws `ERR_READ_ONLY` when `dst` comes from a read-only interface.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `dependsOn` is not an array of events
   * or of their Promises.
   * @throws `ERR_KERNEL_QUEUE_MISMATCH` for memory or an event of another context than the queue's.
   * @throws `ERR_USM_FREED` for memory that was freed.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime refuses the work or it fails.
   */
  memset(dst: KernelArgument, value: number, nbytes?: number, dependsOn?: readonly Dependency[] | null): SyclEvent
  /**
   * As `memset` without waiting: settles once the bytes are set. Bad arguments throw at
   * the call, as `memset`'s.
   * @param dst The memory to set (a memory object, or an object exposing the interface).
   * @param value The byte, an integer 0..255.
   * @param nbytes Bytes to set from the start (all of a memory object when not given;
   * required for other exporters).
   * @param dependsOn Events (or Promises of the async operations) to wait for first; they must be of this queue's context.
   * @throws `ERR_NOT_USM` (a `TypeError`) when `dst` is not memory.
   * @throws `ERR_INVALID_FILL_VALUE` (a `RangeError`) for a `value` that is not an integer 0..255.
   * @throws `ERR_INVALID_SIZE` (a `RangeError`) when `nbytes` is not a non-negative integer.
   * @throws `ERR_INVALID_RANGE` (a `RangeError`) when `nbytes` reaches past the end of `dst`.
   * @throws `ERR_READ_ONLY` when `dst` comes from a read-only interface.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `dependsOn` is not an array of events
   * or of their Promises.
   * @throws `ERR_KERNEL_QUEUE_MISMATCH` for memory or an event of another context than the queue's.
   * @throws `ERR_USM_FREED` for memory that was freed.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime refuses the work or it fails.
   */
  memsetAsync(dst: KernelArgument, value: number, nbytes?: number, dependsOn?: readonly Dependency[] | null): Promise<SyclEvent>
  /**
   * Fills `count` elements (all of `dst` when not given) with a typed scalar or one element's
   * bytes, and waits.
   * @param dst The memory to fill (a memory object, or an object exposing the interface).
   * @param pattern The element: a `kernelArg` scalar (`kernelArg.float32(1.5)`), whose type
   * gives the element's size, or one element's bytes, a TypedArray or DataView of 1, 2, 4, 8
   * or 16 bytes (`new Float64Array([re, im])`: complex128), copied at the call.
   * @param count Elements to fill from the start (all that fit in a memory object when not
   * given; required for other exporters).
   * @param dependsOn Events (or Promises of the async operations) to wait for first; they must be of this queue's context.
   * @throws `ERR_NOT_USM` (a `TypeError`) when `dst` is not memory.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `pattern` is neither a `kernelArg`
   * scalar (`kernelArg.local` is not one) nor a TypedArray or DataView.
   * @throws `ERR_INVALID_ARG_VALUE` (a `RangeError`) when a TypedArray or DataView pattern is
   * not of 1, 2, 4, 8 or 16 bytes.
   * @throws `ERR_INVALID_SIZE` (a `RangeError`) when `count` is not a non-negative integer.
   * @throws `ERR_INVALID_RANGE` (a `RangeError`) when the elements reach past the end of `dst`.
   * @throws `ERR_READ_ONLY` when `dst` comes from a read-only interface.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `dependsOn` is not an array of events
   * or of their Promises.
   * @throws `ERR_KERNEL_QUEUE_MISMATCH` for memory or an event of another context than the queue's.
   * @throws `ERR_USM_FREED` for memory that was freed.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime refuses the work or it fails.
   */
  fill(dst: KernelArgument, pattern: KernelArg | ArrayBufferView, count?: number, dependsOn?: readonly Dependency[] | null): SyclEvent
  /**
   * As `fill` without waiting: settles once the elements are written. Bad arguments throw
   * at the call, as `fill`'s.
   * @param dst The memory to fill (a memory object, or an object exposing the interface).
   * @param pattern The element: a `kernelArg` scalar (`kernelArg.float32(1.5)`), whose type
   * gives the element's size, or one element's bytes, a TypedArray or DataView of 1, 2, 4, 8
   * or 16 bytes (`new Float64Array([re, im])`: complex128), copied at the call.
   * @param count Elements to fill from the start (all that fit in a memory object when not
   * given; required for other exporters).
   * @param dependsOn Events (or Promises of the async operations) to wait for first; they must be of this queue's context.
   * @throws `ERR_NOT_USM` (a `TypeError`) when `dst` is not memory.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `pattern` is neither a `kernelArg`
   * scalar (`kernelArg.local` is not one) nor a TypedArray or DataView.
   * @throws `ERR_INVALID_ARG_VALUE` (a `RangeError`) when a TypedArray or DataView pattern is
   * not of 1, 2, 4, 8 or 16 bytes.
   * @throws `ERR_INVALID_SIZE` (a `RangeError`) when `count` is not a non-negative integer.
   * @throws `ERR_INVALID_RANGE` (a `RangeError`) when the elements reach past the end of `dst`.
   * @throws `ERR_READ_ONLY` when `dst` comes from a read-only interface.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `dependsOn` is not an array of events
   * or of their Promises.
   * @throws `ERR_KERNEL_QUEUE_MISMATCH` for memory or an event of another context than the queue's.
   * @throws `ERR_USM_FREED` for memory that was freed.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime refuses the work or it fails.
   */
  fillAsync(dst: KernelArgument, pattern: KernelArg | ArrayBufferView, count?: number, dependsOn?: readonly Dependency[] | null): Promise<SyclEvent>
  /**
   * Writes `value` at byte `offset` of host or shared memory once everything submitted to
   * this queue before it, and `dependsOn`, are done: GPU progress JS threads can watch
   * with `Atomics` on `dst.sharedBuffer` (README "Waiting on GPU progress"). A number is
   * written as 32 bits (an integer in -2147483648..4294967295), a bigint as 64
   * (-(2n**63n)..2n**64n-1n); the offset is a multiple of the value's size. Returns the
   * event at once (no Promise, no callback); the memory is held until the write landed
   * (let go of at a later `writeValue` of this thread that finds it done, or when the
   * thread's environment ends).
   *
   * <!-- example: fragment -->
   * ```js
   * const flag = new Int32Array(progress.sharedBuffer);
   * q.submitAsync(kernel, args, n);
   * q.writeValue(progress, 1);               // lands once the kernel finished
   * // The device notifies no waiter: wait in slices (and hold the event loop with a
   * // timer meanwhile, which a pending waitAsync does not; README, examples/progress.mjs).
   * while (Atomics.load(flag, 0) !== 1) await Atomics.waitAsync(flag, 0, 0, 1).value;
   * ```
   * @param dst Host or shared memory (a memory object, or an object exposing the interface).
   * @param value A number (written as 32 bits) or a bigint (64 bits).
   * @param options `offset`: bytes into `dst` (default 0); `dependsOn`: events to wait for too.
   * @throws `ERR_NOT_HOST_ACCESSIBLE` for device memory.
   * @throws `ERR_NOT_USM` (a `TypeError`) when `dst` is not memory.
   * @throws `ERR_INVALID_ALIGNMENT` (a `RangeError`) for an offset that is not a multiple of
   * the value's size (the address must suit `Atomics`).
   * @throws `ERR_INVALID_RANGE` (a `RangeError`) when the value does not fit in `dst` at `offset`.
   * @throws `ERR_INVALID_FILL_VALUE` (a `RangeError`) for a number or bigint outside the
   * range of its width.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) for a `value` of another type, options that
   * are not an object, an unknown option, or a bad `dependsOn`.
   * @throws `ERR_READ_ONLY` when `dst` comes from a read-only interface.
   * @throws `ERR_KERNEL_QUEUE_MISMATCH` for memory or an event of another context than the queue's.
   * @throws `ERR_USM_FREED` for memory that was freed.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime refuses the work.
   */
  writeValue(dst: KernelArgument, value: number | bigint, options?: WriteValueOptions | null): SyclEvent
  /**
   * An event after `dependsOn` (after everything submitted so far when not given).
   * @param dependsOn Events (or Promises of the async operations) of this queue's context.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `dependsOn` is not an array of events
   * or of their Promises.
   * @throws `ERR_KERNEL_QUEUE_MISMATCH` for an event of another context than the queue's.
   * @throws `ERR_SYCL_RUNTIME` or `ERR_CUDA_DRIVER` when the runtime refuses it.
   */
  submitBarrier(dependsOn?: readonly Dependency[] | null): SyclEvent
  /** Whether the queue was made with `property: 'in_order'`. */
  readonly isInOrder: boolean
  /** Whether the queue was made with `property: 'enable_profiling'`. */
  readonly hasEnableProfiling: boolean
}

// ---------------------------------------------------------------------------------------
// Across machines: the UCX transport (README "Across machines")
// ---------------------------------------------------------------------------------------

/** A memory object or a host buffer: what `send`/`recv`/`put`/`get` take. */
export type UcxBuffer = _Memory | ArrayBuffer | SharedArrayBuffer | ArrayBufferView

/** What a receive got: its size and the sender's tag. */
export interface UcxReceived {
  nbytes: number
  tag: bigint
}

/** The other side of a connection (made by `ucx.connect()` or `UcxListener#accept()`). */
export declare class UcxEndpoint {
  private constructor()
  /** The address connected to (`'a client'` for an accepted endpoint). */
  readonly peer: string
  /**
   * Sends `source` as one message with `tag` (default 0); resolves when `source` may be reused.
   * @param source A memory object or a host buffer (`ArrayBuffer`, `SharedArrayBuffer`, a view).
   * @param options `tag`: a bigint or integer 0..2^64-1 the receiver matches (default 0).
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`; the Promise rejects) for a buffer that is neither memory nor a host buffer, or for bad options; `ERR_INVALID_ARG_VALUE` for a tag outside 0..2^64-1.
   * @throws `ERR_USM_FREED` (the Promise rejects) for memory that was freed.
   * @throws `ERR_UCX_ENDPOINT_CLOSED` (the Promise rejects) once `close()` was called.
   * @throws `ERR_UCX_PEER_FAILED` when the peer went away, `ERR_UCX` for another failure of UCX (the Promise rejects).
   */
  send(source: UcxBuffer, options?: { tag?: bigint | number }): Promise<void>
  /**
   * Receives a message whose tag matches `tag` under `tagMask` (default all bits) into
   * `destination`; resolves with its size and the sender's tag. Tags are matched across
   * every endpoint of the thread's worker, as in UCX.
   * @param destination A memory object or a host buffer, at least as large as the message.
   * @param options `tag` (default 0) and `tagMask` (default all bits): bigints or integers 0..2^64-1.
   * @throws `ERR_UCX_TRUNCATED` (the Promise rejects) when the message is larger than `destination`.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`; the Promise rejects) for a buffer that is neither memory nor a host buffer, or for bad options; `ERR_INVALID_ARG_VALUE` for a tag outside 0..2^64-1.
   * @throws `ERR_USM_FREED` (the Promise rejects) for memory that was freed.
   * @throws `ERR_UCX_ENDPOINT_CLOSED` (the Promise rejects) once `close()` was called.
   * @throws `ERR_UCX_PEER_FAILED` when the peer went away, `ERR_UCX` for another failure of UCX (the Promise rejects).
   */
  recv(destination: UcxBuffer, options?: { tag?: bigint | number; tagMask?: bigint | number }): Promise<UcxReceived>
  /**
   * A peer's remote key, unpacked for put/get over this endpoint.
   * @param bytes The bytes of the peer's `UcxMemoryMap#remoteKey`, as it sent them.
   * @throws `ERR_UCX_RMA_DISABLED` without `DPCTL_MEMORY_UCX_RMA=1` (read when the thread's worker was made).
   * @throws `ERR_UCX_RKEY_INVALID` for bytes that are not a remote key UCX can unpack.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `bytes` is not a host buffer.
   * @throws `ERR_UCX_ENDPOINT_CLOSED` once `close()` was called.
   */
  unpackRemoteKey(bytes: ArrayBuffer | SharedArrayBuffer | ArrayBufferView): UcxRemoteKey
  /**
   * Writes `source` at `offset` (default 0) of the remote memory; resolves when `source`
   * may be reused (`flush()` for completion at the peer).
   * @param source A memory object or a host buffer.
   * @param key The peer's remote key, unpacked by `unpackRemoteKey` of this endpoint.
   * @param options `offset`: bytes into the remote memory (a non-negative integer, default 0).
   * @throws `ERR_UCX_RMA_DISABLED` (the Promise rejects) without `DPCTL_MEMORY_UCX_RMA=1`.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`; the Promise rejects) when `key` is not a
   * `UcxRemoteKey`, the buffer is neither memory nor a host buffer, or for bad options;
   * `ERR_INVALID_ARG_VALUE` for a bad `offset`.
   * @throws `ERR_UCX_RKEY_INVALID` (the Promise rejects) for a key that was destroyed, or
   * bytes beyond what it covers.
   * @throws `ERR_USM_FREED` (the Promise rejects) for memory that was freed.
   * @throws `ERR_UCX_ENDPOINT_CLOSED` (the Promise rejects) once `close()` was called.
   * @throws `ERR_UCX_PEER_FAILED` when the peer went away, `ERR_UCX` for another failure of UCX (the Promise rejects).
   */
  put(source: UcxBuffer, key: UcxRemoteKey, options?: { offset?: number }): Promise<void>
  /**
   * Reads the remote memory at `offset` (default 0) into `destination`.
   * @param destination A memory object or a host buffer.
   * @param key The peer's remote key, unpacked by `unpackRemoteKey` of this endpoint.
   * @param options `offset`: bytes into the remote memory (a non-negative integer, default 0).
   * @throws `ERR_UCX_RMA_DISABLED` (the Promise rejects) without `DPCTL_MEMORY_UCX_RMA=1`.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`; the Promise rejects) when `key` is not a
   * `UcxRemoteKey`, the buffer is neither memory nor a host buffer, or for bad options;
   * `ERR_INVALID_ARG_VALUE` for a bad `offset`.
   * @throws `ERR_UCX_RKEY_INVALID` (the Promise rejects) for a key that was destroyed, or
   * bytes beyond what it covers.
   * @throws `ERR_USM_FREED` (the Promise rejects) for memory that was freed.
   * @throws `ERR_UCX_ENDPOINT_CLOSED` (the Promise rejects) once `close()` was called.
   * @throws `ERR_UCX_PEER_FAILED` when the peer went away, `ERR_UCX` for another failure of UCX (the Promise rejects).
   */
  get(destination: UcxBuffer, key: UcxRemoteKey, options?: { offset?: number }): Promise<void>
  /**
   * Resolves when every operation posted on this endpoint has completed at the peer.
   * @throws `ERR_UCX_ENDPOINT_CLOSED` (the Promise rejects) once `close()` was called.
   * @throws `ERR_UCX_PEER_FAILED` when the peer went away, `ERR_UCX` for another failure of UCX (the Promise rejects).
   */
  flush(): Promise<void>
  /**
   * Closes the endpoint. Unless `force`, the sends, puts and gets in flight complete first
   * (a send once the peer received it), then a flush; operations after `close()` are
   * refused. What is still pending then (receives) rejects with `ERR_UCX_ENDPOINT_CLOSED`.
   * `force` (also during a graceful close) closes at once. Never rejects for the state of
   * the connection.
   * @param options `force`: close at once, failing what is in flight (default `false`).
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`; the Promise rejects) for options that
   * are not an object, or an unknown option.
   */
  close(options?: { force?: boolean }): Promise<void>
}

/** A listening address (made by `ucx.listen()`). */
export declare class UcxListener {
  private constructor()
  /** The address it listens on, as `ucx.listen` was given it. */
  readonly host: string
  /** The port it listens on (the one chosen when 0 was asked for). */
  readonly port: number
  /**
   * The endpoint of the next connection.
   * @throws `ERR_UCX_ENDPOINT_CLOSED` (the Promise rejects) once `close()` was called.
   */
  accept(): Promise<UcxEndpoint>
  /** Stops listening; waiting `accept()`s reject with `ERR_UCX_ENDPOINT_CLOSED`. */
  close(): void
}

/**
 * A memory object registered for remote access (made by `ucx.mapMemory()`); holds the
 * memory until `unmap()`, and after it until the endpoints open at the unmap have closed.
 */
export declare class UcxMemoryMap {
  private constructor()
  /** The remote key's bytes, to send to a peer (`ERR_UCX_ENDPOINT_CLOSED` after `unmap()`). */
  readonly remoteKey: Uint8Array
  /** The memory mapped (`ERR_UCX_ENDPOINT_CLOSED` after `unmap()`). */
  readonly memory: _Memory
  /**
   * Ends the registration: peers' later puts and gets of it fail. Idempotent; the memory
   * is held until the endpoints open now have closed.
   */
  unmap(): void
}

/** A peer's remote key, unpacked for one endpoint. */
export declare class UcxRemoteKey {
  private constructor()
  /** The bytes of remote memory it covers. */
  readonly nbytes: number
  /** Releases the unpacked key; later puts and gets with it reject. Idempotent. */
  destroy(): void
}

/** What this thread's worker has open (for leak checks). */
export interface UcxInfo {
  library: string
  /** Whether this UCX moves CUDA device memory (its CUDA transports loaded). */
  cudaMemory: boolean
  /** Whether one-sided access is on (`DPCTL_MEMORY_UCX_RMA=1` when the worker was made). */
  rma: boolean
  inFlight: number
  ucxRequests: number
  endpoints: number
  listeners: number
  maps: number
  /** Unmapped memory still held until the endpoints open at its unmap have closed. */
  unmappedHeld: number
  rkeys: number
}

/**
 * The UCX transport: one worker per thread, made at first use.
 * @namespace
 */
export declare const ucx: {
  /** Whether UCX loads here: the library's version and path, or what to install. */
  available(): { available: boolean; message: string }
  /**
   * Listens on `host` (default `'0.0.0.0'`) and `port` (default 0: any).
   * @param options Where to listen.
   * @param options.host An IP address, or `'localhost'` (default `'0.0.0.0'`: every interface).
   * @param options.port 0 .. 65535 (default 0: a free port, then in `listener.port`).
   * @throws `ERR_UCX_UNAVAILABLE` where UCX does not load (`ucx.available()` says why).
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) for options of the wrong type or an
   * unknown option; `ERR_INVALID_ARG_VALUE` (a `RangeError`) for a port out of range.
   * @throws `ERR_UCX_BAD_ADDRESS` for a host that is not an IP address, or an address in use.
   * @throws `ERR_UCX_CONFIG` when UCX's configuration (its `UCX_*` environment) is refused.
   * @throws `ERR_UCX` for another failure of UCX.
   */
  listen(options?: { host?: string; port?: number }): UcxListener
  /**
   * Connects to an IP address and port; resolves when the connection is up. Every error
   * is a rejection.
   * @param options Where to connect, and how long to wait.
   * @param options.host An IP address, or `'localhost'` (required).
   * @param options.port The listener's port, 1 .. 65535 (required).
   * @param options.timeout Milliseconds to wait for the connection, 1 .. 2^31 - 1 (default 30000).
   * @throws `ERR_UCX_CONNECT_TIMEOUT` when no connection is made within `timeout` ms.
   * @throws `ERR_UCX_CONNECTION_REFUSED` when nothing listens there, or the peer refuses.
   * @throws `ERR_UCX_BAD_ADDRESS` for a host that is not an IP address.
   * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) for a missing `host` or `port`, options
   * of the wrong type or an unknown option; `ERR_INVALID_ARG_VALUE` (a `RangeError`) for a
   * port or timeout out of range.
   * @throws `ERR_UCX_UNAVAILABLE` where UCX does not load; `ERR_UCX_CONFIG` when UCX's
   * configuration (its `UCX_*` environment) is refused at the thread's first use.
   * @throws `ERR_UCX` for another failure of UCX.
   */
  connect(options: { host: string; port: number; timeout?: number }): Promise<UcxEndpoint>
  /**
   * Registers a memory object for remote access by peers. One-sided access is opt-in:
   * without `DPCTL_MEMORY_UCX_RMA=1` (read when the thread's worker is made) this throws
   * `ERR_UCX_RMA_DISABLED`.
   * @param memory The memory object to map (its whole allocation, any kind the UCX moves).
   * @throws `ERR_UCX_RMA_DISABLED` without `DPCTL_MEMORY_UCX_RMA=1`.
   * @throws `ERR_NOT_USM` (a `TypeError`) when `memory` is not a memory object.
   * @throws `ERR_USM_FREED` for memory that was freed.
   * @throws `ERR_UCX_UNAVAILABLE` where UCX does not load; `ERR_UCX_CONFIG` when UCX's
   * configuration is refused at the thread's first use.
   * @throws `ERR_UCX` when UCX cannot register the memory.
   */
  mapMemory(memory: _Memory): UcxMemoryMap
  /**
   * What this thread's worker has open, for leak checks (made at this first use).
   * @throws `ERR_UCX_UNAVAILABLE` where UCX does not load; `ERR_UCX_CONFIG` when UCX's
   * configuration is refused.
   */
  info(): UcxInfo
  // The object has one more member, `_workerToken()`, for the library's own tests: not
  // part of the API, so not declared.
}
// ---- Seeing memory (lib/observe.js) ----

/** One figure: now, its peak since the last `resetPeakStats()`, and the cumulative amounts added and taken away. */
export interface MemoryStat {
  current: number
  peak: number
  allocated: number
  freed: number
}

/**
 * The figures of one USM kind on one device (or of all its kinds), named as PyTorch's
 * `memory_stats()` names them (in camelCase): `allocatedBytes` are the blocks held by
 * live allocations (the pool's size classes), `requestedBytes` what they asked for,
 * `reservedBytes` what this process holds from the runtime (live and cached blocks),
 * `allocation` and `segment` the counts of live allocations and of blocks held from the
 * runtime. `activeBytes` equals `allocatedBytes`: a block goes back only when its last
 * holder lets go, so none is freed but still in use.
 */
export interface KindMemoryStats {
  allocatedBytes: MemoryStat
  activeBytes: MemoryStat
  requestedBytes: MemoryStat
  reservedBytes: MemoryStat
  allocation: MemoryStat
  segment: MemoryStat
  /** Blocks the runtime allocated (`segment.allocated`) and got back (`segment.freed`). */
  numDeviceAlloc: number
  numDeviceFree: number
  /** Allocations served from the pool's cache, and those that went to the runtime. */
  poolHits: number
  poolMisses: number
  /** Cached blocks given back to keep the cache under its cap. */
  poolEvictions: number
  /** Trims (`poolTrim()`, or the pool's own before a retry) that gave back blocks of this kind. */
  poolTrims: number
  /** Allocations the runtime refused that were retried after a trim. */
  numAllocRetries: number
  /** Allocations that failed for want of memory. */
  numOoms: number
}

/** `memoryStats(device)`: a device's figures per USM kind and for all kinds together. */
export interface MemoryStats {
  filterString: string
  name: string
  /** All kinds together (its peaks are the peaks of the sums). */
  all: KindMemoryStats
  device: KindMemoryStats
  host: KindMemoryStats
  shared: KindMemoryStats
  /** Host memory the library keeps for copies, outside the pool (in no kind's figures). */
  staging: StagingMemoryStats
}

/**
 * Host memory kept for copies, which serves no allocation (so it is not in the host
 * kind's `reservedBytes`): each figure with `current`, `peak`, `allocated`, `freed`.
 */
export interface StagingMemoryStats {
  /**
   * Pinned buffers the device's provider keeps for copies between pageable JS memory and
   * the device (CUDA: two per copy lane, made at the first such copy, given back by
   * `poolTrim()`); 0 on SYCL devices, whose runtime stages on its own.
   */
  pinnedBytes: MemoryStat
  pinnedBuffers: MemoryStat
  /**
   * The process's pageable scratch blocks for async copies of plain JS memory, in use and
   * kept idle for reuse (the same figures on every device).
   */
  scratchBytes: MemoryStat
  scratchBlocks: MemoryStat
}

/**
 * The statistics of `device` (a `SyclDevice` or a filter string; the default device when
 * omitted), in the shape of PyTorch's `torch.cuda.memory_stats()`. Counted always, at the
 * cost of one uncontended lock per allocation and per free.
 * @param device A `SyclDevice` or a filter string; the default device when omitted.
 * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `device` is neither.
 * @throws `ERR_DEVICE_NOT_FOUND` (`SyclDeviceCreationError`) for a filter string that
 * matches no device or cannot be understood, and when `device` is omitted and there is
 * no default device (no runtime).
 */
export declare function memoryStats(device?: SyclDevice | string): MemoryStats

/**
 * Sets the peaks of `device` (of every device when omitted) to the current figures, its
 * staging figures included (and the process's scratch figures, whichever device).
 * @param device A `SyclDevice` or a filter string; every device when omitted.
 * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `device` is neither.
 * @throws `ERR_DEVICE_NOT_FOUND` (`SyclDeviceCreationError`) for a filter string that
 * matches no device or cannot be understood.
 */
export declare function resetPeakStats(device?: SyclDevice | string): void

/** Options of `recordMemoryHistory`. */
export interface RecordMemoryHistoryOptions {
  /** `false` stops the recording and drops what it holds. Default `true`. */
  enabled?: boolean
  /** The ring keeps the last this many events (1 ..= 2^26). Default 100,000. */
  maxEntries?: number
  /** Whether this thread sends the JS stack of each allocating call. Default `true`. */
  stacks?: boolean
  /**
   * Frames kept of each stack (1 ..= 64). Default 10, Node's own `Error.stackTraceLimit`
   * (a stack reads as an error's would); fewer cost less, V8's capture growing with them.
   */
  stackDepth?: number
}

/**
 * Starts recording every allocation, free, block given back to the runtime, trim, retry
 * and refusal (dropping an earlier recording), or stops with `{ enabled: false }`. Off by
 * default; off, it costs nothing. Stacks are those of the calling thread's allocations
 * (another thread sends its own after calling this itself). A stack is taken at the
 * allocating call and read only if a snapshot may need it: the thread keeps V8's record
 * of each stack the recording still names (its frames' functions and receivers too),
 * at most about `maxEntries` plus its live blocks.
 * @param options `enabled`, `maxEntries`, `stacks`, `stackDepth` (`RecordMemoryHistoryOptions`).
 * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) for options that are not an object, an
 * unknown option, or an option of the wrong type (a boolean, an integer).
 * @throws `ERR_INVALID_ARG_VALUE` (a `RangeError`) for a `maxEntries` or `stackDepth` out
 * of its range.
 */
export declare function recordMemoryHistory(options?: RecordMemoryHistoryOptions): void

/** The USM kinds as the statistics and snapshots name them. */
export type MemoryKindName = 'device' | 'host' | 'shared'

/** `memorySnapshot().devices`: a device the snapshot's blocks and events refer to. */
export interface SnapshotDevice {
  /** What `device` fields of blocks and events refer to. */
  index: number
  totalBytes: number
  stats: MemoryStats
}

/** `memorySnapshot().liveBlocks`: a block held by a live allocation. */
export interface SnapshotLiveBlock {
  /** Hex, `0x…`. */
  address: string
  /** The block's bytes (the pool's size class), and what the allocation asked for. */
  size: number
  requested: number
  kind: MemoryKindName
  device: number | null
  /** An index of `stacks`: the allocating call, where the recording saw it. */
  stack: number | null
  /** When it was allocated (µs since `epochMs`), where the recording saw it. */
  timeUs: number | null
}

/** `memorySnapshot().cachedBlocks`: a freed block the pool keeps for reuse. */
export interface SnapshotCachedBlock {
  address: string
  size: number
  kind: MemoryKindName
  device: number | null
}

/** `memorySnapshot().history`: the recording's settings and what it could not keep. */
export interface SnapshotHistory {
  enabled: boolean
  maxEntries: number
  stacks: boolean
  /** Events pushed out of the ring by newer ones. */
  dropped: number
  /** New stacks not kept because 65,536 distinct ones were. */
  stacksRefused: number
  /**
   * Events and live blocks listed with no stack because another copy of the library's JS
   * (another thread's, or another vm context's) holds theirs unread (a copy reads its own
   * stacks when it takes a snapshot: take one there).
   */
  stacksUnread: number
}

/**
 * A recorded event. `alloc`: an allocation got a block (`fromCache`); `free`: it ended
 * (`toCache`: its block went to the pool's cache); `release`: the pool gave a block back
 * to the runtime; `trim`: the pool was trimmed (`size`: bytes given back); `retry`: the
 * runtime refused (`size`: the request) and the pool retried after a trim; `oom`: the
 * allocation failed (`retried`: after a trim and retry).
 */
export interface SnapshotEvent {
  action: 'alloc' | 'free' | 'release' | 'trim' | 'retry' | 'oom'
  timeUs: number
  device: number | null
  kind: MemoryKindName | 'unknown'
  address: string
  size: number
  requested: number
  /** The stack of the allocating call (`alloc`, `free`). */
  stack: number | null
  fromCache?: boolean
  toCache?: boolean
  retried?: boolean
}

/** `memorySnapshot()`: plain JSON (`JSON.stringify` it for `npx dpctl-memory-report`). */
export interface MemorySnapshot {
  format: 'dpctl-memory-snapshot'
  version: 1
  /** Wall-clock time of the recording's time 0, in ms since 1970. */
  epochMs: number
  /** When the snapshot was taken, in µs since `epochMs`. */
  timeUs: number
  devices: SnapshotDevice[]
  liveBlocks: SnapshotLiveBlock[]
  cachedBlocks: SnapshotCachedBlock[]
  history: SnapshotHistory
  /** The interned stacks, one string of frames each (`at f (file:line:col)` lines). */
  stacks: string[]
  events: SnapshotEvent[]
}

/** The live and cached blocks, every device's statistics and the recorded events and stacks, now. */
export declare function memorySnapshot(): MemorySnapshot

/** What `onOutOfMemory` observers get, before the error is thrown. */
export interface OutOfMemoryInfo {
  /** The error about to be thrown: its message says what was asked, free, held and retried. */
  error: USMAllocationError
  nbytes: number
  kind: MemoryKindName
  /** The filter string of the queue's device. */
  device: string
  stats: MemoryStats | undefined
  /** While a history is recorded in this thread. */
  snapshot: MemorySnapshot | undefined
}

/**
 * Calls `callback` when an allocation of this thread fails, before the error is thrown;
 * returns a function that removes it. An observer that throws is reported with
 * `process.emitWarning` (code `DPCTL_MEMORY_OOM_OBSERVER`), and the allocation's error is
 * thrown as always.
 * @param callback Called with what was asked and the device's figures (`OutOfMemoryInfo`).
 * @throws `ERR_INVALID_ARG_TYPE` (a `TypeError`) when `callback` is not a function.
 */
export declare function onOutOfMemory(callback: (info: OutOfMemoryInfo) => void): () => void
