//! Resource metrics: a snapshot and a watch stream (NDJSON, protocol §4.6).

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::Stream;
use reqwest::Method;

use super::ExecdClient;
use crate::error::{Error, ErrorKind, Result};
use crate::http::body_stream;
use crate::models::SandboxMetrics;
use crate::stream::{ByteStream, FrameDecoder};

/// A stream of metric samples; runs until dropped. A sampling error reported by the
/// server is yielded as an `Err` item and the stream goes on.
pub struct MetricsStream {
    body: Option<ByteStream>,
    decoder: FrameDecoder,
}

impl std::fmt::Debug for MetricsStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsStream").finish_non_exhaustive()
    }
}

const OP: &str = "metrics.watch";

fn parse_sample(frame: &[u8]) -> Option<Result<SandboxMetrics>> {
    let v: serde_json::Value = match serde_json::from_slice(frame) {
        Ok(v) => v,
        Err(e) => {
            return Some(Err(
                Error::stream(OP, "malformed metrics frame").with_source(e)
            ))
        }
    };
    if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
        return Some(Err(Error::new(ErrorKind::Api, OP, err.to_owned())));
    }
    Some(
        serde_json::from_value(v)
            .map_err(|e| Error::stream(OP, "unexpected metrics frame").with_source(e)),
    )
}

impl Stream for MetricsStream {
    type Item = Result<SandboxMetrics>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            match this.decoder.next_frame() {
                Ok(Some(frame)) => return Poll::Ready(parse_sample(&frame)),
                Ok(None) => {}
                Err(_) => {
                    this.body = None;
                    return Poll::Ready(Some(Err(Error::stream(OP, "metrics frame too large"))));
                }
            }
            let Some(body) = this.body.as_mut() else {
                return Poll::Ready(this.decoder.finish().and_then(|f| parse_sample(&f)));
            };
            match body.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => this.decoder.push(&chunk),
                Poll::Ready(Some(Err(e))) => {
                    this.body = None;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => this.body = None,
            }
        }
    }
}

impl ExecdClient {
    /// `GET /metrics`.
    pub async fn get_metrics(&self) -> Result<SandboxMetrics> {
        self.http
            .json(self.req("metrics.get", Method::GET, "/metrics"))
            .await
    }

    /// `GET /metrics/watch`: samples until the stream is dropped.
    pub async fn watch_metrics(&self) -> Result<MetricsStream> {
        let req = self.req(OP, Method::GET, "/metrics/watch").stream();
        let resp = self.http.execute(req).await?;
        Ok(MetricsStream {
            body: Some(body_stream(OP, resp)),
            decoder: FrameDecoder::new(),
        })
    }
}
