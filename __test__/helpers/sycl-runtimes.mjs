// The SYCL runtimes of the per-user cache as the specs of the two ABIs see them: where each
// is, whether it is installed, and whether its shim is built beside the addon.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const INDEX = path.join(ROOT, 'index.js');
const { runtimeDir, isComplete, RUNTIMES } = require('../../scripts/install-runtime.js');

/** The variables that name a runtime root, in the order the addon reads them. */
export const ROOT_VARS = ['DPCTL_MEMORY_SYCL_ROOT', 'SYCL_ROOT', 'CMPLR_ROOT', 'ONEAPI_ROOT'];
export const default2025 = runtimeDir(RUNTIMES.default);
export const runtime2026 = runtimeDir(RUNTIMES[2026]);
/** The default (2025) runtime is installed. */
export const installed2025 = isComplete(default2025, RUNTIMES.default);
/** The shim of each ABI is built beside the addon. */
export const shim2025 = existsSync(path.join(ROOT, 'dpctl_memory_shim.so'));
export const shim2026 = existsSync(path.join(ROOT, 'dpctl_memory_shim_sycl9.so'));
/** The 2026 runtime is installed and its shim built: it can be named and used. */
export const usable2026 = isComplete(runtime2026, RUNTIMES[2026]) && shim2026;
