'use strict';
// RedisPoolStateStore (the official `./pool-redis` subpath): the pool state in Redis, one
// Lua script per state change so each is atomic, every time taken from Redis's own clock.
// The key layout is the official SDKs' (and this repository's Python and Go stores'), so
// pools of any of them can share a namespace. Per pool, under
// `{prefix}:{<base64url(poolName)>}:` (the braces keep a pool in one Cluster hash slot):
//   idle:list      LIST of idle ids, oldest first (hand-out order; may hold stale ids)
//   idle:expires   HASH id → expiry (ms since the epoch): an id is idle while it is here
//   lock           the primary lock (value = owner id, PX = TTL)
//   maxIdle, idleTtlMillis          shared settings
//   destroy:state, destroy:owner    the destroy tombstone (any value fences writes)
// The client is the caller's (node-redis's `createClient()`, or anything with
// `sendCommand(string[])`); the store never connects or quits it.

const { InvalidArgumentException, PoolDestroyedException, PoolStateStoreUnavailableException } = require('./errors.cjs');
const { PoolDestroyState } = require('./pool.cjs');

const DEFAULT_KEY_PREFIX = 'opensandbox:pool';
const DEFAULT_IDLE_TTL_MILLIS = 24 * 60 * 60 * 1000;
const FENCED = -1;

const NOW_MS = `
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

// KEYS: idle list, expiry hash. ARGV: min remaining TTL (ms).
// nil, or {taken id or '', {ids skipped alive for too little TTL}}.
const TAKE_IDLE = `${NOW_MS}
local cutoff_ms = now_ms + (tonumber(ARGV[1]) or 0)
local skipped = {}
while true do
  local id = redis.call('LPOP', KEYS[1])
  if not id then
    if #skipped == 0 then return nil end
    return {'', skipped}
  end
  local exp = redis.call('HGET', KEYS[2], id)
  if exp then
    redis.call('HDEL', KEYS[2], id)
    exp = tonumber(exp)
    if exp > cutoff_ms then return {id, skipped} end
    if exp > now_ms then table.insert(skipped, id) end
  end
end`;

// KEYS: idle list, expiry hash, destroy state. ARGV: id, TTL (ms). -1 fenced, 0 already idle, 1 added.
const PUT_IDLE = `
if redis.call('GET', KEYS[3]) then return -1 end
${NOW_MS}
local current = redis.call('HGET', KEYS[2], ARGV[1])
if current and tonumber(current) > now_ms then return 0 end
if not current then redis.call('RPUSH', KEYS[1], ARGV[1]) end
redis.call('HSET', KEYS[2], ARGV[1], now_ms + tonumber(ARGV[2]))
return 1`;

// KEYS: lock, destroy state. ARGV: owner, TTL (ms). Takes a free lock or extends our own.
const ACQUIRE_LOCK = `
if redis.call('GET', KEYS[2]) then return 0 end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`;

// KEYS: lock, destroy state. ARGV: owner, TTL (ms). Extends only a lock we still hold.
const RENEW_LOCK = `
if redis.call('GET', KEYS[2]) then return 0 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`;

// KEYS: lock. ARGV: owner. Never deletes another owner's lock.
const RELEASE_LOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

// KEYS: idle list, expiry hash. ARGV: min remaining TTL (ms). Returns the dropped ids still alive.
const REAP_IDLE = `${NOW_MS}
local cutoff_ms = now_ms + (tonumber(ARGV[1]) or 0)
local alive = {}
local entries = redis.call('HGETALL', KEYS[2])
for i = 1, #entries, 2 do
  local exp = tonumber(entries[i + 1])
  if exp <= cutoff_ms then
    redis.call('HDEL', KEYS[2], entries[i])
    redis.call('LREM', KEYS[1], 0, entries[i])
    if exp > now_ms then table.insert(alive, entries[i]) end
  end
end
return alive`;

// KEYS: value key, destroy state. ARGV: value. -1 when fenced.
const SET_FENCED = `
if redis.call('GET', KEYS[2]) then return -1 end
redis.call('SET', KEYS[1], ARGV[1])
return 1`;

// KEYS: destroy state, destroy owner. ARGV: 'DESTROYING', 'DESTROYED', owner. -1 when already destroyed.
const BEGIN_DESTROY = `
if redis.call('GET', KEYS[1]) == ARGV[2] then return -1 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[3])
return 1`;

function bad(message) {
  return new InvalidArgumentException({ message });
}
function requireName(value, name) {
  if (typeof value !== 'string' || !value.trim()) throw bad(`${name} must not be blank`);
}
function requireNonNegative(value, name) {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw bad(`${name} must be non-negative`);
}
function requirePositive(value, name) {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw bad(`${name} must be positive`);
}
function millis(seconds) {
  return String(Math.max(1, Math.floor(seconds * 1000)));
}

function str(value) {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  return String(value);
}
function int(value) {
  if (value == null) return undefined;
  const n = Number(str(value));
  return Number.isSafeInteger(n) ? n : undefined;
}
function list(value) {
  return Array.isArray(value) ? value : [];
}

/** Redis-backed distributed pool state. The caller owns the Redis client's lifecycle. */
class RedisPoolStateStore {
  #client;
  #prefix;

  constructor(options) {
    if (options == null || options.client == null) throw bad('client is required');
    if (typeof options.client.sendCommand !== 'function') {
      throw bad('client must have sendCommand(args: string[]) (a node-redis client)');
    }
    if (options.keyPrefix !== undefined) requireName(options.keyPrefix, 'keyPrefix');
    this.#client = options.client;
    this.#prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
  }

  get keyPrefix() {
    return this.#prefix;
  }

  async tryTakeIdle(poolName) {
    return (await this.tryTakeIdleWithMinTtl(poolName, 0)).sandboxId;
  }

  async tryTakeIdleWithMinTtl(poolName, minRemainingTtlSeconds) {
    requireNonNegative(minRemainingTtlSeconds, 'minRemainingTtlSeconds');
    const k = this.#keys(poolName);
    return this.#run('tryTakeIdle', poolName, async () => {
      const r = await this.#eval(TAKE_IDLE, [k.idleList, k.idleExpires], [String(Math.floor(minRemainingTtlSeconds * 1000))]);
      if (r == null) return { discardedAliveSandboxIds: [] };
      if (!Array.isArray(r)) throw new Error(`unexpected reply of the take-idle script: ${str(r)}`);
      const taken = r.length > 0 && r[0] != null ? str(r[0]) : '';
      const discardedAliveSandboxIds = list(r[1]).map(str);
      return taken ? { sandboxId: taken, discardedAliveSandboxIds } : { discardedAliveSandboxIds };
    });
  }

  async putIdle(poolName, sandboxId) {
    requireName(sandboxId, 'sandboxId');
    const k = this.#keys(poolName);
    await this.#run('putIdle', poolName, async () => {
      const ttl = int(await this.#cmd(['GET', k.idleTtl])) ?? DEFAULT_IDLE_TTL_MILLIS;
      await this.#fenced(poolName, PUT_IDLE, [k.idleList, k.idleExpires, k.destroyState], [sandboxId, String(Math.max(1, ttl))]);
    });
  }

  async removeIdle(poolName, sandboxId) {
    const k = this.#keys(poolName);
    await this.#run('removeIdle', poolName, async () => {
      await this.#cmd(['HDEL', k.idleExpires, sandboxId]);
      await this.#cmd(['LREM', k.idleList, '0', sandboxId]);
    });
  }

  async tryAcquirePrimaryLock(poolName, ownerId, ttlSeconds) {
    requireName(ownerId, 'ownerId');
    requirePositive(ttlSeconds, 'ttlSeconds');
    const k = this.#keys(poolName);
    return this.#run('tryAcquirePrimaryLock', poolName, async () =>
      int(await this.#eval(ACQUIRE_LOCK, [k.lock, k.destroyState], [ownerId, millis(ttlSeconds)])) === 1,
    );
  }

  async renewPrimaryLock(poolName, ownerId, ttlSeconds) {
    requireName(ownerId, 'ownerId');
    requirePositive(ttlSeconds, 'ttlSeconds');
    const k = this.#keys(poolName);
    return this.#run('renewPrimaryLock', poolName, async () =>
      int(await this.#eval(RENEW_LOCK, [k.lock, k.destroyState], [ownerId, millis(ttlSeconds)])) === 1,
    );
  }

  async releasePrimaryLock(poolName, ownerId) {
    const k = this.#keys(poolName);
    await this.#run('releasePrimaryLock', poolName, () => this.#eval(RELEASE_LOCK, [k.lock], [ownerId]));
  }

  async reapExpiredIdle(poolName, now) {
    await this.reapExpiredIdleWithMinTtl(poolName, now, 0);
  }

  /** `now` is ignored: expiry is judged by Redis's clock, which all instances share. */
  async reapExpiredIdleWithMinTtl(poolName, _now, minRemainingTtlSeconds) {
    requireNonNegative(minRemainingTtlSeconds, 'minRemainingTtlSeconds');
    const k = this.#keys(poolName);
    return this.#run('reapExpiredIdle', poolName, async () => ({
      discardedAliveSandboxIds: list(
        await this.#eval(REAP_IDLE, [k.idleList, k.idleExpires], [String(Math.floor(minRemainingTtlSeconds * 1000))]),
      ).map(str),
    }));
  }

  async snapshotCounters(poolName) {
    const k = this.#keys(poolName);
    return this.#run('snapshotCounters', poolName, async () => ({
      idleCount: int(await this.#cmd(['HLEN', k.idleExpires])) ?? 0,
    }));
  }

  async snapshotIdleEntries(poolName) {
    const k = this.#keys(poolName);
    return this.#run('snapshotIdleEntries', poolName, async () => {
      const ids = list(await this.#cmd(['LRANGE', k.idleList, '0', '-1'])).map(str);
      const raw = await this.#cmd(['HGETALL', k.idleExpires]);
      const expires = new Map();
      if (Array.isArray(raw)) {
        for (let i = 0; i + 1 < raw.length; i += 2) expires.set(str(raw[i]), int(raw[i + 1]));
      } else if (raw && typeof raw === 'object') {
        for (const [id, v] of Object.entries(raw)) expires.set(id, int(v));
      }
      // The list may hold stale ids (taken or removed): the hash decides membership.
      const seen = new Set();
      const out = [];
      for (const id of ids) {
        const at = expires.get(id);
        if (at === undefined || seen.has(id)) continue;
        seen.add(id);
        out.push({ sandboxId: id, expiresAt: new Date(at) });
      }
      return out;
    });
  }

  async getMaxIdle(poolName) {
    const k = this.#keys(poolName);
    return this.#run('getMaxIdle', poolName, async () => int(await this.#cmd(['GET', k.maxIdle])));
  }

  async setMaxIdle(poolName, maxIdle) {
    if (!Number.isInteger(maxIdle) || maxIdle < 0) throw bad('maxIdle must be a non-negative integer');
    const k = this.#keys(poolName);
    await this.#run('setMaxIdle', poolName, () => this.#fenced(poolName, SET_FENCED, [k.maxIdle, k.destroyState], [String(maxIdle)]));
  }

  async setIdleEntryTtl(poolName, ttlSeconds) {
    requirePositive(ttlSeconds, 'ttlSeconds');
    const k = this.#keys(poolName);
    await this.#run('setIdleEntryTtl', poolName, () =>
      this.#fenced(poolName, SET_FENCED, [k.idleTtl, k.destroyState], [millis(ttlSeconds)]),
    );
  }

  async getDestroyState(poolName) {
    const k = this.#keys(poolName);
    return this.#run('getDestroyState', poolName, async () => {
      const v = await this.#cmd(['GET', k.destroyState]);
      const s = v == null ? undefined : str(v);
      if (s === PoolDestroyState.DESTROYING || s === PoolDestroyState.DESTROYED) return s;
      return PoolDestroyState.ACTIVE;
    });
  }

  async beginDestroy(poolName, ownerId) {
    requireName(ownerId, 'ownerId');
    const k = this.#keys(poolName);
    await this.#run('beginDestroy', poolName, async () => {
      const r = await this.#eval(
        BEGIN_DESTROY,
        [k.destroyState, k.destroyOwner],
        [PoolDestroyState.DESTROYING, PoolDestroyState.DESTROYED, ownerId],
      );
      if (int(r) === FENCED) throw new PoolDestroyedException(poolName, PoolDestroyState.DESTROYED);
    });
  }

  async clearPoolState(poolName) {
    const k = this.#keys(poolName);
    await this.#run('clearPoolState', poolName, () =>
      this.#cmd(['DEL', k.idleList, k.idleExpires, k.lock, k.maxIdle, k.idleTtl]),
    );
  }

  async markDestroyed(poolName, ownerId, tombstoneTtlSeconds) {
    requireName(ownerId, 'ownerId');
    if (tombstoneTtlSeconds != null) requirePositive(tombstoneTtlSeconds, 'tombstoneTtlSeconds');
    const k = this.#keys(poolName);
    await this.#run('markDestroyed', poolName, async () => {
      const ttl = tombstoneTtlSeconds == null ? [] : ['PX', millis(tombstoneTtlSeconds)];
      await this.#cmd(['SET', k.destroyState, PoolDestroyState.DESTROYED, ...ttl]);
      await this.#cmd(['SET', k.destroyOwner, ownerId, ...ttl]);
    });
  }

  #keys(poolName) {
    requireName(poolName, 'poolName');
    const tag = Buffer.from(poolName, 'utf8').toString('base64url');
    const base = `${this.#prefix}:{${tag}}:`;
    return {
      idleList: `${base}idle:list`,
      idleExpires: `${base}idle:expires`,
      lock: `${base}lock`,
      maxIdle: `${base}maxIdle`,
      idleTtl: `${base}idleTtlMillis`,
      destroyState: `${base}destroy:state`,
      destroyOwner: `${base}destroy:owner`,
    };
  }

  #cmd(args) {
    return this.#client.sendCommand(args);
  }

  #eval(script, keys, args) {
    return this.#cmd(['EVAL', script, String(keys.length), ...keys, ...args]);
  }

  async #fenced(poolName, script, keys, args) {
    if (int(await this.#eval(script, keys, args)) === FENCED) {
      const v = await this.#cmd(['GET', keys[keys.length - 1]]);
      const state = v == null ? PoolDestroyState.DESTROYING : str(v);
      throw new PoolDestroyedException(poolName, state);
    }
  }

  async #run(operation, poolName, fn) {
    try {
      return await fn();
    } catch (cause) {
      if (cause instanceof PoolDestroyedException || cause instanceof PoolStateStoreUnavailableException) throw cause;
      throw new PoolStateStoreUnavailableException(`${operation} poolName=${poolName}`, cause);
    }
  }
}
RedisPoolStateStore.DEFAULT_KEY_PREFIX = DEFAULT_KEY_PREFIX;

module.exports = { RedisPoolStateStore };
