'use strict';
// Op-layer results (snake_case, RFC 3339 strings) → the official shapes (camelCase,
// Date objects), and the official filters → the op layer's arguments.

const { date, dateOrNull } = require('./util.cjs');

// op-layer results (snake_case, RFC 3339 strings) → the official shapes

function sandboxInfo(i) {
  if (!i) return i;
  const out = {
    id: i.id,
    status: {
      state: i.status.state,
      reason: i.status.reason ?? undefined,
      message: i.status.message ?? undefined,
      lastTransitionAt: date(i.status.last_transition_at),
    },
    entrypoint: i.entrypoint ?? [],
    metadata: i.metadata ?? {},
    createdAt: date(i.created_at),
    expiresAt: dateOrNull(i.expires_at),
  };
  if (i.image) out.image = i.image;
  if (i.snapshot_id != null) out.snapshotId = i.snapshot_id;
  if (i.platform) out.platform = i.platform;
  if (i.extensions && Object.keys(i.extensions).length) out.extensions = i.extensions;
  return out;
}

function snapshotInfo(s) {
  return {
    id: s.id,
    sandboxId: s.sandbox_id,
    name: s.name ?? undefined,
    status: {
      state: s.status.state,
      reason: s.status.reason ?? undefined,
      message: s.status.message ?? undefined,
      lastTransitionAt: date(s.status.last_transition_at),
    },
    createdAt: date(s.created_at),
  };
}

function fileInfo(e) {
  return {
    path: e.path,
    type: e.type,
    size: e.size,
    modifiedAt: date(e.modified_at),
    createdAt: date(e.created_at),
    mode: e.mode,
    owner: e.owner,
    group: e.group,
  };
}

function policy(p) {
  const out = {};
  if (p.default_action != null) out.defaultAction = p.default_action;
  out.egress = p.egress ?? [];
  return out;
}

function pagination(p) {
  if (!p) return p;
  return {
    page: p.page,
    pageSize: p.page_size,
    totalItems: p.total_items,
    totalPages: p.total_pages,
    hasNextPage: p.has_next_page,
  };
}

function metrics(m) {
  return {
    cpuCount: m.cpu_count,
    cpuUsedPercentage: m.cpu_used_percentage,
    memoryTotalMiB: m.memory_total_in_mib,
    memoryUsedMiB: m.memory_used_in_mib,
    timestamp: m.timestamp,
  };
}

function diagnostic(d) {
  return {
    sandboxId: d.sandbox_id,
    kind: d.kind,
    scope: d.scope,
    delivery: d.delivery,
    contentType: d.content_type,
    truncated: d.truncated,
    content: d.content,
    contentUrl: d.content_url,
    contentLength: d.content_length,
    expiresAt: d.expires_at,
    warnings: d.warnings,
  };
}

const endpoint = (e) => ({ endpoint: e.endpoint, headers: e.headers });

/** Official filters → the op layer's (`pageSize` → `page_size`). */
function filterArgs(f = {}) {
  return { states: f.states, metadata: f.metadata, page: f.page, page_size: f.pageSize ?? f.page_size };
}


module.exports = { sandboxInfo, snapshotInfo, fileInfo, policy, pagination, metrics, diagnostic, endpoint, filterArgs };
