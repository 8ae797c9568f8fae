// The builtin fs module plus globSync (string results, relative to options.cwd like Node 22's).
import fs from 'node:fs';
import { globSync as globPackageSync } from 'glob';

export * from 'node:fs';
export default fs;
export function globSync(pattern, options = {}) {
  return globPackageSync(pattern, { cwd: options.cwd ?? process.cwd() });
}
