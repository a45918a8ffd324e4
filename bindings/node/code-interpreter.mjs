import m from './lib/code-interpreter.js';

export const { CodeInterpreter, Codes, SupportedLanguages } = m;
export default m;
