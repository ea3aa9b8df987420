// The glibc floor of what ships in the platform package: the highest GLIBC_ (and, for the
// C++ shim, GLIBCXX_) symbol version each binary needs, read from its ELF .gnu.version_r
// section. The addon is linked against glibc 2.17 (`napi build --use-napi-cross`); the shim
// must load wherever the SYCL runtime does (its wheels are manylinux_2_28), and its
// libstdc++ needs must be met by GCC 8's (RHEL 8).
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SHT_GNU_VERNEED = 0x6ffffffe;

/** Every version each needed library must provide: { 'libc.so.6': ['GLIBC_2.2.5', ...] }. */
function neededVersions(file) {
  const elf = readFileSync(file);
  if (elf.readUInt32BE(0) !== 0x7f454c46 || elf[4] !== 2 || elf[5] !== 1) throw new Error(`${file}: not a 64-bit little-endian ELF`);
  const shoff = Number(elf.readBigUInt64LE(0x28));
  const shentsize = elf.readUInt16LE(0x3a);
  const shnum = elf.readUInt16LE(0x3c);
  const section = (i) => {
    const at = shoff + i * shentsize;
    return { type: elf.readUInt32LE(at + 4), offset: Number(elf.readBigUInt64LE(at + 0x18)), link: elf.readUInt32LE(at + 0x28), info: elf.readUInt32LE(at + 0x2c) };
  };
  const cString = (at) => elf.toString('latin1', at, elf.indexOf(0, at));
  const out = {};
  for (let i = 0; i < shnum; i++) {
    const verneed = section(i);
    if (verneed.type !== SHT_GNU_VERNEED) continue;
    const strings = section(verneed.link).offset;
    // sh_info: the number of Verneed entries (one per library).
    for (let n = 0, at = verneed.offset; n < verneed.info; n++) {
      const count = elf.readUInt16LE(at + 2);
      const library = cString(strings + elf.readUInt32LE(at + 4));
      const versions = (out[library] ??= []);
      for (let k = 0, aux = at + elf.readUInt32LE(at + 8); k < count; k++) {
        versions.push(cString(strings + elf.readUInt32LE(aux + 8)));
        aux += elf.readUInt32LE(aux + 12);
      }
      at += elf.readUInt32LE(at + 12);
    }
  }
  return out;
}

/** The highest `PREFIX_a.b.c` among `versions` as [a, b, c], or null. */
function highest(versions, prefix) {
  const parsed = versions.filter((v) => v.startsWith(`${prefix}_`) && /^\d+(\.\d+)*$/.test(v.slice(prefix.length + 1)))
    .map((v) => v.slice(prefix.length + 1).split('.').map(Number));
  const compare = (a, b) => {
    for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
    return 0;
  };
  return parsed.sort(compare).pop() ?? null;
}

const atMost = (version, limit) => {
  for (let i = 0; i < limit.length; i++) if ((version[i] ?? 0) !== limit[i]) return (version[i] ?? 0) < limit[i];
  return true;
};

const BINARIES = [
  { file: 'dpctl-memory.linux-x64-gnu.node', limits: { GLIBC: [2, 17] } },
  { file: 'dpctl_memory_shim.so', limits: { GLIBC: [2, 28], GLIBCXX: [3, 4, 25] } },
  { file: 'dpctl_memory_shim_sycl9.so', limits: { GLIBC: [2, 28], GLIBCXX: [3, 4, 25] } },
];

for (const { file, limits } of BINARIES) {
  const full = path.join(ROOT, file);
  const floor = Object.entries(limits).map(([prefix, limit]) => `${prefix}_${limit.join('.')}`).join(', ');
  if (!existsSync(full)) {
    test(`${file} needs at most ${floor}`, (t) => t.fail(`${file} is not built: run \`npm run build\``));
    continue;
  }
  test(`${file} needs at most ${floor}`, (t) => {
    const all = Object.values(neededVersions(full)).flat();
    t.true(all.length > 0, 'the binary has a .gnu.version_r section with versions in it');
    for (const [prefix, limit] of Object.entries(limits)) {
      const top = highest(all, prefix);
      t.truthy(top, `it needs some ${prefix} version`);
      t.true(atMost(top, limit), `${file} needs ${prefix}_${top.join('.')}, above ${prefix}_${limit.join('.')}`);
      t.log(`${file}: ${prefix}_${top.join('.')}`);
    }
  });

  // The parser against binutils, where it is installed: the same set of versions.
  const objdump = spawnSync('objdump', ['-p', full], { encoding: 'utf8' });
  if (objdump.status === 0) {
    test(`${file}: the ELF reader agrees with objdump -p`, (t) => {
      const fromObjdump = [...objdump.stdout.matchAll(/^\s+0x[0-9a-f]+ 0x[0-9a-f]+ \d+ (\S+)$/gm)].map((m) => m[1]).sort();
      t.deepEqual(Object.values(neededVersions(full)).flat().sort(), fromObjdump);
    });
  }
}
