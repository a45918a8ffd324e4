package opensandbox

import (
	"context"
	"time"
)

// PoolLifecycleState is the lifecycle state of a SandboxPool.
type PoolLifecycleState int

const (
	PoolLifecycleNotStarted PoolLifecycleState = iota
	PoolLifecycleStarting
	PoolLifecycleRunning
	PoolLifecycleDraining
	PoolLifecycleStopped
)

func (s PoolLifecycleState) String() string {
	switch s {
	case PoolLifecycleNotStarted:
		return "NOT_STARTED"
	case PoolLifecycleStarting:
		return "STARTING"
	case PoolLifecycleRunning:
		return "RUNNING"
	case PoolLifecycleDraining:
		return "DRAINING"
	case PoolLifecycleStopped:
		return "STOPPED"
	}
	return "UNKNOWN"
}

// PoolHealthState is the health of a pool's replenishment: DEGRADED after
// DegradedThreshold consecutive warm-up failures, with exponential backoff.
type PoolHealthState int

const (
	PoolHealthy PoolHealthState = iota
	PoolDegraded
)

func (s PoolHealthState) String() string {
	switch s {
	case PoolHealthy:
		return "HEALTHY"
	case PoolDegraded:
		return "DEGRADED"
	}
	return "UNKNOWN"
}

// AcquirePolicy decides what Acquire does when the idle buffer is empty or an idle
// candidate fails its readiness check.
//
//   - AcquirePolicyDirectCreate (default) / AcquirePolicyFailFast try one idle
//     candidate; then DirectCreate creates a sandbox, FailFast returns an error.
//   - AcquirePolicyRetryNextIdle / AcquirePolicyRetryNextIdleThenCreate try up to
//     MaxAcquireRetries candidates; then ThenCreate creates, RetryNextIdle fails.
//
// The order is append-only: the zero value is AcquirePolicyDirectCreate.
type AcquirePolicy int

const (
	AcquirePolicyDirectCreate AcquirePolicy = iota
	AcquirePolicyFailFast
	AcquirePolicyRetryNextIdle
	AcquirePolicyRetryNextIdleThenCreate
)

func (p AcquirePolicy) String() string {
	switch p {
	case AcquirePolicyDirectCreate:
		return "DIRECT_CREATE"
	case AcquirePolicyFailFast:
		return "FAIL_FAST"
	case AcquirePolicyRetryNextIdle:
		return "RETRY_NEXT_IDLE"
	case AcquirePolicyRetryNextIdleThenCreate:
		return "RETRY_NEXT_IDLE_THEN_CREATE"
	}
	return "UNKNOWN"
}

// IdleEntry is one idle sandbox of a pool.
type IdleEntry struct {
	SandboxID string
	ExpiresAt time.Time
}

// StoreCounters are a pool's counters in its state store.
type StoreCounters struct {
	IdleCount int
}

// TakeIdleResult is the outcome of taking an idle sandbox. SandboxID is "" when none
// was taken; DiscardedAliveSandboxIDs are entries dropped for too little remaining
// TTL that are still alive (the caller kills them).
type TakeIdleResult struct {
	SandboxID                string
	DiscardedAliveSandboxIDs []string
}

// ReapResult is the outcome of a min-TTL-aware reap.
type ReapResult struct {
	DiscardedAliveSandboxIDs []string
}

// PoolSnapshot is a point-in-time view of a pool.
type PoolSnapshot struct {
	LifecycleState     PoolLifecycleState
	HealthState        PoolHealthState
	IdleCount          int
	MaxIdle            int
	FailureCount       int
	BackoffActive      bool
	LastError          string
	InFlightOperations int
}

// PoolCreationSpec is how the pool creates its sandboxes (the TTL is IdleTimeout).
type PoolCreationSpec struct {
	Image           string
	SnapshotID      string
	Entrypoint      []string
	ResourceLimits  ResourceLimits
	TimeoutSeconds  *int
	Env             map[string]string
	Metadata        map[string]string
	NetworkPolicy   *NetworkPolicy
	Volumes         []Volume
	Extensions      map[string]string
	Platform        *PlatformSpec
	ManualCleanup   bool
	SecureAccess    bool
	CredentialProxy *CredentialProxyConfig
	ImageAuth       *ImageAuth
}

// PooledSandboxCreator replaces the pool's default CreateSandbox call.
type PooledSandboxCreator interface {
	Create(ctx context.Context, createCtx PooledSandboxCreateContext) (*Sandbox, error)
}

// PooledSandboxCreateReason says why the pool creates a sandbox.
type PooledSandboxCreateReason int

const (
	CreateReasonWarmup PooledSandboxCreateReason = iota
	CreateReasonAcquire
)

func (r PooledSandboxCreateReason) String() string {
	switch r {
	case CreateReasonWarmup:
		return "WARMUP"
	case CreateReasonAcquire:
		return "ACQUIRE"
	}
	return "UNKNOWN"
}

// PooledSandboxCreateContext is what a PooledSandboxCreator gets.
type PooledSandboxCreateContext struct {
	PoolName                   string
	OwnerID                    string
	IdleTimeout                time.Duration
	Reason                     PooledSandboxCreateReason
	ReadyTimeout               time.Duration
	HealthCheckPollingInterval time.Duration
	SkipHealthCheck            bool
	HealthCheck                func(ctx context.Context, sb *Sandbox) error
	ConnectionConfig           ConnectionConfig
	CreationSpec               PoolCreationSpec
}

// PoolLogger is the pool's structured logger (key/value pairs). The default
// discards everything.
type PoolLogger interface {
	Info(msg string, keysAndValues ...interface{})
	Warn(msg string, keysAndValues ...interface{})
	Debug(msg string, keysAndValues ...interface{})
}

type noopPoolLogger struct{}

func (noopPoolLogger) Info(string, ...interface{})  {}
func (noopPoolLogger) Warn(string, ...interface{})  {}
func (noopPoolLogger) Debug(string, ...interface{}) {}

// PoolConfig is a pool's configuration (built by SandboxPoolBuilder).
type PoolConfig struct {
	PoolName          string
	OwnerID           string
	MaxIdle           int
	WarmupConcurrency int
	PrimaryLockTTL    time.Duration
	ReconcileInterval time.Duration
	DegradedThreshold int
	EmptyBehavior     AcquirePolicy
	StateStore        PoolStateStore
	ConnectionConfig  ConnectionConfig
	CreationSpec      PoolCreationSpec

	AcquireReadyTimeout               time.Duration
	WarmupReadyTimeout                time.Duration
	AcquireHealthCheckPollingInterval time.Duration
	WarmupHealthCheckPollingInterval  time.Duration

	AcquireHealthCheck    func(ctx context.Context, sb *Sandbox) error
	WarmupHealthCheck     func(ctx context.Context, sb *Sandbox) error
	WarmupSandboxPreparer func(ctx context.Context, sb *Sandbox) error
	SandboxCreator        PooledSandboxCreator

	WarmupSkipHealthCheck  bool
	AcquireMinRemainingTTL time.Duration
	IdleTimeout            time.Duration
	DrainTimeout           time.Duration
	Logger                 PoolLogger

	// MaxAcquireRetries bounds the idle candidates one Acquire tries under the
	// RetryNextIdle policies (>= 1, default 3).
	MaxAcquireRetries int
}

// AcquireOptions configures one Acquire call.
type AcquireOptions struct {
	// SandboxTimeout, when > 0, renews the acquired sandbox to this TTL.
	SandboxTimeout time.Duration
	// Policy overrides the pool's EmptyBehavior.
	Policy *AcquirePolicy
	// SkipHealthCheck connects without the readiness check.
	SkipHealthCheck bool
	// MinRemainingTTL overrides AcquireMinRemainingTTL.
	MinRemainingTTL time.Duration
}

// DefaultIdleTimeout is the default TTL of idle pool entries (OSEP-0005).
const DefaultIdleTimeout = 24 * time.Hour

// PoolDestroyState is a pool namespace's destroy state, shared through the store.
// DESTROYING fences writes (no replenishment, no direct create); DESTROYED is a
// tombstone that keeps the namespace retired until it expires.
type PoolDestroyState int

const (
	PoolDestroyStateActive PoolDestroyState = iota
	PoolDestroyStateDestroying
	PoolDestroyStateDestroyed
)

func (s PoolDestroyState) String() string {
	switch s {
	case PoolDestroyStateActive:
		return "ACTIVE"
	case PoolDestroyStateDestroying:
		return "DESTROYING"
	case PoolDestroyStateDestroyed:
		return "DESTROYED"
	}
	return "UNKNOWN"
}

// PoolDestroyStrategy selects how a namespace is retired (only FORCE exists).
type PoolDestroyStrategy int

const (
	PoolDestroyForce PoolDestroyStrategy = iota
)

func (s PoolDestroyStrategy) String() string {
	if s == PoolDestroyForce {
		return "FORCE"
	}
	return "UNKNOWN"
}

// DefaultPoolDrainTimeout bounds the idle drain of a destroy.
const DefaultPoolDrainTimeout = 30 * time.Second

// DefaultPoolTombstoneTTL is how long a DESTROYED tombstone lives.
const DefaultPoolTombstoneTTL = 7 * 24 * time.Hour

// PoolDestroyOptions configures SandboxPoolManager.Destroy. Nil durations take the
// defaults; a zero TombstoneTTL writes a tombstone that never expires.
type PoolDestroyOptions struct {
	Strategy     PoolDestroyStrategy
	DrainTimeout *time.Duration
	TombstoneTTL *time.Duration
}

// PoolDestroyResult is the outcome of a destroy.
type PoolDestroyResult struct {
	PoolName               string
	State                  PoolDestroyState
	DrainedIdleCount       int
	KilledIdleCount        int
	PersistentStateCleared bool
}
