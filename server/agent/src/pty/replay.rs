//! The per-session replay buffer: the newest [`CAPACITY`] bytes of a session's output,
//! addressed by absolute byte offsets that only grow (pty.md §6).

use std::collections::VecDeque;

/// Bytes kept per session (upstream's 1 MiB).
pub const CAPACITY: usize = 1024 * 1024;

/// A ring of the newest output bytes plus the count of every byte ever pushed.
#[derive(Debug)]
pub struct ReplayBuffer {
    bytes: VecDeque<u8>,
    capacity: usize,
    total: u64,
}

impl Default for ReplayBuffer {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

impl ReplayBuffer {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            bytes: VecDeque::new(),
            capacity: capacity.max(1),
            total: 0,
        }
    }

    /// Total bytes ever pushed: the offset the next byte will get.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Offset of the oldest byte still held.
    pub fn oldest(&self) -> u64 {
        self.total - self.bytes.len() as u64
    }

    /// Appends `data`, evicting the oldest bytes beyond the capacity.
    pub fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        let keep = &data[data.len().saturating_sub(self.capacity)..];
        let overflow = (self.bytes.len() + keep.len()).saturating_sub(self.capacity);
        self.bytes.drain(..overflow);
        self.bytes.extend(keep.iter().copied());
    }

    /// What a client attaching with `since` must be replayed: the offset of the first
    /// byte and the bytes up to the end, or `None` when there is nothing to replay.
    /// A `since` older than the oldest byte held starts at the oldest byte.
    pub fn since(&self, since: u64) -> Option<(u64, Vec<u8>)> {
        if since >= self.total {
            return None;
        }
        let start = since.max(self.oldest());
        // `start - oldest` < len <= capacity, so it fits a usize.
        let skip = usize::try_from(start - self.oldest()).ok()?;
        let (a, b) = self.bytes.as_slices();
        let mut out = Vec::with_capacity(self.bytes.len() - skip);
        if skip < a.len() {
            out.extend_from_slice(&a[skip..]);
            out.extend_from_slice(b);
        } else {
            out.extend_from_slice(&b[skip - a.len()..]);
        }
        Some((start, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_grow_and_replay_is_exact() {
        let mut b = ReplayBuffer::with_capacity(8);
        assert_eq!(b.since(0), None);
        b.push(b"hello");
        assert_eq!(b.since(0), Some((0, b"hello".to_vec())));
        assert_eq!(b.since(3), Some((3, b"lo".to_vec())));
        assert_eq!(b.since(5), None);
        assert_eq!(b.since(99), None);
        b.push(b" world");
        assert_eq!(b.total(), 11);
        assert_eq!(b.oldest(), 3);
        // Older than what is held: clamped to the oldest byte (the header shows the gap).
        assert_eq!(b.since(0), Some((3, b"lo world".to_vec())));
        assert_eq!(b.since(6), Some((6, b"world".to_vec())));
    }

    #[test]
    fn a_push_larger_than_the_capacity_keeps_its_tail() {
        let mut b = ReplayBuffer::with_capacity(4);
        b.push(b"abcdefghij");
        assert_eq!(b.total(), 10);
        assert_eq!(b.since(0), Some((6, b"ghij".to_vec())));
        b.push(b"k");
        assert_eq!(b.since(0), Some((7, b"hijk".to_vec())));
    }

    #[test]
    fn memory_stays_bounded() {
        let mut b = ReplayBuffer::with_capacity(1024);
        for _ in 0..1000 {
            b.push(&[7u8; 333]);
        }
        assert_eq!(b.total(), 333_000);
        assert_eq!(b.since(0).map(|(_, v)| v.len()), Some(1024));
        assert!(b.bytes.len() <= 1024);
    }
}
