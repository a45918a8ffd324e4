'use strict';
// Loads the native addon: $OPENSANDBOX_NODE_ADDON, else the opensandbox.node shipped
// next to this package (copied from the cargo build by `make build-node`).
const path = require('node:path');

function load() {
  const candidates = [];
  if (process.env.OPENSANDBOX_NODE_ADDON) candidates.push(path.resolve(process.env.OPENSANDBOX_NODE_ADDON));
  candidates.push(path.join(__dirname, '..', 'opensandbox.node'));
  const errors = [];
  for (const p of candidates) {
    try {
      return require(p);
    } catch (e) {
      errors.push(`${p}: ${e && e.message}`);
    }
  }
  throw new Error(`opensandbox: cannot load the native addon (${errors.join('; ')})`);
}

module.exports = load();
