//! `GET /files/download` (protocol.md §3.3): whole file, one byte range (206), or a
//! window of lines. Bodies are streamed from disk, so memory stays constant whatever
//! the file size.

use std::io::{BufRead, SeekFrom};
use std::path::Path;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use tokio::io::AsyncSeekExt;

use super::io_error;
use super::scope::Fs;
use crate::error::ApiError;
use crate::extract::QueryPairs;
use crate::paths::{self, Last};
use std::os::unix::fs::OpenOptionsExt;

/// Read size of the line mode's reader.
const CHUNK: usize = 256 * 1024;
/// Line mode sends lines in batches of about this many bytes.
const LINE_BATCH: usize = 64 * 1024;

/// RFC 5987 `attr-char`: everything else in a `filename*` value is percent-encoded.
const ATTR_CHAR_ESCAPES: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'!')
    .remove(b'#')
    .remove(b'$')
    .remove(b'&')
    .remove(b'+')
    .remove(b'-')
    .remove(b'.')
    .remove(b'^')
    .remove(b'_')
    .remove(b'`')
    .remove(b'|')
    .remove(b'~');

/// `attachment; filename="x"`, plus `filename*=UTF-8''…` when the name is not plain
/// ASCII (the quoted fallback then has `_` for each character it cannot carry).
pub fn content_disposition(name: &str) -> String {
    let plain = name.bytes().all(|b| (0x20..0x7f).contains(&b));
    let fallback: String = name
        .chars()
        .map(|c| match c {
            '"' | '\\' => '_',
            c if c.is_ascii() && !c.is_ascii_control() => c,
            _ => '_',
        })
        .collect();
    if plain && !name.contains(['"', '\\']) {
        format!("attachment; filename=\"{name}\"")
    } else {
        let encoded = utf8_percent_encode(name, ATTR_CHAR_ESCAPES);
        format!("attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
    }
}

/// The first range of a `Range` header as inclusive `(start, end)` within `size`;
/// `None` when it is unparseable or unsatisfiable (both answer 416).
pub fn parse_range(value: &str, size: u64) -> Option<(u64, u64)> {
    let spec = value.trim();
    let ranges = spec
        .get(..6)
        .filter(|unit| unit.eq_ignore_ascii_case("bytes="))
        .map(|_| &spec[6..])?;
    let first = ranges.split(',').next()?.trim();
    let (a, b) = first.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    if size == 0 {
        return None;
    }
    if a.is_empty() {
        let n: u64 = b.parse().ok()?;
        if n == 0 {
            return None;
        }
        return Some((size.saturating_sub(n), size - 1));
    }
    let start: u64 = a.parse().ok()?;
    if start >= size {
        return None;
    }
    let end = if b.is_empty() {
        size - 1
    } else {
        let end: u64 = b.parse().ok()?;
        if end < start {
            return None;
        }
        end.min(size - 1)
    };
    Some((start, end))
}

fn header_value(s: &str) -> Result<HeaderValue, ApiError> {
    HeaderValue::from_str(s).map_err(|e| ApiError::runtime(format!("bad header value: {e}")))
}

fn http_date(t: std::time::SystemTime) -> String {
    DateTime::<Utc>::from(t)
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

fn positive(query: &QueryPairs, key: &str) -> Result<Option<u64>, ApiError> {
    match query.int(key)? {
        None => Ok(None),
        Some(n) if n >= 1 => Ok(Some(n as u64)),
        Some(n) => Err(ApiError::bad_request(
            "INVALID_REQUEST_BODY",
            format!("{key} must be >= 1, got {n}"),
        )),
    }
}

/// `GET /files/download?path=[&offset=&limit=]` with an optional `Range` header.
pub async fn download(fs: Fs, query: QueryPairs, headers: HeaderMap) -> Result<Response, ApiError> {
    let user_path = query.required("path")?.to_string();
    let offset = positive(&query, "offset")?;
    let limit = positive(&query, "limit")?;
    let range = headers
        .get(header::RANGE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .filter(|v| !v.trim().is_empty());
    let line_mode = offset.is_some() || limit.is_some();
    if line_mode && range.is_some() {
        return Err(ApiError::bad_request(
            "INVALID_REQUEST_BODY",
            "the Range header cannot be combined with offset/limit",
        ));
    }

    // Resolve, check and open in the route's scope (its identity and root): the
    // permission check is the open; the body then streams from the open file.
    let (sandbox, meta, file) = fs
        .run(move |cfg| {
            let r = paths::resolve(cfg, &user_path, Last::Follow)?;
            // Stat before opening: opening a FIFO would block the agent.
            let meta =
                std::fs::metadata(&r.host).map_err(|e| io_error(&e, "download", &r.sandbox))?;
            if meta.is_dir() {
                return Err(ApiError::bad_request(
                    "INVALID_PATH",
                    format!("{} is a directory", r.sandbox.display()),
                ));
            }
            if !meta.is_file() {
                return Err(ApiError::bad_request(
                    "INVALID_PATH",
                    format!("{} is not a regular file", r.sandbox.display()),
                ));
            }
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&r.host)
                .map_err(|e| io_error(&e, "open", &r.sandbox))?;
            // The path may have been swapped for a FIFO or device since the stat.
            let opened = file
                .metadata()
                .map_err(|e| io_error(&e, "open", &r.sandbox))?;
            if !opened.is_file() {
                return Err(ApiError::bad_request(
                    "INVALID_PATH",
                    format!("{} is not a regular file", r.sandbox.display()),
                ));
            }
            Ok((r.sandbox, opened, file))
        })
        .await?;
    let file = tokio::fs::File::from_std(file);

    if line_mode {
        return Ok(lines_response(
            file.into_std().await,
            offset.unwrap_or(1),
            limit,
        ));
    }

    let size = meta.len();
    let name = sandbox
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "download".to_string());
    let mut builder = Response::builder()
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .header(
            header::CONTENT_DISPOSITION,
            header_value(&content_disposition(&name))?,
        )
        .header(header::ACCEPT_RANGES, "bytes");
    if let Ok(modified) = meta.modified() {
        builder = builder.header(header::LAST_MODIFIED, http_date(modified));
    }

    let (status, start, len) = match range {
        None => (StatusCode::OK, 0, size),
        Some(value) => match parse_range(&value, size) {
            Some((start, end)) => {
                builder =
                    builder.header(header::CONTENT_RANGE, format!("bytes {start}-{end}/{size}"));
                (StatusCode::PARTIAL_CONTENT, start, end - start + 1)
            }
            None => return Ok(unsatisfiable(&value, size, &sandbox)),
        },
    };

    let mut file = file;
    if start > 0 {
        file.seek(SeekFrom::Start(start))
            .await
            .map_err(|e| io_error(&e, "seek", &sandbox))?;
    }
    let stream = super::read_ahead::stream(file.into_std().await, len);
    builder
        .status(status)
        .header(header::CONTENT_LENGTH, len)
        .body(Body::from_stream(stream))
        .map_err(|e| ApiError::runtime(format!("cannot build download response: {e}")))
}

fn unsatisfiable(value: &str, size: u64, sandbox: &Path) -> Response {
    let mut response = ApiError::new(
        StatusCode::RANGE_NOT_SATISFIABLE,
        "UNKNOWN",
        format!(
            "range {value:?} is not satisfiable for {} ({size} bytes)",
            sandbox.display()
        ),
    )
    .into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("bytes */{size}")) {
        response.headers_mut().insert(header::CONTENT_RANGE, v);
    }
    response
}

/// Lines `offset..offset+limit` (1-based), CR/LF stripped, joined with `\n`, produced by
/// a blocking reader and streamed through a small channel.
fn lines_response(file: std::fs::File, offset: u64, limit: Option<u64>) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::task::spawn_blocking(move || {
        let mut reader = std::io::BufReader::with_capacity(CHUNK, file);
        let mut line = Vec::new();
        let mut batch = Vec::with_capacity(LINE_BATCH);
        let (mut number, mut sent) = (0u64, 0u64);
        loop {
            if limit.is_some_and(|l| sent >= l) {
                break;
            }
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            }
            number += 1;
            if number < offset {
                continue;
            }
            while matches!(line.last(), Some(b'\n' | b'\r')) {
                line.pop();
            }
            if sent > 0 {
                batch.push(b'\n');
            }
            batch.extend_from_slice(&line);
            sent += 1;
            if batch.len() >= LINE_BATCH {
                let chunk = Bytes::from(std::mem::replace(
                    &mut batch,
                    Vec::with_capacity(LINE_BATCH),
                ));
                if tx.blocking_send(Ok(chunk)).is_err() {
                    return; // client went away
                }
            }
        }
        if !batch.is_empty() {
            let _ = tx.blocking_send(Ok(Bytes::from(batch)));
        }
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        Body::from_stream(stream),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_rfc_9110() {
        assert_eq!(parse_range("bytes=0-9", 100), Some((0, 9)));
        assert_eq!(parse_range("bytes=90-", 100), Some((90, 99)));
        assert_eq!(parse_range("bytes=-10", 100), Some((90, 99)));
        assert_eq!(parse_range("bytes=-1000", 100), Some((0, 99)));
        assert_eq!(parse_range("bytes=95-200", 100), Some((95, 99)));
        assert_eq!(parse_range("bytes=1-2, 5-6", 100), Some((1, 2)));
        assert_eq!(parse_range("bytes=100-", 100), None);
        assert_eq!(parse_range("bytes=5-4", 100), None);
        assert_eq!(parse_range("bytes=-0", 100), None);
        assert_eq!(parse_range("items=0-1", 100), None);
        assert_eq!(parse_range("bytes=x-y", 100), None);
        assert_eq!(parse_range("bytes=0-0", 0), None);
    }

    #[test]
    fn non_ascii_names_get_an_rfc_5987_parameter() {
        assert_eq!(
            content_disposition("a.txt"),
            "attachment; filename=\"a.txt\""
        );
        let d = content_disposition("résumé 1.txt");
        assert!(
            d.contains("filename*=UTF-8''r%C3%A9sum%C3%A9%201.txt"),
            "{d}"
        );
        assert!(HeaderValue::from_str(&d).is_ok());
        let q = content_disposition("a\"b.txt");
        assert!(HeaderValue::from_str(&q).is_ok());
        assert!(q.contains("filename*=UTF-8''a%22b.txt"), "{q}");
    }
}
