//! A file as a response body, read ahead by one blocking thread.
//!
//! `tokio::fs` sends every read to the blocking pool and back (two thread hand-offs per
//! chunk); here one blocking task reads the whole range in large chunks into a small
//! queue, so the socket side finds the next chunk ready and the threads only meet when
//! the queue runs empty or full. Memory per download stays bounded:
//! [`CHUNK`] × ([`DEPTH`] + 1).

use std::io::{self, Read};

use bytes::Bytes;
use futures::Stream;
use tokio::sync::mpsc;

/// Bytes per read: large enough that a gigabyte costs a thousand reads, not tens of
/// thousands.
pub const CHUNK: usize = 512 * 1024;

/// Chunks read ahead of the socket.
const DEPTH: usize = 3;

/// The `len` bytes of `file` from its current position, as a stream of chunks. A file
/// that ends early ends the stream early (the response's Content-Length then tells
/// the client); a read error is the stream's last item.
pub fn stream(mut file: std::fs::File, len: u64) -> impl Stream<Item = io::Result<Bytes>> {
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(DEPTH);
    tokio::task::spawn_blocking(move || {
        let mut left = len;
        while left > 0 {
            let want = usize::try_from(left).unwrap_or(CHUNK).min(CHUNK);
            let mut buf = Vec::with_capacity(want);
            // `take` stops at `want` without a probing read past it.
            match (&mut file).take(want as u64).read_to_end(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    left -= n as u64;
                    if tx.blocking_send(Ok(Bytes::from(buf))).is_err() {
                        return; // the client went away
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            }
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use std::io::{Seek, SeekFrom, Write};

    #[tokio::test]
    async fn reads_exactly_the_range_in_order() {
        let mut f = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..(CHUNK * 2 + 1234)).map(|i| (i % 251) as u8).collect();
        f.write_all(&data).unwrap();
        f.seek(SeekFrom::Start(10)).unwrap();
        let want = (CHUNK + 77) as u64;
        let chunks: Vec<Bytes> = stream(f, want)
            .map(|c| c.unwrap())
            .collect::<Vec<_>>()
            .await;
        assert!(chunks.iter().all(|c| c.len() <= CHUNK));
        let got: Vec<u8> = chunks.concat();
        assert_eq!(got, &data[10..10 + want as usize]);
    }

    #[tokio::test]
    async fn a_file_shorter_than_the_range_ends_early() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"short").unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        let got: Vec<Bytes> = stream(f, 1000).map(|c| c.unwrap()).collect().await;
        assert_eq!(got.concat(), b"short");
    }
}
