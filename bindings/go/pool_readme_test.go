package opensandbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	opensandbox "example.invalid/opensandbox-sdk/go"
)

// The official README's "Sandbox Pool (Client-Side)" example, against the
// reference server (scripts/with-server.sh gives the connection through the env).
func TestReadmeSandboxPool(t *testing.T) {
	readmeServer(t)
	log := testLog{t}
	ctx := context.Background()

	pool, err := opensandbox.NewSandboxPoolBuilder().
		PoolName("demo-pool").
		OwnerID("worker-1").
		MaxIdle(3).
		ConnectionConfig(opensandbox.ConnectionConfig{}).
		CreationSpec(opensandbox.PoolCreationSpec{Image: "ubuntu:22.04"}).
		StateStore(opensandbox.NewInMemoryPoolStateStore()).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	if err := pool.Start(ctx); err != nil {
		log.Fatal(err)
	}

	failFast := opensandbox.AcquirePolicyFailFast
	// Right after Start the first warm-up may still be running: FailFast then says
	// so with *PoolEmptyError, which is what the README's policy promises.
	var sb *opensandbox.Sandbox
	deadline := time.Now().Add(60 * time.Second)
	for {
		sb, err = pool.Acquire(ctx, opensandbox.AcquireOptions{SandboxTimeout: 10 * time.Minute, Policy: &failFast})
		var empty *opensandbox.PoolEmptyError
		if err == nil || !errors.As(err, &empty) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		log.Fatal(err)
	}
	result, err := sb.RunCommand(ctx, "echo pool-ok", nil)
	if err != nil || result.Text() != "pool-ok" {
		t.Fatalf("run: %v %v", result, err)
	}
	_ = sb.Kill(context.Background())
	if _, err := pool.ReleaseAllIdle(ctx); err != nil {
		t.Fatal(err)
	}
	_ = pool.Shutdown(ctx, true)

	snap, err := pool.Snapshot(ctx)
	if err != nil || snap.LifecycleState != opensandbox.PoolLifecycleStopped {
		t.Fatalf("after Shutdown: %+v %v", snap, err)
	}
	if _, err := pool.Acquire(ctx, opensandbox.AcquireOptions{}); err == nil {
		t.Fatal("Acquire after Shutdown")
	} else if e := (*opensandbox.PoolNotRunningError)(nil); !errors.As(err, &e) {
		t.Fatalf("Acquire after Shutdown: %v", err)
	}
}
