package main

// Client-side sandbox pools (PROTOCOL.md §2.11) through the module's public API:
// SandboxPoolBuilder with the in-memory store or poolredis's Redis store.

import (
	"context"
	"errors"
	"time"

	opensandbox "github.com/alibaba/OpenSandbox/sdks/sandbox/go"
	"github.com/alibaba/OpenSandbox/sdks/sandbox/go/poolredis"
	"github.com/redis/go-redis/v9"
)

func init() {
	ops = append(ops,
		"pool.start", "pool.snapshot", "pool.idle_entries", "pool.acquire", "pool.resize",
		"pool.release_all_idle", "pool.shutdown",
	)
}

// pooled is one pool the driver started, with the Redis client it owns (if any).
type pooled struct {
	pool   *opensandbox.DefaultSandboxPool
	client *redis.Client
}

func (p *pooled) close(ctx context.Context) {
	_ = p.pool.Shutdown(ctx, false)
	if p.client != nil {
		_ = p.client.Close()
	}
}

var policies = map[string]opensandbox.AcquirePolicy{
	"DIRECT_CREATE":               opensandbox.AcquirePolicyDirectCreate,
	"FAIL_FAST":                   opensandbox.AcquirePolicyFailFast,
	"RETRY_NEXT_IDLE":             opensandbox.AcquirePolicyRetryNextIdle,
	"RETRY_NEXT_IDLE_THEN_CREATE": opensandbox.AcquirePolicyRetryNextIdleThenCreate,
}

func (st *state) poolOp(ctx context.Context, op string, a args) (any, error) {
	name, err := a.str("pool_name")
	if err != nil {
		return nil, err
	}
	if op == "pool.start" {
		return st.startPool(ctx, name, a)
	}
	p, ok := st.pools[name]
	if !ok {
		return nil, driverErr("no pool %q was started in this driver", name)
	}
	pool := p.pool
	switch op {
	case "pool.snapshot":
		s, err := pool.Snapshot(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{
			"lifecycle_state": s.LifecycleState.String(), "state": s.HealthState.String(),
			"idle_count": s.IdleCount, "max_idle": s.MaxIdle,
		}, nil
	case "pool.idle_entries":
		entries, err := pool.SnapshotIdleEntries(ctx)
		if err != nil {
			return nil, err
		}
		out := []any{}
		for _, e := range entries {
			out = append(out, map[string]any{"sandbox_id": e.SandboxID, "expires_at": e.ExpiresAt.Format(time.RFC3339Nano)})
		}
		return out, nil
	case "pool.acquire":
		opts := opensandbox.AcquireOptions{}
		if s := a.optStr("policy"); s != "" {
			policy, ok := policies[s]
			if !ok {
				return nil, driverErr("unknown policy %q", s)
			}
			opts.Policy = &policy
		}
		if t, ok := a.num("sandbox_timeout_s"); ok {
			opts.SandboxTimeout = secs(t)
		}
		sb, err := pool.Acquire(ctx, opts)
		if err != nil {
			return nil, err
		}
		st.sandboxes[sb.ID()] = sb
		return map[string]any{"id": sb.ID()}, nil
	case "pool.resize":
		n, _ := a.num("max_idle")
		return nil, pool.Resize(ctx, int(n))
	case "pool.release_all_idle":
		n, err := pool.ReleaseAllIdle(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"count": n}, nil
	case "pool.shutdown":
		graceful := !a.has("graceful") || a.boolean("graceful")
		return nil, pool.Shutdown(ctx, graceful)
	}
	return nil, &failure{kind: "unsupported_op", msg: "unsupported op " + op}
}

func (st *state) startPool(ctx context.Context, name string, a args) (any, error) {
	if old, ok := st.pools[name]; ok {
		old.close(ctx)
		delete(st.pools, name)
	}
	maxIdle, _ := a.num("max_idle")
	image := a.optStr("image")
	if image == "" {
		image = "python:3.11"
	}
	b := opensandbox.NewSandboxPoolBuilder().
		PoolName(name).
		MaxIdle(int(maxIdle)).
		ConnectionConfig(opensandbox.ConnectionConfig{}).
		CreationSpec(opensandbox.PoolCreationSpec{Image: image, Metadata: a.strMap("metadata")})
	if t, ok := a.num("idle_timeout_s"); ok {
		b = b.IdleTimeout(secs(t))
	}
	if t, ok := a.num("primary_lock_ttl_s"); ok {
		b = b.PrimaryLockTTL(secs(t))
	}
	if t, ok := a.num("reconcile_interval_s"); ok {
		b = b.ReconcileInterval(secs(t))
	}
	if id := a.optStr("owner_id"); id != "" {
		b = b.OwnerID(id)
	}
	p := &pooled{}
	switch store := a.optStr("store"); store {
	case "", "memory":
	case "redis":
		url, err := a.str("redis_url")
		if err != nil {
			return nil, err
		}
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, driverErr("redis_url: %v", err)
		}
		p.client = redis.NewClient(opt)
		rs, err := poolredis.NewRedisPoolStateStore(poolredis.RedisPoolStateStoreConfig{
			Client: p.client, KeyPrefix: a.optStr("key_prefix"),
		})
		if err != nil {
			_ = p.client.Close()
			return nil, err
		}
		b = b.StateStore(rs)
	default:
		return nil, driverErr("unknown store %q", store)
	}
	pool, err := b.Build()
	if err == nil {
		err = pool.Start(ctx)
	}
	if err != nil {
		if p.client != nil {
			_ = p.client.Close()
		}
		return nil, err
	}
	p.pool = pool
	st.pools[name] = p
	return map[string]any{"pool_name": name}, nil
}

// closePools shuts every pool down (stdin closed).
func (st *state) closePools() {
	for name, p := range st.pools {
		p.close(context.Background())
		delete(st.pools, name)
	}
}

// poolErrorInfo maps the pool's error types to the protocol's kinds, or nil.
func poolErrorInfo(err error) map[string]any {
	var empty *opensandbox.PoolEmptyError
	var failed *opensandbox.PoolAcquireFailedError
	var notRunning *opensandbox.PoolNotRunningError
	var unavailable *opensandbox.PoolStateStoreUnavailableError
	var destroyed *opensandbox.PoolDestroyedError
	var incomplete *opensandbox.PoolDestroyIncompleteError
	kind := ""
	switch {
	case errors.As(err, &empty):
		kind = "pool_empty"
	case errors.As(err, &failed):
		kind = "pool_acquire_failed"
	case errors.As(err, &notRunning):
		kind = "pool_not_running"
	case errors.As(err, &unavailable):
		kind = "pool_state_store_unavailable"
	case errors.As(err, &destroyed):
		kind = "pool_destroyed"
	case errors.As(err, &incomplete):
		kind = "pool_destroy_incomplete"
	default:
		return nil
	}
	return map[string]any{"kind": kind, "message": err.Error()}
}
