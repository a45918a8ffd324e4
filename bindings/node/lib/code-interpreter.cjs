'use strict';
// The @alibaba-group/opensandbox-code-interpreter surface.
const m = require('./index.cjs');

module.exports = { CodeInterpreter: m.CodeInterpreter, Codes: m.Codes, SupportedLanguages: m.SupportedLanguages };
