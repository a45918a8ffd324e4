package opensandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// SandboxPool is a client-side pool of warm sandboxes (OSEP-0005): a reconcile loop
// keeps MaxIdle sandboxes idle in a PoolStateStore and Acquire hands them out.
type SandboxPool interface {
	Start(ctx context.Context) error
	Acquire(ctx context.Context, opts AcquireOptions) (*Sandbox, error)
	ReleaseAllIdle(ctx context.Context) (int, error)
	Resize(ctx context.Context, newMaxIdle int) error
	Snapshot(ctx context.Context) (*PoolSnapshot, error)
	SnapshotIdleEntries(ctx context.Context) ([]IdleEntry, error)
	Shutdown(ctx context.Context, graceful bool) error
}

var _ SandboxPool = (*DefaultSandboxPool)(nil)

// poolOps are the server calls of a pool; tests replace them.
type poolOps struct {
	create  func(ctx context.Context, opts SandboxCreateOptions) (*Sandbox, error)
	connect func(ctx context.Context, id string, ready *ReadyOptions) (*Sandbox, error)
	renew   func(ctx context.Context, sb *Sandbox, d time.Duration) error
	kill    func(ctx context.Context, id string) error
}

func realPoolOps(p *DefaultSandboxPool) poolOps {
	cc := p.config.ConnectionConfig
	return poolOps{
		create: func(ctx context.Context, opts SandboxCreateOptions) (*Sandbox, error) {
			return CreateSandbox(ctx, cc, opts)
		},
		connect: func(ctx context.Context, id string, ready *ReadyOptions) (*Sandbox, error) {
			if ready == nil {
				return ConnectSandbox(ctx, cc, id)
			}
			return ConnectSandbox(ctx, cc, id, *ready)
		},
		renew: func(ctx context.Context, sb *Sandbox, d time.Duration) error {
			_, err := sb.Renew(ctx, d)
			return err
		},
		kill: func(ctx context.Context, id string) error {
			return p.sandboxManager().KillSandbox(ctx, id)
		},
	}
}

// DefaultSandboxPool is the SandboxPool built by SandboxPoolBuilder.
type DefaultSandboxPool struct {
	config *PoolConfig
	ops    poolOps

	managerOnce sync.Once
	manager     *SandboxManager

	mu             sync.Mutex
	lifecycleState PoolLifecycleState
	healthState    PoolHealthState
	reconciler     *reconcileState
	reconMu        sync.Mutex // one tick at a time
	ticker         *time.Ticker
	done           chan struct{}
	reconCancel    context.CancelFunc
	wg             sync.WaitGroup
	shutdownDone   chan struct{} // closed when the last stop has finished
	inFlight       int32
}

func (p *DefaultSandboxPool) sandboxManager() *SandboxManager {
	p.managerOnce.Do(func() { p.manager = NewSandboxManager(p.config.ConnectionConfig) })
	return p.manager
}

func (p *DefaultSandboxPool) notRunning(state PoolLifecycleState) error {
	return &PoolNotRunningError{PoolName: p.config.PoolName, State: state}
}

// Start writes the pool's settings to the store and starts the reconcile loop (a
// first tick runs at once). Starting a running pool is a no-op; a stopped pool
// may be started again.
func (p *DefaultSandboxPool) Start(ctx context.Context) error {
	p.mu.Lock()
	if p.lifecycleState == PoolLifecycleStopped && p.shutdownDone != nil {
		ch := p.shutdownDone
		p.mu.Unlock()
		<-ch
		p.mu.Lock()
	}
	switch p.lifecycleState {
	case PoolLifecycleRunning, PoolLifecycleStarting:
		p.mu.Unlock()
		return nil
	case PoolLifecycleDraining:
		p.mu.Unlock()
		return p.notRunning(PoolLifecycleDraining)
	}
	p.lifecycleState = PoolLifecycleStarting
	maxIdle := p.config.MaxIdle
	p.mu.Unlock()

	fail := func(err error) error {
		p.mu.Lock()
		if p.lifecycleState == PoolLifecycleStarting {
			p.lifecycleState = PoolLifecycleNotStarted
		}
		p.mu.Unlock()
		return err
	}
	// Only a definite fence refuses a start; an outage surfaces in the writes below.
	var destroyed *PoolDestroyedError
	if err := p.ensureNamespaceActive(ctx); errors.As(err, &destroyed) {
		return fail(err)
	}
	if err := p.config.StateStore.SetMaxIdle(ctx, p.config.PoolName, maxIdle); err != nil {
		return fail(fmt.Errorf("opensandbox: pool start: failed to set maxIdle: %w", err))
	}
	if err := p.config.StateStore.SetIdleEntryTTL(ctx, p.config.PoolName, p.config.IdleTimeout); err != nil {
		return fail(fmt.Errorf("opensandbox: pool start: failed to set idle TTL: %w", err))
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lifecycleState != PoolLifecycleStarting { // a Shutdown ran meanwhile
		if p.lifecycleState == PoolLifecycleRunning {
			return nil
		}
		return p.notRunning(p.lifecycleState)
	}
	if p.config.PrimaryLockTTL <= p.config.WarmupReadyTimeout {
		p.config.Logger.Warn("pool primary lock TTL may expire during warmup; configure PrimaryLockTTL greater than WarmupReadyTimeout plus expected preparer time",
			"pool_name", p.config.PoolName, "primary_lock_ttl", p.config.PrimaryLockTTL, "warmup_ready_timeout", p.config.WarmupReadyTimeout)
	}
	p.reconciler = newReconcileState(p.config.DegradedThreshold)
	p.healthState = PoolHealthy
	p.ticker = time.NewTicker(p.config.ReconcileInterval)
	p.done = make(chan struct{})
	p.shutdownDone = make(chan struct{})
	reconCtx, cancel := context.WithCancel(context.Background())
	p.reconCancel = cancel
	ticker, done := p.ticker, p.done
	p.wg.Add(1)
	go p.reconcileLoop(reconCtx, ticker, done, p.config.MaxIdle > 0)
	p.lifecycleState = PoolLifecycleRunning
	p.config.Logger.Info("pool started", "pool_name", p.config.PoolName, "max_idle", maxIdle)
	return nil
}

func (p *DefaultSandboxPool) reconcileLoop(ctx context.Context, ticker *time.Ticker, done chan struct{}, firstTick bool) {
	defer p.wg.Done()
	if firstTick {
		p.runReconcileTick(ctx)
	}
	for {
		select {
		case <-done:
			return
		case <-ticker.C:
			if !p.reconciler.inBackoff() {
				p.runReconcileTick(ctx)
			}
		}
	}
}

func (p *DefaultSandboxPool) runReconcileTick(ctx context.Context) {
	p.reconMu.Lock()
	defer p.reconMu.Unlock()
	if ctx.Err() != nil {
		return
	}
	var destroyed *PoolDestroyedError
	if err := p.ensureNamespaceActive(ctx); errors.As(err, &destroyed) {
		p.stopAfterNamespaceDestroyed(destroyed.State)
		return
	}
	p.reconcileTick(ctx)
	hs, _, _, _ := p.reconciler.snapshot()
	p.mu.Lock()
	p.healthState = hs
	p.mu.Unlock()
}

// stopLoop stops the reconcile loop (caller holds p.mu) and returns what to wait for.
func (p *DefaultSandboxPool) stopLoop() (context.CancelFunc, chan struct{}) {
	if p.ticker != nil {
		p.ticker.Stop()
	}
	if p.done != nil {
		select {
		case <-p.done:
		default:
			close(p.done)
		}
	}
	return p.reconCancel, p.shutdownDone
}

func closeOnce(ch chan struct{}) {
	if ch == nil {
		return
	}
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// stopAfterNamespaceDestroyed stops a pool whose namespace a destroy has fenced: it
// must not keep replenishing. Runs on the loop goroutine, so it does not wait for it.
func (p *DefaultSandboxPool) stopAfterNamespaceDestroyed(state PoolDestroyState) {
	p.mu.Lock()
	if p.lifecycleState != PoolLifecycleRunning {
		p.mu.Unlock()
		return
	}
	p.lifecycleState = PoolLifecycleStopped
	cancel, sd := p.stopLoop()
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	p.config.Logger.Warn("pool stopped: namespace destroyed", "pool_name", p.config.PoolName, "state", state)
	go func() {
		p.wg.Wait()
		closeOnce(sd)
	}()
}

// Acquire returns a ready sandbox: an idle one when there is one (connected and
// health-checked), else as the policy says (create, or *PoolEmptyError /
// *PoolAcquireFailedError). The caller owns the sandbox (Kill it when done).
func (p *DefaultSandboxPool) Acquire(ctx context.Context, opts AcquireOptions) (*Sandbox, error) {
	p.mu.Lock()
	if p.lifecycleState != PoolLifecycleRunning {
		state := p.lifecycleState
		p.mu.Unlock()
		return nil, p.notRunning(state)
	}
	atomic.AddInt32(&p.inFlight, 1)
	p.mu.Unlock()
	defer atomic.AddInt32(&p.inFlight, -1)

	policy := p.config.EmptyBehavior
	if opts.Policy != nil {
		policy = *opts.Policy
	}
	if policy < AcquirePolicyDirectCreate || policy > AcquirePolicyRetryNextIdleThenCreate {
		return nil, &InvalidArgumentError{Field: "Policy", Message: fmt.Sprintf("unknown acquire policy %d", int(policy))}
	}
	if opts.SandboxTimeout < 0 || opts.MinRemainingTTL < 0 {
		return nil, &InvalidArgumentError{Field: "AcquireOptions", Message: "SandboxTimeout and MinRemainingTTL must not be negative"}
	}
	if err := p.ensureNamespaceActiveForAcquire(ctx, policy); err != nil {
		return nil, err
	}
	minTTL := p.config.AcquireMinRemainingTTL
	if opts.MinRemainingTTL > 0 {
		minTTL = opts.MinRemainingTTL
	}
	attempts := 1
	if policy == AcquirePolicyRetryNextIdle || policy == AcquirePolicyRetryNextIdleThenCreate {
		attempts = max(1, p.config.MaxAcquireRetries)
	}
	creates := policy == AcquirePolicyDirectCreate || policy == AcquirePolicyRetryNextIdleThenCreate

	var discarded []string
	defer func() { go p.killAll(discarded) }()
	var lastErr error
	tried := false
	for attempt := 1; attempt <= attempts; attempt++ {
		taken, err := p.takeIdle(ctx, minTTL)
		if err != nil {
			if !creates {
				return nil, &PoolStateStoreUnavailableError{Operation: "TryTakeIdle", Cause: err}
			}
			p.config.Logger.Warn("acquire: state store unavailable, falling through to direct create", "pool_name", p.config.PoolName, "error", err)
			break
		}
		discarded = append(discarded, taken.DiscardedAliveSandboxIDs...)
		if taken.SandboxID == "" {
			break
		}
		tried = true
		sb, err := p.connectIdle(ctx, taken.SandboxID, opts)
		if err != nil {
			lastErr = err
			rmCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = p.config.StateStore.RemoveIdle(rmCtx, p.config.PoolName, taken.SandboxID)
			cancel()
			go p.killBestEffort(taken.SandboxID)
			p.config.Logger.Warn("acquire: idle sandbox connect/health check failed", "pool_name", p.config.PoolName,
				"sandbox_id", taken.SandboxID, "policy", policy, "attempt", attempt, "error", err)
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, &PoolAcquireFailedError{PoolName: p.config.PoolName, Cause: ctxErr}
			}
			p.mu.Lock()
			state := p.lifecycleState
			p.mu.Unlock()
			if state != PoolLifecycleRunning {
				return nil, p.notRunning(state)
			}
			if err := p.ensureNamespaceActiveForAcquire(ctx, policy); err != nil {
				return nil, err
			}
			continue
		}
		// A healthy idle sandbox: a renew failure is not the candidate's fault, so it
		// is not retried; the sandbox is out of the store, so it is killed.
		if opts.SandboxTimeout > 0 {
			if err := p.ops.renew(ctx, sb, opts.SandboxTimeout); err != nil {
				go p.killBestEffort(taken.SandboxID)
				_ = sb.Close()
				return nil, fmt.Errorf("opensandbox: pool acquire: renew after connect failed: %w", err)
			}
		}
		if err := p.ensureNamespaceActiveAfterCreate(ctx, sb, nil); err != nil {
			return nil, err
		}
		return sb, nil
	}
	if !creates {
		if tried {
			return nil, &PoolAcquireFailedError{PoolName: p.config.PoolName, Cause: lastErr}
		}
		return nil, &PoolEmptyError{PoolName: p.config.PoolName, Policy: policy}
	}
	return p.directCreate(ctx, opts, policy)
}

func (p *DefaultSandboxPool) takeIdle(ctx context.Context, minTTL time.Duration) (*TakeIdleResult, error) {
	if minTTL > 0 {
		r, err := p.config.StateStore.TryTakeIdleWithMinTTL(ctx, p.config.PoolName, minTTL)
		if err == nil && r == nil {
			r = &TakeIdleResult{}
		}
		return r, err
	}
	id, err := p.config.StateStore.TryTakeIdle(ctx, p.config.PoolName)
	if err != nil {
		return nil, err
	}
	return &TakeIdleResult{SandboxID: id}, nil
}

func (p *DefaultSandboxPool) connectIdle(ctx context.Context, id string, opts AcquireOptions) (*Sandbox, error) {
	if opts.SkipHealthCheck {
		return p.ops.connect(ctx, id, nil)
	}
	return p.ops.connect(ctx, id, &ReadyOptions{
		Timeout:         p.config.AcquireReadyTimeout,
		PollingInterval: p.config.AcquireHealthCheckPollingInterval,
		HealthCheck:     adaptHealthCheck(p.config.AcquireHealthCheck),
	})
}

// adaptHealthCheck turns a func(ctx, sb) error check into ReadyOptions' form.
func adaptHealthCheck(check func(context.Context, *Sandbox) error) func(context.Context, *Sandbox) (bool, error) {
	if check == nil {
		return nil
	}
	return func(ctx context.Context, sb *Sandbox) (bool, error) {
		if err := check(ctx, sb); err != nil {
			return false, err
		}
		return true, nil
	}
}

func (p *DefaultSandboxPool) createContext(reason PooledSandboxCreateReason, skip bool) PooledSandboxCreateContext {
	c := p.config
	cc := PooledSandboxCreateContext{
		PoolName: c.PoolName, OwnerID: c.OwnerID, IdleTimeout: c.IdleTimeout, Reason: reason,
		SkipHealthCheck: skip, ConnectionConfig: c.ConnectionConfig, CreationSpec: c.CreationSpec,
	}
	if reason == CreateReasonWarmup {
		cc.ReadyTimeout, cc.HealthCheckPollingInterval, cc.HealthCheck = c.WarmupReadyTimeout, c.WarmupHealthCheckPollingInterval, c.WarmupHealthCheck
	} else {
		cc.ReadyTimeout, cc.HealthCheckPollingInterval, cc.HealthCheck = c.AcquireReadyTimeout, c.AcquireHealthCheckPollingInterval, c.AcquireHealthCheck
	}
	return cc
}

// createSandbox creates one sandbox for reason, through the SandboxCreator if set.
func (p *DefaultSandboxPool) createSandbox(ctx context.Context, reason PooledSandboxCreateReason, skip bool) (*Sandbox, error) {
	cc := p.createContext(reason, skip)
	if p.config.SandboxCreator != nil {
		sb, err := p.config.SandboxCreator.Create(ctx, cc)
		if err == nil && sb == nil {
			err = fmt.Errorf("opensandbox: pool %q: SandboxCreator returned no sandbox", p.config.PoolName)
		}
		return sb, err
	}
	spec := cc.CreationSpec
	ttl := max(1, int(p.config.IdleTimeout.Seconds()))
	return p.ops.create(ctx, SandboxCreateOptions{
		Image: spec.Image, SnapshotID: spec.SnapshotID, Entrypoint: spec.Entrypoint, ResourceLimits: spec.ResourceLimits,
		TimeoutSeconds: &ttl, Env: spec.Env, Metadata: spec.Metadata, NetworkPolicy: spec.NetworkPolicy,
		Volumes: spec.Volumes, Extensions: spec.Extensions, Platform: spec.Platform, SecureAccess: spec.SecureAccess,
		CredentialProxy: spec.CredentialProxy, ImageAuth: spec.ImageAuth,
		SkipHealthCheck: skip, ReadyTimeout: cc.ReadyTimeout, HealthCheckInterval: cc.HealthCheckPollingInterval,
		HealthCheck: adaptHealthCheck(cc.HealthCheck),
	})
}

// createWarm creates a warm sandbox (preparer, renew to IdleTimeout) and returns its id.
func (p *DefaultSandboxPool) createWarm(ctx context.Context) (string, error) {
	sb, err := p.createSandbox(ctx, CreateReasonWarmup, p.config.WarmupSkipHealthCheck)
	if err != nil {
		return "", err
	}
	defer sb.Close()
	id := sb.ID()
	if prep := p.config.WarmupSandboxPreparer; prep != nil {
		if err := prep(ctx, sb); err != nil {
			go p.killBestEffort(id)
			return "", err
		}
	}
	if err := p.ops.renew(ctx, sb, p.config.IdleTimeout); err != nil {
		go p.killBestEffort(id)
		return "", fmt.Errorf("opensandbox: pool warmup: renew failed: %w", err)
	}
	return id, nil
}

func (p *DefaultSandboxPool) directCreate(ctx context.Context, opts AcquireOptions, policy AcquirePolicy) (*Sandbox, error) {
	sb, err := p.createSandbox(ctx, CreateReasonAcquire, opts.SkipHealthCheck)
	if err != nil {
		return nil, err
	}
	if opts.SandboxTimeout > 0 {
		if err := p.ops.renew(ctx, sb, opts.SandboxTimeout); err != nil {
			go p.killBestEffort(sb.ID())
			_ = sb.Close()
			return nil, fmt.Errorf("opensandbox: pool direct create: renew failed: %w", err)
		}
	}
	if err := p.ensureNamespaceActiveAfterCreate(ctx, sb, &policy); err != nil {
		return nil, err
	}
	return sb, nil
}

func (p *DefaultSandboxPool) killBestEffort(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.ops.kill(ctx, id); err != nil {
		p.config.Logger.Warn("failed to kill sandbox (best-effort)", "pool_name", p.config.PoolName, "sandbox_id", id, "error", err)
	}
}

func (p *DefaultSandboxPool) killAll(ids []string) {
	for _, id := range ids {
		p.killBestEffort(id)
	}
}

// ReleaseAllIdle takes every idle sandbox out of the store and kills each one
// (best-effort, in the background). Returns how many were taken.
func (p *DefaultSandboxPool) ReleaseAllIdle(ctx context.Context) (int, error) {
	n := 0
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		id, err := p.config.StateStore.TryTakeIdle(ctx, p.config.PoolName)
		if err != nil || id == "" {
			return n, err
		}
		go p.killBestEffort(id)
		n++
	}
}

// ReleaseAllIdleParallel drains the idle sandboxes and kills them with at most
// maxWorkers at a time, returning once every kill has been attempted.
func (p *DefaultSandboxPool) ReleaseAllIdleParallel(ctx context.Context, maxWorkers int) (int, error) {
	if maxWorkers <= 0 {
		return 0, fmt.Errorf("opensandbox: pool release all idle parallel: maxWorkers must be positive, got %d", maxWorkers)
	}
	var ids []string
	var drainErr error
	for {
		if drainErr = ctx.Err(); drainErr != nil {
			break
		}
		id, err := p.config.StateStore.TryTakeIdle(ctx, p.config.PoolName)
		if err != nil || id == "" {
			drainErr = err
			break
		}
		ids = append(ids, id)
	}
	jobs := make(chan string)
	var wg sync.WaitGroup
	for i := 0; i < min(maxWorkers, len(ids)); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range jobs {
				p.killBestEffort(id)
			}
		}()
	}
	for _, id := range ids {
		jobs <- id
	}
	close(jobs)
	wg.Wait()
	return len(ids), drainErr
}

// Resize sets the idle target, in the store (shared with peers) and locally.
func (p *DefaultSandboxPool) Resize(ctx context.Context, newMaxIdle int) error {
	if newMaxIdle < 0 {
		return fmt.Errorf("opensandbox: pool resize: maxIdle must be >= 0, got %d", newMaxIdle)
	}
	if err := p.config.StateStore.SetMaxIdle(ctx, p.config.PoolName, newMaxIdle); err != nil {
		return err
	}
	p.mu.Lock()
	p.config.MaxIdle = newMaxIdle
	p.mu.Unlock()
	return nil
}

// Snapshot returns the pool's state, counters and health.
func (p *DefaultSandboxPool) Snapshot(ctx context.Context) (*PoolSnapshot, error) {
	p.mu.Lock()
	snap := &PoolSnapshot{LifecycleState: p.lifecycleState, HealthState: p.healthState}
	recon := p.reconciler
	p.mu.Unlock()
	counters, err := p.config.StateStore.SnapshotCounters(ctx, p.config.PoolName)
	if err != nil {
		return nil, err
	}
	if snap.MaxIdle, err = p.config.StateStore.GetMaxIdle(ctx, p.config.PoolName); err != nil {
		return nil, err
	}
	snap.IdleCount = counters.IdleCount
	if recon != nil {
		_, snap.FailureCount, snap.BackoffActive, snap.LastError = recon.snapshot()
	}
	snap.InFlightOperations = int(atomic.LoadInt32(&p.inFlight))
	return snap, nil
}

// SnapshotIdleEntries lists the idle sandboxes, oldest first.
func (p *DefaultSandboxPool) SnapshotIdleEntries(ctx context.Context) ([]IdleEntry, error) {
	return p.config.StateStore.SnapshotIdleEntries(ctx, p.config.PoolName)
}

// Shutdown stops the reconcile loop and releases the primary lock. Graceful
// waits up to DrainTimeout for in-flight Acquire calls (state DRAINING). Idle
// sandboxes stay in the store for peers (ReleaseAllIdle kills them).
func (p *DefaultSandboxPool) Shutdown(ctx context.Context, graceful bool) error {
	p.mu.Lock()
	switch p.lifecycleState {
	case PoolLifecycleStopped, PoolLifecycleDraining:
		ch := p.shutdownDone
		p.mu.Unlock()
		if ch != nil {
			<-ch
		}
		return nil
	}
	started := p.lifecycleState == PoolLifecycleRunning
	if graceful && started {
		p.lifecycleState = PoolLifecycleDraining
	} else {
		p.lifecycleState = PoolLifecycleStopped
	}
	cancel, sd := p.stopLoop()
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	p.wg.Wait()
	if started {
		_ = p.config.StateStore.ReleasePrimaryLock(ctx, p.config.PoolName, p.config.OwnerID)
	}
	if graceful && started && p.config.DrainTimeout > 0 {
		deadline := time.Now().Add(p.config.DrainTimeout)
		for atomic.LoadInt32(&p.inFlight) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := atomic.LoadInt32(&p.inFlight); n > 0 {
			p.config.Logger.Warn("pool shutdown: drain timeout expired with in-flight operations", "pool_name", p.config.PoolName, "in_flight", n)
		}
	}
	p.mu.Lock()
	p.lifecycleState = PoolLifecycleStopped
	p.mu.Unlock()
	closeOnce(sd)
	p.config.Logger.Info("pool shutdown", "pool_name", p.config.PoolName, "graceful", graceful)
	return nil
}

// ensureNamespaceActive: *PoolDestroyedError when fenced or tombstoned,
// *PoolStateStoreUnavailableError when the store cannot answer.
func (p *DefaultSandboxPool) ensureNamespaceActive(ctx context.Context) error {
	state, err := p.config.StateStore.GetDestroyState(ctx, p.config.PoolName)
	if err != nil {
		var unavailable *PoolStateStoreUnavailableError
		if errors.As(err, &unavailable) {
			return err
		}
		return &PoolStateStoreUnavailableError{Operation: "GetDestroyState", Cause: err}
	}
	if state != PoolDestroyStateActive {
		return &PoolDestroyedError{PoolName: p.config.PoolName, State: state}
	}
	return nil
}

// ensureNamespaceActiveForAcquire lets the creating policies ride out a store
// outage (OSEP-0005: never less available than the plain SDK); the others fail.
func (p *DefaultSandboxPool) ensureNamespaceActiveForAcquire(ctx context.Context, policy AcquirePolicy) error {
	err := p.ensureNamespaceActive(ctx)
	var unavailable *PoolStateStoreUnavailableError
	if err != nil && errors.As(err, &unavailable) &&
		(policy == AcquirePolicyDirectCreate || policy == AcquirePolicyRetryNextIdleThenCreate) {
		p.config.Logger.Warn("acquire: state store unavailable during namespace check, assuming ACTIVE", "pool_name", p.config.PoolName, "error", err)
		return nil
	}
	return err
}

// ensureNamespaceActiveAfterCreate re-checks the fence before handing sb over; on a
// fence (or, for an idle sandbox, an unanswerable store) sb is killed and closed.
func (p *DefaultSandboxPool) ensureNamespaceActiveAfterCreate(ctx context.Context, sb *Sandbox, policy *AcquirePolicy) error {
	var err error
	if policy != nil {
		err = p.ensureNamespaceActiveForAcquire(ctx, *policy)
	} else {
		err = p.ensureNamespaceActive(ctx)
	}
	if err == nil {
		return nil
	}
	go p.killBestEffort(sb.ID())
	_ = sb.Close()
	return err
}
