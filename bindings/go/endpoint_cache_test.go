package opensandbox

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestEndpointCacheSharesLookupsAndExpires(t *testing.T) {
	c := NewEndpointCache(2, 50*time.Millisecond)
	key := endpointCacheKey{sandboxID: "a", port: 1}
	var calls atomic.Int32
	release := make(chan struct{})
	fetch := func() (*Endpoint, error) {
		calls.Add(1)
		<-release
		return &Endpoint{Endpoint: "h:1", Headers: map[string]string{"k": "v"}}, nil
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ep, err := c.GetOrFetch(context.Background(), key, fetch)
			if err != nil || ep.Endpoint != "h:1" {
				t.Errorf("%v %v", ep, err)
			}
			ep.Headers["k"] = "changed" // callers get copies
		}()
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("%d lookups for one key", calls.Load())
	}
	if ep, ok := c.Get(key); !ok || ep.Headers["k"] != "v" {
		t.Fatalf("cached copy changed: %v", ep)
	}
	time.Sleep(60 * time.Millisecond)
	if _, ok := c.Get(key); ok {
		t.Fatal("entry outlived its TTL")
	}
	// LRU eviction and invalidation.
	for i, id := range []string{"x", "y", "z"} {
		c.Put(endpointCacheKey{sandboxID: id, port: i}, &Endpoint{Endpoint: id})
	}
	if _, ok := c.Get(endpointCacheKey{sandboxID: "x", port: 0}); ok || c.Len() != 2 {
		t.Fatalf("LRU: len %d", c.Len())
	}
	c.Invalidate("z")
	if c.Len() != 1 {
		t.Fatalf("invalidate: len %d", c.Len())
	}
	// Errors are not cached; a cancelled waiter returns at once.
	boom := errors.New("boom")
	if _, err := c.GetOrFetch(context.Background(), key, func() (*Endpoint, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	slow := make(chan struct{})
	defer close(slow)
	if _, err := c.GetOrFetch(ctx, key, func() (*Endpoint, error) { <-slow; return &Endpoint{}, nil }); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
