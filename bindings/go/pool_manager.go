package opensandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// SandboxPoolManager does namespace maintenance on a shared pool without the
// SandboxPool that owns it: Destroy retires a namespace for every peer.
type SandboxPoolManager struct {
	stateStore PoolStateStore
	kill       func(ctx context.Context, id string) error
	ownerID    string
	logger     PoolLogger
}

// Destroy retires poolName (FORCE): it writes the DESTROYING fence (peers stop
// replenishing and stop creating), drains the idle ids and kills them best-effort,
// clears the coordination state and writes a DESTROYED tombstone. When the drain
// or cleanup cannot finish the namespace stays DESTROYING and the error is a
// *PoolDestroyIncompleteError (retrying is safe). On a tombstoned namespace it is a
// no-op reporting DESTROYED.
func (m *SandboxPoolManager) Destroy(ctx context.Context, poolName string, options PoolDestroyOptions) (*PoolDestroyResult, error) {
	if strings.TrimSpace(poolName) == "" {
		return nil, fmt.Errorf("opensandbox: pool manager: poolName must not be blank")
	}
	if options.Strategy != PoolDestroyForce {
		return nil, fmt.Errorf("opensandbox: pool manager: only FORCE destroy strategy is supported, got %s", options.Strategy)
	}
	drainTimeout, tombstoneTTL := DefaultPoolDrainTimeout, DefaultPoolTombstoneTTL
	if options.DrainTimeout != nil {
		if drainTimeout = *options.DrainTimeout; drainTimeout < 0 {
			return nil, fmt.Errorf("opensandbox: pool manager: DrainTimeout must not be negative, got %v", drainTimeout)
		}
	}
	if options.TombstoneTTL != nil {
		if tombstoneTTL = *options.TombstoneTTL; tombstoneTTL < 0 {
			return nil, fmt.Errorf("opensandbox: pool manager: TombstoneTTL must not be negative, got %v", tombstoneTTL)
		}
	}
	already := &PoolDestroyResult{PoolName: poolName, State: PoolDestroyStateDestroyed}
	state, err := m.stateStore.GetDestroyState(ctx, poolName)
	if err != nil {
		return nil, err
	}
	if state == PoolDestroyStateDestroyed {
		return already, nil
	}
	if err := m.stateStore.BeginDestroy(ctx, poolName, m.ownerID); err != nil {
		var destroyed *PoolDestroyedError
		if errors.As(err, &destroyed) {
			return already, nil
		}
		return nil, err
	}

	drained, killed := 0, 0
	deadline := time.Now().Add(drainTimeout)
	timedOut := func() error {
		return &PoolDestroyIncompleteError{PoolName: poolName,
			Reason: fmt.Sprintf("drain timed out after %v with %d idle sandboxes drained", drainTimeout, drained)}
	}
	for {
		id, err := m.stateStore.TryTakeIdle(ctx, poolName)
		if err != nil {
			return nil, &PoolDestroyIncompleteError{PoolName: poolName,
				Reason: fmt.Sprintf("failed to drain idle sandboxes after %d drained", drained), Cause: err}
		}
		if id == "" {
			break
		}
		drained++
		killCtx, cancel := ctx, context.CancelFunc(func() {})
		if drainTimeout > 0 {
			remaining := time.Until(deadline)
			if remaining <= 0 {
				return nil, timedOut()
			}
			killCtx, cancel = context.WithTimeout(ctx, remaining)
		}
		err = m.kill(killCtx, id)
		cancel()
		if err != nil {
			m.logger.Warn("pool destroy failed to kill idle sandbox (best-effort)", "pool_name", poolName, "sandbox_id", id, "error", err)
		} else {
			killed++
		}
		if drainTimeout > 0 && time.Now().After(deadline) {
			return nil, timedOut()
		}
	}
	if err := m.stateStore.ClearPoolState(ctx, poolName); err != nil {
		return nil, &PoolDestroyIncompleteError{PoolName: poolName, Reason: "failed to clear persistent state", Cause: err}
	}
	if err := m.stateStore.MarkDestroyed(ctx, poolName, m.ownerID, tombstoneTTL); err != nil {
		return nil, &PoolDestroyIncompleteError{PoolName: poolName, Reason: "failed to write destroyed tombstone", Cause: err}
	}
	m.logger.Info("pool namespace destroyed", "pool_name", poolName, "drained_idle_count", drained, "killed_idle_count", killed)
	return &PoolDestroyResult{PoolName: poolName, State: PoolDestroyStateDestroyed,
		DrainedIdleCount: drained, KilledIdleCount: killed, PersistentStateCleared: true}, nil
}

// SandboxPoolManagerBuilder configures a SandboxPoolManager.
type SandboxPoolManagerBuilder struct {
	stateStore          PoolStateStore
	connectionConfig    ConnectionConfig
	connectionConfigSet bool
	ownerID             string
	logger              PoolLogger
}

// NewSandboxPoolManagerBuilder starts a builder.
func NewSandboxPoolManagerBuilder() *SandboxPoolManagerBuilder {
	return &SandboxPoolManagerBuilder{}
}

// StateStore is the store of the pool to retire (required).
func (b *SandboxPoolManagerBuilder) StateStore(s PoolStateStore) *SandboxPoolManagerBuilder {
	b.stateStore = s
	return b
}

// ConnectionConfig is used to kill the drained sandboxes (required).
func (b *SandboxPoolManagerBuilder) ConnectionConfig(c ConnectionConfig) *SandboxPoolManagerBuilder {
	b.connectionConfig = c
	b.connectionConfigSet = true
	return b
}

// OwnerID is recorded with the fence and tombstone (default: generated).
func (b *SandboxPoolManagerBuilder) OwnerID(id string) *SandboxPoolManagerBuilder {
	b.ownerID = id
	return b
}

func (b *SandboxPoolManagerBuilder) PoolLogger(l PoolLogger) *SandboxPoolManagerBuilder {
	b.logger = l
	return b
}

// Build validates and creates the manager.
func (b *SandboxPoolManagerBuilder) Build() (*SandboxPoolManager, error) {
	if b.stateStore == nil {
		return nil, fmt.Errorf("opensandbox: pool manager builder: StateStore is required")
	}
	if !b.connectionConfigSet {
		return nil, fmt.Errorf("opensandbox: pool manager builder: ConnectionConfig is required")
	}
	owner := b.ownerID
	if owner == "" {
		var err error
		if owner, err = generateOwnerID("pool-manager"); err != nil {
			return nil, fmt.Errorf("opensandbox: pool manager builder: %w", err)
		}
	}
	if strings.TrimSpace(owner) == "" {
		return nil, fmt.Errorf("opensandbox: pool manager builder: OwnerID must not be blank")
	}
	logger := b.logger
	if logger == nil {
		logger = noopPoolLogger{}
	}
	cc := b.connectionConfig
	var once sync.Once
	var mgr *SandboxManager
	kill := func(ctx context.Context, id string) error {
		once.Do(func() { mgr = NewSandboxManager(cc) })
		return mgr.KillSandbox(ctx, id)
	}
	return &SandboxPoolManager{stateStore: b.stateStore, kill: kill, ownerID: owner, logger: logger}, nil
}
