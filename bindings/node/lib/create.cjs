'use strict';
// The op layer's `sandbox.create` arguments from the official option bags (Sandbox.create,
// Sandbox.createFromTemplate) and from the raw CreateSandboxRequest (sandbox.sandboxes).

const { InvalidArgumentException } = require('./errors.cjs');

function unsupported(name, v) {
  if (v == null || v === false) return;
  if (Array.isArray(v) && v.length === 0) return;
  throw new InvalidArgumentException({ message: `${name} is not supported by opensandbox-node yet` });
}

function imageArg(image) {
  if (image == null || typeof image === 'string') return image;
  return image.uri;
}

/** `image.auth` → the op layer's `image_auth` (the core has username/password only). */
function imageAuthArg(image) {
  if (image == null || typeof image === 'string' || image.auth == null) return undefined;
  const a = image.auth;
  unsupported('image.auth.token', a.token);
  return { username: a.username, password: a.password };
}

function volumeArg(v) {
  const h = v.host;
  const p = v.pvc;
  const o = v.ossfs;
  return {
    name: v.name,
    mount_path: v.mountPath,
    read_only: v.readOnly ?? undefined,
    sub_path: v.subPath ?? undefined,
    host: h == null ? undefined : { path: h.path },
    pvc: p == null ? undefined : {
      claim_name: p.claimName,
      create_if_not_exists: p.createIfNotExists ?? undefined,
      delete_on_sandbox_termination: p.deleteOnSandboxTermination ?? undefined,
      storage_class: p.storageClass ?? undefined,
      storage: p.storage ?? undefined,
      access_modes: p.accessModes ?? undefined,
    },
    ossfs: o == null ? undefined : {
      bucket: o.bucket,
      endpoint: o.endpoint,
      access_key_id: o.accessKeyId,
      access_key_secret: o.accessKeySecret,
      version: o.version ?? undefined,
      options: o.options ?? undefined,
    },
  };
}

function stringMap(m) {
  if (m == null) return undefined;
  const out = {};
  for (const [k, v] of Object.entries(m)) out[k] = typeof v === 'string' ? v : JSON.stringify(v);
  return out;
}

function networkPolicyArg(p) {
  if (p == null) return undefined;
  return {
    default_action: p.defaultAction,
    egress: (p.egress ?? []).map((r) => ({ action: r.action, target: r.target })),
  };
}

const hookArg = (h) => ({ command: h.command, timeout_seconds: h.timeoutSeconds ?? h.timeout_seconds });

/**
 * Extension (1.1, as the Python SDK's `SandboxLifecycle`): `{preStart: {command,
 * timeoutSeconds}, periodic: [{name, schedule, command, timeoutSeconds}]}`.
 */
function lifecycleArg(l) {
  if (l == null) return undefined;
  const pre = l.preStart ?? l.pre_start;
  return {
    pre_start: pre == null ? undefined : hookArg(pre),
    periodic: l.periodic == null ? undefined : l.periodic.map((h) => ({ name: h.name, schedule: h.schedule, ...hookArg(h) })),
  };
}

module.exports = {
  unsupported, imageArg, imageAuthArg, volumeArg, stringMap, networkPolicyArg, lifecycleArg,
};
