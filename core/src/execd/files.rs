//! File and directory operations. Uploads stream from readers (several files per
//! request); downloads are byte streams, so neither holds a file in memory.

use std::collections::BTreeMap;
use std::pin::Pin;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use reqwest::multipart::{Form, Part};
use reqwest::Method;
use serde::Deserialize;
use tokio::io::AsyncRead;

use super::commands::require;
use super::ExecdClient;
use crate::error::{Error, Result};
use crate::http::{body_stream, Mode, ReqBody};
use crate::models::{
    ContentReplaceEntry, ContentReplaceResult, EntryInfo, MoveEntry, PathPermission, Permission,
    ReadOptions,
};

/// A download as a stream of chunks.
pub type BytesStream = Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>;

/// Read buffer size for uploads from readers.
const UPLOAD_CHUNK: usize = 256 * 1024;

/// Default mode of written files and created directories (official SDKs: 755).
const DEFAULT_MODE: u32 = 755;

/// The content of a file to write.
pub enum WriteData {
    /// In-memory bytes.
    Bytes(Bytes),
    /// Text, sent as UTF-8.
    Text(String),
    /// A reader, streamed; `len` (when known) lets the request carry a Content-Length.
    Reader {
        /// The source.
        reader: Box<dyn AsyncRead + Send + Unpin>,
        /// Its length in bytes, if known.
        len: Option<u64>,
    },
    /// A stream of chunks.
    Stream(Pin<Box<dyn Stream<Item = std::io::Result<Bytes>> + Send>>),
}

impl std::fmt::Debug for WriteData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteData::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            WriteData::Text(t) => write!(f, "Text({} bytes)", t.len()),
            WriteData::Reader { len, .. } => write!(f, "Reader(len={len:?})"),
            WriteData::Stream(_) => f.write_str("Stream"),
        }
    }
}

impl From<Bytes> for WriteData {
    fn from(b: Bytes) -> Self {
        WriteData::Bytes(b)
    }
}

impl From<Vec<u8>> for WriteData {
    fn from(b: Vec<u8>) -> Self {
        WriteData::Bytes(b.into())
    }
}

impl From<String> for WriteData {
    fn from(s: String) -> Self {
        WriteData::Text(s)
    }
}

impl From<&str> for WriteData {
    fn from(s: &str) -> Self {
        WriteData::Text(s.to_owned())
    }
}

/// One file to write.
#[derive(Debug)]
pub struct WriteEntry {
    /// Destination path (parents are created).
    pub path: String,
    /// Content.
    pub data: WriteData,
    /// Octal mode as decimal digits; `None` = 755.
    pub mode: Option<u32>,
    /// Owner name.
    pub owner: Option<String>,
    /// Group name.
    pub group: Option<String>,
}

impl WriteEntry {
    /// An entry with default mode and ownership.
    pub fn new(path: impl Into<String>, data: impl Into<WriteData>) -> Self {
        WriteEntry {
            path: path.into(),
            data: data.into(),
            mode: None,
            owner: None,
            group: None,
        }
    }
}

fn file_name(path: &str) -> String {
    path.rsplit('/')
        .find(|s| !s.is_empty())
        .unwrap_or("file")
        .to_owned()
}

fn part_of(op: &'static str, data: WriteData, name: String) -> Result<Part> {
    let mime = |p: Part, m: &str| {
        p.mime_str(m)
            .map_err(|e| Error::internal(op, "bad MIME type").with_source(e))
    };
    match data {
        WriteData::Bytes(b) => mime(Part::stream(b).file_name(name), "application/octet-stream"),
        WriteData::Text(t) => mime(
            Part::stream(Bytes::from(t)).file_name(name),
            "text/plain; charset=utf-8",
        ),
        WriteData::Reader { reader, len } => {
            let s = tokio_util::io::ReaderStream::with_capacity(reader, UPLOAD_CHUNK);
            let body = reqwest::Body::wrap_stream(s);
            let p = match len {
                Some(l) => Part::stream_with_length(body, l),
                None => Part::stream(body),
            };
            mime(p.file_name(name), "application/octet-stream")
        }
        WriteData::Stream(s) => mime(
            Part::stream(reqwest::Body::wrap_stream(s)).file_name(name),
            "application/octet-stream",
        ),
    }
}

#[derive(Deserialize)]
struct ReplacedCount {
    #[serde(default, alias = "replacedCount")]
    replaced_count: u64,
}

impl ExecdClient {
    /// `POST /files/upload`: every entry in one multipart request, each as a
    /// `metadata` file part followed by its `file` part (protocol §3.2), streamed.
    pub async fn write_files(&self, entries: Vec<WriteEntry>) -> Result<()> {
        const OP: &str = "files.write_files";
        if entries.is_empty() {
            return Ok(());
        }
        let mut form = Form::new();
        for e in entries {
            require(OP, &e.path)?;
            let mut meta = serde_json::json!({
                "path": e.path,
                "mode": e.mode.unwrap_or(DEFAULT_MODE),
            });
            if let Some(o) = &e.owner {
                meta["owner"] = o.clone().into();
            }
            if let Some(g) = &e.group {
                meta["group"] = g.clone().into();
            }
            let meta = serde_json::to_vec(&meta)
                .map_err(|err| Error::internal(OP, "cannot encode metadata").with_source(err))?;
            // execd reads metadata through `form.File`, so it must carry a filename.
            let meta_part = Part::bytes(meta)
                .file_name("metadata")
                .mime_str("application/json")
                .map_err(|err| Error::internal(OP, "bad MIME type").with_source(err))?;
            form = form
                .part("metadata", meta_part)
                .part("file", part_of(OP, e.data, file_name(&e.path))?);
        }
        let mut req = self
            .req(OP, Method::POST, "/files/upload")
            .mode(Mode::Transfer);
        req.body = ReqBody::Multipart(Some(form));
        self.http.empty(req).await
    }

    /// Writes one file.
    pub async fn write_file(&self, path: &str, data: impl Into<WriteData>) -> Result<()> {
        self.write_files(vec![WriteEntry::new(path, data)]).await
    }

    /// `GET /files/download` as a byte stream, with optional `Range` or line
    /// offset/limit. The request timeout covers only the wait for response headers.
    pub async fn read_bytes_stream(&self, path: &str, opts: &ReadOptions) -> Result<BytesStream> {
        const OP: &str = "files.read";
        require(OP, path)?;
        if opts.range.is_some() && (opts.offset.is_some() || opts.limit.is_some()) {
            return Err(Error::invalid_argument(
                OP,
                "a range cannot be combined with a line offset/limit",
            ));
        }
        if opts.offset == Some(0) || opts.limit == Some(0) {
            return Err(Error::invalid_argument(
                OP,
                "line offset and limit are 1-based and must be at least 1",
            ));
        }
        let mut req = self
            .req(OP, Method::GET, "/files/download")
            .query("path", path)
            .stream();
        if let Some(o) = opts.offset {
            req = req.query("offset", o);
        }
        if let Some(l) = opts.limit {
            req = req.query("limit", l);
        }
        if let Some(r) = &opts.range {
            let v = reqwest::header::HeaderValue::from_str(r)
                .map_err(|e| Error::invalid_argument(OP, "invalid range").with_source(e))?;
            req = req.header(reqwest::header::RANGE, v);
        }
        let resp = self.http.execute(req).await?;
        Ok(body_stream(OP, resp))
    }

    /// Reads a whole file (or range) into memory.
    pub async fn read_bytes(&self, path: &str, opts: &ReadOptions) -> Result<Bytes> {
        let mut s = self.read_bytes_stream(path, opts).await?;
        let mut buf = bytes::BytesMut::new();
        while let Some(chunk) = s.next().await {
            buf.extend_from_slice(&chunk?);
        }
        Ok(buf.freeze())
    }

    /// Reads a file as UTF-8 text (invalid sequences become U+FFFD; use `read_bytes`
    /// for other encodings).
    pub async fn read_file(&self, path: &str, opts: &ReadOptions) -> Result<String> {
        let b = self.read_bytes(path, opts).await?;
        Ok(match String::from_utf8(b.to_vec()) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// `GET /files/info?path=..`: metadata of each path.
    pub async fn get_file_info(&self, paths: &[&str]) -> Result<BTreeMap<String, EntryInfo>> {
        let mut req = self.req("files.get_file_info", Method::GET, "/files/info");
        for p in paths {
            req = req.query("path", p);
        }
        let m: Option<BTreeMap<String, EntryInfo>> = self.http.json(req).await?;
        Ok(m.unwrap_or_default())
    }

    /// `DELETE /files?path=..`.
    pub async fn delete_files(&self, paths: &[&str]) -> Result<()> {
        let mut req = self.req("files.delete_files", Method::DELETE, "/files");
        for p in paths {
            req = req.query("path", p);
        }
        self.http.empty(req).await
    }

    /// `POST /files/permissions`.
    pub async fn set_permissions(&self, entries: &[PathPermission]) -> Result<()> {
        let body = permission_map(entries, 0);
        let req = self
            .req("files.set_permissions", Method::POST, "/files/permissions")
            .json(&body)?;
        self.http.empty(req).await
    }

    /// `POST /files/mv`.
    pub async fn move_files(&self, entries: &[MoveEntry]) -> Result<()> {
        let req = self
            .req("files.move_files", Method::POST, "/files/mv")
            .json(entries)?;
        self.http.empty(req).await
    }

    /// `GET /files/search?path=&pattern=` (glob; `**` when `pattern` is `None`).
    pub async fn search(&self, path: &str, pattern: Option<&str>) -> Result<Vec<EntryInfo>> {
        let mut req = self
            .req("files.search", Method::GET, "/files/search")
            .query("path", path);
        if let Some(p) = pattern {
            req = req.query("pattern", p);
        }
        let v: Option<Vec<EntryInfo>> = self.http.json(req).await?;
        Ok(v.unwrap_or_default())
    }

    fn replace_body(entries: &[ContentReplaceEntry]) -> Result<serde_json::Value> {
        let mut m = serde_json::Map::new();
        for e in entries {
            if e.old_content.is_empty() {
                return Err(Error::invalid_argument(
                    "files.replace_contents",
                    "old content must not be empty",
                ));
            }
            m.insert(
                e.path.clone(),
                serde_json::json!({ "old": e.old_content, "new": e.new_content }),
            );
        }
        Ok(serde_json::Value::Object(m))
    }

    /// `POST /files/replace`.
    pub async fn replace_contents(&self, entries: &[ContentReplaceEntry]) -> Result<()> {
        let body = Self::replace_body(entries)?;
        let req = self
            .req("files.replace_contents", Method::POST, "/files/replace")
            .json(&body)?;
        self.http.empty(req).await
    }

    /// `POST /files/replace?verbose=true`: also reports how many occurrences changed.
    pub async fn replace_contents_detailed(
        &self,
        entries: &[ContentReplaceEntry],
    ) -> Result<Vec<ContentReplaceResult>> {
        let body = Self::replace_body(entries)?;
        let req = self
            .req("files.replace_contents", Method::POST, "/files/replace")
            .query("verbose", true)
            .json(&body)?;
        let m: Option<BTreeMap<String, ReplacedCount>> = self.http.json(req).await?;
        Ok(m.unwrap_or_default()
            .into_iter()
            .map(|(path, c)| ContentReplaceResult {
                path,
                replaced_count: c.replaced_count,
            })
            .collect())
    }

    /// `GET /directories/list?path=&depth=`.
    pub async fn list_directory(&self, path: &str, depth: Option<u32>) -> Result<Vec<EntryInfo>> {
        let mut req = self
            .req("files.list_directory", Method::GET, "/directories/list")
            .query("path", path);
        if let Some(d) = depth {
            req = req.query("depth", d);
        }
        let v: Option<Vec<EntryInfo>> = self.http.json(req).await?;
        Ok(v.unwrap_or_default())
    }

    /// `POST /directories` (mkdir -p; mode defaults to 755).
    pub async fn create_directories(&self, entries: &[PathPermission]) -> Result<()> {
        let body = permission_map(entries, DEFAULT_MODE);
        let req = self
            .req("files.create_directories", Method::POST, "/directories")
            .json(&body)?;
        self.http.empty(req).await
    }

    /// `DELETE /directories?path=..` (rm -rf).
    pub async fn delete_directories(&self, paths: &[&str]) -> Result<()> {
        let mut req = self.req("files.delete_directories", Method::DELETE, "/directories");
        for p in paths {
            req = req.query("path", p);
        }
        self.http.empty(req).await
    }
}

fn permission_map(entries: &[PathPermission], default_mode: u32) -> BTreeMap<String, Permission> {
    entries
        .iter()
        .map(|e| {
            (
                e.path.clone(),
                Permission {
                    owner: e.owner.clone(),
                    group: e.group.clone(),
                    mode: e.mode.unwrap_or(default_mode),
                },
            )
        })
        .collect()
}
