// Node 20 lacks fs.globSync (added in Node 22), which the conformance suite imports by name from
// 'fs' at load time. Load with `node --import ./node20-globsync.mjs`: it registers a resolve hook
// that hands the suite a small 'fs' module re-exporting the builtin plus a globSync backed by the
// glob package. On Node 22 and later the hook is not registered.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  register(new URL('./node20-globsync-hooks.mjs', import.meta.url));
}
