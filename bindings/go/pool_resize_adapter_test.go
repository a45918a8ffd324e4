package opensandbox

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

type fixedPolicy struct {
	target int
	err    error
}

func (p fixedPolicy) NextMaxIdle(context.Context, PoolSnapshot) (int, error) { return p.target, p.err }
func (p fixedPolicy) Interval() time.Duration                                { return 10 * time.Millisecond }

type fakeTarget struct {
	mu        sync.Mutex
	state     PoolLifecycleState
	resizes   []int
	resizeErr error
}

func (f *fakeTarget) Resize(_ context.Context, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.resizeErr != nil {
		return f.resizeErr
	}
	f.resizes = append(f.resizes, n)
	return nil
}

func (f *fakeTarget) Snapshot(context.Context) (*PoolSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &PoolSnapshot{LifecycleState: f.state}, nil
}

func TestPoolResizeAdapter(t *testing.T) {
	ctx := context.Background()
	if _, err := NewPoolResizeAdapter(nil, fixedPolicy{}); err == nil {
		t.Fatal("nil pool accepted")
	}
	target := &fakeTarget{state: PoolLifecycleStarting}
	a, err := NewPoolResizeAdapter(target, fixedPolicy{target: 3})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Apply(ctx)
	var notRunning *PoolNotRunningError
	if !errors.Is(err, ErrPoolResizePoolNotRunning) || !errors.As(err, &notRunning) || notRunning.State != PoolLifecycleStarting {
		t.Fatalf("Apply on a starting pool: %v", err)
	}
	target.state = PoolLifecycleRunning
	if err := a.Apply(ctx); err != nil || a.LastError() != nil {
		t.Fatalf("Apply: %v / %v", err, a.LastError())
	}
	bad, _ := NewPoolResizeAdapter(target, fixedPolicy{target: -1})
	if err := bad.Apply(ctx); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("negative target: %v", err)
	}
	failing, _ := NewPoolResizeAdapter(target, fixedPolicy{err: errors.New("metrics down")})
	if err := failing.Run(ctx); err == nil || !strings.Contains(err.Error(), "metrics down") {
		t.Fatalf("Run returns a policy error: %v", err)
	}

	// Run keeps applying until a destroy fences the namespace, then stops for good.
	go func() {
		time.Sleep(50 * time.Millisecond)
		target.mu.Lock()
		target.resizeErr = &PoolDestroyedError{PoolName: "p", State: PoolDestroyStateDestroying}
		target.mu.Unlock()
	}()
	runCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := a.Run(runCtx); err != nil {
		t.Fatalf("Run after a destroy: %v", err)
	}
	var destroyed *PoolDestroyedError
	if !a.Stopped() || !errors.As(a.LastError(), &destroyed) {
		t.Fatalf("stopped=%v last=%v", a.Stopped(), a.LastError())
	}
	target.mu.Lock()
	n := len(target.resizes)
	target.mu.Unlock()
	if n < 3 {
		t.Fatalf("Run applied %d times", n)
	}
	if err := a.Apply(ctx); err != nil {
		t.Fatalf("Apply after a stop is a no-op: %v", err)
	}

	drained := &fakeTarget{state: PoolLifecycleDraining}
	d, _ := NewPoolResizeAdapter(drained, fixedPolicy{target: 1})
	if err := d.Apply(ctx); err != nil || !d.Stopped() || d.LastError() == nil {
		t.Fatalf("draining pool: %v %v %v", err, d.Stopped(), d.LastError())
	}

	// Against a real pool: the adapter's target reaches the store.
	f := newFakeBackend()
	p := testPool(t, f, func(b *SandboxPoolBuilder) { b.MaxIdle(0).ReconcileInterval(time.Hour) })
	_ = p.Start(ctx)
	pa, _ := NewPoolResizeAdapter(p, fixedPolicy{target: 2})
	if err := pa.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	if snap, _ := p.Snapshot(ctx); snap.MaxIdle != 2 {
		t.Fatalf("maxIdle %d", snap.MaxIdle)
	}
}

func TestTimeWindowPoolResizePolicy(t *testing.T) {
	h := time.Hour
	if _, err := NewTimeWindowPoolResizePolicy(nil, nil, 0, 0); err == nil {
		t.Fatal("zero interval accepted")
	}
	for name, ws := range map[string][]PoolResizeWindow{
		"empty":    {{Start: h, End: h}},
		"start":    {{Start: 25 * h, End: h}},
		"negative": {{Start: 0, End: h, MaxIdle: -1}},
		"weekday":  {{Start: 0, End: h, Weekdays: []time.Weekday{time.Monday, time.Monday}}},
		"overlap":  {{Start: 22 * h, End: 2 * h}, {Start: h, End: 3 * h}},
	} {
		if _, err := NewTimeWindowPoolResizePolicy(ws, nil, 0, time.Minute); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Business hours on weekdays, a Friday night window that wraps into Saturday.
	p, err := NewTimeWindowPoolResizePolicy([]PoolResizeWindow{
		{Name: "day", Start: 9 * h, End: 18 * h, MaxIdle: 10, Weekdays: []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday}},
		{Name: "friday night", Start: 22 * h, End: 2 * h, MaxIdle: 4, Weekdays: []time.Weekday{time.Friday}},
	}, time.UTC, 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   string
		want int
	}{
		{"2026-12-07T10:00:00Z", 10}, // Monday
		{"2026-12-07T18:00:00Z", 1},  // End is exclusive
		{"2026-12-05T10:00:00Z", 1},  // Saturday
		{"2026-12-04T23:00:00Z", 4},  // Friday night
		{"2026-12-05T01:30:00Z", 4},  // … into Saturday
		{"2026-12-06T01:30:00Z", 1},  // not after Saturday
	} {
		at, _ := time.Parse(time.RFC3339, c.at)
		p.now = func() time.Time { return at }
		if got, _ := p.NextMaxIdle(context.Background(), PoolSnapshot{}); got != c.want {
			t.Errorf("%s: %d, want %d", c.at, got, c.want)
		}
	}
	if p.Interval() != time.Minute {
		t.Fatal("interval")
	}
}
