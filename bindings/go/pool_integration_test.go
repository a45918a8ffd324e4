package opensandbox

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The pool against the reference server: warm-up creates real sandboxes, Acquire
// connects one and it runs a command; a sandbox killed behind the pool's back is
// skipped by RetryNextIdleThenCreate; Destroy kills the idle ones.
func TestPoolAgainstServer(t *testing.T) {
	needServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store := NewInMemoryPoolStateStore()
	pool, err := NewSandboxPoolBuilder().PoolName("go-it-" + t.Name()).ConnectionConfig(ConnectionConfig{}).
		CreationSpec(PoolCreationSpec{Image: "ubuntu:22.04", Metadata: map[string]string{"suite": "go-pool"}}).
		StateStore(store).MaxIdle(2).WarmupConcurrency(2).IdleTimeout(10 * time.Minute).
		ReconcileInterval(200 * time.Millisecond).Build()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pool.Shutdown(context.Background(), false) }()
	if err := pool.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for idleCount(pool) < 2 {
		if time.Now().After(deadline) {
			snap, _ := pool.Snapshot(ctx)
			t.Fatalf("pool never warmed: %+v", snap)
		}
		time.Sleep(50 * time.Millisecond)
	}
	entries, _ := pool.SnapshotIdleEntries(ctx)
	mgr := NewSandboxManager(ConnectionConfig{})
	defer mgr.Close()
	info, err := mgr.GetSandboxInfo(ctx, entries[0].SandboxID)
	if err != nil || info.Metadata["suite"] != "go-pool" {
		t.Fatalf("warm sandbox %v: %+v %v", entries[0].SandboxID, info, err)
	}

	failFast := AcquirePolicyFailFast
	sb, err := pool.Acquire(ctx, AcquireOptions{Policy: &failFast, SandboxTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if sb.ID() != entries[0].SandboxID {
		t.Fatalf("acquired %s, want the oldest idle %s", sb.ID(), entries[0].SandboxID)
	}
	ex, err := sb.RunCommand(ctx, "echo pooled", nil)
	if err != nil || ex.Text() != "pooled" {
		t.Fatalf("run in pooled sandbox: %v %v", ex, err)
	}
	_ = sb.Kill(ctx)
	_ = sb.Close()

	// Kill the next idle one behind the pool's back: the retry policy skips it.
	if err := mgr.KillSandbox(ctx, entries[1].SandboxID); err != nil {
		t.Fatal(err)
	}
	retry := AcquirePolicyRetryNextIdleThenCreate
	sb2, err := pool.Acquire(ctx, AcquireOptions{Policy: &retry, SkipHealthCheck: false})
	if err != nil {
		t.Fatal(err)
	}
	if sb2.ID() == entries[1].SandboxID {
		t.Fatal("a killed idle sandbox was handed out")
	}
	_ = sb2.Kill(ctx)
	_ = sb2.Close()

	deadline = time.Now().Add(60 * time.Second)
	for idleCount(pool) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("pool never replenished")
		}
		time.Sleep(50 * time.Millisecond)
	}
	m, err := NewSandboxPoolManagerBuilder().StateStore(store).ConnectionConfig(ConnectionConfig{}).Build()
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Destroy(ctx, pool.config.PoolName, PoolDestroyOptions{})
	if err != nil || res.KilledIdleCount < 2 {
		t.Fatalf("destroy %+v %v", res, err)
	}
	if _, err := pool.Acquire(ctx, AcquireOptions{}); err == nil {
		t.Fatal("acquire on a destroyed pool succeeded")
	} else {
		var destroyed *PoolDestroyedError
		var notRunning *PoolNotRunningError
		if !errors.As(err, &destroyed) && !errors.As(err, &notRunning) {
			t.Fatalf("acquire on a destroyed pool: %v", err)
		}
	}
}
