//! `files.*` and `metrics.watch`: uploads (text, bytes, generated streams), reads
//! (whole, range, lines, streamed with a running digest) and file management.

use base64::Engine;
use bytes::Bytes;
use futures_util::StreamExt;
use opensandbox_core::models::{ContentReplaceEntry, MoveEntry, PathPermission, ReadOptions};
use opensandbox_core::{ExecdClient, WriteData, WriteEntry};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::args::*;
use crate::convert;
use crate::error::{OpError, OpResult};
use crate::session::Session;

/// Size of one generated upload chunk.
const GEN_CHUNK: usize = 256 * 1024;

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// `text` repeated `times` times as a lazily generated stream: the upload never
/// exists as one buffer, on either side.
fn generated(text: &str, times: u64) -> WriteData {
    let unit = Bytes::from(text.as_bytes().to_vec());
    let per_chunk = (GEN_CHUNK / unit.len().max(1)).max(1) as u64;
    let stream = futures_util::stream::unfold(times, move |left| {
        let unit = unit.clone();
        async move {
            if left == 0 || unit.is_empty() {
                return None;
            }
            let n = left.min(per_chunk);
            let chunk = Bytes::from(unit.repeat(n as usize));
            Some((Ok::<Bytes, std::io::Error>(chunk), left - n))
        }
    });
    WriteData::Stream(Box::pin(stream))
}

fn write_data(e: &WriteEntryArgs) -> Result<WriteData, OpError> {
    const OP: &str = "files.write_file";
    let given = [e.data.is_some(), e.data_b64.is_some(), e.data_gen.is_some()];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(OpError::invalid(
            OP,
            format!("{}: give one of data, data_b64 and data_gen", e.path),
        ));
    }
    if let Some(g) = &e.data_gen {
        return Ok(generated(&g.text, g.times));
    }
    if let Some(b64) = &e.data_b64 {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(b64.as_bytes())
            .map_err(|err| OpError::invalid(OP, format!("data_b64 is not base64: {err}")))?;
        return Ok(WriteData::Bytes(Bytes::from(raw)));
    }
    Ok(WriteData::Text(e.data.clone().unwrap_or_default()))
}

/// The core's entry for one write entry.
pub(crate) fn write_entry(e: &WriteEntryArgs) -> Result<WriteEntry, OpError> {
    let mut w = WriteEntry::new(e.path.clone(), write_data(e)?);
    w.mode = e.mode;
    w.owner = e.owner.clone();
    w.group = e.group.clone();
    Ok(w)
}

/// The core's read options.
pub(crate) fn read_options(a: &ReadArgs) -> ReadOptions {
    ReadOptions {
        range: a.range.clone(),
        offset: a.offset,
        limit: a.limit,
    }
}

fn permissions(entries: &[PermissionArgs]) -> Vec<PathPermission> {
    entries
        .iter()
        .map(|e| PathPermission {
            path: e.path.clone(),
            owner: e.owner.clone(),
            group: e.group.clone(),
            mode: e.mode,
        })
        .collect()
}

fn replacements(entries: &[ReplaceArgs]) -> Vec<ContentReplaceEntry> {
    entries
        .iter()
        .map(|e| ContentReplaceEntry {
            path: e.path.clone(),
            old_content: e.old_content.clone(),
            new_content: e.new_content.clone(),
        })
        .collect()
}

fn refs(paths: &[String]) -> Vec<&str> {
    paths.iter().map(String::as_str).collect()
}

/// The execd client of a file op: the sandbox's own, or (1.1) the one acting as
/// `identity` (`/v1/filesystem/{uid}/{gid}`) or inside `isolated_session`'s mounts.
pub async fn files_client(
    s: &Session,
    op: &str,
    a: &(impl Bound + FilesScoped),
) -> Result<ExecdClient, OpError> {
    let sb = s.sandbox(op, a).await?;
    match (a.identity(), a.isolated_session()) {
        (Some(_), Some(_)) => Err(OpError::invalid(
            op,
            format!("{op}: give one of identity and isolated_session"),
        )),
        (Some(id), None) => Ok(sb.execd().with_identity(id.uid, id.gid)?),
        (None, Some(session)) => Ok(sb.execd().isolated_session_files(session)?),
        (None, None) => Ok(sb.execd().clone()),
    }
}

/// `files.write_file` → null.
pub async fn write_file(s: &Session, a: WriteFileArgs) -> OpResult {
    let fs = files_client(s, "files.write_file", &a).await?;
    fs.write_files(vec![write_entry(&a.entry())?]).await?;
    Ok(Value::Null)
}

/// `files.write_files` → null (one request).
pub async fn write_files(s: &Session, a: WriteFilesArgs) -> OpResult {
    let fs = files_client(s, "files.write_files", &a).await?;
    let entries = a
        .entries
        .iter()
        .map(write_entry)
        .collect::<Result<Vec<_>, _>>()?;
    fs.write_files(entries).await?;
    Ok(Value::Null)
}

/// `files.read_file` → `{text}`.
pub async fn read_file(s: &Session, a: ReadArgs) -> OpResult {
    let fs = files_client(s, "files.read_file", &a).await?;
    let text = fs.read_file(&a.path, &read_options(&a)).await?;
    Ok(json!({"text": text}))
}

/// `files.read_bytes` → `{data_b64, size, sha256}`.
pub async fn read_bytes(s: &Session, a: ReadArgs) -> OpResult {
    let fs = files_client(s, "files.read_bytes", &a).await?;
    let data = fs.read_bytes(&a.path, &read_options(&a)).await?;
    Ok(json!({
        "data_b64": base64::engine::general_purpose::STANDARD.encode(&data),
        "size": data.len(),
        "sha256": hex(&Sha256::digest(&data)),
    }))
}

/// `files.read_bytes_stream` → `{size, sha256}` computed chunk by chunk.
pub async fn read_bytes_stream(s: &Session, a: ReadArgs) -> OpResult {
    let fs = files_client(s, "files.read_bytes_stream", &a).await?;
    let mut stream = fs.read_bytes_stream(&a.path, &read_options(&a)).await?;
    let mut hasher = Sha256::new();
    let mut size: u64 = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        size += chunk.len() as u64;
        hasher.update(&chunk);
    }
    Ok(json!({"size": size, "sha256": hex(&hasher.finalize())}))
}

/// `files.get_file_info` → `{path: EntryInfo}`.
pub async fn get_file_info(s: &Session, a: PathsArgs) -> OpResult {
    let fs = files_client(s, "files.get_file_info", &a).await?;
    let infos = fs.get_file_info(&refs(&a.paths)).await?;
    let map: Map<String, Value> = infos
        .iter()
        .map(|(k, v)| (k.clone(), convert::entry(v)))
        .collect();
    Ok(Value::Object(map))
}

/// `files.delete_files` → null.
pub async fn delete_files(s: &Session, a: PathsArgs) -> OpResult {
    let fs = files_client(s, "files.delete_files", &a).await?;
    fs.delete_files(&refs(&a.paths)).await?;
    Ok(Value::Null)
}

/// `files.delete_directories` → null.
pub async fn delete_directories(s: &Session, a: PathsArgs) -> OpResult {
    let fs = files_client(s, "files.delete_directories", &a).await?;
    fs.delete_directories(&refs(&a.paths)).await?;
    Ok(Value::Null)
}

/// `files.move_files` → null.
pub async fn move_files(s: &Session, a: MoveFilesArgs) -> OpResult {
    let fs = files_client(s, "files.move_files", &a).await?;
    let moves: Vec<MoveEntry> = a
        .entries
        .iter()
        .map(|e| MoveEntry {
            src: e.src.clone(),
            dest: e.dest.clone(),
        })
        .collect();
    fs.move_files(&moves).await?;
    Ok(Value::Null)
}

/// `files.set_permissions` → null.
pub async fn set_permissions(s: &Session, a: PermissionsArgs) -> OpResult {
    let fs = files_client(s, "files.set_permissions", &a).await?;
    fs.set_permissions(&permissions(&a.entries)).await?;
    Ok(Value::Null)
}

/// `files.create_directories` → null.
pub async fn create_directories(s: &Session, a: PermissionsArgs) -> OpResult {
    let fs = files_client(s, "files.create_directories", &a).await?;
    fs.create_directories(&permissions(&a.entries)).await?;
    Ok(Value::Null)
}

/// `files.replace_contents` → null.
pub async fn replace_contents(s: &Session, a: ReplaceContentsArgs) -> OpResult {
    let fs = files_client(s, "files.replace_contents", &a).await?;
    fs.replace_contents(&replacements(&a.entries)).await?;
    Ok(Value::Null)
}

/// `files.replace_contents_detailed` → `[{path, replaced_count}]`.
pub async fn replace_contents_detailed(s: &Session, a: ReplaceContentsArgs) -> OpResult {
    let fs = files_client(s, "files.replace_contents_detailed", &a).await?;
    let results = fs
        .replace_contents_detailed(&replacements(&a.entries))
        .await?;
    Ok(Value::Array(
        results
            .iter()
            .map(|r| json!({"path": r.path, "replaced_count": r.replaced_count}))
            .collect(),
    ))
}

/// `files.search` → `[EntryInfo]`.
pub async fn search(s: &Session, a: SearchArgs) -> OpResult {
    let fs = files_client(s, "files.search", &a).await?;
    let found = fs.search(&a.path, a.pattern.as_deref()).await?;
    Ok(Value::Array(found.iter().map(convert::entry).collect()))
}

/// `files.list_directory` → `[EntryInfo]`.
pub async fn list_directory(s: &Session, a: ListDirArgs) -> OpResult {
    let fs = files_client(s, "files.list_directory", &a).await?;
    let listed = fs.list_directory(&a.path, a.depth).await?;
    Ok(Value::Array(listed.iter().map(convert::entry).collect()))
}

/// `metrics.start` → `{handle}`: the watch stream, pulled with `execution.next_batch`
/// (items `{"type": "metrics", ...Metrics}`, then an end item with `execution: null`)
/// and stopped by `execution.cancel` / `release` (added 2026-12-01).
pub async fn watch_start(s: &Session, a: SandboxArgs) -> OpResult {
    const OP: &str = "metrics.start";
    let sb = s.sandbox(OP, &a).await?;
    let stream = sb.execd().watch_metrics().await?;
    let items = stream.map(|m| {
        let mut v = convert::metrics(&m?);
        if let Value::Object(o) = &mut v {
            o.insert("type".to_owned(), Value::String("metrics".to_owned()));
        }
        Ok::<_, OpError>(v)
    });
    let run = crate::stream::Run::items(items);
    let h = s.insert(crate::session::Entry::Run(std::sync::Arc::new(run)));
    Ok(json!({"handle": h}))
}

/// `metrics.watch` → the first `count` Metrics of the watch stream (then closed).
pub async fn watch(s: &Session, a: WatchArgs) -> OpResult {
    const OP: &str = "metrics.watch";
    let sb = s.sandbox(OP, &a).await?;
    let count = usize::try_from(a.count)
        .map_err(|_| OpError::invalid(OP, format!("{OP}: count is too large")))?;
    let mut stream = sb.execd().watch_metrics().await?;
    let mut samples = Vec::with_capacity(count.min(1024));
    while samples.len() < count {
        match stream.next().await {
            Some(m) => samples.push(convert::metrics(&m?)),
            None => break,
        }
    }
    Ok(Value::Array(samples))
}
