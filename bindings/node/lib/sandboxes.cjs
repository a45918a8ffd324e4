'use strict';
// `sandbox.sandboxes`: the official raw lifecycle service (`Sandboxes`: createSandbox,
// getSandbox, listSandboxes, ... with the official request/response shapes) over the
// op layer's `sandbox.*` / `manager.*` ops of one ConnectionConfig.

const { call, InvalidArgumentException } = require('./errors.cjs');
const { clean, date } = require('./util.cjs');
const { sandboxInfo, snapshotInfo, pagination, endpoint, filterArgs } = require('./shapes.cjs');
const { imageArg, imageAuthArg, volumeArg, stringMap, networkPolicyArg } = require('./create.cjs');

class SandboxesService {
  /** @internal `config`: a ConnectionConfig. */
  constructor(config) {
    Object.defineProperty(this, '_config', { value: config, enumerable: false });
  }

  async _call(op, args) {
    return call(this._config._native().call(op, clean(args ?? {})));
  }

  /**
   * `POST /sandboxes` with a CreateSandboxRequest, answered once the server accepted it
   * (no readiness wait; an absent `timeout` is no expiry, as on the wire; an absent
   * `entrypoint` or `resourceLimits` takes the core's defaults, the official ones).
   */
  async createSandbox(req = {}) {
    const opened = await this._call('sandbox.create', {
      image: req.image == null ? undefined : imageArg(req.image),
      image_auth: imageAuthArg(req.image),
      snapshot_id: req.snapshotId,
      entrypoint: req.entrypoint,
      platform: req.platform == null ? undefined : { os: req.platform.os, arch: req.platform.arch },
      secure_access: req.secureAccess,
      timeout_s: req.timeout ?? null,
      resource: req.resourceLimits,
      resource_requests: req.resourceRequests,
      env: req.env,
      metadata: req.metadata,
      network_policy: networkPolicyArg(req.networkPolicy),
      credential_proxy: req.credentialProxy == null ? undefined : { enabled: req.credentialProxy.enabled ?? undefined },
      volumes: req.volumes == null ? undefined : req.volumes.map(volumeArg),
      extensions: stringMap(req.extensions),
      skip_health_check: true,
    });
    this._config._native().release(opened.handle);
    const info = await this.getSandbox(opened.id);
    const out = {
      id: info.id,
      status: info.status,
      metadata: info.metadata,
      expiresAt: info.expiresAt,
      createdAt: info.createdAt,
      entrypoint: info.entrypoint,
    };
    if (info.platform) out.platform = info.platform;
    if (info.extensions) out.extensions = info.extensions;
    return out;
  }

  async getSandbox(sandboxId) {
    return sandboxInfo(await this._call('manager.get_sandbox_info', { sandbox_id: sandboxId }));
  }
  async listSandboxes(params = {}) {
    const r = await this._call('manager.list_sandbox_infos', filterArgs(params));
    return { items: r.sandbox_infos.map(sandboxInfo), pagination: pagination(r.pagination) };
  }
  async patchSandboxMetadata(sandboxId, patch) {
    return sandboxInfo(await this._call('manager.patch_sandbox_metadata', { sandbox_id: sandboxId, patch }));
  }
  async deleteSandbox(sandboxId) {
    await this._call('manager.kill_sandbox', { sandbox_id: sandboxId });
  }
  async pauseSandbox(sandboxId) {
    await this._call('manager.pause_sandbox', { sandbox_id: sandboxId });
  }
  async resumeSandbox(sandboxId) {
    await this._call('manager.resume_sandbox', { sandbox_id: sandboxId });
  }
  /**
   * `req.expiresAt` (ISO 8601). The op layer renews by a duration from now, so the
   * server's new expiry may differ from `expiresAt` by the call's latency (whole seconds).
   */
  async renewSandboxExpiration(sandboxId, req = {}) {
    const at = Date.parse(req.expiresAt);
    if (Number.isNaN(at)) {
      throw new InvalidArgumentException({ message: `expiresAt is not a date: ${req.expiresAt}` });
    }
    const seconds = Math.max(1, Math.ceil((at - Date.now()) / 1000));
    const r = await this._call('manager.renew_sandbox', { sandbox_id: sandboxId, seconds });
    return { expiresAt: date(r.expires_at) };
  }
  async createSnapshot(sandboxId, req = {}) {
    return snapshotInfo(await this._call('manager.create_snapshot', { sandbox_id: sandboxId, name: req.name }));
  }
  async getSnapshot(snapshotId) {
    return snapshotInfo(await this._call('manager.get_snapshot', { snapshot_id: snapshotId }));
  }
  async listSnapshots(params = {}) {
    const { sandboxId, name, ...rest } = params;
    if (name != null) {
      throw new InvalidArgumentException({ message: 'listSnapshots: the name filter is not supported by opensandbox-node' });
    }
    const r = await this._call('manager.list_snapshots', { ...filterArgs(rest), sandbox_id: sandboxId, metadata: undefined });
    return { items: r.snapshot_infos.map(snapshotInfo), pagination: pagination(r.pagination) };
  }
  async deleteSnapshot(snapshotId) {
    await this._call('manager.delete_snapshot', { snapshot_id: snapshotId });
  }
  /** `useServerProxy` is accepted: this core always goes through the server's proxy. */
  async getSandboxEndpoint(sandboxId, port, _useServerProxy) {
    return endpoint(await this._call('manager.get_endpoint', { sandbox_id: sandboxId, port }));
  }
  async getSignedEndpoint(sandboxId, port, expires) {
    const n = this._config._native();
    const opened = await this._call('sandbox.connect', { sandbox_id: sandboxId, skip_health_check: true });
    try {
      return endpoint(await this._call('sandbox.get_signed_endpoint', { sandbox: opened.handle, port, expires }));
    } finally {
      n.release(opened.handle);
    }
  }
}

module.exports = { SandboxesService };
