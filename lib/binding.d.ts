// The native binding as `lib/` calls it: every function the `.node` exports, written by
// hand (the napi-rs functions as `npm run build` declares them in target/binding.d.ts,
// and the fast calls `src/js/memory.rs`, `src/js/observe.rs`, `src/js/transport.rs` and `src/js/ipc.rs` define themselves). `lib/*.js` are checked against
// it (`// @ts-check`, `tsc -p lib` in `npm test`); __test__/types.spec.mjs checks that it
// names exactly what the binding exports.

/** A host buffer as the JS layer hands it over: an ArrayBuffer, or a view (a SharedArrayBuffer as a Uint8Array over it). */
export type HostBuffer = ArrayBuffer | ArrayBufferView;

/** A handle kind of `releaseHandle`: 0 device, 1 context, 2 queue, 3 memory. */
export type HandleKind = 0 | 1 | 2 | 3;

// --- The fast calls (`src/js/memory.rs` and `src/js/observe.rs`, `define_fast_calls`) ---

/** A new allocation of `nbytes` of `kind` (dpctl's enum value: 1 device, 2 shared, 3 host) on the queue. */
export function memAllocate(queueId: number, kind: number, nbytes: number, alignment: number): number

/** `memAllocate` that also leaves the new allocation's address in this thread's slot (`src/js/observe.rs`). */
export function observeAllocate(queueId: number, kind: number, nbytes: number, alignment: number): number

/** An ArrayBuffer over this thread's address slot (eight bytes), or undefined where external buffers are refused. */
export function observeAddressSlot(): ArrayBuffer | undefined

/** The stack of this thread's next allocation is the unread stack `sequence` of the copy of the JS layer numbered `source` (`observeStackSource`); false when recording `generation` is not the one taking stacks now. */
export function observeNextStackProvisional(generation: number, source: number, sequence: number): boolean

/** Releases the memory now and gives the handle back (a freed handle: no-op). */
export function memFree(memoryId: number): void

/** The zero-copy `ArrayBuffer` over host or shared memory (the JS layer makes it once). */
export function memBuffer(memoryId: number): ArrayBuffer

/** A `SharedArrayBuffer` over host or shared memory, holding the allocation until every thread drops it. */
export function memSharedBuffer(memoryId: number): SharedArrayBuffer

/** `copyToHost(dst)`: the whole memory into the start of `dst`. */
export function memCopyToHost(memoryId: number, dst: HostBuffer): void

/** `copyFromHost(src)`: `src` into the start of the memory. */
export function memCopyFromHost(memoryId: number, src: HostBuffer): void

/** `copyFromDevice(src)`: another memory object into the start of this one. */
export function memCopyFromDevice(memoryId: number, sourceId: number): void

/** `memset(value)`: every byte of the memory. */
export function memMemset(memoryId: number, value: number): void

/** The address, as a bigint. */
export function memPointer(memoryId: number): bigint

/** Gives back the handle of a JS object that is gone (a handle already given back: no-op). */
export function releaseHandle(kind: HandleKind, id: number): void

// --- The napi-rs functions --------------------------------------------------------------


/** The default context of the default device (`new SyclContext()`). */
export function contextDefault(): number

/** Handles of the devices of a context. */
export function contextDevices(contextId: number): Float64Array

/** Whether two context handles name the same context. */
export function contextEquals(a: number, b: number): boolean

/** `device.canAccessPeer(peer, value)`: whether the device can reach the peer's memory (`atomics`: dpctl's `'atomics_supported'`). */
export function deviceCanAccessPeer(deviceId: number, peerId: number, atomics: boolean): boolean

/** A new context of its own for the device (`new SyclContext(device)`). */
export function deviceCreateContext(deviceId: number): number

/** The context every default queue of the device shares. */
export function deviceDefaultContext(deviceId: number): number

/** `device.disablePeerAccess(peer)`. */
export function deviceDisablePeerAccess(deviceId: number, peerId: number): void

/** `device.enablePeerAccess(peer)`. */
export function deviceEnablePeerAccess(deviceId: number, peerId: number): void

/** Whether two device handles name the same device (`SyclDevice` equality). */
export function deviceEquals(a: number, b: number): boolean
/** Whether programs of `language` build for the device here (ERR_INVALID_ARG_VALUE for an unknown language). */
export function deviceCanCompile(deviceId: number, language: string): boolean

/**
 * What never changes about a device, as JSON: `{ name, vendor, backend, deviceType,
 * driverVersion, filterString, globalMemSize, maxMemAllocSize, aspects }`.
 */
export function deviceFacts(deviceId: number): string

/**
 * Bytes of memory free now on the device, where its runtime can tell (CUDA:
 * `cuMemGetInfo`), else `null`: what the IPC tests and the bench compare with a baseline.
 */
export function deviceFreeMemory(deviceId: number): number | null

/** Handles of the devices `getDevices(filter)` lists. */
export function deviceList(filter?: string | undefined | null): Float64Array

/** The device a filter string selects (the default device without one). */
export function deviceSelect(filter?: string | undefined | null): number

/** The rules and messages the JS layer applies before calling the binding, as JSON: `{ maxList, advice, messages: { freed, positiveSize, alignment, bufferTooLarge } }` (templates with `{alignment}`, `{nbytes}`, `{max_len}`). */
export function bindingConstants(): string

/**
 * The table of error codes (`crate::error::ErrorCode`) for the JS layer, as JSON:
 * `[{ "name": "UsmFreed", "code": "ERR_USM_FREED", "classes": ["Error"] }, ...]`.
 * `lib/errors.js` builds the exported `ErrorCode` from it, and `__test__/docs.spec.mjs`
 * checks the typings and the README against it.
 */
export function errorCodes(): string

/** `[submit, start, end]` nanoseconds as decimal strings (the JS layer makes BigInts). */
export function eventProfile(eventId: number): Array<string>

/** `'submitted'`, `'running'` or `'complete'`. */
export function eventStatus(eventId: number): string

/**
 * The Promise of an asynchronous submission's event, once (`undefined` after): the
 * event lets go of it here.
 */
export function eventTakePromise(eventId: number): unknown | null

/** Waits for the event's work. */
export function eventWait(eventId: number): void

/**
 * Registers the bytes of a host buffer (the JS layer passes an `ArrayBuffer`, a view,
 * or a `Uint8Array` over a `SharedArrayBuffer`) with the runtime of the queue.
 * Returns `[id, registered (0 or 1), byteLength]`.
 */
export function hostRegister(queueId: number, host: HostBuffer): Float64Array

/**
 * Ends a registration (`unregister()`, `[Symbol.dispose]`, or its object's collection).
 * A copy that uses it still holds it: the runtime lets go when that copy is done. An id
 * already ended is a no-op.
 */
export function hostUnregister(id: number): void

/** Whether memory on the device can be shared with other processes (IPC handles). */
export function ipcAvailable(deviceId: number): boolean

/** What the runtime says of a kernel, as JSON. */
export function kernelFacts(kernelId: number): string

/** Gives back a handle of a collected object: `kind` 0 program, 1 kernel, 2 event. */
export function kernelsRelease(kind: number, id: number): void

/** The largest `ArrayBuffer` this engine makes, for the JS layer's size checks. */
export function maxBufferLength(): number

/**
 * The memory of `source_id` as memory of `kind`: a view when it is of that kind, a new
 * allocation on `queue_id` holding a copy when `copy`, else `ERR_USM_KIND_MISMATCH`.
 */
export function memAdopt(sourceId: number, kind: number, copy: boolean, queueId: number): number

/** `advice` is one of `Advice::NAMES` (the JS layer checked it). */
export function memAdvise(memoryId: number, advice: string, toHost: boolean): Promise<boolean>

/** The fields of an interface as `memConsume` takes them: the JS layer's own plain copies (numbers, bigints, strings, booleans, null and arrays of them; `undefined` where missing). */
export interface ConsumedFields {
  offset: unknown
  version: unknown
  data: unknown
  shape: unknown
  typestr: unknown
  strides: unknown
}

/** What an interface's `syclobj` was: whether it had one, a queue or context handle or a filter string (at most one), and how messages write it. */
export interface ConsumedSyclobj {
  present: boolean
  queue: number | undefined
  context: number | undefined
  filter: string | undefined
  shown: string
}

/** Consumes an interface (`__sycl_usm_array_interface__`): a new memory handle of the memory it describes. */
export function memConsume(fields: ConsumedFields, syclobj: ConsumedSyclobj): number

/** `copyFromDeviceAsync(src)`, on the libuv thread pool. */
export function memCopyFromDeviceAsync(memoryId: number, sourceId: number): Promise<void>

/** `copyFromHostAsync(src)`, on the libuv thread pool. */
export function memCopyFromHostAsync(memoryId: number, src: HostBuffer): Promise<void>

/**
 * `copyToHost` off the main thread. The JS layer keeps `dst` and the memory object
 * alive until the Promise settles; the task holds the allocation itself.
 */
export function memCopyToHostAsync(memoryId: number, dst: HostBuffer): Promise<void>

/** `[nbytes, kind, readOnly ? 1 : 0]` of live memory (the pointer: `memPointer`). */
export function memFacts(memoryId: number): Float64Array

/** The hand-off value of a memory handle (`memoryId` < 0: of a freed object) read from the object branded `brand`: a type-tagged external that native addons read through `include/dpctl_memory.h`, memory only on that object. */
export function memHandoff(memoryId: number, brand: number): object

/** Brands a memory object (once): type-tags it with a fresh serial of this copy, which it returns for `memHandoff`. */
export function memHandoffBrand(memory: object): number

/**
 * A fast call (`src/js/ipc.rs`): the IPC handle of the memory, written into the start of the host buffer `dst` (the JS
 * layer makes it in its own realm) when it holds it; returns the handle's length either
 * way, so that a buffer too short is asked again with one long enough.
 */
export function memIpcExport(memoryId: number, dst: HostBuffer): number

/**
 * A fast call (`src/js/ipc.rs`): opens IPC handle bytes (a host buffer) into `nbytes` of memory used through the queue
 * `queue_id`; returns its memory handle.
 */
export function memIpcOpen(bytes: HostBuffer, queueId: number, nbytes: number): number

/** dpctl's kind enum of the memory in the context `context_id` (its own without one). */
export function memKind(memoryId: number, contextId?: number | undefined | null): number

/** `memsetAsync(value)`, on the libuv thread pool. */
export function memMemsetAsync(memoryId: number, value: number): Promise<void>

/**
 * Opens a share token (made in any thread) into memory of this environment, which
 * holds the allocation from now on; returns its memory handle (`memSharedFacts` and
 * `memQueue` tell the rest: a returned typed array would cost more than the open).
 */
export function memOpenShared(token: string, kind: number, nbytes: number): number

/**
 * Migrates shared memory to the device (`to_host` false) or the host; resolves `true`
 * when the runtime acted on it.
 */
export function memPrefetch(memoryId: number, toHost: boolean): Promise<boolean>

/** The queue the memory is used through. */
export function memQueue(memoryId: number): number

/**
 * Revokes a share token still pending (`true`); `false` when it was already opened,
 * revoked or expired.
 */
export function memRevokeShared(token: string): boolean

/**
 * Holds the memory under a new share token and returns the token's text; `timeout_ms`
 * `None` gives the default timeout.
 */
export function memShare(memoryId: number, timeoutMs?: number | undefined | null): string

/**
 * `cachedQueueKey * 2 + (readOnly ? 1 : 0)` of memory opened from a token. The key is 0
 * unless the memory's queue is its device's cached queue; then it is a number that
 * stands for that queue for the life of the process (the address of the registry's
 * queue, below 2^48), so the JS layer can give it this realm's one object for that
 * queue without making a queue handle or looking the device up.
 */
export function memSharedFacts(memoryId: number): number

/** A second handle on the same memory (zero-copy; views share the allocation). */
export function memView(memoryId: number): number

/** The stack of this thread's next allocation (while a recording with stacks runs): its id in the recording, or -1. */
export function observeNextStack(stack: string): number
/** The stack of this thread's next allocation by the id `observeNextStack` gave in recording `generation`; false once that recording is over. */
export function observeNextStackId(id: number, generation: number): boolean
/** The generation of the recording now. */
export function observeStackGeneration(): number
/** The id of a stack's text in recording `generation`, or -1 (that recording is over, or its table is full). */
export function observeInternStack(generation: number, stack: string): number
/** A number of this copy of the JS layer's own (each load of `lib/`, in each thread and vm context), naming its unread stacks; 0 once the numbers are spent (read stacks at once then). */
export function observeStackSource(): number
/** The unread stacks of copy `source` that recording `generation` still names: `[liveAllocations, first, last, live, ...liveSequences, ...holes]`; undefined when that recording is over or takes no stacks. */
export function observeReferencedStacks(generation: number, source: number): Float64Array | undefined | null
/** The unread stacks `sequences` of copy `source` were read: `ids[i]` (-1: none) stands for `sequences[i]`; the first `live` are live allocations'. */
export function observeResolveStacks(generation: number, source: number, sequences: Float64Array, ids: Float64Array, live: number): void

/** Starts a recording of `maxEntries` events (stacks sent by the JS layer when `stacks`), dropping an earlier one; `enabled` false ends the recording. */
export function observeRecord(enabled: boolean, maxEntries: number, stacks: boolean): void

/** Sets the peaks of a device (of every device without one) to the current figures. */
export function observeResetPeaks(deviceId?: number | undefined | null): void

/** `memorySnapshot()`: the process's live and cached blocks, figures and recording, as JSON. */
export function observeSnapshot(): string

/** The figures of a device (the default device without one) as JSON. */
export function observeStats(deviceId?: number | undefined | null): string

/** The pool's statistics as JSON: `{ enabled, device, host, shared, scratch }`. */
export function poolStats(): string

/**
 * Frees every block held in the caching pool and every idle scratch buffer of async
 * copies (memory in use is untouched) and returns the number of bytes released. The
 * pool fills again as memory is freed; it also trims itself, and retries once, when the
 * runtime refuses an allocation (cached or not).
 */
export function poolTrim(): number

/**
 * Builds a program for the queue's device: `format` 1 OpenCL C, 2 SPIR-V, 3 PTX, 4 CUDA
 * C; `source` a string or host bytes. JSON: `{ id, log, names }`, or `{ failed, log }`
 * for a build failure (the JS layer throws `SyclProgramCompilationError`).
 */
export function programBuild(queueId: number, format: number, source: unknown, options: string): string
/** SYCL source with include files (names[i], contents[i]) and name expressions to register: JSON as programBuild's. */
export function programBuildSycl(queueId: number, source: string, options: string[], headerNames: string[], headerContents: string[], registered: string[]): string

/** Whether the program has a kernel `name`. */
export function programHasKernel(programId: number, name: string): boolean

/** The kernel `name` of a program (`ERR_KERNEL_NOT_FOUND` when it has none). */
export function programKernel(programId: number, name: string): number

/** `queue.writeValue(mem, value, { offset, dependsOn })`: `lo`/`hi` the value's words
 * (`wide`: 64 bits); the event's id, at once. */
export function queueWriteValue(queueId: number, dstId: number, offset: number, lo: number, hi: number, wide: boolean, deps: Float64Array): number
/** `queue.submitBarrier(deps?)`: an event after `deps` (after everything so far when empty). */
export function queueBarrier(queueId: number, deps: Float64Array): number

/**
 * The cached queue of a device (the default device without one): the queue every
 * allocation made without a queue uses.
 */
export function queueCached(deviceId?: number | undefined | null): number

/** The context of a queue. */
export function queueContext(queueId: number): number

/**
 * `new SyclQueue(...)`: in the context `context_id` if given, on the device `device_id`
 * or the device `filter` names, else on the default device (or the context's first).
 */
export function queueCreate(contextId?: number | undefined | null, deviceId?: number | undefined | null, filter?: string | undefined | null): number

/** `new SyclQueue(..., { property })`: as `queueCreate`, with dpctl's property names. */
export function queueCreateWith(contextId: number | undefined | null, deviceId: number | undefined | null, filter: string | undefined | null, properties: Array<string>): number

/** The device of a queue. */
export function queueDevice(queueId: number): number

/** Whether two queue handles name the same queue. */
export function queueEquals(a: number, b: number): boolean

/** `queue.fill(dst, pattern, count)` / `fillAsync` (and `memset`: a 1-byte pattern). */
export function queueFill(queueId: number, dstId: number, pattern: unknown, count: number, deps: Float64Array, asynchronous: boolean): number

/** `queue.memcpy(dst, src, nbytes)` / `memcpyAsync` between memory objects. */
export function queueMemcpy(queueId: number, dstId: number, srcId: number, nbytes: number, deps: Float64Array, asynchronous: boolean): number

/** `(in order ? 1 : 0) | (profiling ? 2 : 0)` of a queue. */
export function queuePropertyFlags(queueId: number): number

/**
 * `queue.submit` (waits) and `queue.submitAsync`: the event handle (an asynchronous
 * one's Promise: `eventTakePromise`).
 */
export function queueSubmit(queueId: number, kernelId: number, spec: Float64Array, bits: Uint32Array, global: Float64Array, local: Float64Array | undefined | null, deps: Float64Array, asynchronous: boolean): number

/** Waits for the queue's work, reporting its asynchronous errors. */
export function queueWait(queueId: number): void

/**
 * Why no device is available from each runtime that did not load (empty when all
 * did), as a JSON array of strings.
 */
export function runtimeDiagnostics(): string

// --- The transport (`src/js/transport.rs`): UCX workers, endpoints, maps, remote keys ---

/** `{ available, message }` as JSON: whether UCX loads here, and from where (or what to install). */
export function ucxAvailable(): string

/** Starts this thread's worker (once) with `drain`, the JS function the worker's fd wakes, the spin window in microseconds (0: the fd alone), and whether one-sided access is on (`DPCTL_MEMORY_UCX_RMA=1`); returns the worker's token. */
export function ucxStart(drain: () => void, spinUs: number, rma: boolean): number

/** What the worker's library is, whether it moves CUDA memory, and its counts, as JSON: `{ library, cudaMemory, inFlight, endpoints, listeners, maps, rkeys }`. */
export function ucxInfo(token: number): string

/** A fast call (`src/js/transport.rs`): progresses the worker and writes what happened into `records`: the count, then records of five numbers `[kind, op, length, tagHi, tagLo]` (kind 1: the op succeeded; 2: an event whose object `ucxNextEvent` returns). Returns 0 (the fd is armed), 1 (progress again on the loop's next turn) or 2 (more than `records` holds: progress again now). */
export function ucxProgress(token: number, records: Float64Array): number

/** The next event object `ucxProgress` announced, as JSON: `{ op, error }`, `{ accepted: endpoint, listener }`, `{ acceptFailed: listener, error }` or `{ failed: endpoint }`; `null` when none. */
export function ucxNextEvent(token: number): string

/** Listens on `host`:`port`; returns `[listenerId, port]`. */
export function ucxListen(token: number, host: string, port: number): Float64Array

/** Stops a listener. */
export function ucxCloseListener(token: number, id: number): void

/** Connects to `host`:`port`; returns `[endpointId, opId]` (the op completes when the connection is up). */
export function ucxConnect(token: number, host: string, port: number): Float64Array

/** Closes an endpoint (flushing unless `force`); returns the op that completes when it is closed, or -1 when it was closed already. */
export function ucxClose(token: number, endpoint: number, force: boolean): number

/** Flushes an endpoint; returns the op that completes when every earlier operation has. */
export function ucxFlush(token: number, endpoint: number): number

/** A fast call (`src/js/transport.rs`): sends a memory object (its handle) or a host buffer with `tag`; returns the op, or 0 when it completed at once. */
export function ucxSend(token: number, endpoint: number, operand: number | HostBuffer, tag: bigint): number

/** A fast call: receives into a memory object (its handle) or a host buffer a message of exactly `tag`; returns the op, or `-1 - length` when it completed at once (the message had come). */
export function ucxRecv(token: number, endpoint: number, operand: number | HostBuffer, tag: bigint): number

/** Receives into a memory object or a host buffer a message whose tag matches under a mask of fewer bits; returns the op (its completion reports the sender's tag). */
export function ucxRecvMasked(token: number, endpoint: number, memoryId: number, host: HostBuffer | undefined | null, tagHi: number, tagLo: number, maskHi: number, maskLo: number): number

/** Maps a memory object for remote access; returns the map's id (its key's bytes come from `ucxMapKey`). */
export function ucxMapMemory(token: number, memoryId: number): number

/** The remote key bytes of a map, for a peer's `ucxUnpack`. */
export function ucxMapKey(token: number, mapId: number): Buffer

/** Unmaps a map and lets go of its memory. */
export function ucxUnmap(token: number, mapId: number): void

/** Unpacks a remote key's bytes for an endpoint; returns `[rkeyId, nbytes]`. */
export function ucxUnpack(token: number, endpoint: number, bytes: HostBuffer): Float64Array

/** Destroys an unpacked remote key. */
export function ucxDestroyRkey(token: number, rkey: number): void

/** `put` (`write`) or `get` of a memory object or host buffer at `offset` into a remote key's range; returns the op, or 0 when it completed at once. */
export function ucxRma(token: number, write: boolean, rkey: number, offset: number, memoryId: number, host?: HostBuffer | undefined | null): number
