package opensandbox

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"
)

// Endpoint cache defaults (the official SDK's).
const (
	DefaultEndpointCacheTTL  = 600 * time.Second
	DefaultEndpointCacheSize = 1024
)

type endpointCacheKey struct {
	sandboxID      string
	port           int
	useServerProxy bool
}

func (k endpointCacheKey) String() string {
	return fmt.Sprintf("%s:%d:%v", k.sandboxID, k.port, k.useServerProxy)
}

type endpointCacheEntry struct {
	key       endpointCacheKey
	endpoint  *Endpoint
	expiresAt time.Time
}

// inflight is one fetch shared by the callers that missed the same key.
type inflight struct {
	done chan struct{}
	ep   *Endpoint
	err  error
}

// EndpointCache is a concurrency-safe LRU cache with a TTL for sandbox endpoints;
// concurrent misses of one key share a single lookup. LifecycleClient uses it
// through NewLifecycleClientWithCache.
type EndpointCache struct {
	mu       sync.Mutex
	entries  map[endpointCacheKey]*list.Element
	order    *list.List
	maxSize  int
	ttl      time.Duration
	inflight map[endpointCacheKey]*inflight
}

// NewEndpointCache creates a cache (maxSize <= 0: DefaultEndpointCacheSize; ttl <= 0:
// DefaultEndpointCacheTTL).
func NewEndpointCache(maxSize int, ttl time.Duration) *EndpointCache {
	if maxSize <= 0 {
		maxSize = DefaultEndpointCacheSize
	}
	if ttl <= 0 {
		ttl = DefaultEndpointCacheTTL
	}
	return &EndpointCache{
		entries:  map[endpointCacheKey]*list.Element{},
		order:    list.New(),
		maxSize:  maxSize,
		ttl:      ttl,
		inflight: map[endpointCacheKey]*inflight{},
	}
}

func cloneEndpoint(ep *Endpoint) *Endpoint {
	h := make(map[string]string, len(ep.Headers))
	for k, v := range ep.Headers {
		h[k] = v
	}
	return &Endpoint{Endpoint: ep.Endpoint, Headers: h, Origin: ep.Origin}
}

// Get returns a copy of a live entry.
func (c *EndpointCache) Get(key endpointCacheKey) (*Endpoint, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(key)
}

func (c *EndpointCache) getLocked(key endpointCacheKey) (*Endpoint, bool) {
	elem, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	e := elem.Value.(*endpointCacheEntry)
	if time.Now().After(e.expiresAt) {
		c.removeLocked(elem)
		return nil, false
	}
	c.order.MoveToFront(elem)
	return cloneEndpoint(e.endpoint), true
}

// Put stores a copy of ep, evicting the least recently used entries when full.
func (c *EndpointCache) Put(key endpointCacheKey, ep *Endpoint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(key, ep)
}

func (c *EndpointCache) putLocked(key endpointCacheKey, ep *Endpoint) {
	if elem, ok := c.entries[key]; ok {
		c.order.MoveToFront(elem)
		e := elem.Value.(*endpointCacheEntry)
		e.endpoint, e.expiresAt = cloneEndpoint(ep), time.Now().Add(c.ttl)
		return
	}
	for c.order.Len() >= c.maxSize {
		c.removeLocked(c.order.Back())
	}
	e := &endpointCacheEntry{key: key, endpoint: cloneEndpoint(ep), expiresAt: time.Now().Add(c.ttl)}
	c.entries[key] = c.order.PushFront(e)
}

// Invalidate drops every entry of a sandbox; a lookup in flight for it is not
// stored when it completes.
func (c *EndpointCache) Invalidate(sandboxID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, elem := range c.entries {
		if key.sandboxID == sandboxID {
			c.removeLocked(elem)
		}
	}
	for key := range c.inflight {
		if key.sandboxID == sandboxID {
			delete(c.inflight, key)
		}
	}
}

// Len is the number of entries.
func (c *EndpointCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *EndpointCache) removeLocked(elem *list.Element) {
	e := elem.Value.(*endpointCacheEntry)
	delete(c.entries, e.key)
	c.order.Remove(elem)
}

// GetOrFetch returns the cached endpoint or calls fetch once for all concurrent
// misses of key. A caller whose ctx ends while waiting returns ctx.Err(); the shared
// fetch goes on for the others.
func (c *EndpointCache) GetOrFetch(ctx context.Context, key endpointCacheKey, fetch func() (*Endpoint, error)) (*Endpoint, error) {
	c.mu.Lock()
	if ep, ok := c.getLocked(key); ok {
		c.mu.Unlock()
		return ep, nil
	}
	f, waiting := c.inflight[key]
	if !waiting {
		f = &inflight{done: make(chan struct{})}
		c.inflight[key] = f
		go func() {
			ep, err := fetch()
			c.mu.Lock()
			f.ep, f.err = ep, err
			// Store only if no Invalidate happened meanwhile.
			if c.inflight[key] == f {
				delete(c.inflight, key)
				if err == nil {
					c.putLocked(key, ep)
				}
			}
			c.mu.Unlock()
			close(f.done)
		}()
	}
	c.mu.Unlock()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-f.done:
		if f.err != nil {
			return nil, f.err
		}
		return cloneEndpoint(f.ep), nil
	}
}

// NewLifecycleClientWithCache is NewLifecycleClient whose GetEndpoint answers from
// cache (nil: no cache); DeleteSandbox invalidates the sandbox's entries.
func NewLifecycleClientWithCache(baseURL, apiKey string, cache *EndpointCache, opts ...Option) *LifecycleClient {
	lc := NewLifecycleClient(baseURL, apiKey, opts...)
	lc.cache = cache
	return lc
}
