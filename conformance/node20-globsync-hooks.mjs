// Resolve hook: 'fs' / 'node:fs' imported from inside node_modules resolves to fs-with-glob.mjs.
const shim = new URL('./fs-with-glob.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('/node_modules/')) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
