// Package poolredis is a Redis-backed opensandbox.PoolStateStore, so that pools in
// several processes (or hosts) share one idle buffer, one primary lock and one
// destroy fence. Every time is Redis's own clock (TIME), so skewed hosts agree.
//
// The key layout is the official SDKs' (Go, Python, Kotlin): pools of any of them
// can share a namespace. Per pool, under "{prefix}:{<base64url(poolName)>}:" (one
// Redis Cluster hash slot per pool):
//
//	idle:list       LIST of idle ids, oldest first
//	idle:expires    HASH id -> expiry (ms since the epoch); an id is idle only while here
//	lock            the primary lock (value: owner id, PX: lock TTL)
//	maxIdle         the shared idle target
//	idleTtlMillis   the TTL PutIdle gives new entries
//	destroy:state   DESTROYING / DESTROYED (any value fences writes)
//	destroy:owner   who fenced
package poolredis

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"

	opensandbox "github.com/alibaba/OpenSandbox/sdks/sandbox/go"
	"github.com/redis/go-redis/v9"
)

const nowMs = `
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

var (
	// KEYS: list, hash. ARGV: min remaining TTL (ms). nil, or {taken or '', {skipped alive}}.
	takeIdle = redis.NewScript(nowMs + `
local cutoff = now_ms + (tonumber(ARGV[1]) or 0)
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
    if exp > cutoff then return {id, skipped} end
    if exp > now_ms then table.insert(skipped, id) end
  end
end
`)

	// KEYS: list, hash, destroy state. ARGV: id, TTL (ms). -1 fenced, 0 already idle, 1 added.
	putIdle = redis.NewScript(`
if redis.call('GET', KEYS[3]) then return -1 end
` + nowMs + `
local cur = redis.call('HGET', KEYS[2], ARGV[1])
if cur and tonumber(cur) > now_ms then return 0 end
if cur then redis.call('LREM', KEYS[1], 0, ARGV[1]) end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], now_ms + tonumber(ARGV[2]))
return 1
`)

	// KEYS: list, hash. ARGV: id.
	removeIdle = redis.NewScript(`
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('LREM', KEYS[1], 0, ARGV[1])
return 1
`)

	// KEYS: lock, destroy state. ARGV: owner, TTL (ms), 1 to only renew.
	lockScript = redis.NewScript(`
if redis.call('GET', KEYS[2]) then return 0 end
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if cur or ARGV[3] == '1' then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

	// KEYS: lock. ARGV: owner.
	releaseLock = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

	// KEYS: list, hash. ARGV: min remaining TTL (ms). Returns the dropped ids still alive.
	reapIdle = redis.NewScript(nowMs + `
local cutoff = now_ms + (tonumber(ARGV[1]) or 0)
local alive = {}
local entries = redis.call('HGETALL', KEYS[2])
for i = 1, #entries, 2 do
  local exp = tonumber(entries[i + 1])
  if exp <= cutoff then
    redis.call('HDEL', KEYS[2], entries[i])
    redis.call('LREM', KEYS[1], 0, entries[i])
    if exp > now_ms then table.insert(alive, entries[i]) end
  end
end
return alive
`)

	// KEYS: list, hash. Returns {id, expiry ms, ...} of live entries in list order.
	liveEntries = redis.NewScript(nowMs + `
local out = {}
local seen = {}
for _, id in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local exp = redis.call('HGET', KEYS[2], id)
  if exp and tonumber(exp) > now_ms and not seen[id] then
    seen[id] = true
    table.insert(out, id)
    table.insert(out, exp)
  end
end
return out
`)

	// KEYS: value key, destroy state. ARGV: value. -1 when fenced.
	setFenced = redis.NewScript(`
if redis.call('GET', KEYS[2]) then return -1 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`)

	// KEYS: destroy state, destroy owner. ARGV: DESTROYING, DESTROYED, owner. -1 when tombstoned.
	beginDestroy = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[2] then return -1 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[3])
return 1
`)

	// KEYS: destroy state, destroy owner. ARGV: DESTROYED, owner, TTL (ms, 0 = forever).
	markDestroyed = redis.NewScript(`
local ttl = tonumber(ARGV[3])
if ttl and ttl > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl)
else
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('SET', KEYS[2], ARGV[2])
end
return 1
`)
)

// DefaultRedisKeyPrefix is the default key prefix.
const DefaultRedisKeyPrefix = "opensandbox:pool"

// RedisPoolStateStoreConfig configures a RedisPoolStateStore. The client is the
// caller's: the store neither creates nor closes connections.
type RedisPoolStateStoreConfig struct {
	Client    redis.UniversalClient
	KeyPrefix string // default DefaultRedisKeyPrefix
}

// RedisPoolStateStore is a PoolStateStore on Redis (Lua scripts make each change atomic).
type RedisPoolStateStore struct {
	client    redis.UniversalClient
	keyPrefix string
}

var _ opensandbox.PoolStateStore = (*RedisPoolStateStore)(nil)

// NewRedisPoolStateStore creates the store; config.Client is required.
func NewRedisPoolStateStore(config RedisPoolStateStoreConfig) (*RedisPoolStateStore, error) {
	if config.Client == nil {
		return nil, fmt.Errorf("opensandbox: RedisPoolStateStoreConfig.Client must not be nil")
	}
	prefix := config.KeyPrefix
	if prefix == "" {
		prefix = DefaultRedisKeyPrefix
	}
	return &RedisPoolStateStore{client: config.Client, keyPrefix: prefix}, nil
}

func unavailable(op string, err error) error {
	return &opensandbox.PoolStateStoreUnavailableError{Operation: op, Cause: err}
}

func millis(d time.Duration) string {
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return strconv.FormatInt(ms, 10)
}

func blank(field, value string) error {
	if value == "" {
		return &opensandbox.InvalidArgumentError{Field: field, Message: "must not be blank"}
	}
	return nil
}

func (s *RedisPoolStateStore) TryTakeIdle(ctx context.Context, poolName string) (string, error) {
	r, err := s.take(ctx, poolName, 0)
	if err != nil {
		return "", err
	}
	return r.SandboxID, nil
}

func (s *RedisPoolStateStore) TryTakeIdleWithMinTTL(ctx context.Context, poolName string, minRemaining time.Duration) (*opensandbox.TakeIdleResult, error) {
	return s.take(ctx, poolName, max(0, minRemaining.Milliseconds()))
}

func (s *RedisPoolStateStore) take(ctx context.Context, poolName string, minMs int64) (*opensandbox.TakeIdleResult, error) {
	raw, err := takeIdle.Run(ctx, s.client, []string{s.key(poolName, "idle:list"), s.key(poolName, "idle:expires")}, minMs).Result()
	res := &opensandbox.TakeIdleResult{}
	if errors.Is(err, redis.Nil) {
		return res, nil
	}
	if err != nil {
		return nil, unavailable("TryTakeIdle", err)
	}
	list, _ := raw.([]interface{})
	if len(list) > 0 {
		res.SandboxID, _ = list[0].(string)
	}
	if len(list) > 1 {
		res.DiscardedAliveSandboxIDs = toStrings(list[1])
	}
	return res, nil
}

func toStrings(v interface{}) []string {
	items, _ := v.([]interface{})
	var out []string
	for _, it := range items {
		if s, ok := it.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (s *RedisPoolStateStore) PutIdle(ctx context.Context, poolName string, sandboxID string) error {
	if err := blank("sandboxID", sandboxID); err != nil {
		return err
	}
	ttl, err := s.idleTTL(ctx, poolName)
	if err != nil {
		return err
	}
	keys := []string{s.key(poolName, "idle:list"), s.key(poolName, "idle:expires"), s.key(poolName, "destroy:state")}
	n, err := putIdle.Run(ctx, s.client, keys, sandboxID, ttl.Milliseconds()).Int64()
	if err != nil {
		return unavailable("PutIdle", err)
	}
	return s.fencedError(ctx, poolName, n)
}

func (s *RedisPoolStateStore) RemoveIdle(ctx context.Context, poolName string, sandboxID string) error {
	if err := blank("sandboxID", sandboxID); err != nil {
		return err
	}
	keys := []string{s.key(poolName, "idle:list"), s.key(poolName, "idle:expires")}
	if err := removeIdle.Run(ctx, s.client, keys, sandboxID).Err(); err != nil {
		return unavailable("RemoveIdle", err)
	}
	return nil
}

func (s *RedisPoolStateStore) lock(ctx context.Context, op, poolName, ownerID string, ttl time.Duration, renewOnly string) (bool, error) {
	if err := blank("ownerID", ownerID); err != nil {
		return false, err
	}
	keys := []string{s.PrimaryLockKey(poolName), s.key(poolName, "destroy:state")}
	n, err := lockScript.Run(ctx, s.client, keys, ownerID, millis(ttl), renewOnly).Int64()
	if err != nil {
		return false, unavailable(op, err)
	}
	return n == 1, nil
}

func (s *RedisPoolStateStore) TryAcquirePrimaryLock(ctx context.Context, poolName string, ownerID string, ttl time.Duration) (bool, error) {
	return s.lock(ctx, "TryAcquirePrimaryLock", poolName, ownerID, ttl, "0")
}

func (s *RedisPoolStateStore) RenewPrimaryLock(ctx context.Context, poolName string, ownerID string, ttl time.Duration) (bool, error) {
	return s.lock(ctx, "RenewPrimaryLock", poolName, ownerID, ttl, "1")
}

func (s *RedisPoolStateStore) ReleasePrimaryLock(ctx context.Context, poolName string, ownerID string) error {
	if err := releaseLock.Run(ctx, s.client, []string{s.PrimaryLockKey(poolName)}, ownerID).Err(); err != nil {
		return unavailable("ReleasePrimaryLock", err)
	}
	return nil
}

// ReapExpiredIdle drops expired entries (by Redis's clock; now is ignored).
func (s *RedisPoolStateStore) ReapExpiredIdle(ctx context.Context, poolName string, _ time.Time) error {
	_, err := s.reap(ctx, poolName, 0)
	return err
}

// ReapExpiredIdleWithMinTTL also drops entries with less than minRemaining left.
func (s *RedisPoolStateStore) ReapExpiredIdleWithMinTTL(ctx context.Context, poolName string, _ time.Time, minRemaining time.Duration) (*opensandbox.ReapResult, error) {
	alive, err := s.reap(ctx, poolName, max(0, minRemaining.Milliseconds()))
	if err != nil {
		return nil, err
	}
	return &opensandbox.ReapResult{DiscardedAliveSandboxIDs: alive}, nil
}

func (s *RedisPoolStateStore) reap(ctx context.Context, poolName string, minMs int64) ([]string, error) {
	keys := []string{s.key(poolName, "idle:list"), s.key(poolName, "idle:expires")}
	raw, err := reapIdle.Run(ctx, s.client, keys, minMs).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable("ReapExpiredIdle", err)
	}
	return toStrings(raw), nil
}

func (s *RedisPoolStateStore) SnapshotCounters(ctx context.Context, poolName string) (*opensandbox.StoreCounters, error) {
	entries, err := s.SnapshotIdleEntries(ctx, poolName)
	if err != nil {
		return nil, err
	}
	return &opensandbox.StoreCounters{IdleCount: len(entries)}, nil
}

func (s *RedisPoolStateStore) SnapshotIdleEntries(ctx context.Context, poolName string) ([]opensandbox.IdleEntry, error) {
	keys := []string{s.key(poolName, "idle:list"), s.key(poolName, "idle:expires")}
	raw, err := liveEntries.Run(ctx, s.client, keys).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable("SnapshotIdleEntries", err)
	}
	flat := toStrings(raw)
	var out []opensandbox.IdleEntry
	for i := 0; i+1 < len(flat); i += 2 {
		ms, err := strconv.ParseInt(flat[i+1], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, opensandbox.IdleEntry{SandboxID: flat[i], ExpiresAt: time.UnixMilli(ms)})
	}
	return out, nil
}

func (s *RedisPoolStateStore) GetMaxIdle(ctx context.Context, poolName string) (int, error) {
	v, err := s.client.Get(ctx, s.key(poolName, "maxIdle")).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, unavailable("GetMaxIdle", err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, unavailable("GetMaxIdle", fmt.Errorf("stored maxIdle %q is not a number", v))
	}
	return n, nil
}

func (s *RedisPoolStateStore) SetMaxIdle(ctx context.Context, poolName string, maxIdle int) error {
	if maxIdle < 0 {
		return &opensandbox.InvalidArgumentError{Field: "maxIdle", Message: "must be >= 0"}
	}
	return s.setFenced(ctx, "SetMaxIdle", poolName, "maxIdle", strconv.Itoa(maxIdle))
}

func (s *RedisPoolStateStore) SetIdleEntryTTL(ctx context.Context, poolName string, ttl time.Duration) error {
	if ttl <= 0 {
		return &opensandbox.InvalidArgumentError{Field: "ttl", Message: "must be positive"}
	}
	return s.setFenced(ctx, "SetIdleEntryTTL", poolName, "idleTtlMillis", millis(ttl))
}

func (s *RedisPoolStateStore) setFenced(ctx context.Context, op, poolName, suffix, value string) error {
	keys := []string{s.key(poolName, suffix), s.key(poolName, "destroy:state")}
	n, err := setFenced.Run(ctx, s.client, keys, value).Int64()
	if err != nil {
		return unavailable(op, err)
	}
	return s.fencedError(ctx, poolName, n)
}

// GetDestroyState reads the fence; an expired tombstone is gone and reads ACTIVE.
func (s *RedisPoolStateStore) GetDestroyState(ctx context.Context, poolName string) (opensandbox.PoolDestroyState, error) {
	v, err := s.client.Get(ctx, s.key(poolName, "destroy:state")).Result()
	if errors.Is(err, redis.Nil) {
		return opensandbox.PoolDestroyStateActive, nil
	}
	if err != nil {
		return opensandbox.PoolDestroyStateActive, unavailable("GetDestroyState", err)
	}
	switch v {
	case opensandbox.PoolDestroyStateDestroyed.String():
		return opensandbox.PoolDestroyStateDestroyed, nil
	default: // any value fences
		return opensandbox.PoolDestroyStateDestroying, nil
	}
}

func (s *RedisPoolStateStore) BeginDestroy(ctx context.Context, poolName string, ownerID string) error {
	if err := blank("ownerID", ownerID); err != nil {
		return err
	}
	keys := []string{s.key(poolName, "destroy:state"), s.key(poolName, "destroy:owner")}
	n, err := beginDestroy.Run(ctx, s.client, keys, opensandbox.PoolDestroyStateDestroying.String(),
		opensandbox.PoolDestroyStateDestroyed.String(), ownerID).Int64()
	if err != nil {
		return unavailable("BeginDestroy", err)
	}
	if n == -1 {
		return &opensandbox.PoolDestroyedError{PoolName: poolName, State: opensandbox.PoolDestroyStateDestroyed}
	}
	return nil
}

// ClearPoolState deletes the coordination keys, keeping the destroy keys.
func (s *RedisPoolStateStore) ClearPoolState(ctx context.Context, poolName string) error {
	err := s.client.Del(ctx, s.key(poolName, "idle:list"), s.key(poolName, "idle:expires"),
		s.PrimaryLockKey(poolName), s.key(poolName, "maxIdle"), s.key(poolName, "idleTtlMillis")).Err()
	if err != nil {
		return unavailable("ClearPoolState", err)
	}
	return nil
}

// MarkDestroyed writes the DESTROYED tombstone (zero TTL: never expires).
func (s *RedisPoolStateStore) MarkDestroyed(ctx context.Context, poolName string, ownerID string, tombstoneTTL time.Duration) error {
	if err := blank("ownerID", ownerID); err != nil {
		return err
	}
	if tombstoneTTL < 0 {
		return &opensandbox.InvalidArgumentError{Field: "tombstoneTTL", Message: fmt.Sprintf("must not be negative, got %v", tombstoneTTL)}
	}
	ttl := "0"
	if tombstoneTTL > 0 {
		ttl = millis(tombstoneTTL)
	}
	keys := []string{s.key(poolName, "destroy:state"), s.key(poolName, "destroy:owner")}
	if err := markDestroyed.Run(ctx, s.client, keys, opensandbox.PoolDestroyStateDestroyed.String(), ownerID, ttl).Err(); err != nil {
		return unavailable("MarkDestroyed", err)
	}
	return nil
}

// fencedError turns a script's -1 into *PoolDestroyedError with the observed state.
func (s *RedisPoolStateStore) fencedError(ctx context.Context, poolName string, n int64) error {
	if n != -1 {
		return nil
	}
	state, err := s.GetDestroyState(ctx, poolName)
	if err != nil || state == opensandbox.PoolDestroyStateActive {
		state = opensandbox.PoolDestroyStateDestroying
	}
	return &opensandbox.PoolDestroyedError{PoolName: poolName, State: state}
}

// idleTTL is the pool's stored idle entry TTL (DefaultIdleTimeout when unset).
func (s *RedisPoolStateStore) idleTTL(ctx context.Context, poolName string) (time.Duration, error) {
	v, err := s.client.Get(ctx, s.key(poolName, "idleTtlMillis")).Result()
	if errors.Is(err, redis.Nil) {
		return opensandbox.DefaultIdleTimeout, nil
	}
	if err != nil {
		return 0, unavailable("PutIdle", err)
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 1 {
		return opensandbox.DefaultIdleTimeout, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func (s *RedisPoolStateStore) key(poolName, suffix string) string {
	tag := base64.RawURLEncoding.EncodeToString([]byte(poolName))
	return s.keyPrefix + ":{" + tag + "}:" + suffix
}

// PrimaryLockKey is the Redis key of poolName's primary lock.
func (s *RedisPoolStateStore) PrimaryLockKey(poolName string) string {
	return s.key(poolName, "lock")
}
