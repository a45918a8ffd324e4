package opensandbox

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Backoff of a DEGRADED pool: 30s doubling per failing tick, at most a day.
var (
	reconcileBackoffBase = 30 * time.Second
	reconcileMaxBackoff  = 24 * time.Hour
)

// reconcileState is the replenishment health: consecutive failures, backoff, last error.
type reconcileState struct {
	mu           sync.Mutex
	threshold    int
	failures     int
	backoffSteps int
	backoffUntil time.Time
	lastError    string
	health       PoolHealthState
}

func newReconcileState(threshold int) *reconcileState {
	return &reconcileState{threshold: threshold, health: PoolHealthy}
}

func (s *reconcileState) recordSuccess() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures, s.backoffSteps, s.backoffUntil, s.lastError, s.health = 0, 0, time.Time{}, "", PoolHealthy
}

// recordFailures adds n failures; at the threshold the pool is DEGRADED and the
// backoff doubles (once per call, i.e. per failing tick).
func (s *reconcileState) recordFailures(n int, err error) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures += n
	if err != nil {
		s.lastError = err.Error()
	}
	if s.failures < s.threshold {
		return
	}
	s.health = PoolDegraded
	s.backoffSteps++
	shift := s.backoffSteps - 1
	if shift > 15 {
		shift = 15
	}
	backoff := reconcileBackoffBase * time.Duration(1<<shift)
	if backoff > reconcileMaxBackoff {
		backoff = reconcileMaxBackoff
	}
	s.backoffUntil = time.Now().Add(backoff)
}

func (s *reconcileState) inBackoff() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Now().Before(s.backoffUntil)
}

func (s *reconcileState) snapshot() (PoolHealthState, int, bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.health, s.failures, time.Now().Before(s.backoffUntil), s.lastError
}

// reconcileTick is one pass of the primary: take/renew the lock, reap expired and
// near-expiry idle entries, shrink an excess or create up to WarmupConcurrency
// sandboxes toward the shared maxIdle. The lock is kept between ticks (it expires
// unless renewed); Shutdown releases it.
func (p *DefaultSandboxPool) reconcileTick(ctx context.Context) {
	cfg, store, st, log := p.config, p.config.StateStore, p.reconciler, p.config.Logger
	pool, owner, ttl := cfg.PoolName, cfg.OwnerID, cfg.PrimaryLockTTL

	primary, err := store.TryAcquirePrimaryLock(ctx, pool, owner, ttl)
	if err != nil {
		log.Warn("reconcile: lock acquire error", "pool_name", pool, "error", err)
		st.recordFailures(1, err)
		return
	}
	if !primary {
		log.Debug("reconcile: not primary, skipping", "pool_name", pool)
		return
	}
	renew := func() bool {
		ok, err := store.RenewPrimaryLock(ctx, pool, owner, ttl)
		return err == nil && ok
	}

	if cfg.AcquireMinRemainingTTL > 0 {
		r, err := store.ReapExpiredIdleWithMinTTL(ctx, pool, time.Now(), cfg.AcquireMinRemainingTTL)
		if err != nil {
			log.Warn("reconcile: reap error", "pool_name", pool, "error", err)
		} else if r != nil {
			for _, id := range r.DiscardedAliveSandboxIDs {
				p.killBestEffort(id)
			}
		}
	} else if err := store.ReapExpiredIdle(ctx, pool, time.Now()); err != nil {
		log.Warn("reconcile: reap error", "pool_name", pool, "error", err)
	}

	counters, err := store.SnapshotCounters(ctx, pool)
	if err != nil {
		log.Warn("reconcile: snapshot error", "pool_name", pool, "error", err)
		return
	}
	maxIdle, err := store.GetMaxIdle(ctx, pool)
	if err != nil {
		log.Warn("reconcile: get maxIdle error", "pool_name", pool, "error", err)
		return
	}
	idle := counters.IdleCount

	if idle > maxIdle {
		removed := 0
		for i := 0; i < min(idle-maxIdle, cfg.WarmupConcurrency); i++ {
			if !renew() {
				log.Warn("reconcile: lost lock during shrink", "pool_name", pool)
				return
			}
			id, err := store.TryTakeIdle(ctx, pool)
			if err != nil {
				st.recordFailures(1, err)
				return
			}
			if id == "" {
				break
			}
			p.killBestEffort(id)
			removed++
		}
		if removed > 0 {
			st.recordSuccess()
		}
		return
	}

	deficit := maxIdle - idle
	if deficit <= 0 || st.inBackoff() {
		return
	}
	if !renew() {
		log.Warn("reconcile: lost lock before create", "pool_name", pool)
		return
	}
	n := min(deficit, cfg.WarmupConcurrency)
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs[i] = fmt.Errorf("panic in sandbox creation: %v", r)
				}
			}()
			if err := ctx.Err(); err != nil {
				errs[i] = err
				return
			}
			ids[i], errs[i] = p.createWarm(ctx)
		}(i)
	}
	wg.Wait()

	var created []string
	failed := 0
	var lastErr error
	for i := range ids {
		if errs[i] != nil {
			failed++
			lastErr = errs[i]
			log.Warn("reconcile: sandbox create failed", "pool_name", pool, "error", errs[i])
		} else if ids[i] != "" {
			created = append(created, ids[i])
		}
	}
	st.recordFailures(failed, lastErr)

	for i, id := range created {
		if !renew() {
			log.Warn("reconcile: lost lock before putIdle, killing orphans", "pool_name", pool, "orphan_count", len(created)-i)
			for _, orphan := range created[i:] {
				p.killBestEffort(orphan)
			}
			return
		}
		if err := store.PutIdle(ctx, pool, id); err != nil {
			st.recordFailures(1, err)
			_ = store.RemoveIdle(ctx, pool, id)
			log.Warn("reconcile: putIdle failed, killing orphans", "pool_name", pool, "error", err, "orphan_count", len(created)-i)
			for _, orphan := range created[i:] {
				p.killBestEffort(orphan)
			}
			return
		}
		st.recordSuccess()
	}
}
