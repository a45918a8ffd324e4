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
//!
//! And one rule of keep-alive: a response sent before its request's body was read to
//! the end says `Connection: close` ([`close_unless_body_read`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::Result;
use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use bytes::Bytes;
use http::header::{HeaderValue, CONNECTION};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
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
    let app = app.layer(axum::middleware::from_fn(close_unless_body_read));
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

/// Adds `Connection: close` to a response produced before its request's body was read
/// to the end. hyper closes such a connection after the response (it cannot know where
/// the next request starts), but says so only when it decided before writing the head;
/// otherwise a client pools the connection and its next request on it fails (not
/// retried: it may have been received). Seen after uploads the agent refused: one
/// `commands.run` in 4 right after failed with "request failed".
pub async fn close_unless_body_read(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    if body.is_end_stream() {
        return next.run(Request::from_parts(parts, body)).await;
    }
    let ended = Arc::new(AtomicBool::new(false));
    let body = Body::new(Tracked {
        inner: body,
        ended: Arc::clone(&ended),
    });
    let mut response = next.run(Request::from_parts(parts, body)).await;
    let upgraded = response.status() == http::StatusCode::SWITCHING_PROTOCOLS;
    if !ended.load(Ordering::Acquire) && !upgraded {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request body that records when it has been read to its end.
struct Tracked {
    inner: Body,
    ended: Arc<AtomicBool>,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        let ended = match &polled {
            Poll::Ready(None) => true,
            Poll::Ready(Some(Ok(_))) => self.inner.is_end_stream(),
            _ => false,
        };
        if ended {
            self.ended.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::post;
    use tower::ServiceExt;

    fn app() -> Router {
        Router::new()
            .route("/ignore", post(|| async { "not read" }))
            .route(
                "/read",
                post(|body: Bytes| async move { format!("{} bytes", body.len()) }),
            )
            .layer(axum::middleware::from_fn(close_unless_body_read))
    }

    async fn call(path: &str, body: Body) -> Response {
        let request = http::Request::post(path).body(body).expect("request");
        app().oneshot(request).await.expect("response")
    }

    #[tokio::test]
    async fn a_response_to_an_unread_body_closes_the_connection() {
        let response = call("/ignore", Body::from(vec![7u8; 1 << 20])).await;
        assert_eq!(
            response
                .headers()
                .get(CONNECTION)
                .map(HeaderValue::as_bytes),
            Some(&b"close"[..])
        );
    }

    #[tokio::test]
    async fn a_read_or_empty_body_keeps_the_connection() {
        let read = call("/read", Body::from(vec![7u8; 1 << 20])).await;
        assert!(read.headers().get(CONNECTION).is_none());
        // A body read in several frames ends with its last one.
        let frames = futures::stream::iter(
            (0..4).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![1u8; 1000]))),
        );
        let streamed = call("/read", Body::from_stream(frames)).await;
        assert!(streamed.headers().get(CONNECTION).is_none());
        let empty = call("/ignore", Body::empty()).await;
        assert!(empty.headers().get(CONNECTION).is_none());
    }
}
