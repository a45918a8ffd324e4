package opensandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

const (
	defaultPoolResizePolicyInterval = time.Minute
	localDay                        = 24 * time.Hour
)

// ErrPoolResizePoolNotRunning: Apply or Run on a NOT_STARTED / STARTING pool. The
// adapter stays usable; the error also unwraps to a *PoolNotRunningError.
var ErrPoolResizePoolNotRunning = errors.New("opensandbox: pool resize adapter: pool is not running")

type resizeNotRunningError struct{ PoolNotRunningError }

func (e *resizeNotRunningError) Error() string {
	return fmt.Sprintf("opensandbox: pool resize adapter: pool is not running (state=%s)", e.State)
}
func (e *resizeNotRunningError) Is(target error) bool { return target == ErrPoolResizePoolNotRunning }
func (e *resizeNotRunningError) Unwrap() error        { return &e.PoolNotRunningError }

// PoolResizeTarget is what a PoolResizeAdapter drives (*DefaultSandboxPool is one).
type PoolResizeTarget interface {
	Resize(ctx context.Context, maxIdle int) error
	Snapshot(ctx context.Context) (*PoolSnapshot, error)
}

// PoolResizePolicy computes an idle target from a snapshot; the adapter applies it
// with Resize. NextMaxIdle must not call back into the adapter.
type PoolResizePolicy interface {
	NextMaxIdle(ctx context.Context, snapshot PoolSnapshot) (int, error)
	Interval() time.Duration
}

// PoolResizeAdapter applies a PoolResizePolicy to a pool: each evaluation reads a
// snapshot, asks the policy, and calls Resize (always, so that a destroy fence is
// observed). A draining or stopped pool, or a destroyed namespace, stops the adapter
// for good (Stopped, with the cause in LastError).
type PoolResizeAdapter struct {
	pool    PoolResizeTarget
	policy  PoolResizePolicy
	applyMu sync.Mutex
	stopped atomic.Bool
	errMu   sync.RWMutex
	lastErr error
}

// NewPoolResizeAdapter checks its arguments (the policy interval must be positive).
func NewPoolResizeAdapter(pool PoolResizeTarget, policy PoolResizePolicy) (*PoolResizeAdapter, error) {
	if pool == nil {
		return nil, errors.New("opensandbox: pool resize adapter: pool is nil")
	}
	if policy == nil {
		return nil, errors.New("opensandbox: pool resize adapter: policy is nil")
	}
	if policy.Interval() <= 0 {
		return nil, fmt.Errorf("opensandbox: pool resize adapter: policy interval must be positive, got %s", policy.Interval())
	}
	return &PoolResizeAdapter{pool: pool, policy: policy}, nil
}

// Apply evaluates the policy once (a no-op once stopped).
func (a *PoolResizeAdapter) Apply(ctx context.Context) error {
	_, err := a.apply(ctx)
	return err
}

// Run evaluates now and then every policy interval until ctx ends (its error is
// returned) or the adapter stops (nil). A store outage is retried; other errors
// are returned.
func (a *PoolResizeAdapter) Run(ctx context.Context) error {
	for {
		stopped, err := a.apply(ctx)
		var unavailable *PoolStateStoreUnavailableError
		if err != nil && !errors.As(err, &unavailable) {
			return err
		}
		if stopped {
			return nil
		}
		interval := a.policy.Interval()
		if interval <= 0 {
			interval = defaultPoolResizePolicyInterval
		}
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// Stopped reports a permanent stop.
func (a *PoolResizeAdapter) Stopped() bool { return a.stopped.Load() }

// LastError is the last evaluation's error (nil after a success); after a stop, its cause.
func (a *PoolResizeAdapter) LastError() error {
	a.errMu.RLock()
	defer a.errMu.RUnlock()
	return a.lastErr
}

func (a *PoolResizeAdapter) setLastError(err error) {
	a.errMu.Lock()
	a.lastErr = err
	a.errMu.Unlock()
}

func (a *PoolResizeAdapter) stop(cause error) (bool, error) {
	a.stopped.Store(true)
	a.setLastError(cause)
	return true, nil
}

// runningSnapshot reads a snapshot; stop says the adapter must stop for good.
func (a *PoolResizeAdapter) runningSnapshot(ctx context.Context) (snap *PoolSnapshot, stop error, err error) {
	snap, err = a.pool.Snapshot(ctx)
	var destroyed *PoolDestroyedError
	switch {
	case errors.As(err, &destroyed):
		return nil, err, nil
	case err != nil:
		return nil, nil, err
	case snap == nil:
		return nil, nil, errors.New("opensandbox: pool resize adapter: pool returned a nil snapshot")
	case snap.LifecycleState == PoolLifecycleDraining || snap.LifecycleState == PoolLifecycleStopped:
		return nil, fmt.Errorf("opensandbox: pool resize adapter: pool reached the terminal state %s", snap.LifecycleState), nil
	case snap.LifecycleState != PoolLifecycleRunning:
		return nil, nil, &resizeNotRunningError{PoolNotRunningError{State: snap.LifecycleState}}
	}
	return snap, nil, nil
}

func (a *PoolResizeAdapter) apply(ctx context.Context) (stopped bool, err error) {
	a.applyMu.Lock()
	defer a.applyMu.Unlock()
	if a.stopped.Load() {
		return true, nil
	}
	defer func() {
		if !stopped {
			a.setLastError(err)
		}
	}()
	if err := ctx.Err(); err != nil {
		return false, err
	}
	snap, stopCause, err := a.runningSnapshot(ctx)
	if stopCause != nil {
		return a.stop(stopCause)
	}
	if err != nil {
		return false, err
	}
	target, err := a.policy.NextMaxIdle(ctx, *snap)
	if err != nil {
		return false, fmt.Errorf("opensandbox: pool resize adapter: evaluate policy: %w", err)
	}
	if target < 0 {
		return false, fmt.Errorf("opensandbox: pool resize adapter: policy returned negative maxIdle: %d", target)
	}
	// Narrow the race with a local shutdown; the store's fence is the final word.
	if _, stopCause, err = a.runningSnapshot(ctx); stopCause != nil {
		return a.stop(stopCause)
	} else if err != nil {
		return false, err
	}
	if err := a.pool.Resize(ctx, target); err != nil {
		var destroyed *PoolDestroyedError
		if errors.As(err, &destroyed) {
			return a.stop(err)
		}
		return false, err
	}
	return false, nil
}

// PoolResizeWindow is a local wall-clock window [Start, End) (offsets from local
// midnight) and its idle target. End < Start wraps past midnight; Weekdays (empty:
// every day) names the day a window starts on.
type PoolResizeWindow struct {
	Name     string
	Start    time.Duration
	End      time.Duration
	MaxIdle  int
	Weekdays []time.Weekday
}

// TimeWindowPoolResizePolicy picks the target of the first window containing the
// current time in Location (nil: UTC), else DefaultMaxIdle.
type TimeWindowPoolResizePolicy struct {
	Windows        []PoolResizeWindow
	Location       *time.Location
	DefaultMaxIdle int

	interval time.Duration
	now      func() time.Time
}

// NewTimeWindowPoolResizePolicy validates the windows (bounds inside a day, not
// empty, targets >= 0, distinct weekdays, no two windows active at once).
func NewTimeWindowPoolResizePolicy(windows []PoolResizeWindow, location *time.Location, defaultMaxIdle int, interval time.Duration) (*TimeWindowPoolResizePolicy, error) {
	if interval <= 0 {
		return nil, fmt.Errorf("opensandbox: pool resize policy: interval must be positive, got %s", interval)
	}
	if defaultMaxIdle < 0 {
		return nil, fmt.Errorf("opensandbox: pool resize policy: default maxIdle must be >= 0, got %d", defaultMaxIdle)
	}
	if location == nil {
		location = time.UTC
	}
	for i, w := range windows {
		if err := checkWindow(windows, i, w); err != nil {
			return nil, fmt.Errorf("opensandbox: pool resize policy: window %d%s: %s", i, windowLabel(w), err)
		}
	}
	return &TimeWindowPoolResizePolicy{Windows: windows, Location: location, DefaultMaxIdle: defaultMaxIdle, interval: interval}, nil
}

func windowLabel(w PoolResizeWindow) string {
	if w.Name == "" {
		return ""
	}
	return " (" + w.Name + ")"
}

func checkWindow(windows []PoolResizeWindow, i int, w PoolResizeWindow) error {
	switch {
	case w.Start < 0 || w.Start >= localDay:
		return fmt.Errorf("start %s is outside a local day", w.Start)
	case w.End <= 0 || w.End > localDay:
		return fmt.Errorf("end %s is outside a local day", w.End)
	case w.End == w.Start:
		return fmt.Errorf("is empty: start and end are both %s", w.Start)
	case w.MaxIdle < 0:
		return fmt.Errorf("maxIdle must be >= 0, got %d", w.MaxIdle)
	}
	seen := map[time.Weekday]bool{}
	for _, d := range w.Weekdays {
		if d < time.Sunday || d > time.Saturday {
			return fmt.Errorf("has an invalid weekday %d", d)
		}
		if seen[d] {
			return fmt.Errorf("repeats weekday %s", d)
		}
		seen[d] = true
	}
	for j := 0; j < i; j++ {
		if windowsOverlap(w, windows[j]) {
			return fmt.Errorf("overlaps window %d on at least one weekday", j)
		}
	}
	return nil
}

type span struct{ from, to time.Duration }

// spansOn are the spans w occupies on local day d (a wrapped window's
// after-midnight part belongs to the day after it starts).
func spansOn(w PoolResizeWindow, d time.Weekday) []span {
	if w.End > w.Start {
		if dayMatches(w.Weekdays, d) {
			return []span{{w.Start, w.End}}
		}
		return nil
	}
	var out []span
	if dayMatches(w.Weekdays, d) {
		out = append(out, span{w.Start, localDay})
	}
	if dayMatches(w.Weekdays, (d+6)%7) {
		out = append(out, span{0, w.End})
	}
	return out
}

func windowsOverlap(a, b PoolResizeWindow) bool {
	for d := time.Sunday; d <= time.Saturday; d++ {
		for _, x := range spansOn(a, d) {
			for _, y := range spansOn(b, d) {
				if x.from < y.to && y.from < x.to {
					return true
				}
			}
		}
	}
	return false
}

func dayMatches(filter []time.Weekday, d time.Weekday) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if f == d {
			return true
		}
	}
	return false
}

// NextMaxIdle implements PoolResizePolicy.
func (p *TimeWindowPoolResizePolicy) NextMaxIdle(context.Context, PoolSnapshot) (int, error) {
	now := time.Now()
	if p.now != nil {
		now = p.now()
	}
	loc := p.Location
	if loc == nil {
		loc = time.UTC
	}
	now = now.In(loc)
	// Wall-clock offset from the calendar fields (not elapsed time: DST days).
	offset := time.Duration(now.Hour())*time.Hour + time.Duration(now.Minute())*time.Minute +
		time.Duration(now.Second())*time.Second + time.Duration(now.Nanosecond())
	for _, w := range p.Windows {
		for _, s := range spansOn(w, now.Weekday()) {
			if offset >= s.from && offset < s.to {
				return w.MaxIdle, nil
			}
		}
	}
	return p.DefaultMaxIdle, nil
}

// Interval implements PoolResizePolicy.
func (p *TimeWindowPoolResizePolicy) Interval() time.Duration {
	if p.interval > 0 {
		return p.interval
	}
	return defaultPoolResizePolicyInterval
}
