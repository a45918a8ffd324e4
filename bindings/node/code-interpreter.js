import m from './lib/code-interpreter.cjs';

export const { CodeInterpreter, Codes, SupportedLanguages } = m;
export default m;
