// The @alibaba-group/opensandbox-code-interpreter surface (re-exported from the main entry).
export { CodeInterpreter, Codes, SupportedLanguages } from './index.js';
export type { CodeContext, RunCodeOptions, SupportedLanguage } from './index.js';
