//! Download chunks as `bytes` of the caller's `chunk_size` (`read_bytes_stream`), as
//! the official SDK yields them (httpx's `aiter_bytes(chunk_size)`: every chunk that
//! size but the last).
//!
//! - The sync iterator reads on the calling thread (a download opened by a blocking
//!   call is on a driver of its own: this thread reads the socket), so it reads one
//!   chunk per call, with the GIL released, straight into new `bytes` objects: each
//!   received slice is copied into them as the read takes it ([`IntoPieces`]), so the
//!   connection reads on into the same memory, and a 64 KiB `bytes` (the default) stays
//!   under glibc's 128 KiB mmap threshold, so it reuses the heap memory that earlier
//!   chunks were freed to. 1 MiB `bytes` were mapped afresh every time: ~16,000 page
//!   faults per 256 MiB download (docs/architecture.md "Downloads").
//! - The async iterator's reads run on a runtime worker, which cannot create Python
//!   objects, and each costs a callback hop, so it reads about 1 MiB of whole chunks at
//!   a time into a reused buffer ([`read_vec`]), which the event loop's thread cuts into
//!   `bytes` ([`ReadChunks`]): two copies, both into memory already in use. Keeping the received
//!   slices until the callback (one copy) made the connection read into fresh memory and
//!   was slower (2026-12-07: 72,000 page faults and 259 ms of CPU per 256 MiB against
//!   35,000 and 184 ms for the 1 MiB `bytes` before).

use std::mem::MaybeUninit;
use std::sync::Mutex;

use bytes::Bytes;
use opensandbox_bindings::transfer::ReadSink;
use opensandbox_bindings::{OpError, Session};
use opensandbox_core::runtime;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

/// A new `bytes` of `len` bytes whose content is not initialised yet, and a pointer to
/// them. The caller writes every byte it hands to Python (or copies a prefix out).
fn uninit_bytes(py: Python<'_>, len: usize) -> PyResult<(Bound<'_, PyBytes>, *mut u8)> {
    let size = pyo3::ffi::Py_ssize_t::try_from(len)
        .map_err(|_| pyo3::exceptions::PyOverflowError::new_err("chunk too large"))?;
    // SAFETY: `PyBytes_FromStringAndSize(NULL, n)` returns a new, unshared bytes object
    // of n uninitialised bytes (documented, limited API), or NULL with an exception set.
    let obj = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), size),
        )?
    };
    // SAFETY: `obj` is a live bytes object; its buffer lives as long as it does.
    let data = unsafe { pyo3::ffi::PyBytes_AsString(obj.as_ptr()) };
    if data.is_null() {
        return Err(PyErr::fetch(py));
    }
    Ok((obj.cast_into::<PyBytes>()?, data.cast::<u8>()))
}

/// The sink of a sync read: received slices copied in order into pieces of `size`
/// bytes each, never past the last one.
struct IntoPieces<'a> {
    pieces: Vec<&'a mut [MaybeUninit<u8>]>,
    size: usize,
    filled: usize,
}

impl ReadSink for IntoPieces<'_> {
    fn put(&mut self, part: Bytes) {
        let mut src: &[u8] = &part;
        while !src.is_empty() {
            let Some(piece) = self.pieces.get_mut(self.filled / self.size) else {
                return;
            };
            let room = &mut piece[self.filled % self.size..];
            let n = src.len().min(room.len());
            // SAFETY: `n` initialised bytes of `src` into `n` bytes of `room`; distinct
            // allocations.
            unsafe {
                std::ptr::copy_nonoverlapping(src.as_ptr(), room.as_mut_ptr().cast::<u8>(), n)
            };
            self.filled += n;
            src = &src[n..];
        }
    }
}

/// Up to `max` bytes of download `handle` (at least one chunk) as `bytes` of `size`
/// each, waiting for all of them or the body's end; the last one is shorter only at the
/// end, and the list is empty at the end. Blocks with the GIL released.
pub fn read_chunks(
    py: Python<'_>,
    session: &Session,
    handle: u64,
    max: usize,
    size: usize,
) -> PyResult<Py<PyList>> {
    let size = size.max(1);
    if size > RESERVE_MAX {
        // A chunk larger than anything reserved up front: read into a buffer that grows
        // as bytes arrive, then one `bytes` of what came (a chunk_size far beyond the
        // file's size gives the file as one chunk, as httpx does).
        let read = session.download_read_into(handle, size, size, IntoVec(take_buffer(size)));
        let IntoVec(data) = py
            .detach(|| {
                opensandbox_bindings::block_on_read(
                    runtime::runtime().handle(),
                    session,
                    handle,
                    read,
                )
            })
            .map_err(crate::op_err)?;
        let list = PyList::empty(py);
        if !data.is_empty() {
            list.append(PyBytes::new(py, &data))?;
        }
        give_back(data);
        return Ok(list.unbind());
    }
    let count = (max / size).max(1);
    let mut objs = Vec::with_capacity(count);
    let mut pieces = Vec::with_capacity(count);
    for _ in 0..count {
        let (obj, data) = uninit_bytes(py, size)?;
        // SAFETY: the buffer of `obj`, `size` bytes, alive while `obj` is (kept in
        // `objs` past the read); this slice is its only access until the read returns,
        // and no Python code can see `obj` before that.
        pieces
            .push(unsafe { std::slice::from_raw_parts_mut(data.cast::<MaybeUninit<u8>>(), size) });
        objs.push((obj, data));
    }
    let want = count * size;
    let sink = IntoPieces {
        pieces,
        size,
        filled: 0,
    };
    let read = session.download_read_into(handle, want, want, sink);
    let filled = py
        .detach(|| {
            opensandbox_bindings::block_on_read(runtime::runtime().handle(), session, handle, read)
        })
        .map_err(crate::op_err)?
        .filled;
    let list = PyList::empty(py);
    let (full, rest) = (filled / size, filled % size);
    for (obj, _) in objs.iter().take(full) {
        list.append(obj)?;
    }
    if rest > 0 {
        let (_, data) = objs[full];
        // SAFETY: the read wrote the first `rest` bytes of this piece.
        let got = unsafe { std::slice::from_raw_parts(data.cast_const(), rest) };
        list.append(PyBytes::new(py, got))?;
    }
    Ok(list.unbind())
}

/// One async read (`Client::read_chunks_async`): its bytes as `bytes` of `size` each
/// (the last one shorter), made as it is iterated, on the thread that iterates it (the
/// event loop's). Made in the callback, on the runtime thread, they came from that
/// thread's malloc arena, which glibc trims and refills: ~76,000 page faults per 256 MiB
/// against ~15,000 with one arena (`MALLOC_ARENA_MAX=1`), 231 against 182 ms of CPU.
/// Its buffer goes back to [`POOL`] when it is dropped.
#[pyclass(module = "opensandbox._native")]
pub struct ReadChunks {
    data: Vec<u8>,
    size: usize,
    at: usize,
}

impl ReadChunks {
    pub fn new(data: Vec<u8>, size: usize) -> Self {
        ReadChunks {
            data,
            size: size.max(1),
            at: 0,
        }
    }
}

#[pymethods]
impl ReadChunks {
    /// The chunks not iterated yet.
    fn __len__(&self) -> usize {
        (self.data.len() - self.at).div_ceil(self.size)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        let end = self.data.len().min(self.at + self.size);
        if self.at >= end {
            return None;
        }
        let piece = PyBytes::new(py, &self.data[self.at..end]);
        self.at = end;
        Some(piece)
    }
}

impl Drop for ReadChunks {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.data));
    }
}

/// The sink of an async read: slices copied into a buffer as the read takes it (so the
/// connection reads on into the same memory), a buffer reused from [`POOL`].
struct IntoVec(Vec<u8>);

impl ReadSink for IntoVec {
    fn put(&mut self, part: Bytes) {
        self.0.extend_from_slice(&part);
    }
}

/// Buffers of finished async reads: a fresh 1 MiB buffer per read is mapped afresh by
/// glibc each time (page faults over every byte), a reused one is not.
static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
/// Most buffers kept: reads of one download are one at a time, a few run at once.
const POOL_MAX: usize = 4;

/// Most bytes reserved before a read: with a larger `chunk_size` (the caller's) the
/// buffer grows as bytes arrive, so no allocation is sized by the argument alone (a
/// failed one aborts the process).
const RESERVE_MAX: usize = 4 << 20;

fn take_buffer(cap: usize) -> Vec<u8> {
    let cap = cap.min(RESERVE_MAX);
    let mut pool = POOL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match pool.iter().position(|v| v.capacity() >= cap) {
        Some(i) => pool.swap_remove(i),
        None => Vec::with_capacity(cap),
    }
}

/// Gives an async read's buffer back once its bytes were copied into `bytes`.
fn give_back(mut v: Vec<u8>) {
    if v.capacity() > RESERVE_MAX {
        // Grown for a huge chunk_size: not kept.
        return;
    }
    v.clear();
    let mut pool = POOL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if pool.len() < POOL_MAX {
        pool.push(v);
    }
}

/// Async reads: up to `max` bytes, waiting for all of them or the end, in a pooled
/// buffer (a [`ReadChunks`] gives it back).
pub async fn read_vec(session: &Session, handle: u64, max: usize) -> Result<Vec<u8>, OpError> {
    let sink = IntoVec(take_buffer(max));
    match session.download_read_into(handle, max, max, sink).await {
        Ok(IntoVec(v)) => Ok(v),
        Err(e) => Err(e),
    }
}
