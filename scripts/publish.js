#!/usr/bin/env node
// Publishes a release in one command, as napi-rs projects do (`napi version`, then
// `napi pre-publish`, then `npm publish`):
//
//   node scripts/publish.js <version | patch | minor | major> [--dry-run] [--tag T] [--otp CODE]
//
// 1. sets the version of both packages: package.json and package-lock.json of
//    dpctl-memory, and npm/<platform>/package.json of every platform package;
// 2. checks that the release build (`npm run build`, or `npm start`) is newer than every
//    source, so that no stale binary is published;
// 3. packs both (scripts/pack.js) into target/npm;
// 4. publishes every platform package first, then dpctl-memory, whose
//    optionalDependencies name them at the same version (npm must find them when a user
//    installs it).
//
// --dry-run writes nothing into the repository: it packs at the new version into a
// temporary folder and runs `npm publish --dry-run` on each tarball, in the same order.
// After a real publish, commit the bump and tag it (the script prints the commands).
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { packAll, PLATFORMS } = require('./pack.js');

const root = path.resolve(__dirname, '..');
const USAGE = 'usage: node scripts/publish.js <version | patch | minor | major> [--dry-run] [--tag T] [--otp CODE]';

/** `current` bumped by `how` (patch, minor, major), or `how` itself when it is a version. */
function nextVersion(current, how) {
  const parts = /^(\d+)\.(\d+)\.(\d+)$/.exec(current);
  if (!parts) throw new Error(`the current version ${current} is not x.y.z`);
  const [major, minor, patch] = parts.slice(1).map(Number);
  if (how === 'patch') return `${major}.${minor}.${patch + 1}`;
  if (how === 'minor') return `${major}.${minor + 1}.0`;
  if (how === 'major') return `${major + 1}.0.0`;
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(how ?? '')) throw new Error(`'${how}' is neither a version nor patch, minor or major\n${USAGE}`);
  return how;
}

function parseArgs(argv) {
  const options = { dryRun: false, tag: null, otp: null, version: null };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--dry-run') options.dryRun = true;
    else if (arg === '--tag' || arg === '--otp') {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value\n${USAGE}`);
      options[arg.slice(2)] = argv[++i];
    } else if (arg === '--help' || arg === '-h') options.help = true;
    else if (arg.startsWith('-')) throw new Error(`unknown option '${arg}'\n${USAGE}`);
    else if (options.version === null) options.version = arg;
    else throw new Error(`one version only\n${USAGE}`);
  }
  return options;
}

const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));
const writeJson = (file, value) => fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);

/** Sets `version` in every manifest of the release (the repository's files). */
function bump(version) {
  const manifest = path.join(root, 'package.json');
  writeJson(manifest, { ...readJson(manifest), version });
  const lockFile = path.join(root, 'package-lock.json');
  if (fs.existsSync(lockFile)) {
    const lock = readJson(lockFile);
    lock.version = version;
    if (lock.packages?.['']) lock.packages[''].version = version;
    writeJson(lockFile, lock);
  }
  for (const triple of PLATFORMS) {
    const file = path.join(root, 'npm', triple, 'package.json');
    writeJson(file, { ...readJson(file), version });
  }
}

/** Newest modification time of the files under `paths` (files or folders of the repository). */
function newest(paths) {
  let latest = 0;
  const visit = (p) => {
    if (!fs.existsSync(p)) return;
    const stat = fs.statSync(p);
    if (stat.isDirectory()) for (const entry of fs.readdirSync(p)) visit(path.join(p, entry));
    else latest = Math.max(latest, stat.mtimeMs);
  };
  for (const p of paths) visit(path.join(root, p));
  return latest;
}

/** Refuses to publish binaries older than their sources (what scripts/setup.js rebuilds). */
function checkBuild() {
  const sources = newest(['src', 'shim', 'build.rs', 'Cargo.toml', 'Cargo.lock', 'runtime.json']);
  for (const triple of PLATFORMS) {
    // The addon is relinked by every build; the shim only when its own sources change.
    const addon = path.join(root, `dpctl-memory.${triple}.node`);
    for (const file of [addon, path.join(root, 'dpctl_memory_shim.so'), path.join(root, 'dpctl_memory_shim_sycl9.so')]) {
      if (!fs.existsSync(file)) throw new Error(`${path.basename(file)} is not built: run \`npm run build\` first (the SYCL 2026 shim needs \`npx dpctl-memory-install-runtime --sycl 2026\` before it)`);
    }
    if (fs.statSync(addon).mtimeMs < sources) throw new Error(`${path.basename(addon)} is older than the sources: run \`npm run build\` first`);
  }
}

function run(command, args) {
  console.log(`$ ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (result.error) throw new Error(`could not run ${command}: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status})`);
}

function main() {
  const options = parseArgs(process.argv.slice(2));
  if (options.help) {
    console.log(USAGE);
    return;
  }
  if (options.version === null) throw new Error(USAGE);
  const current = readJson(path.join(root, 'package.json')).version;
  const version = nextVersion(current, options.version);
  console.log(`dpctl-memory publish: ${current} -> ${version}${options.dryRun ? ' (dry run: the repository is not changed)' : ''}`);

  checkBuild();
  let dest = path.join(root, 'target', 'npm');
  if (options.dryRun) {
    dest = fs.mkdtempSync(path.join(os.tmpdir(), 'dpctl-memory-publish-'));
  } else {
    bump(version);
  }
  try {
    // Platform packages first: the main package's optionalDependencies name them.
    const tarballs = packAll(dest, options.dryRun ? { version } : {});
    const flags = ['--access', 'public'];
    if (options.tag) flags.push('--tag', options.tag);
    if (options.otp) flags.push('--otp', options.otp);
    if (options.dryRun) flags.push('--dry-run');
    for (const tarball of tarballs) run('npm', ['publish', tarball, ...flags]);
  } finally {
    if (options.dryRun) fs.rmSync(dest, { recursive: true, force: true });
  }
  if (!options.dryRun) {
    console.log(`published ${version}. Commit the bump and tag it:\n  git commit -am 'release ${version}' && git tag v${version}`);
  } else {
    console.log(`dry run of ${version} done: nothing was published`);
  }
}

try {
  main();
} catch (err) {
  console.error(`dpctl-memory publish: ${err.message}`);
  process.exit(1);
}
