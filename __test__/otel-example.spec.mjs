// examples/otel-metrics.mjs: the statistics reach OpenTelemetry instruments under the
// semantic conventions' GPU memory names, with the figures memoryStats() reports, read at
// each collection.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { addon, getDevices } from './helpers/addon.mjs';
import { observeMemory, collectingMeter } from '../examples/otel-metrics.mjs';

const EXAMPLE = fileURLToPath(new URL('../examples/otel-metrics.mjs', import.meta.url));
const { MemoryUSMDevice, MemoryUSMShared, SyclQueue, memoryStats } = addon;
const CPU = (() => {
  try {
    return getDevices('opencl:cpu').length > 0;
  } catch {
    return false;
  }
})();
const title = 'the example observes each device under hw.gpu.memory.* and dpctl_memory.* with the figures of memoryStats()';

if (!CPU) {
  test.skip(`${title} [no opencl:cpu device: skipped]`, () => {});
} else {
  test(title, (t) => {
    const queue = new SyclQueue('opencl:cpu');
    const device = queue.syclDevice;
    const meter = collectingMeter();
    const stop = observeMemory(meter, [device]);
    const a = new MemoryUSMDevice(3 << 20, { queue });
    const b = new MemoryUSMShared(1 << 20, { queue });
    const points = meter.collect();
    const stats = memoryStats(device);
    const find = (name, kind) => points.find((p) => p.name === name && (kind === undefined || p.attributes['dpctl_memory.usm.kind'] === kind));
    const usage = find('hw.gpu.memory.usage');
    t.like(usage, { type: 'upDownCounter', unit: 'By', value: stats.device.reservedBytes.current + stats.shared.reservedBytes.current });
    t.like(usage.attributes, { 'hw.type': 'gpu', 'hw.id': device.filterString, 'hw.name': device.name, 'hw.vendor': device.vendor });
    t.true(usage.value >= (3 << 20) + (1 << 20));
    t.like(find('hw.gpu.memory.limit'), { value: device.globalMemSize });
    t.is(find('hw.gpu.memory.utilization').value, usage.value / device.globalMemSize);
    t.like(find('dpctl_memory.allocated', 'device'), { type: 'gauge', value: stats.device.allocatedBytes.current });
    t.like(find('dpctl_memory.pool.misses', 'shared'), { type: 'counter', value: stats.shared.poolMisses });
    a.free();
    t.is(meter.collect().find((p) => p.name === 'dpctl_memory.allocated' && p.attributes['dpctl_memory.usm.kind'] === 'device').value, memoryStats(device).device.allocatedBytes.current, 'read at each collection');
    b.free();
    stop();
    t.deepEqual(meter.collect(), [], 'removed');
  });

  test('the example runs as a script and prints the instruments', (t) => {
    const r = spawnSync(process.execPath, [EXAMPLE], { encoding: 'utf8', env: { ...process.env, ONEAPI_DEVICE_SELECTOR: 'opencl:cpu' } });
    t.is(r.status, 0, r.stderr);
    t.regex(r.stdout, /^hw\.gpu\.memory\.usage \(upDownCounter, By\) \d+ hw\.type=gpu hw\.id=opencl:cpu:0/m);
    t.regex(r.stdout, /^dpctl_memory\.allocated \(gauge, By\) 1048576 hw\.id=opencl:cpu:0 dpctl_memory\.usm\.kind=device$/m);
  });
}
