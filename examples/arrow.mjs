// apache-arrow over USM memory, without a copy: Arrow vectors and a table whose columns are
// the bytes of MemoryUSMShared and MemoryUSMHost memory (through `buffer`: Arrow keeps the
// TypedArray it is given as the column's values), and a record batch's buffers copied to
// MemoryUSMDevice memory and back into host memory that the new batch reads in place.
// Tested with apache-arrow 21.2.0 (__test__/clients.spec.mjs; `npm install apache-arrow` to
// run it: `node examples/arrow.mjs`).
import { makeData, makeVector, RecordBatch, Schema, Struct, Table, Utf8, vectorFromArray } from 'apache-arrow';
import { MemoryUSMDevice, MemoryUSMHost, MemoryUSMShared } from 'dpctl-memory';

/**
 * An Arrow vector over `mem`'s bytes as `Type` (a TypedArray class): the vector's values
 * are a view of `mem.buffer`, so Arrow reads what is written through `mem` and no byte is
 * copied. `mem` must outlive the vector (its `free()` detaches the buffer under it).
 */
export function vectorOver(mem, Type) {
  return makeVector(new Type(mem.buffer));
}

/** A table whose columns are memory objects' bytes: `{ name: [mem, TypedArrayClass] }`. */
export function tableOver(columns) {
  return new Table(Object.fromEntries(Object.entries(columns).map(([name, [mem, Type]]) => [name, vectorOver(mem, Type)])));
}

/**
 * Copies every buffer of every column of `batch` (values, validity bitmap, offsets) into
 * device memory. Flat columns only (numbers, strings, binary): a dictionary or nested
 * column has more to copy (its dictionary, its children), which this sketch leaves out. Returns the columns as `{ field, length, nullCount, offset, values,
 * validity, offsets }`, the last three MemoryUSMDevice or null; free them when done.
 */
export function batchToDevice(batch, { queue } = {}) {
  const toDevice = (view) => {
    if (!view || view.byteLength === 0) return null;
    const device = new MemoryUSMDevice(view.byteLength, { queue });
    device.copyFromHost(view);
    return device;
  };
  return batch.schema.fields.map((field, i) => {
    const data = batch.data.children[i];
    if (data.dictionary || data.children.length) throw new TypeError(`${field.name}: ${field.type} is not a flat column`);
    return {
      field,
      length: data.length,
      nullCount: data.nullCount,
      offset: data.offset,
      values: toDevice(data.values),
      validity: toDevice(data.nullBitmap),
      offsets: toDevice(data.valueOffsets),
    };
  });
}

/**
 * The batch back from device memory: each buffer is copied into MemoryUSMHost memory, and
 * the new batch's columns are views of that memory (no further copy). Returns `{ batch,
 * host }`: free the `host` memory objects once the batch is no longer used.
 */
export function batchFromDevice(columns, { queue } = {}) {
  const host = [];
  const toHost = (device, Type) => {
    if (!device) return undefined;
    const memory = new MemoryUSMHost(device.nbytes, { queue });
    memory.copyFromDevice(device);
    host.push(memory);
    return new Type(memory.buffer);
  };
  const children = columns.map(({ field, length, nullCount, offset, values, validity, offsets }) =>
    makeData({
      type: field.type,
      length,
      nullCount,
      offset,
      data: toHost(values, field.type.ArrayType),
      nullBitmap: toHost(validity, Uint8Array),
      valueOffsets: toHost(offsets, Int32Array),
    }),
  );
  const schema = new Schema(columns.map(({ field }) => field));
  const length = columns.length ? columns[0].length : 0;
  return { batch: new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length, children })), host };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // A table over shared and host memory.
  const n = 1000;
  const x = new MemoryUSMShared(n * 8);
  const id = new MemoryUSMHost(n * 4);
  new Float64Array(x.buffer).forEach((_, i, a) => { a[i] = i / 2; });
  new Int32Array(id.buffer).forEach((_, i, a) => { a[i] = i; });
  const table = tableOver({ x: [x, Float64Array], id: [id, Int32Array] });
  console.log(table.numRows, JSON.stringify(table.get(3)));            // 1000 {"x":1.5,"id":3}
  x.copyFromHost(Float64Array.of(42));                                 // written through the memory object
  console.log(table.getChild('x').get(0));                             // 42: Arrow reads the same bytes
  console.log(table.getChild('x').data[0].values.buffer === x.buffer); // true: no copy

  // A record batch to device memory and back.
  const batch = new Table({ name: vectorFromArray(['a', null, 'ccc'], new Utf8()), v: makeVector(Float64Array.of(1, 2, 3)) }).batches[0];
  const onDevice = batchToDevice(batch);
  const back = batchFromDevice(onDevice);
  console.log(JSON.stringify(back.batch.toArray()) === JSON.stringify(batch.toArray())); // true
  for (const column of onDevice) for (const memory of [column.values, column.validity, column.offsets]) memory?.free();
  for (const memory of back.host) memory.free();
  x.free();
  id.free();
}
