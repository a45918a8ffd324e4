// ESLint (flat config) for the package's JavaScript: lib/*.cjs (CommonJS), the ESM entries,
// the tests and the benchmark. ESLint and its presets are not dependencies of the
// package: they are resolved next to the eslint being run (mk/node.mk installs them
// into .work/node/tools), so this file needs nothing installed here.
import { createRequire } from 'node:module';

const require = createRequire(process.argv[1]);
const js = require('@eslint/js');
const globals = require('globals');

export default [
  { ignores: ['node_modules/**'] },
  js.configs.recommended,
  {
    files: ['**/*.cjs'],
    languageOptions: { ecmaVersion: 2023, sourceType: 'commonjs', globals: globals.node },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: globals.node },
  },
  {
    rules: {
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
];
