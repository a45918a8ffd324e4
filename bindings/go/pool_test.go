package opensandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeBackend stands in for the server behind a pool's ops: sandboxes are ids that
// are alive until killed; unhealthy ids fail to connect.
type fakeBackend struct {
	mu        sync.Mutex
	next      int
	alive     map[string]bool
	unhealthy map[string]bool
	created   int32
	killed    []string
	createErr error
	renewErr  error
	createTTL []int
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{alive: map[string]bool{}, unhealthy: map[string]bool{}}
}

func (f *fakeBackend) ops() poolOps {
	return poolOps{
		create: func(ctx context.Context, opts SandboxCreateOptions) (*Sandbox, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.createErr != nil {
				return nil, f.createErr
			}
			if opts.Image == "" || opts.TimeoutSeconds == nil {
				return nil, fmt.Errorf("bad create options %+v", opts)
			}
			f.createTTL = append(f.createTTL, *opts.TimeoutSeconds)
			f.next++
			id := fmt.Sprintf("sb-%d", f.next)
			f.alive[id] = true
			atomic.AddInt32(&f.created, 1)
			return &Sandbox{id: id}, nil
		},
		connect: func(ctx context.Context, id string, ready *ReadyOptions) (*Sandbox, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if !f.alive[id] {
				return nil, &APIError{StatusCode: 404, Response: ErrorResponse{Code: "NOT_FOUND", Message: id}}
			}
			if f.unhealthy[id] && ready != nil {
				return nil, &SandboxReadyTimeoutError{SandboxID: id}
			}
			return &Sandbox{id: id}, nil
		},
		renew: func(ctx context.Context, sb *Sandbox, d time.Duration) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.renewErr
		},
		kill: func(ctx context.Context, id string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.killed = append(f.killed, id)
			delete(f.alive, id)
			return nil
		},
	}
}

func (f *fakeBackend) killedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.killed...)
}

func (f *fakeBackend) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

func testPool(t *testing.T, f *fakeBackend, configure func(b *SandboxPoolBuilder)) *DefaultSandboxPool {
	t.Helper()
	b := NewSandboxPoolBuilder().PoolName("p-" + t.Name()).ConnectionConfig(ConnectionConfig{}).
		CreationSpec(PoolCreationSpec{Image: "ubuntu:22.04"}).ReconcileInterval(20 * time.Millisecond)
	if configure != nil {
		configure(b)
	}
	p, err := b.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	p.ops = f.ops()
	t.Cleanup(func() { _ = p.Shutdown(context.Background(), false) })
	return p
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func idleCount(p *DefaultSandboxPool) int {
	s, err := p.Snapshot(context.Background())
	if err != nil {
		return -1
	}
	return s.IdleCount
}

func TestPoolBuilderValidation(t *testing.T) {
	base := func() *SandboxPoolBuilder {
		return NewSandboxPoolBuilder().PoolName("p").ConnectionConfig(ConnectionConfig{}).
			CreationSpec(PoolCreationSpec{Image: "img"})
	}
	ttl := 5
	cases := map[string]struct {
		b    *SandboxPoolBuilder
		want string
	}{
		"no name":         {NewSandboxPoolBuilder().ConnectionConfig(ConnectionConfig{}), "PoolName is required"},
		"negative idle":   {base().MaxIdle(-1), "MaxIdle must be >= 0"},
		"no connection":   {NewSandboxPoolBuilder().PoolName("p").CreationSpec(PoolCreationSpec{Image: "i"}), "ConnectionConfig is required"},
		"no image":        {base().CreationSpec(PoolCreationSpec{}), "CreationSpec (with Image or SnapshotID)"},
		"image+snapshot":  {base().CreationSpec(PoolCreationSpec{Image: "i", SnapshotID: "s"}), "both Image and SnapshotID"},
		"timeout seconds": {base().CreationSpec(PoolCreationSpec{Image: "i", TimeoutSeconds: &ttl}), "use IdleTimeout"},
		"manual cleanup":  {base().CreationSpec(PoolCreationSpec{Image: "i", ManualCleanup: true}), "ManualCleanup is not supported"},
		"retries":         {base().MaxAcquireRetries(0), "MaxAcquireRetries must be >= 1"},
		"interval":        {base().ReconcileInterval(0), "ReconcileInterval must be positive"},
		"min ttl":         {base().IdleTimeout(time.Minute).AcquireMinRemainingTTL(time.Minute), "must be less than IdleTimeout"},
		"nil store":       {base().StateStore(nil), "StateStore must not be nil"},
	}
	for name, c := range cases {
		if _, err := c.b.Build(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
	p, err := base().MaxIdle(7).Build()
	if err != nil {
		t.Fatal(err)
	}
	c := p.config
	if c.WarmupConcurrency != 2 || c.AcquireMinRemainingTTL != time.Minute || c.IdleTimeout != DefaultIdleTimeout ||
		!strings.HasPrefix(c.OwnerID, "pool-owner-") || c.EmptyBehavior != AcquirePolicyDirectCreate || c.MaxAcquireRetries != 3 {
		t.Fatalf("defaults: %+v", c)
	}
	if _, ok := c.StateStore.(*InMemoryPoolStateStore); !ok {
		t.Fatalf("default store %T", c.StateStore)
	}
	if p2, _ := base().IdleTimeout(time.Minute).Build(); p2.config.AcquireMinRemainingTTL != 30*time.Second {
		t.Fatalf("min ttl default = %v", p2.config.AcquireMinRemainingTTL)
	}
	if AcquirePolicyRetryNextIdleThenCreate.String() != "RETRY_NEXT_IDLE_THEN_CREATE" || PoolDegraded.String() != "DEGRADED" ||
		PoolLifecycleDraining.String() != "DRAINING" || PoolDestroyStateDestroyed.String() != "DESTROYED" {
		t.Fatal("String() names")
	}
}

func TestPoolWarmupAcquireAndReplenish(t *testing.T) {
	f := newFakeBackend()
	p := testPool(t, f, func(b *SandboxPoolBuilder) { b.MaxIdle(3).IdleTimeout(10 * time.Minute) })
	ctx := context.Background()
	if _, err := p.Acquire(ctx, AcquireOptions{}); err == nil {
		t.Fatal("Acquire before Start succeeded")
	} else if e := (*PoolNotRunningError)(nil); !errors.As(err, &e) || e.State != PoolLifecycleNotStarted {
		t.Fatalf("Acquire before Start: %v", err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatalf("second Start: %v", err)
	}
	eventually(t, "3 idle", func() bool { return idleCount(p) == 3 })
	entries, _ := p.SnapshotIdleEntries(ctx)
	if len(entries) != 3 || entries[0].SandboxID != "sb-1" || time.Until(entries[0].ExpiresAt) < 9*time.Minute {
		t.Fatalf("entries %+v", entries)
	}
	f.set(func() {
		if f.createTTL[0] != 600 {
			t.Errorf("pool sandboxes get IdleTimeout as TTL, got %ds", f.createTTL[0])
		}
	})
	failFast := AcquirePolicyFailFast
	sb, err := p.Acquire(ctx, AcquireOptions{Policy: &failFast, SandboxTimeout: time.Minute})
	if err != nil || sb.ID() != "sb-1" {
		t.Fatalf("acquire: %v %v", sb, err)
	}
	eventually(t, "replenished to 3", func() bool { return idleCount(p) == 3 })
	if n := atomic.LoadInt32(&f.created); n != 4 {
		t.Fatalf("created %d, want 4", n)
	}
	snap, _ := p.Snapshot(ctx)
	if snap.LifecycleState != PoolLifecycleRunning || snap.HealthState != PoolHealthy || snap.MaxIdle != 3 || snap.InFlightOperations != 0 {
		t.Fatalf("snapshot %+v", snap)
	}
}

func TestPoolAcquirePolicies(t *testing.T) {
	ctx := context.Background()
	policy := func(p AcquirePolicy) *AcquirePolicy { return &p }

	f := newFakeBackend()
	p := testPool(t, f, func(b *SandboxPoolBuilder) { b.MaxIdle(0).ReconcileInterval(time.Hour) })
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pol := range []AcquirePolicy{AcquirePolicyFailFast, AcquirePolicyRetryNextIdle} {
		_, err := p.Acquire(ctx, AcquireOptions{Policy: policy(pol)})
		var empty *PoolEmptyError
		if !errors.As(err, &empty) || empty.Policy != pol {
			t.Fatalf("%s on empty pool: %v", pol, err)
		}
	}
	sb, err := p.Acquire(ctx, AcquireOptions{}) // default DirectCreate
	if err != nil || sb.ID() != "sb-1" {
		t.Fatalf("direct create: %v %v", sb, err)
	}
	if _, err := p.Acquire(ctx, AcquireOptions{Policy: policy(AcquirePolicy(9))}); err == nil {
		t.Fatal("unknown policy accepted")
	} else if e := (*InvalidArgumentError)(nil); !errors.As(err, &e) {
		t.Fatalf("unknown policy: %T %v", err, err)
	}

	// Stale idles: ids whose sandboxes are gone or unhealthy.
	store := p.config.StateStore
	seed := func(ids ...string) {
		for _, id := range ids {
			if err := store.PutIdle(ctx, p.config.PoolName, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.set(func() { f.alive["good"] = true; f.alive["sick"] = true; f.unhealthy["sick"] = true })
	seed("gone-1", "sick", "good")
	_, err = p.Acquire(ctx, AcquireOptions{Policy: policy(AcquirePolicyFailFast)})
	var failed *PoolAcquireFailedError
	if !errors.As(err, &failed) {
		t.Fatalf("fail fast on stale idle: %v", err)
	}
	sb, err = p.Acquire(ctx, AcquireOptions{Policy: policy(AcquirePolicyRetryNextIdle)})
	if err != nil || sb.ID() != "good" {
		t.Fatalf("retry next idle: %v %v", sb, err)
	}
	eventually(t, "stale ids killed", func() bool {
		k := strings.Join(f.killedIDs(), ",")
		return strings.Contains(k, "gone-1") && strings.Contains(k, "sick")
	})

	seed("gone-2", "gone-3", "gone-4", "gone-5")
	p.config.MaxAcquireRetries = 2
	_, err = p.Acquire(ctx, AcquireOptions{Policy: policy(AcquirePolicyRetryNextIdle)})
	if !errors.As(err, &failed) {
		t.Fatalf("retry exhausted: %v", err)
	}
	if n := idleCount(p); n != 2 {
		t.Fatalf("retries are bounded: %d idle left, want 2", n)
	}
	before := atomic.LoadInt32(&f.created)
	sb, err = p.Acquire(ctx, AcquireOptions{Policy: policy(AcquirePolicyRetryNextIdleThenCreate)})
	if err != nil || atomic.LoadInt32(&f.created) != before+1 || !strings.HasPrefix(sb.ID(), "sb-") {
		t.Fatalf("retry then create: %v %v", sb, err)
	}

	// A renew failure after a healthy connect is not retried and kills the sandbox.
	f.set(func() { f.alive["renewme"] = true; f.renewErr = errors.New("renew refused") })
	seed("renewme")
	if _, err := p.Acquire(ctx, AcquireOptions{Policy: policy(AcquirePolicyRetryNextIdle), SandboxTimeout: time.Minute}); err == nil ||
		!strings.Contains(err.Error(), "renew after connect failed") {
		t.Fatalf("renew failure: %v", err)
	}
	eventually(t, "renew-failed sandbox killed", func() bool { return strings.Contains(strings.Join(f.killedIDs(), ","), "renewme") })
}

func TestPoolMinRemainingTTLSkipsNearExpiry(t *testing.T) {
	ctx := context.Background()
	f := newFakeBackend()
	p := testPool(t, f, func(b *SandboxPoolBuilder) {
		b.MaxIdle(0).ReconcileInterval(time.Hour).IdleTimeout(time.Minute).AcquireMinRemainingTTL(30 * time.Second)
	})
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.set(func() { f.alive["short"] = true })
	_ = p.config.StateStore.PutIdle(ctx, p.config.PoolName, "short")
	failFast := AcquirePolicyFailFast
	// 60s left is below a 90s minimum: skipped (and killed), the pool reads empty.
	_, err := p.Acquire(ctx, AcquireOptions{Policy: &failFast, MinRemainingTTL: 90 * time.Second})
	var empty *PoolEmptyError
	if !errors.As(err, &empty) {
		t.Fatalf("near-expiry idle handed out: %v", err)
	}
	eventually(t, "near-expiry idle killed", func() bool { return strings.Join(f.killedIDs(), ",") == "short" })
}

func TestPoolResizeShrinkReleaseAndShutdown(t *testing.T) {
	ctx := context.Background()
	f := newFakeBackend()
	p := testPool(t, f, func(b *SandboxPoolBuilder) { b.MaxIdle(4).WarmupConcurrency(4) })
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "4 idle", func() bool { return idleCount(p) == 4 })
	if err := p.Resize(ctx, -1); err == nil {
		t.Fatal("negative resize accepted")
	}
	if err := p.Resize(ctx, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "shrunk to 1", func() bool { return idleCount(p) == 1 })
	eventually(t, "excess killed", func() bool { return len(f.killedIDs()) == 3 })
	if err := p.Resize(ctx, 2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "grown to 2", func() bool { return idleCount(p) == 2 })
	if err := p.Shutdown(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(ctx, true); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	snap, _ := p.Snapshot(ctx)
	if snap.LifecycleState != PoolLifecycleStopped || snap.IdleCount != 2 {
		t.Fatalf("after shutdown %+v (idle sandboxes stay for peers)", snap)
	}
	if _, err := p.Acquire(ctx, AcquireOptions{}); err == nil {
		t.Fatal("Acquire after Shutdown succeeded")
	}
	// The lock was released: another owner may take it at once.
	if ok, _ := p.config.StateStore.TryAcquirePrimaryLock(ctx, p.config.PoolName, "other", time.Minute); !ok {
		t.Fatal("primary lock not released by Shutdown")
	}
	_ = p.config.StateStore.ReleasePrimaryLock(ctx, p.config.PoolName, "other")
	// Restart keeps the resized target.
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if snap, _ := p.Snapshot(ctx); snap.MaxIdle != 2 || snap.LifecycleState != PoolLifecycleRunning {
		t.Fatalf("restart %+v", snap)
	}
	n, err := p.ReleaseAllIdleParallel(ctx, 2)
	if err != nil || n != 2 {
		t.Fatalf("ReleaseAllIdleParallel = %d, %v", n, err)
	}
	if _, err := p.ReleaseAllIdleParallel(ctx, 0); err == nil {
		t.Fatal("maxWorkers 0 accepted")
	}
	_ = p.Resize(ctx, 0)
	seedN := 3
	for i := 0; i < seedN; i++ {
		_ = p.config.StateStore.PutIdle(ctx, p.config.PoolName, fmt.Sprintf("r-%d", i))
	}
	if n, err := p.ReleaseAllIdle(ctx); err != nil || n < 1 {
		t.Fatalf("ReleaseAllIdle = %d, %v", n, err)
	}
}

func TestPoolDegradedBackoffAndLeaderLock(t *testing.T) {
	ctx := context.Background()
	f := newFakeBackend()
	f.createErr = errors.New("image pull failed")
	p := testPool(t, f, func(b *SandboxPoolBuilder) { b.MaxIdle(1).DegradedThreshold(2) })
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "degraded", func() bool {
		s, _ := p.Snapshot(ctx)
		return s.HealthState == PoolDegraded && s.BackoffActive
	})
	snap, _ := p.Snapshot(ctx)
	if snap.FailureCount < 2 || !strings.Contains(snap.LastError, "image pull failed") {
		t.Fatalf("degraded snapshot %+v", snap)
	}
	// In backoff nothing is retried.
	f.set(func() { f.createErr = nil })
	time.Sleep(100 * time.Millisecond)
	if idleCount(p) != 0 {
		t.Fatal("replenished during backoff")
	}
	// A success resets the state (shorten the backoff to see it).
	p.reconciler.mu.Lock()
	p.reconciler.backoffUntil = time.Time{}
	p.reconciler.mu.Unlock()
	eventually(t, "healthy again", func() bool {
		s, _ := p.Snapshot(ctx)
		return s.HealthState == PoolHealthy && s.IdleCount == 1 && s.FailureCount == 0
	})

	// A second pool on the same store is not primary: it never creates.
	g := newFakeBackend()
	q := testPool(t, g, func(b *SandboxPoolBuilder) {
		b.MaxIdle(1).StateStore(p.config.StateStore).PoolName(p.config.PoolName)
	})
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_ = p.config.StateStore.RemoveIdle(ctx, p.config.PoolName, "sb-1")
	eventually(t, "primary refills", func() bool { return idleCount(p) == 1 })
	time.Sleep(60 * time.Millisecond)
	if n := atomic.LoadInt32(&g.created); n != 0 {
		t.Fatalf("non-primary created %d sandboxes", n)
	}
	// After the primary stops (lock released), the peer takes over.
	_ = p.Shutdown(ctx, false)
	_ = q.Resize(ctx, 2)
	eventually(t, "peer became primary", func() bool { return atomic.LoadInt32(&g.created) >= 1 })
}

type recordingCreator struct {
	mu   sync.Mutex
	ctxs []PooledSandboxCreateContext
	n    int
}

func (c *recordingCreator) Create(_ context.Context, cc PooledSandboxCreateContext) (*Sandbox, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctxs = append(c.ctxs, cc)
	c.n++
	return &Sandbox{id: fmt.Sprintf("custom-%d", c.n)}, nil
}

func TestPoolCustomCreatorAndPreparer(t *testing.T) {
	ctx := context.Background()
	f := newFakeBackend()
	creator := &recordingCreator{}
	var prepared int32
	p := testPool(t, f, func(b *SandboxPoolBuilder) {
		b.CreationSpec(PoolCreationSpec{}).SandboxCreator(creator).MaxIdle(1).
			WarmupSandboxPreparer(func(ctx context.Context, sb *Sandbox) error {
				if atomic.AddInt32(&prepared, 1) == 1 {
					return errors.New("preparer failed")
				}
				return nil
			})
	})
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "1 idle after a failed preparer", func() bool { return idleCount(p) == 1 })
	eventually(t, "failed warm sandbox killed", func() bool { return strings.Join(f.killedIDs(), ",") == "custom-1" })
	failFast := AcquirePolicyFailFast
	f.set(func() { f.alive["custom-2"] = true })
	if sb, err := p.Acquire(ctx, AcquireOptions{Policy: &failFast}); err != nil || sb.ID() != "custom-2" {
		t.Fatalf("acquire %v %v", sb, err)
	}
	creator.mu.Lock()
	defer creator.mu.Unlock()
	if c := creator.ctxs[0]; c.Reason != CreateReasonWarmup || c.PoolName != p.config.PoolName || c.ReadyTimeout != 30*time.Second || c.OwnerID == "" {
		t.Fatalf("create context %+v", c)
	}
}

// failingStore reports every call as an outage.
type failingStore struct{ *InMemoryPoolStateStore }

var errDown = &PoolStateStoreUnavailableError{Operation: "x", Cause: errors.New("store down")}

func (failingStore) TryTakeIdle(context.Context, string) (string, error) { return "", errDown }
func (failingStore) TryTakeIdleWithMinTTL(context.Context, string, time.Duration) (*TakeIdleResult, error) {
	return nil, errDown
}
func (failingStore) GetDestroyState(context.Context, string) (PoolDestroyState, error) {
	return PoolDestroyStateActive, errDown
}

func TestPoolStoreOutage(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		policy  AcquirePolicy
		creates bool
	}{{AcquirePolicyDirectCreate, true}, {AcquirePolicyRetryNextIdleThenCreate, true}, {AcquirePolicyFailFast, false}, {AcquirePolicyRetryNextIdle, false}} {
		f := newFakeBackend()
		p := testPool(t, f, func(b *SandboxPoolBuilder) {
			b.StateStore(failingStore{NewInMemoryPoolStateStore()}).MaxIdle(0).ReconcileInterval(time.Hour)
		})
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		pol := tc.policy
		sb, err := p.Acquire(ctx, AcquireOptions{Policy: &pol})
		var down *PoolStateStoreUnavailableError
		if tc.creates && (err != nil || sb == nil) || !tc.creates && !errors.As(err, &down) {
			t.Fatalf("%s during outage: %v %v", pol, sb, err)
		}
		_ = p.Shutdown(ctx, false)
	}
}

func TestPoolManagerDestroy(t *testing.T) {
	ctx := context.Background()
	f := newFakeBackend()
	store := NewInMemoryPoolStateStore()
	p := testPool(t, f, func(b *SandboxPoolBuilder) { b.StateStore(store).MaxIdle(2).WarmupConcurrency(2) })
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "2 idle", func() bool { return idleCount(p) == 2 })

	if _, err := NewSandboxPoolManagerBuilder().ConnectionConfig(ConnectionConfig{}).Build(); err == nil {
		t.Fatal("manager without store built")
	}
	if _, err := NewSandboxPoolManagerBuilder().StateStore(store).Build(); err == nil {
		t.Fatal("manager without connection built")
	}
	m, err := NewSandboxPoolManagerBuilder().StateStore(store).ConnectionConfig(ConnectionConfig{}).OwnerID("ops").Build()
	if err != nil {
		t.Fatal(err)
	}
	m.kill = f.ops().kill
	neg := -time.Second
	if _, err := m.Destroy(ctx, " ", PoolDestroyOptions{}); err == nil {
		t.Fatal("blank name accepted")
	}
	if _, err := m.Destroy(ctx, p.config.PoolName, PoolDestroyOptions{DrainTimeout: &neg}); err == nil {
		t.Fatal("negative drain timeout accepted")
	}
	if _, err := m.Destroy(ctx, p.config.PoolName, PoolDestroyOptions{Strategy: PoolDestroyStrategy(3)}); err == nil {
		t.Fatal("unknown strategy accepted")
	}
	res, err := m.Destroy(ctx, p.config.PoolName, PoolDestroyOptions{})
	if err != nil || res.State != PoolDestroyStateDestroyed || res.DrainedIdleCount != 2 || res.KilledIdleCount != 2 || !res.PersistentStateCleared {
		t.Fatalf("destroy %+v %v", res, err)
	}
	// The running pool sees the tombstone and stops itself.
	eventually(t, "pool stopped by destroy", func() bool {
		s, _ := p.Snapshot(ctx)
		return s.LifecycleState == PoolLifecycleStopped
	})
	var destroyed *PoolDestroyedError
	if err := store.PutIdle(ctx, p.config.PoolName, "late"); !errors.As(err, &destroyed) {
		t.Fatalf("PutIdle on a tombstone: %v", err)
	}
	if err := p.Start(ctx); !errors.As(err, &destroyed) {
		t.Fatalf("Start on a tombstone: %v", err)
	}
	again, err := m.Destroy(ctx, p.config.PoolName, PoolDestroyOptions{})
	if err != nil || again.PersistentStateCleared || again.State != PoolDestroyStateDestroyed {
		t.Fatalf("second destroy %+v %v", again, err)
	}
	// A short tombstone expires and the namespace is usable again.
	short := 20 * time.Millisecond
	if _, err := m.Destroy(ctx, "other", PoolDestroyOptions{TombstoneTTL: &short}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "tombstone expired", func() bool { return store.PutIdle(ctx, "other", "x") == nil })
}

func TestInMemoryStoreSemantics(t *testing.T) {
	ctx := context.Background()
	s := NewInMemoryPoolStateStore()
	if err := s.PutIdle(ctx, "p", ""); err == nil {
		t.Fatal("blank id accepted")
	}
	_ = s.SetIdleEntryTTL(ctx, "p", time.Hour)
	for _, id := range []string{"a", "b", "a", "c"} {
		if err := s.PutIdle(ctx, "p", id); err != nil {
			t.Fatal(err)
		}
	}
	if e, _ := s.SnapshotIdleEntries(ctx, "p"); len(e) != 3 || e[0].SandboxID != "a" || e[2].SandboxID != "c" {
		t.Fatalf("PutIdle is idempotent and FIFO: %+v", e)
	}
	_ = s.RemoveIdle(ctx, "p", "b")
	if id, _ := s.TryTakeIdle(ctx, "p"); id != "a" {
		t.Fatalf("take = %q", id)
	}
	r, _ := s.TryTakeIdleWithMinTTL(ctx, "p", 2*time.Hour)
	if r.SandboxID != "" || len(r.DiscardedAliveSandboxIDs) != 1 || r.DiscardedAliveSandboxIDs[0] != "c" {
		t.Fatalf("min TTL take %+v", r)
	}
	_ = s.SetIdleEntryTTL(ctx, "p", 10*time.Millisecond)
	_ = s.PutIdle(ctx, "p", "old")
	time.Sleep(20 * time.Millisecond)
	if c, _ := s.SnapshotCounters(ctx, "p"); c.IdleCount != 0 {
		t.Fatalf("expired entry counted: %d", c.IdleCount)
	}
	if rr, _ := s.ReapExpiredIdleWithMinTTL(ctx, "p", time.Now(), 0); len(rr.DiscardedAliveSandboxIDs) != 0 {
		t.Fatalf("expired entries are not alive: %+v", rr)
	}
	if ok, _ := s.TryAcquirePrimaryLock(ctx, "p", "o1", time.Hour); !ok {
		t.Fatal("lock")
	}
	if ok, _ := s.TryAcquirePrimaryLock(ctx, "p", "o2", time.Hour); ok {
		t.Fatal("lock stolen")
	}
	if ok, _ := s.RenewPrimaryLock(ctx, "p", "o2", time.Hour); ok {
		t.Fatal("renewed by non-owner")
	}
	_ = s.ReleasePrimaryLock(ctx, "p", "o2")
	if ok, _ := s.RenewPrimaryLock(ctx, "p", "o1", 10*time.Millisecond); !ok {
		t.Fatal("owner renew")
	}
	time.Sleep(20 * time.Millisecond)
	if ok, _ := s.TryAcquirePrimaryLock(ctx, "p", "o2", time.Hour); !ok {
		t.Fatal("expired lock not taken over")
	}
	_ = s.BeginDestroy(ctx, "p", "d")
	var destroyed *PoolDestroyedError
	if err := s.SetMaxIdle(ctx, "p", 1); !errors.As(err, &destroyed) || destroyed.State != PoolDestroyStateDestroying {
		t.Fatalf("fenced SetMaxIdle: %v", err)
	}
	if ok, _ := s.RenewPrimaryLock(ctx, "p", "o2", time.Hour); ok {
		t.Fatal("lock renewed through a fence")
	}
	if err := s.MarkDestroyed(ctx, "p", "d", -time.Second); err == nil {
		t.Fatal("negative tombstone TTL accepted")
	}
}
