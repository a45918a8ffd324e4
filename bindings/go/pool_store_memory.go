package opensandbox

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// InMemoryPoolStateStore is a PoolStateStore for a single process.
type InMemoryPoolStateStore struct {
	mu    sync.Mutex
	pools map[string]*memPool
}

type memPool struct {
	queue   []string             // idle ids, oldest first (may hold removed ids)
	expires map[string]time.Time // membership: id -> expiry
	lockOwn string
	lockExp time.Time
	maxIdle int
	idleTTL time.Duration
	destroy PoolDestroyState
	dOwner  string
	dExp    time.Time // zero: the tombstone never expires
}

var _ PoolStateStore = (*InMemoryPoolStateStore)(nil)

// NewInMemoryPoolStateStore creates an empty in-memory store.
func NewInMemoryPoolStateStore() *InMemoryPoolStateStore {
	return &InMemoryPoolStateStore{pools: map[string]*memPool{}}
}

// pool returns poolName's state; the caller holds s.mu.
func (s *InMemoryPoolStateStore) pool(poolName string) *memPool {
	p := s.pools[poolName]
	if p == nil {
		p = &memPool{expires: map[string]time.Time{}, idleTTL: DefaultIdleTimeout}
		s.pools[poolName] = p
	}
	return p
}

func (p *memPool) destroyState(now time.Time) PoolDestroyState {
	if p.destroy == PoolDestroyStateDestroyed && !p.dExp.IsZero() && !now.Before(p.dExp) {
		p.destroy, p.dOwner, p.dExp = PoolDestroyStateActive, "", time.Time{}
	}
	return p.destroy
}

func (s *InMemoryPoolStateStore) fenced(poolName string, p *memPool) error {
	if st := p.destroyState(time.Now()); st != PoolDestroyStateActive {
		return &PoolDestroyedError{PoolName: poolName, State: st}
	}
	return nil
}

func (s *InMemoryPoolStateStore) TryTakeIdle(ctx context.Context, poolName string) (string, error) {
	r, err := s.TryTakeIdleWithMinTTL(ctx, poolName, 0)
	if err != nil {
		return "", err
	}
	return r.SandboxID, nil
}

func (s *InMemoryPoolStateStore) TryTakeIdleWithMinTTL(_ context.Context, poolName string, minRemaining time.Duration) (*TakeIdleResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool(poolName)
	now := time.Now()
	cutoff := now.Add(minRemaining)
	res := &TakeIdleResult{}
	for len(p.queue) > 0 {
		id := p.queue[0]
		p.queue = p.queue[1:]
		exp, ok := p.expires[id]
		if !ok {
			continue
		}
		delete(p.expires, id)
		if exp.After(cutoff) {
			res.SandboxID = id
			return res, nil
		}
		if exp.After(now) {
			res.DiscardedAliveSandboxIDs = append(res.DiscardedAliveSandboxIDs, id)
		}
	}
	return res, nil
}

func (s *InMemoryPoolStateStore) PutIdle(_ context.Context, poolName string, sandboxID string) error {
	if sandboxID == "" {
		return &InvalidArgumentError{Field: "sandboxID", Message: "must not be blank"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool(poolName)
	if err := s.fenced(poolName, p); err != nil {
		return err
	}
	now := time.Now()
	if exp, ok := p.expires[sandboxID]; ok {
		if exp.After(now) {
			return nil
		}
		p.removeFromQueue(sandboxID)
	}
	p.queue = append(p.queue, sandboxID)
	p.expires[sandboxID] = now.Add(p.idleTTL)
	return nil
}

func (p *memPool) removeFromQueue(id string) {
	kept := p.queue[:0]
	for _, q := range p.queue {
		if q != id {
			kept = append(kept, q)
		}
	}
	p.queue = kept
}

func (s *InMemoryPoolStateStore) RemoveIdle(_ context.Context, poolName string, sandboxID string) error {
	if sandboxID == "" {
		return &InvalidArgumentError{Field: "sandboxID", Message: "must not be blank"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool(poolName)
	delete(p.expires, sandboxID)
	p.removeFromQueue(sandboxID)
	return nil
}

func (s *InMemoryPoolStateStore) lock(poolName, ownerID string, ttl time.Duration, renewOnly bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool(poolName)
	now := time.Now()
	if p.destroyState(now) != PoolDestroyStateActive {
		return false
	}
	held := p.lockOwn != "" && now.Before(p.lockExp)
	if held && p.lockOwn != ownerID || !held && renewOnly {
		return false
	}
	p.lockOwn, p.lockExp = ownerID, now.Add(ttl)
	return true
}

func (s *InMemoryPoolStateStore) TryAcquirePrimaryLock(_ context.Context, poolName string, ownerID string, ttl time.Duration) (bool, error) {
	return s.lock(poolName, ownerID, ttl, false), nil
}

func (s *InMemoryPoolStateStore) RenewPrimaryLock(_ context.Context, poolName string, ownerID string, ttl time.Duration) (bool, error) {
	return s.lock(poolName, ownerID, ttl, true), nil
}

func (s *InMemoryPoolStateStore) ReleasePrimaryLock(_ context.Context, poolName string, ownerID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool(poolName)
	if p.lockOwn == ownerID {
		p.lockOwn, p.lockExp = "", time.Time{}
	}
	return nil
}

func (s *InMemoryPoolStateStore) ReapExpiredIdle(ctx context.Context, poolName string, now time.Time) error {
	_, err := s.ReapExpiredIdleWithMinTTL(ctx, poolName, now, 0)
	return err
}

func (s *InMemoryPoolStateStore) ReapExpiredIdleWithMinTTL(_ context.Context, poolName string, now time.Time, minRemaining time.Duration) (*ReapResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool(poolName)
	cutoff := now.Add(minRemaining)
	res := &ReapResult{}
	for _, id := range append([]string(nil), p.queue...) {
		exp, ok := p.expires[id]
		if !ok || exp.After(cutoff) {
			continue
		}
		delete(p.expires, id)
		p.removeFromQueue(id)
		if exp.After(now) {
			res.DiscardedAliveSandboxIDs = append(res.DiscardedAliveSandboxIDs, id)
		}
	}
	return res, nil
}

func (s *InMemoryPoolStateStore) SnapshotCounters(ctx context.Context, poolName string) (*StoreCounters, error) {
	entries, _ := s.SnapshotIdleEntries(ctx, poolName)
	return &StoreCounters{IdleCount: len(entries)}, nil
}

func (s *InMemoryPoolStateStore) SnapshotIdleEntries(_ context.Context, poolName string) ([]IdleEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool(poolName)
	now := time.Now()
	var out []IdleEntry
	seen := map[string]bool{}
	for _, id := range p.queue {
		exp, ok := p.expires[id]
		if ok && exp.After(now) && !seen[id] {
			seen[id] = true
			out = append(out, IdleEntry{SandboxID: id, ExpiresAt: exp})
		}
	}
	return out, nil
}

func (s *InMemoryPoolStateStore) GetMaxIdle(_ context.Context, poolName string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pool(poolName).maxIdle, nil
}

func (s *InMemoryPoolStateStore) SetMaxIdle(_ context.Context, poolName string, maxIdle int) error {
	if maxIdle < 0 {
		return &InvalidArgumentError{Field: "maxIdle", Message: "must be >= 0"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool(poolName)
	if err := s.fenced(poolName, p); err != nil {
		return err
	}
	p.maxIdle = maxIdle
	return nil
}

func (s *InMemoryPoolStateStore) SetIdleEntryTTL(_ context.Context, poolName string, ttl time.Duration) error {
	if ttl <= 0 {
		return &InvalidArgumentError{Field: "ttl", Message: "must be positive"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool(poolName)
	if err := s.fenced(poolName, p); err != nil {
		return err
	}
	p.idleTTL = ttl
	return nil
}

func (s *InMemoryPoolStateStore) GetDestroyState(_ context.Context, poolName string) (PoolDestroyState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pool(poolName).destroyState(time.Now()), nil
}

func (s *InMemoryPoolStateStore) BeginDestroy(_ context.Context, poolName string, ownerID string) error {
	if ownerID == "" {
		return &InvalidArgumentError{Field: "ownerID", Message: "must not be blank"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool(poolName)
	if p.destroyState(time.Now()) == PoolDestroyStateDestroyed {
		return &PoolDestroyedError{PoolName: poolName, State: PoolDestroyStateDestroyed}
	}
	p.destroy, p.dOwner, p.dExp = PoolDestroyStateDestroying, ownerID, time.Time{}
	return nil
}

func (s *InMemoryPoolStateStore) ClearPoolState(_ context.Context, poolName string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool(poolName)
	p.queue, p.expires = nil, map[string]time.Time{}
	p.lockOwn, p.lockExp = "", time.Time{}
	p.maxIdle, p.idleTTL = 0, DefaultIdleTimeout
	return nil
}

func (s *InMemoryPoolStateStore) MarkDestroyed(_ context.Context, poolName string, ownerID string, tombstoneTTL time.Duration) error {
	if ownerID == "" {
		return &InvalidArgumentError{Field: "ownerID", Message: "must not be blank"}
	}
	if tombstoneTTL < 0 {
		return &InvalidArgumentError{Field: "tombstoneTTL", Message: fmt.Sprintf("must not be negative, got %v", tombstoneTTL)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool(poolName)
	p.destroy, p.dOwner, p.dExp = PoolDestroyStateDestroyed, ownerID, time.Time{}
	if tombstoneTTL > 0 {
		p.dExp = time.Now().Add(tombstoneTTL)
	}
	return nil
}
