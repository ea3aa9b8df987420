// onnxruntime-node over USM memory: input tensors whose data is the bytes of MemoryUSMHost or
// MemoryUSMShared memory (through `buffer`: onnxruntime reads them in place), and an output
// preallocated in such memory (`fetches`), which onnxruntime writes in place. On the CPU
// execution provider. What its API does not take: device memory (MemoryUSMDevice): a
// tensor's data is CPU memory, or a WebGL texture, WebGPU buffer or WebNN tensor of a
// browser (onnxruntime-common's Tensor.DataLocation), never a device pointer.
// And onnxruntime-node 1.31.1 also returns each output as a new tensor, a copy of the
// bytes it wrote into the preallocated memory.
// Tested with onnxruntime-node 1.31.1 (__test__/clients.spec.mjs; `npm install
// onnxruntime-node` to run it: `node examples/onnx.mjs`). The model is made here, as bytes.
import ort from 'onnxruntime-node';
import { MemoryUSMHost, MemoryUSMShared } from 'dpctl-memory';

// A minimal ONNX model, written as the protobuf it is (onnx.proto: ModelProto, GraphProto,
// NodeProto, ValueInfoProto): one node `op` over float32 inputs of one dimension `n`.
const varint = (n) => {
  const out = [];
  let v = BigInt(n);
  do {
    const low = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v ? low | 0x80 : low);
  } while (v);
  return out;
};
const bytes = (field, content) => [...varint((field << 3) | 2), ...varint(content.length), ...content];
const int = (field, n) => [...varint(field << 3), ...varint(n)];
const text = (field, s) => bytes(field, [...new TextEncoder().encode(s)]);
// ValueInfoProto { name, type: TypeProto { tensor_type { elem_type: FLOAT, shape? } } }
const floatValue = (name, dims) => [
  ...text(1, name),
  ...bytes(2, bytes(1, [...int(1, 1), ...(dims ? bytes(2, dims.flatMap((d) => bytes(1, typeof d === 'string' ? text(2, d) : int(1, d)))) : [])])),
];

/** An ONNX model (opset 13) of one `op` node: float32 `inputs` of shape [n] to `output`. */
export function oneNodeModel(op, inputs, output, outputDims = ['n']) {
  const node = bytes(1, [...inputs.flatMap((name) => text(1, name)), ...text(2, output), ...text(4, op)]);
  const graph = [...node, ...text(2, op), ...inputs.flatMap((name) => bytes(11, floatValue(name, ['n']))), ...bytes(12, floatValue(output, outputDims))];
  return Uint8Array.from([...int(1, 8), ...bytes(7, graph), ...bytes(8, int(2, 13))]);
}

/** A float32 tensor of shape [n] over host or shared memory's bytes: no copy. */
export function tensorOver(mem) {
  return new ort.Tensor('float32', new Float32Array(mem.buffer), [mem.nbytes / 4]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const session = await ort.InferenceSession.create(oneNodeModel('Add', ['x', 'y'], 'z'), { executionProviders: ['cpu'] });
  const n = 8;
  const x = new MemoryUSMHost(n * 4);
  const y = new MemoryUSMShared(n * 4);
  const z = new MemoryUSMShared(n * 4);
  x.copyFromHost(Float32Array.from({ length: n }, (_, i) => i));
  y.copyFromHost(new Float32Array(n).fill(10));
  const [tx, ty, tz] = [x, y, z].map(tensorOver);
  await session.run({ x: tx, y: ty }, { z: tz });         // z is written in place
  console.log(new Float32Array(z.buffer)[7]);             // 17
  x.copyFromHost(new Float32Array(n).fill(1));            // the same tensor reads the new bytes
  await session.run({ x: tx, y: ty }, { z: tz });
  console.log(z.copyToHost().length, new Float32Array(z.buffer)[7]); // 32 11
  await session.release();
  x.free();
  y.free();
  z.free();
}
