'use strict';
// The @alibaba-group/opensandbox-code-interpreter surface.
const m = require('./index.js');

module.exports = { CodeInterpreter: m.CodeInterpreter, Codes: m.Codes, SupportedLanguages: m.SupportedLanguages };
