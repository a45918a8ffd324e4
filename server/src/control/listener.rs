//! The HTTP accept loop of the control plane (instead of `axum::serve`), for two
//! limits a server reachable by untrusted clients needs:
//!
//! - a header read timeout (`--header-read-timeout`): a connection that has not sent
//!   a complete request head within it (a slow or half-open client, or an idle
//!   keep-alive connection) is closed. Bodies and streamed responses are not limited.
//! - at most `--max-connections` connections at once; more wait in the kernel's accept
//!   queue until one closes.
//!
//! HTTP/1.1 only (every client of this API speaks it; HTTP/2 would need TLS here).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

/// Connection limits, from the flags.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub max_connections: usize,
}

/// Serves `app` on `listener` until `shutdown` completes; then stops accepting and
/// asks every open connection to finish its current request. Returns once they have.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    // hyper's own HTTP/1 builder, not hyper-util's auto builder: the auto builder's
    // upgradeable connection first waits for 24 bytes to sniff the HTTP version, with
    // no timeout, so a client that sends nothing held its slot forever.
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    // Graceful shutdown: every connection task holds a receiver (the value changes
    // once, to true, or the sender goes away); `closed()` resolves once all of them
    // have finished.
    let (stop, stopping) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (tcp, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %err, "accepting a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Without TCP_NODELAY a stream's small terminal event waits for the client's
        // delayed ACK (Nagle), adding ~40 ms to every command on a reused connection.
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!("could not set TCP_NODELAY: {err}");
        }
        let service = TowerToHyperService::new(app.clone());
        // Upgrades are served: the proxy relays WebSockets (ws_relay).
        let conn = builder
            .serve_connection(TokioIo::new(tcp), service)
            .with_upgrades();
        let mut stopping = stopping.clone();
        tokio::spawn(async move {
            tokio::pin!(conn);
            let ended = tokio::select! {
                ended = conn.as_mut() => ended,
                _ = stopping.changed() => {
                    // Finish the request in flight, then close.
                    conn.as_mut().graceful_shutdown();
                    conn.as_mut().await
                }
            };
            if let Err(err) = ended {
                tracing::debug!(remote = %remote, error = %err, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    drop(stopping);
    // Receivers only: nobody may be listening any more, which is fine.
    let _ = stop.send(true);
    stop.closed().await;
    Ok(())
}
