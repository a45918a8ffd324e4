'use strict';
// The sandbox's egress service (port 18080): the network policy (official `Egress`) and,
// (1.1), the credential vault (official `CredentialVault`, `sandbox.credentialVault`),
// over the op layer's `sandbox.*_egress_*` and `credential_vault.*` ops, as the
// official EgressAdapter implements both. Vault values are write-only: every answer
// carries metadata only. Requests go as the official shapes (the wire's keys).

const { clean } = require('./util.cjs');
const { policy } = require('./shapes.cjs');

const credentialMeta = (c) => ({ name: c.name, sourceType: c.source_type, revision: c.revision });

function bindingMeta(b) {
  const out = { name: b.name, revision: b.revision };
  if (b.match) out.match = clean(Object.fromEntries(Object.entries(b.match).filter(([, v]) => v != null)));
  if (b.auth) out.auth = b.auth.name == null ? { type: b.auth.type } : { type: b.auth.type, name: b.auth.name };
  return out;
}

const vaultState = (v) => ({
  revision: v.revision,
  credentials: (v.credentials ?? []).map(credentialMeta),
  bindings: (v.bindings ?? []).map(bindingMeta),
});

class EgressService {
  constructor(sbx) {
    Object.defineProperty(this, '_s', { value: sbx, enumerable: false });
  }

  async getPolicy() {
    return policy(await this._s._call('sandbox.get_egress_policy'));
  }
  /** Merges `rules` into the policy (a rule replaces the one of its target). */
  async patchRules(rules) {
    await this._s._call('sandbox.patch_egress_rules', { rules: rules.map((r) => ({ action: r.action, target: r.target })) });
  }
  async deleteRules(targets) {
    await this._s._call('sandbox.delete_egress_rules', { targets });
  }

  /** Creates the vault and activates its first revision. */
  async create(request = {}) {
    return vaultState(await this._s._call('credential_vault.create', {
      credentials: request.credentials ?? [],
      bindings: request.bindings ?? [],
    }));
  }
  async get() {
    return vaultState(await this._s._call('credential_vault.get'));
  }
  /** Atomic patch; `expectedRevision` makes a stale patch fail with 409. */
  async patch(request = {}) {
    return vaultState(await this._s._call('credential_vault.patch', {
      expected_revision: request.expectedRevision,
      credentials: request.credentials,
      bindings: request.bindings,
    }));
  }
  async delete() {
    await this._s._call('credential_vault.delete');
  }
  async listCredentials() {
    return (await this._s._call('credential_vault.list_credentials')).map(credentialMeta);
  }
  async getCredential(name) {
    return credentialMeta(await this._s._call('credential_vault.get_credential', { name }));
  }
  async listBindings() {
    return (await this._s._call('credential_vault.list_bindings')).map(bindingMeta);
  }
  async getBinding(name) {
    return bindingMeta(await this._s._call('credential_vault.get_binding', { name }));
  }
}

module.exports = { EgressService };
