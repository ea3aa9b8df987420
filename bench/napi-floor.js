// The Node-API floor of a zero-copy view (bench/peers/napi_view.c): built once with cc
// against the running Node's headers (<node>/include/node), into the per-user cache, and
// loaded in this process. `null` with why when cc or the headers are missing.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawnSync } = require('node:child_process');
const { cacheRoot } = require('../scripts/lib/wheels.js');

const SOURCE = path.join(__dirname, 'peers', 'napi_view.c');

/** `{ probe }` (its `view(length)` and `detach(buffer)`) or `{ error }`. */
function loadNapiFloor() {
  const include = path.join(path.dirname(path.dirname(process.execPath)), 'include', 'node');
  if (!fs.existsSync(path.join(include, 'node_api.h'))) return { error: `no Node-API headers under ${include}` };
  const text = fs.readFileSync(SOURCE);
  const hash = crypto.createHash('sha256').update(text).update(process.version).digest('hex').slice(0, 16);
  const out = path.join(cacheRoot(), `bench-napi-view-${hash}.node`);
  if (!fs.existsSync(out)) {
    fs.mkdirSync(path.dirname(out), { recursive: true });
    const partial = `${out}.${process.pid}.tmp`;
    const r = spawnSync(process.env.CC || 'cc', ['-O2', '-shared', '-fPIC', '-isystem', include, SOURCE, '-o', partial], { encoding: 'utf8' });
    if (r.error) return { error: `cc: ${r.error.message}` };
    if (r.status !== 0) return { error: `cc exited ${r.status}: ${(r.stderr || '').trim().split('\n').slice(-3).join(' | ')}` };
    fs.renameSync(partial, out);
  }
  try {
    return { probe: require(out) };
  } catch (err) {
    return { error: `loading ${out}: ${err.message}` };
  }
}

module.exports = { loadNapiFloor };
