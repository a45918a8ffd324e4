//! Download chunks handed to JS in recycled memory.
//!
//! A download's reads (`NativeByteStream::next`) each became a fresh `Vec` handed to V8
//! as an external `Buffer`; V8 frees it only when a GC finds it dead, so every read
//! landed in memory the allocator had just returned to the kernel or never touched:
//! ~20,000 page faults (and as many zeroed pages) per 256 MiB download. Here a read is
//! copied into a buffer of [`BUF`] bytes from a small pool, and the `Buffer`'s finalizer
//! (run by Node on the JS thread once V8 has dropped the last reference to it) gives
//! the memory back. A buffer JS still references is never finalized, so it is never
//! reused while JS can see it (tested in `tests/download_chunks.test.mjs`).
//!
//! The pool holds memory only while a download is open: when the last open one is
//! closed (or collected) the pool is emptied, and buffers finalized later are freed.

use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use napi::bindgen_prelude::{check_status, Result, ToNapiValue, TypeName, ValueType};
use napi::sys;
use opensandbox_bindings::transfer::ReadSink;

/// Bytes of a pooled buffer, and of a read: each crossing to JS costs a hop to the
/// runtime and back plus a GC-tracked `Buffer`, so reads are larger than the op
/// layer's 512 KiB default (~128 instead of ~400 per 256 MiB). Only a body's tail
/// (or a slow body's end) is shorter; reads under half of this get an exact buffer.
pub const BUF: usize = 2 << 20;
/// A read waits for this much (or the end): full reads, so a chunk JS keeps pins no
/// more memory than its length.
pub const FILL: usize = BUF;

/// Most buffers the pool keeps: V8 starts a GC when array buffers grow by about 64 MB
/// since the last one, so about 32 chunks of 2 MiB wait for their finalizer between
/// two GCs; a pool that holds them all serves every read of a long download after
/// its first 64 MB. Measured without the pool, 2 MiB reads were slower than 512 KiB
/// ones (larger fresh allocations, more page faults).
const POOL_MAX: usize = 32;

struct Pool {
    free: Vec<Vec<u8>>,
    /// Open downloads: the pool keeps memory only while one is open.
    open: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    free: Vec::new(),
    open: 0,
});

/// Pool-sized reads served from the pool / newly allocated, since the process started.
static REUSED: AtomicU64 = AtomicU64::new(0);
static ALLOCATED: AtomicU64 = AtomicU64::new(0);

/// `{reused, allocated, pooled}`: how pool-sized reads were served, and the buffers the
/// pool holds now (what the tests and benchmarks check).
pub fn stats() -> serde_json::Value {
    let pooled = pool().free.len();
    serde_json::json!({
        "reused": REUSED.load(Ordering::Relaxed),
        "allocated": ALLOCATED.load(Ordering::Relaxed),
        "pooled": pooled,
    })
}

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    // A panic while holding the lock leaves a consistent Vec: keep using it.
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A download was opened: recycled buffers are kept from now on.
pub fn opened() {
    pool().open += 1;
}

/// A download was closed: with none left open, the pool's memory is freed.
pub fn closed() {
    let drained = {
        let mut p = pool();
        p.open = p.open.saturating_sub(1);
        if p.open == 0 {
            std::mem::take(&mut p.free)
        } else {
            Vec::new()
        }
    };
    // Freed outside the lock.
    drop(drained);
}

/// A pool-sized buffer: a recycled one, else a new one.
fn take() -> Vec<u8> {
    let reused = pool().free.pop();
    if let Some(mut v) = reused {
        REUSED.fetch_add(1, Ordering::Relaxed);
        v.clear();
        return v;
    }
    ALLOCATED.fetch_add(1, Ordering::Relaxed);
    Vec::with_capacity(BUF)
}

/// Gives a buffer back (from a finalizer): kept when it is a pool-sized buffer, a
/// download is open and the pool has room; freed otherwise.
fn recycle(v: Vec<u8>) {
    if v.capacity() != BUF {
        return;
    }
    let mut p = pool();
    if p.open > 0 && p.free.len() < POOL_MAX {
        p.free.push(v);
    }
}

/// One read of a download, the received slices copied once into a (recycled) buffer.
pub struct Chunk(Vec<u8>);

/// A read in progress (`opensandbox_bindings::transfer::ReadSink`): each received
/// slice is copied into a pooled buffer as the read takes it, and dropped at once, so
/// the connection reads the next ones into the same memory (hyper reuses its read
/// buffer once no slice of it is alive). Gathering a read's ~2 MiB of slices first and
/// copying them afterwards made every read of the socket land in fresh memory: ~18,000
/// page faults per 256 MiB download, most of them in the kernel's copy to the socket
/// read (docs/architecture.md "Downloads").
#[derive(Default)]
pub struct Filling(Option<Vec<u8>>);

impl Filling {
    /// Whether the read filled a whole buffer (more may follow; a shorter read is the
    /// body's end or what a slow body had sent).
    pub fn is_full(&self) -> bool {
        self.0.as_ref().is_some_and(|v| v.len() >= BUF)
    }

    /// The read's bytes as a chunk; `None` when nothing arrived (the end).
    pub fn finish(self) -> Option<Chunk> {
        let v = self.0?;
        if v.len() >= BUF / 2 {
            return Some(Chunk(v));
        }
        // A short read (a file's tail, a slow body) must not pin a whole pooled buffer
        // while JS holds it: it gets memory of its own length, the buffer goes back.
        let exact = v.clone();
        recycle(v);
        Some(Chunk(exact))
    }
}

impl ReadSink for Filling {
    fn put(&mut self, part: Bytes) {
        // A read is at most BUF bytes (`NativeByteStream::next`): never reallocates.
        self.0.get_or_insert_with(take).extend_from_slice(&part);
    }
}

/// Node's finalizer of a chunk's `Buffer`: the memory goes back to the pool.
unsafe extern "C" fn give_back(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    // SAFETY: `hint` is the `Box<Vec<u8>>` leaked in `to_napi_value` for this buffer;
    // Node calls the finalizer once.
    let v = unsafe { Box::from_raw(hint.cast::<Vec<u8>>()) };
    recycle(*v);
}

impl TypeName for Chunk {
    fn type_name() -> &'static str {
        "Buffer"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for Chunk {
    /// An external `Buffer` over the chunk's memory (no copy), whose finalizer gives it
    /// back; a copy where the runtime allows no external buffers (Electron).
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let len = val.0.len();
        let mut ret = ptr::null_mut();
        if len == 0 {
            // SAFETY: a plain empty Buffer; `env` is the caller's live environment.
            let status = unsafe { sys::napi_create_buffer(env, 0, ptr::null_mut(), &mut ret) };
            check_status!(status, "cannot create an empty Buffer")?;
            return Ok(ret);
        }
        let boxed = Box::new(val.0);
        let data = boxed.as_ptr().cast_mut().cast::<c_void>();
        let hint = Box::into_raw(boxed);
        // SAFETY: `data` points at `len` initialized bytes owned by `hint`, which stays
        // alive (and unmoved: the Vec's heap buffer) until `give_back` runs.
        let status = unsafe {
            sys::napi_create_external_buffer(env, len, data, Some(give_back), hint.cast(), &mut ret)
        };
        if status == sys::Status::napi_ok {
            return Ok(ret);
        }
        // Not created: Node will not call the finalizer, the box is ours again.
        // SAFETY: `hint` came from Box::into_raw above and was not handed over.
        let v = unsafe { Box::from_raw(hint) };
        if status != sys::Status::napi_no_external_buffers_allowed {
            check_status!(status, "cannot create a download Buffer")?;
        }
        // SAFETY: copies `len` initialized bytes of `v`.
        let copied = unsafe {
            sys::napi_create_buffer_copy(env, len, v.as_ptr().cast(), ptr::null_mut(), &mut ret)
        };
        recycle(*v);
        check_status!(copied, "cannot create a download Buffer")?;
        Ok(ret)
    }
}
