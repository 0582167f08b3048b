// Installs npm dependencies when they are missing or older than package-lock.json, so that
// `npm start` and `npm test` work on a fresh clone. Plain Node: it runs before any dependency exists.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const lock = path.join(root, 'package-lock.json');
const installed = path.join(root, 'node_modules', '.package-lock.json');

const mtime = (file) => (fs.existsSync(file) ? fs.statSync(file).mtimeMs : 0);
if (mtime(installed) === 0 || mtime(installed) < mtime(lock)) {
  process.stderr.write('Installing npm dependencies (npm ci)...\n');
  if (Number(process.versions.node.split('.')[0]) < 24) {
    // package.json's engines asks for Node 24; the `node` package brings it (node_modules/.bin,
    // first on PATH in every npm script), so npm's EBADENGINE warning names the system Node only.
    process.stderr.write(
      `System Node ${process.version}: npm installs Node 24 into node_modules, and every npm script runs on it.\n`,
    );
  }
  const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=notice'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
