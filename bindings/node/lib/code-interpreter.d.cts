// GENERATED from ../code-interpreter.d.ts by scripts/gen-dcts.mjs: do not edit.
// The @alibaba-group/opensandbox-code-interpreter surface (re-exported from the main entry).
export { CodeInterpreter, Codes, SupportedLanguages } from './index.cjs';
export type { CodeContext, RunCodeOptions, SupportedLanguage } from './index.cjs';
