// Writes the CommonJS declarations (lib/*.d.cts, the `require` condition's types) from
// the ESM ones (*.d.ts): the same text, imports pointing at the .cjs siblings. Run after
// editing a .d.ts (`node scripts/gen-dcts.mjs`); tests/exports.test.mjs fails when stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = new URL('..', import.meta.url);
export const ENTRIES = ['index', 'internal', 'code-interpreter', 'pool-redis'];

/** The .d.cts text of entry `name`. */
export function dcts(name) {
  const src = readFileSync(new URL(`${name}.d.ts`, root), 'utf8');
  return (
    `// GENERATED from ../${name}.d.ts by scripts/gen-dcts.mjs: do not edit.\n` +
    src.replace(/from '\.\/(index|internal|code-interpreter|pool-redis)\.js'/g, "from './$1.cjs'")
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const name of ENTRIES) writeFileSync(new URL(`lib/${name}.d.cts`, root), dcts(name));
}
