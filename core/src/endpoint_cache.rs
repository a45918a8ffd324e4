//! (1.1) The endpoint cache of a connection config: resolved `GET
//! /sandboxes/{id}/endpoints/{port}` answers, kept for a TTL and bounded in size (least
//! recently used out first), as the official SDKs' `EndpointCache`.
//!
//! Keyed by sandbox id, port and the `use_server_proxy` flag of the lookup. Signed
//! endpoints are never cached (each carries its own expiry). Killing, pausing or
//! resuming a sandbox through a config drops that sandbox's entries, and a lookup that
//! was in flight when they were dropped does not put its (possibly stale) answer back.
//! Clones of one `ConnectionConfig` share one cache; a disabled cache (TTL or size 0)
//! stores nothing.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::models::Endpoint;

/// Default time an entry stays valid (official SDKs: 10 minutes).
pub const DEFAULT_ENDPOINT_CACHE_TTL: Duration = Duration::from_secs(600);
/// Default number of entries (official SDKs: 1024).
pub const DEFAULT_ENDPOINT_CACHE_SIZE: usize = 1024;

type Key = (String, u16, bool);

struct Entry {
    endpoint: Endpoint,
    expires: Instant,
    used: u64,
}

#[derive(Default)]
struct Inner {
    map: HashMap<Key, Entry>,
    /// Bumped by every invalidation: a lookup started before one does not store.
    generation: u64,
    /// Use counter for least-recently-used eviction.
    clock: u64,
}

/// A TTL + LRU cache of resolved endpoints.
pub(crate) struct EndpointCache {
    ttl: Duration,
    capacity: usize,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for EndpointCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointCache")
            .field("ttl", &self.ttl)
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl EndpointCache {
    /// A cache keeping up to `capacity` entries for `ttl`; 0 for either disables it.
    pub(crate) fn new(ttl: Duration, capacity: usize) -> Self {
        EndpointCache {
            ttl,
            capacity,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Whether anything is ever stored.
    pub(crate) fn enabled(&self) -> bool {
        !self.ttl.is_zero() && self.capacity > 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The map is never left half-updated by a panic: recover the guard.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached endpoint of `(id, port, proxy)` if still valid, and the generation to
    /// hand back to [`EndpointCache::put`] after a lookup on a miss.
    pub(crate) fn get(&self, id: &str, port: u16, proxy: bool) -> (Option<Endpoint>, u64) {
        let mut inner = self.lock();
        let generation = inner.generation;
        if !self.enabled() {
            return (None, generation);
        }
        inner.clock += 1;
        let used = inner.clock;
        let key = (id.to_owned(), port, proxy);
        let now = Instant::now();
        let mut expired = false;
        let mut hit = None;
        if let Some(e) = inner.map.get_mut(&key) {
            if e.expires > now {
                e.used = used;
                hit = Some(e.endpoint.clone());
            } else {
                expired = true;
            }
        }
        if expired {
            inner.map.remove(&key);
        }
        (hit, generation)
    }

    /// Stores a lookup's answer unless the cache was invalidated since `generation`.
    pub(crate) fn put(
        &self,
        id: &str,
        port: u16,
        proxy: bool,
        endpoint: &Endpoint,
        generation: u64,
    ) {
        if !self.enabled() {
            return;
        }
        let mut inner = self.lock();
        if inner.generation != generation {
            return;
        }
        let now = Instant::now();
        let key = (id.to_owned(), port, proxy);
        if !inner.map.contains_key(&key) && inner.map.len() >= self.capacity {
            inner.map.retain(|_, e| e.expires > now);
            if inner.map.len() >= self.capacity {
                let oldest = inner
                    .map
                    .iter()
                    .min_by_key(|(_, e)| e.used)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    inner.map.remove(&k);
                }
            }
        }
        inner.clock += 1;
        let used = inner.clock;
        inner.map.insert(
            key,
            Entry {
                endpoint: endpoint.clone(),
                expires: now + self.ttl,
                used,
            },
        );
    }

    /// Drops every entry of sandbox `id` (all ports) and fences lookups in flight.
    pub(crate) fn invalidate(&self, id: &str) {
        let mut inner = self.lock();
        inner.generation += 1;
        inner.map.retain(|(sid, _, _), _| sid != id);
    }

    /// Number of entries (expired ones included until touched).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(s: &str) -> Endpoint {
        Endpoint {
            endpoint: s.to_owned(),
            headers: Default::default(),
            origin: None,
        }
    }

    #[test]
    fn hit_miss_ttl_and_keys() {
        let c = EndpointCache::new(Duration::from_millis(80), 8);
        let (miss, g) = c.get("a", 1, false);
        assert!(miss.is_none());
        c.put("a", 1, false, &ep("x"), g);
        assert_eq!(
            c.get("a", 1, false).0.map(|e| e.endpoint).as_deref(),
            Some("x")
        );
        assert!(
            c.get("a", 1, true).0.is_none(),
            "proxy flag is part of the key"
        );
        assert!(c.get("a", 2, false).0.is_none(), "port is part of the key");
        std::thread::sleep(Duration::from_millis(120));
        assert!(c.get("a", 1, false).0.is_none(), "expired");
        assert_eq!(c.len(), 0);
    }

    #[test]
    fn least_recently_used_goes_first() {
        let c = EndpointCache::new(Duration::from_secs(60), 2);
        let g = c.get("a", 1, false).1;
        c.put("a", 1, false, &ep("a"), g);
        c.put("b", 1, false, &ep("b"), g);
        assert!(c.get("a", 1, false).0.is_some()); // a is now more recent than b
        c.put("c", 1, false, &ep("c"), g);
        assert_eq!(c.len(), 2);
        assert!(c.get("b", 1, false).0.is_none());
        assert!(c.get("a", 1, false).0.is_some());
        assert!(c.get("c", 1, false).0.is_some());
    }

    #[test]
    fn invalidation_drops_and_fences_inflight_lookups() {
        let c = EndpointCache::new(Duration::from_secs(60), 8);
        let g = c.get("a", 1, false).1;
        c.put("a", 1, false, &ep("a"), g);
        c.put("b", 1, false, &ep("b"), g);
        let g_inflight = c.get("a", 2, false).1;
        c.invalidate("a");
        assert!(c.get("a", 1, false).0.is_none());
        assert!(c.get("b", 1, false).0.is_some(), "other sandboxes stay");
        c.put("a", 2, false, &ep("stale"), g_inflight);
        assert!(
            c.get("a", 2, false).0.is_none(),
            "a lookup from before the kill is not stored"
        );
    }

    #[test]
    fn zero_disables() {
        for c in [
            EndpointCache::new(Duration::ZERO, 8),
            EndpointCache::new(Duration::from_secs(1), 0),
        ] {
            let g = c.get("a", 1, false).1;
            c.put("a", 1, false, &ep("a"), g);
            assert!(c.get("a", 1, false).0.is_none());
            assert!(!c.enabled());
        }
    }
}
