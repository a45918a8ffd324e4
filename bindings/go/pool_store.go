package opensandbox

import (
	"context"
	"time"
)

// PoolStateStore persists a pool's shared state: the FIFO of idle sandbox ids with
// their expiry, the primary (reconciler) lock, the shared settings and the destroy
// fence. Implementations must be safe for concurrent use; PutIdle and RemoveIdle are
// idempotent. InMemoryPoolStateStore serves one process; poolredis.RedisPoolStateStore
// lets processes share a pool.
type PoolStateStore interface {
	// TryTakeIdle takes the oldest live idle id ("" when none).
	TryTakeIdle(ctx context.Context, poolName string) (string, error)
	// TryTakeIdleWithMinTTL takes the oldest idle id with at least minRemaining
	// TTL left; live entries skipped for less are returned for cleanup.
	TryTakeIdleWithMinTTL(ctx context.Context, poolName string, minRemaining time.Duration) (*TakeIdleResult, error)
	// PutIdle adds an id, expiring after the pool's idle entry TTL.
	PutIdle(ctx context.Context, poolName string, sandboxID string) error
	// RemoveIdle removes an id.
	RemoveIdle(ctx context.Context, poolName string, sandboxID string) error
	// TryAcquirePrimaryLock takes (or re-enters) the primary lock.
	TryAcquirePrimaryLock(ctx context.Context, poolName string, ownerID string, ttl time.Duration) (bool, error)
	// RenewPrimaryLock extends the lock if ownerID holds it.
	RenewPrimaryLock(ctx context.Context, poolName string, ownerID string, ttl time.Duration) (bool, error)
	// ReleasePrimaryLock releases the lock if ownerID holds it.
	ReleasePrimaryLock(ctx context.Context, poolName string, ownerID string) error
	// ReapExpiredIdle drops expired entries (now is a hint; a shared store may
	// use its own clock).
	ReapExpiredIdle(ctx context.Context, poolName string, now time.Time) error
	// ReapExpiredIdleWithMinTTL also drops entries with less than minRemaining
	// left, returning those still alive.
	ReapExpiredIdleWithMinTTL(ctx context.Context, poolName string, now time.Time, minRemaining time.Duration) (*ReapResult, error)
	// SnapshotCounters counts live idle entries.
	SnapshotCounters(ctx context.Context, poolName string) (*StoreCounters, error)
	// SnapshotIdleEntries lists live idle entries, oldest first.
	SnapshotIdleEntries(ctx context.Context, poolName string) ([]IdleEntry, error)
	// GetMaxIdle reads the shared idle target (0 when unset).
	GetMaxIdle(ctx context.Context, poolName string) (int, error)
	// SetMaxIdle writes the shared idle target.
	SetMaxIdle(ctx context.Context, poolName string, maxIdle int) error
	// SetIdleEntryTTL writes the TTL that PutIdle gives new entries.
	SetIdleEntryTTL(ctx context.Context, poolName string, ttl time.Duration) error
	// GetDestroyState reads the destroy state (an expired tombstone reads ACTIVE).
	GetDestroyState(ctx context.Context, poolName string) (PoolDestroyState, error)
	// BeginDestroy writes the DESTROYING fence (*PoolDestroyedError when
	// already tombstoned; re-entrant while DESTROYING).
	BeginDestroy(ctx context.Context, poolName string, ownerID string) error
	// ClearPoolState wipes idle entries, lock, maxIdle and idle TTL, keeping the
	// destroy state.
	ClearPoolState(ctx context.Context, poolName string) error
	// MarkDestroyed replaces the fence with a DESTROYED tombstone (zero TTL:
	// never expires; negative is an error).
	MarkDestroyed(ctx context.Context, poolName string, ownerID string, tombstoneTTL time.Duration) error
}
