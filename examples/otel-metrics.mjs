// Feeding dpctl-memory's statistics to OpenTelemetry metrics.
//
//   node examples/otel-metrics.mjs      (prints one collection of every instrument)
//
// In a service, call `observeMemory(meter)` with a meter of your MeterProvider (the SDK's
// `@opentelemetry/sdk-metrics` with a Prometheus or OTLP exporter); the callbacks read
// `memoryStats()` at each collection, so the figures cost nothing between collections.
//
// Names follow the OpenTelemetry semantic conventions for GPU metrics
// (https://opentelemetry.io/docs/specs/semconv/hardware/gpu/, status: development):
// `hw.gpu.memory.limit` and `hw.gpu.memory.usage` in bytes (`By`, UpDownCounters in the
// conventions, so observable up-down counters here) and `hw.gpu.memory.utilization`
// (a gauge, `1`), each with `hw.type: 'gpu'` and the required `hw.id` (the device's
// filter string) and the recommended `hw.name`, `hw.vendor` and `hw.driver_version`.
// `hw.gpu.memory.usage` is what THIS process holds of the device's memory (reserved bytes:
// live and cached blocks of device and shared memory), not the whole device's use.
// The allocator's own figures, which the conventions do not name, are observable gauges
// and counters under `dpctl_memory.*`, per USM kind (`dpctl_memory.usm.kind`).
import { metrics } from '@opentelemetry/api';
import { getDevices, memoryStats } from 'dpctl-memory';

const KINDS = ['device', 'host', 'shared'];

/** The semantic conventions' attributes of a device. */
function hardwareAttributes(device) {
  return {
    'hw.type': 'gpu',
    'hw.id': device.filterString,
    'hw.name': device.name,
    'hw.vendor': device.vendor,
    'hw.driver_version': device.driverVersion,
  };
}

/**
 * Registers the instruments on `meter` for `devices` (default: every device). Returns a
 * function that removes the callbacks.
 */
export function observeMemory(meter, devices = getDevices()) {
  const limit = meter.createObservableUpDownCounter('hw.gpu.memory.limit', { unit: 'By', description: 'Size of the GPU memory.' });
  const usage = meter.createObservableUpDownCounter('hw.gpu.memory.usage', { unit: 'By', description: 'GPU memory held by this process (reserved through dpctl-memory).' });
  const utilization = meter.createObservableGauge('hw.gpu.memory.utilization', { unit: '1', description: 'Fraction of GPU memory held by this process.' });
  const allocated = meter.createObservableGauge('dpctl_memory.allocated', { unit: 'By', description: 'Bytes of blocks held by live allocations.' });
  const reserved = meter.createObservableGauge('dpctl_memory.reserved', { unit: 'By', description: 'Bytes held from the runtime: live and cached blocks.' });
  const peak = meter.createObservableGauge('dpctl_memory.allocated.peak', { unit: 'By', description: 'Peak of allocated bytes since the last resetPeakStats().' });
  const live = meter.createObservableGauge('dpctl_memory.allocations', { unit: '{allocation}', description: 'Live allocations.' });
  const hits = meter.createObservableCounter('dpctl_memory.pool.hits', { unit: '{allocation}', description: 'Allocations served from the pool.' });
  const misses = meter.createObservableCounter('dpctl_memory.pool.misses', { unit: '{allocation}', description: 'Allocations that went to the runtime.' });
  const ooms = meter.createObservableCounter('dpctl_memory.ooms', { unit: '{allocation}', description: 'Allocations refused for want of memory.' });
  const instruments = [limit, usage, utilization, allocated, reserved, peak, live, hits, misses, ooms];

  const callback = (result) => {
    for (const device of devices) {
      const stats = memoryStats(device);
      const hw = hardwareAttributes(device);
      // Host memory is the host's, not the device's: only device and shared memory count.
      const held = stats.device.reservedBytes.current + stats.shared.reservedBytes.current;
      result.observe(limit, device.globalMemSize, hw);
      result.observe(usage, held, hw);
      if (device.globalMemSize > 0) result.observe(utilization, held / device.globalMemSize, hw);
      for (const kind of KINDS) {
        const s = stats[kind];
        const attributes = { 'hw.id': device.filterString, 'dpctl_memory.usm.kind': kind };
        result.observe(allocated, s.allocatedBytes.current, attributes);
        result.observe(reserved, s.reservedBytes.current, attributes);
        result.observe(peak, s.allocatedBytes.peak, attributes);
        result.observe(live, s.allocation.current, attributes);
        result.observe(hits, s.poolHits, attributes);
        result.observe(misses, s.poolMisses, attributes);
        result.observe(ooms, s.numOoms, attributes);
      }
    }
  };
  meter.addBatchObservableCallback(callback, instruments);
  return () => meter.removeBatchObservableCallback(callback, instruments);
}

/**
 * A meter that keeps its batch callbacks and, on `collect()`, runs them and returns what
 * they observed: enough to show the figures without an SDK (a real service uses the SDK's
 * MeterProvider and an exporter instead).
 */
export function collectingMeter() {
  const callbacks = new Set();
  const instrument = (type) => (name, options = {}) => ({ name, type, unit: options.unit });
  return {
    createObservableGauge: instrument('gauge'),
    createObservableUpDownCounter: instrument('upDownCounter'),
    createObservableCounter: instrument('counter'),
    addBatchObservableCallback: (callback) => callbacks.add(callback),
    removeBatchObservableCallback: (callback) => callbacks.delete(callback),
    collect() {
      const points = [];
      const result = { observe: (instrument, value, attributes = {}) => points.push({ name: instrument.name, type: instrument.type, unit: instrument.unit, value, attributes }) };
      for (const callback of callbacks) callback(result);
      return points;
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // Without a registered MeterProvider, the API's meter does nothing: this is where a
  // service's SDK meter goes.
  const apiMeter = metrics.getMeter('dpctl-memory-example');
  observeMemory(apiMeter);
  const meter = collectingMeter();
  observeMemory(meter);
  const { MemoryUSMDevice } = await import('dpctl-memory');
  const held = new MemoryUSMDevice(1 << 20);
  for (const point of meter.collect()) {
    const attributes = Object.entries(point.attributes).map(([k, v]) => `${k}=${v}`).join(' ');
    console.log(`${point.name} (${point.type}, ${point.unit}) ${point.value} ${attributes}`);
  }
  held.free();
}
