'use strict';
// (1.1) Templates (extension: the official npm 0.1.11 has none; names follow the Python
// SDK's `SandboxManager.create_template` ... camelCased): request and TemplateInfo shapes.

const { date } = require('./util.cjs');

/** `{templateId, image, publish, format, status: {phase, manifestRef, message}, ...}`. */
function templateInfo(t) {
  const out = {
    templateId: t.template_id,
    image: t.image,
    publish: t.publish,
    format: t.format,
    status: {
      phase: t.status.phase,
      manifestRef: t.status.manifest_ref ?? undefined,
      message: t.status.message ?? undefined,
    },
    createdAt: date(t.created_at),
    updatedAt: date(t.updated_at),
  };
  if (t.resource_limits != null) out.resourceLimits = t.resource_limits;
  if (t.entrypoint != null) out.entrypoint = t.entrypoint;
  if (t.env != null) out.env = t.env;
  if (t.metadata != null) out.metadata = t.metadata;
  if (t.readiness != null) {
    out.readiness = { probe: t.readiness.probe ?? undefined, warmupSeconds: t.readiness.warmup_seconds ?? undefined };
  }
  return out;
}

/** CreateTemplateRequest (`{image, publish, resourceLimits, entrypoint, env, metadata, readiness, format}`). */
function templateRequestArgs(r = {}) {
  const rd = r.readiness;
  return {
    image: r.image,
    publish: r.publish,
    resource_limits: r.resourceLimits,
    entrypoint: r.entrypoint,
    env: r.env,
    metadata: r.metadata,
    readiness: rd == null ? undefined : { probe: rd.probe, warmup_seconds: rd.warmupSeconds },
    format: r.format,
  };
}

module.exports = { templateInfo, templateRequestArgs };
