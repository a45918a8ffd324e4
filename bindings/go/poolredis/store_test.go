package poolredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	opensandbox "github.com/alibaba/OpenSandbox/sdks/sandbox/go"
	"github.com/redis/go-redis/v9"
)

// startRedis runs a throw-away redis-server on a free port for the test.
func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (apt-get install redis-server; scripts/setup.sh does)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	client := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	t.Cleanup(func() { _ = client.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for client.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not come up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return client
}

func newStore(t *testing.T, client redis.UniversalClient) *RedisPoolStateStore {
	t.Helper()
	s, err := NewRedisPoolStateStore(RedisPoolStateStoreConfig{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRedisStoreSemantics(t *testing.T) {
	ctx := context.Background()
	client := startRedis(t)
	s := newStore(t, client)
	if _, err := NewRedisPoolStateStore(RedisPoolStateStoreConfig{}); err == nil {
		t.Fatal("nil client accepted")
	}
	var invalid *opensandbox.InvalidArgumentError
	if err := s.PutIdle(ctx, "p", ""); !errors.As(err, &invalid) {
		t.Fatalf("blank id: %v", err)
	}
	if err := s.SetIdleEntryTTL(ctx, "p", time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "a", "c"} {
		if err := s.PutIdle(ctx, "p", id); err != nil {
			t.Fatal(err)
		}
	}
	e, err := s.SnapshotIdleEntries(ctx, "p")
	if err != nil || len(e) != 3 || e[0].SandboxID != "a" || e[2].SandboxID != "c" || time.Until(e[0].ExpiresAt) < 59*time.Minute {
		t.Fatalf("PutIdle is idempotent and FIFO: %+v %v", e, err)
	}
	// The official key layout, so pools of the other SDKs share this namespace.
	if n, _ := client.HLen(ctx, "opensandbox:pool:{cA}:idle:expires").Result(); n != 3 {
		t.Fatalf("idle:expires under the official key: %d entries", n)
	}
	if v, _ := client.Get(ctx, "opensandbox:pool:{cA}:idleTtlMillis").Result(); v != "3600000" {
		t.Fatalf("idleTtlMillis = %q", v)
	}
	_ = s.RemoveIdle(ctx, "p", "b")
	if id, _ := s.TryTakeIdle(ctx, "p"); id != "a" {
		t.Fatalf("take = %q", id)
	}
	r, err := s.TryTakeIdleWithMinTTL(ctx, "p", 2*time.Hour)
	if err != nil || r.SandboxID != "" || len(r.DiscardedAliveSandboxIDs) != 1 || r.DiscardedAliveSandboxIDs[0] != "c" {
		t.Fatalf("min TTL take %+v %v", r, err)
	}
	if id, err := s.TryTakeIdle(ctx, "p"); id != "" || err != nil {
		t.Fatalf("empty take = %q %v", id, err)
	}
	_ = s.SetIdleEntryTTL(ctx, "p", 30*time.Millisecond)
	_ = s.PutIdle(ctx, "p", "old")
	_ = s.SetIdleEntryTTL(ctx, "p", time.Hour)
	_ = s.PutIdle(ctx, "p", "fresh")
	time.Sleep(50 * time.Millisecond)
	if c, _ := s.SnapshotCounters(ctx, "p"); c.IdleCount != 1 {
		t.Fatalf("expired entry counted: %d", c.IdleCount)
	}
	rr, err := s.ReapExpiredIdleWithMinTTL(ctx, "p", time.Now(), 2*time.Hour)
	if err != nil || len(rr.DiscardedAliveSandboxIDs) != 1 || rr.DiscardedAliveSandboxIDs[0] != "fresh" {
		t.Fatalf("reap %+v %v", rr, err)
	}
	if n, _ := client.LLen(ctx, "opensandbox:pool:{cA}:idle:list").Result(); n != 0 {
		t.Fatalf("reap leaves the list clean, %d left", n)
	}
	if err := s.SetMaxIdle(ctx, "p", 4); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.GetMaxIdle(ctx, "p"); n != 4 {
		t.Fatalf("maxIdle %d", n)
	}
	if n, _ := s.GetMaxIdle(ctx, "unset"); n != 0 {
		t.Fatalf("unset maxIdle %d", n)
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
	if v, _ := client.Get(ctx, s.PrimaryLockKey("p")).Result(); v != "o1" {
		t.Fatalf("lock value %q", v)
	}
	if ok, _ := s.RenewPrimaryLock(ctx, "p", "o1", 30*time.Millisecond); !ok {
		t.Fatal("owner renew")
	}
	time.Sleep(60 * time.Millisecond)
	if ok, _ := s.RenewPrimaryLock(ctx, "p", "o1", time.Hour); ok {
		t.Fatal("an expired lock was renewed")
	}
	if ok, _ := s.TryAcquirePrimaryLock(ctx, "p", "o2", time.Hour); !ok {
		t.Fatal("expired lock not taken over")
	}

	// Destroy fence and tombstone.
	if st, _ := s.GetDestroyState(ctx, "p"); st != opensandbox.PoolDestroyStateActive {
		t.Fatalf("state %s", st)
	}
	if err := s.BeginDestroy(ctx, "p", "d"); err != nil {
		t.Fatal(err)
	}
	var destroyed *opensandbox.PoolDestroyedError
	for name, write := range map[string]func() error{
		"PutIdle":    func() error { return s.PutIdle(ctx, "p", "x") },
		"SetMaxIdle": func() error { return s.SetMaxIdle(ctx, "p", 1) },
		"SetTTL":     func() error { return s.SetIdleEntryTTL(ctx, "p", time.Hour) },
	} {
		if err := write(); !errors.As(err, &destroyed) || destroyed.State != opensandbox.PoolDestroyStateDestroying {
			t.Fatalf("fenced %s: %v", name, err)
		}
	}
	if ok, _ := s.RenewPrimaryLock(ctx, "p", "o2", time.Hour); ok {
		t.Fatal("lock renewed through a fence")
	}
	if err := s.ClearPoolState(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDestroyed(ctx, "p", "d", -time.Second); !errors.As(err, &invalid) {
		t.Fatalf("negative tombstone TTL: %v", err)
	}
	if err := s.MarkDestroyed(ctx, "p", "d", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginDestroy(ctx, "p", "d2"); !errors.As(err, &destroyed) || destroyed.State != opensandbox.PoolDestroyStateDestroyed {
		t.Fatalf("BeginDestroy on a tombstone: %v", err)
	}
	if keys, _ := client.Keys(ctx, "opensandbox:pool:{cA}:*").Result(); len(keys) != 2 {
		t.Fatalf("after clear only the destroy keys stay: %v", keys)
	}
	time.Sleep(80 * time.Millisecond)
	if st, _ := s.GetDestroyState(ctx, "p"); st != opensandbox.PoolDestroyStateActive {
		t.Fatalf("expired tombstone reads %s", st)
	}

	// A custom prefix isolates namespaces.
	other, _ := NewRedisPoolStateStore(RedisPoolStateStoreConfig{Client: client, KeyPrefix: "team2"})
	_ = other.PutIdle(ctx, "p", "z")
	if c, _ := s.SnapshotCounters(ctx, "p"); c.IdleCount != 0 {
		t.Fatal("prefixes leak")
	}
}

func TestRedisStoreOutage(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	_ = l.Close()
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer client.Close()
	s := newStore(t, client)
	_, err := s.TryTakeIdle(context.Background(), "p")
	var down *opensandbox.PoolStateStoreUnavailableError
	if !errors.As(err, &down) || down.Operation != "TryTakeIdle" {
		t.Fatalf("outage error: %T %v", err, err)
	}
	if _, err := s.GetDestroyState(context.Background(), "p"); !errors.As(err, &down) {
		t.Fatalf("outage on GetDestroyState: %v", err)
	}
}

// Two pools (two owners, as two processes would be) share one Redis namespace on the
// reference server: one is primary and warms the pool, the other hands out its
// sandboxes; a destroy through a third party stops both.
func TestRedisSharedPoolAgainstServer(t *testing.T) {
	if os.Getenv("OPEN_SANDBOX_DOMAIN") == "" {
		t.Skip("OPEN_SANDBOX_DOMAIN not set (run through scripts/with-server.sh)")
	}
	client := startRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := "go-redis-" + fmt.Sprint(time.Now().UnixNano())
	build := func(owner string) *opensandbox.DefaultSandboxPool {
		p, err := opensandbox.NewSandboxPoolBuilder().PoolName(name).OwnerID(owner).
			ConnectionConfig(opensandbox.ConnectionConfig{}).StateStore(newStore(t, client)).
			CreationSpec(opensandbox.PoolCreationSpec{Image: "ubuntu:22.04"}).
			MaxIdle(2).WarmupConcurrency(2).IdleTimeout(10 * time.Minute).ReconcileInterval(200 * time.Millisecond).Build()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Shutdown(context.Background(), false) })
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := build("owner-a")
	b := build("owner-b")
	deadline := time.Now().Add(60 * time.Second)
	for {
		snap, err := b.Snapshot(ctx)
		if err == nil && snap.IdleCount == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shared pool never warmed: %+v %v", snap, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	owner, _ := client.Get(ctx, newStore(t, client).PrimaryLockKey(name)).Result()
	if owner != "owner-a" && owner != "owner-b" {
		t.Fatalf("primary lock held by %q", owner)
	}
	failFast := opensandbox.AcquirePolicyFailFast
	sb, err := b.Acquire(ctx, opensandbox.AcquireOptions{Policy: &failFast})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := sb.RunCommand(ctx, "echo shared", nil)
	if err != nil || ex.Text() != "shared" {
		t.Fatalf("run: %v %v", ex, err)
	}
	_ = sb.Kill(ctx)
	_ = sb.Close()

	m, err := opensandbox.NewSandboxPoolManagerBuilder().StateStore(newStore(t, client)).
		ConnectionConfig(opensandbox.ConnectionConfig{}).Build()
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Destroy(ctx, name, opensandbox.PoolDestroyOptions{})
	if err != nil || res.State != opensandbox.PoolDestroyStateDestroyed || res.DrainedIdleCount < 1 {
		t.Fatalf("destroy %+v %v", res, err)
	}
	for _, p := range []*opensandbox.DefaultSandboxPool{a, b} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			snap, _ := p.Snapshot(ctx)
			if snap != nil && snap.LifecycleState == opensandbox.PoolLifecycleStopped {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pool not stopped by the destroy: %+v", snap)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if keys, _ := client.Keys(ctx, "opensandbox:pool:*").Result(); len(keys) != 2 || !strings.Contains(strings.Join(keys, ","), "destroy:state") {
		t.Fatalf("after destroy: %v", keys)
	}
}
