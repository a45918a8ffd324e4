package opensandbox

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"os"
	"time"
)

// SandboxPoolBuilder configures a DefaultSandboxPool.
type SandboxPoolBuilder struct {
	config              PoolConfig
	stateStoreSet       bool
	connectionConfigSet bool
}

// NewSandboxPoolBuilder starts a builder with the official defaults.
func NewSandboxPoolBuilder() *SandboxPoolBuilder {
	return &SandboxPoolBuilder{config: PoolConfig{
		PrimaryLockTTL:                    60 * time.Second,
		ReconcileInterval:                 5 * time.Second,
		DegradedThreshold:                 3,
		AcquireReadyTimeout:               30 * time.Second,
		WarmupReadyTimeout:                30 * time.Second,
		AcquireHealthCheckPollingInterval: 200 * time.Millisecond,
		WarmupHealthCheckPollingInterval:  200 * time.Millisecond,
		EmptyBehavior:                     AcquirePolicyDirectCreate,
		DrainTimeout:                      30 * time.Second,
		MaxAcquireRetries:                 3,
	}}
}

func (b *SandboxPoolBuilder) PoolName(name string) *SandboxPoolBuilder {
	b.config.PoolName = name
	return b
}

func (b *SandboxPoolBuilder) OwnerID(id string) *SandboxPoolBuilder {
	b.config.OwnerID = id
	return b
}

func (b *SandboxPoolBuilder) MaxIdle(n int) *SandboxPoolBuilder {
	b.config.MaxIdle = n
	return b
}

// StateStore sets the store (default: a new InMemoryPoolStateStore).
func (b *SandboxPoolBuilder) StateStore(s PoolStateStore) *SandboxPoolBuilder {
	b.config.StateStore = s
	b.stateStoreSet = true
	return b
}

// ConnectionConfig sets the server connection (required).
func (b *SandboxPoolBuilder) ConnectionConfig(c ConnectionConfig) *SandboxPoolBuilder {
	b.config.ConnectionConfig = c
	b.connectionConfigSet = true
	return b
}

func (b *SandboxPoolBuilder) CreationSpec(s PoolCreationSpec) *SandboxPoolBuilder {
	b.config.CreationSpec = s
	return b
}

func (b *SandboxPoolBuilder) WarmupConcurrency(n int) *SandboxPoolBuilder {
	b.config.WarmupConcurrency = n
	return b
}

func (b *SandboxPoolBuilder) ReconcileInterval(d time.Duration) *SandboxPoolBuilder {
	b.config.ReconcileInterval = d
	return b
}

func (b *SandboxPoolBuilder) PrimaryLockTTL(d time.Duration) *SandboxPoolBuilder {
	b.config.PrimaryLockTTL = d
	return b
}

func (b *SandboxPoolBuilder) DegradedThreshold(n int) *SandboxPoolBuilder {
	b.config.DegradedThreshold = n
	return b
}

func (b *SandboxPoolBuilder) AcquireReadyTimeout(d time.Duration) *SandboxPoolBuilder {
	b.config.AcquireReadyTimeout = d
	return b
}

func (b *SandboxPoolBuilder) WarmupReadyTimeout(d time.Duration) *SandboxPoolBuilder {
	b.config.WarmupReadyTimeout = d
	return b
}

func (b *SandboxPoolBuilder) AcquireHealthCheckPollingInterval(d time.Duration) *SandboxPoolBuilder {
	b.config.AcquireHealthCheckPollingInterval = d
	return b
}

func (b *SandboxPoolBuilder) WarmupHealthCheckPollingInterval(d time.Duration) *SandboxPoolBuilder {
	b.config.WarmupHealthCheckPollingInterval = d
	return b
}

// EmptyBehavior sets the default AcquirePolicy.
func (b *SandboxPoolBuilder) EmptyBehavior(p AcquirePolicy) *SandboxPoolBuilder {
	b.config.EmptyBehavior = p
	return b
}

func (b *SandboxPoolBuilder) AcquireHealthCheck(fn func(ctx context.Context, sb *Sandbox) error) *SandboxPoolBuilder {
	b.config.AcquireHealthCheck = fn
	return b
}

func (b *SandboxPoolBuilder) WarmupHealthCheck(fn func(ctx context.Context, sb *Sandbox) error) *SandboxPoolBuilder {
	b.config.WarmupHealthCheck = fn
	return b
}

func (b *SandboxPoolBuilder) WarmupSandboxPreparer(fn func(ctx context.Context, sb *Sandbox) error) *SandboxPoolBuilder {
	b.config.WarmupSandboxPreparer = fn
	return b
}

func (b *SandboxPoolBuilder) SandboxCreator(creator PooledSandboxCreator) *SandboxPoolBuilder {
	b.config.SandboxCreator = creator
	return b
}

func (b *SandboxPoolBuilder) WarmupSkipHealthCheck(skip bool) *SandboxPoolBuilder {
	b.config.WarmupSkipHealthCheck = skip
	return b
}

func (b *SandboxPoolBuilder) AcquireMinRemainingTTL(d time.Duration) *SandboxPoolBuilder {
	b.config.AcquireMinRemainingTTL = d
	return b
}

// IdleTimeout is the TTL of pool sandboxes and idle entries (default 24h).
func (b *SandboxPoolBuilder) IdleTimeout(d time.Duration) *SandboxPoolBuilder {
	b.config.IdleTimeout = d
	return b
}

func (b *SandboxPoolBuilder) DrainTimeout(d time.Duration) *SandboxPoolBuilder {
	b.config.DrainTimeout = d
	return b
}

// MaxAcquireRetries bounds the idle candidates of the RetryNextIdle policies (>= 1).
func (b *SandboxPoolBuilder) MaxAcquireRetries(n int) *SandboxPoolBuilder {
	b.config.MaxAcquireRetries = n
	return b
}

func (b *SandboxPoolBuilder) PoolLogger(l PoolLogger) *SandboxPoolBuilder {
	b.config.Logger = l
	return b
}

func builderErr(format string, a ...any) error {
	return fmt.Errorf("opensandbox: pool builder: "+format, a...)
}

// Build validates the configuration and creates the pool (not started).
func (b *SandboxPoolBuilder) Build() (*DefaultSandboxPool, error) {
	c := b.config
	spec := c.CreationSpec
	switch {
	case c.PoolName == "":
		return nil, builderErr("PoolName is required")
	case c.MaxIdle < 0:
		return nil, builderErr("MaxIdle must be >= 0, got %d", c.MaxIdle)
	case !b.connectionConfigSet:
		return nil, builderErr("ConnectionConfig is required")
	case c.ReconcileInterval <= 0:
		return nil, builderErr("ReconcileInterval must be positive")
	case c.PrimaryLockTTL <= 0:
		return nil, builderErr("PrimaryLockTTL must be positive")
	case c.DegradedThreshold <= 0:
		return nil, builderErr("DegradedThreshold must be positive")
	case c.SandboxCreator == nil && spec.Image == "" && spec.SnapshotID == "":
		return nil, builderErr("CreationSpec (with Image or SnapshotID) is required when no SandboxCreator is set")
	case c.SandboxCreator == nil && spec.Image != "" && spec.SnapshotID != "":
		return nil, builderErr("CreationSpec cannot have both Image and SnapshotID set")
	case spec.TimeoutSeconds != nil:
		return nil, builderErr("CreationSpec.TimeoutSeconds is not supported; use IdleTimeout to control sandbox TTL in pools")
	case spec.ManualCleanup:
		return nil, builderErr("ManualCleanup is not supported for pooled sandboxes (would leak resources after idle TTL expiry)")
	case c.AcquireReadyTimeout <= 0:
		return nil, builderErr("AcquireReadyTimeout must be positive")
	case c.WarmupReadyTimeout <= 0:
		return nil, builderErr("WarmupReadyTimeout must be positive")
	case c.AcquireHealthCheckPollingInterval < 0:
		return nil, builderErr("AcquireHealthCheckPollingInterval must be non-negative")
	case c.WarmupHealthCheckPollingInterval < 0:
		return nil, builderErr("WarmupHealthCheckPollingInterval must be non-negative")
	case c.AcquireMinRemainingTTL < 0:
		return nil, builderErr("AcquireMinRemainingTTL must be >= 0, got %v", c.AcquireMinRemainingTTL)
	case c.DrainTimeout < 0:
		return nil, builderErr("DrainTimeout must be non-negative, got %v", c.DrainTimeout)
	case c.WarmupConcurrency < 0:
		return nil, builderErr("WarmupConcurrency must be non-negative, got %d", c.WarmupConcurrency)
	case c.MaxAcquireRetries < 1:
		return nil, builderErr("MaxAcquireRetries must be >= 1, got %d", c.MaxAcquireRetries)
	case c.IdleTimeout < 0:
		return nil, builderErr("IdleTimeout must be positive, got %v", c.IdleTimeout)
	}
	if !b.stateStoreSet {
		c.StateStore = NewInMemoryPoolStateStore()
	}
	if c.StateStore == nil {
		return nil, builderErr("StateStore must not be nil")
	}
	if c.WarmupConcurrency == 0 {
		c.WarmupConcurrency = int(math.Max(1, math.Ceil(float64(c.MaxIdle)*0.2)))
	}
	if c.OwnerID == "" {
		id, err := generateOwnerID("pool-owner")
		if err != nil {
			return nil, builderErr("%v", err)
		}
		c.OwnerID = id
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.Logger == nil {
		c.Logger = noopPoolLogger{}
	}
	if c.AcquireMinRemainingTTL > 0 && c.AcquireMinRemainingTTL >= c.IdleTimeout {
		return nil, builderErr("AcquireMinRemainingTTL (%v) must be less than IdleTimeout (%v)", c.AcquireMinRemainingTTL, c.IdleTimeout)
	}
	if c.AcquireMinRemainingTTL == 0 {
		c.AcquireMinRemainingTTL = c.IdleTimeout / 2
		if c.AcquireMinRemainingTTL > 60*time.Second {
			c.AcquireMinRemainingTTL = 60 * time.Second
		}
	}
	p := &DefaultSandboxPool{config: &c, lifecycleState: PoolLifecycleNotStarted, healthState: PoolHealthy}
	p.ops = realPoolOps(p)
	return p, nil
}

// generateOwnerID is "<kind>-<host>-<pid>-<nanos>-<random hex>".
func generateOwnerID(kind string) (string, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("failed to generate random owner ID: %w", err)
	}
	return fmt.Sprintf("%s-%s-%d-%d-%x", kind, host, os.Getpid(), time.Now().UnixNano(), rnd), nil
}
