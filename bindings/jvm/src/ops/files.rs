//! `files.*` and `metrics.watch`: batched uploads (text or base64 entries), text reads
//! and file management. Byte reads, download streams and streamed uploads bypass JSON
//! (`crate::transfer`).

use base64::Engine;
use bytes::Bytes;
use futures_util::StreamExt;
use opensandbox_core::models::{ContentReplaceEntry, MoveEntry, PathPermission, ReadOptions};
use opensandbox_core::{WriteData, WriteEntry};
use serde_json::{json, Map, Value};

use crate::args::Args;
use crate::convert;
use crate::protocol::{Failure, OpResult};
use crate::state::State;

fn write_data(entry: &Args) -> Result<WriteData, Failure> {
    if let Some(b64) = entry.opt_str("data_b64")? {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(b64.as_bytes())
            .map_err(|e| Failure::Driver(format!("data_b64 is not base64: {e}")))?;
        return Ok(WriteData::Bytes(Bytes::from(raw)));
    }
    Ok(WriteData::Text(entry.opt_str("data")?.unwrap_or_default()))
}

fn write_entry(entry: &Args) -> Result<WriteEntry, Failure> {
    let mut w = WriteEntry::new(entry.str("path")?, write_data(entry)?);
    w.mode = entry.opt_u32("mode")?;
    w.owner = entry.opt_str("owner")?;
    w.group = entry.opt_str("group")?;
    Ok(w)
}

fn read_options(args: &Args) -> Result<ReadOptions, Failure> {
    crate::transfer::read_options(args)
}

fn permissions(args: &Args) -> Result<Vec<PathPermission>, Failure> {
    args.objects("entries")?
        .iter()
        .map(|e| {
            Ok(PathPermission {
                path: e.str("path")?,
                owner: e.opt_str("owner")?,
                group: e.opt_str("group")?,
                mode: e.opt_u32("mode")?,
            })
        })
        .collect()
}

fn replacements(args: &Args) -> Result<Vec<ContentReplaceEntry>, Failure> {
    args.objects("entries")?
        .iter()
        .map(|e| {
            Ok(ContentReplaceEntry {
                path: e.str("path")?,
                old_content: e.str("old_content")?,
                new_content: e.str("new_content")?,
            })
        })
        .collect()
}

fn paths(args: &Args) -> Result<Vec<String>, Failure> {
    args.str_list("paths")
}

pub async fn run(state: &State, op: &str, args: &Args) -> OpResult {
    let s = state.sandbox(args).await?;
    let execd = s.execd();
    match op {
        "files.write_file" => {
            execd.write_files(vec![write_entry(args)?]).await?;
            Ok(Value::Null)
        }
        "files.write_files" => {
            let entries = args
                .objects("entries")?
                .iter()
                .map(write_entry)
                .collect::<Result<Vec<_>, _>>()?;
            execd.write_files(entries).await?;
            Ok(Value::Null)
        }
        "files.read_file" => {
            let text = execd
                .read_file(&args.str("path")?, &read_options(args)?)
                .await?;
            Ok(json!({"text": text}))
        }
        "files.get_file_info" => {
            let paths = paths(args)?;
            let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
            let infos = execd.get_file_info(&refs).await?;
            let map: Map<String, Value> = infos
                .iter()
                .map(|(k, v)| (k.clone(), convert::entry(v)))
                .collect();
            Ok(Value::Object(map))
        }
        "files.delete_files" => {
            let paths = paths(args)?;
            let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
            execd.delete_files(&refs).await?;
            Ok(Value::Null)
        }
        "files.delete_directories" => {
            let paths = paths(args)?;
            let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
            execd.delete_directories(&refs).await?;
            Ok(Value::Null)
        }
        "files.move_files" => {
            let moves = args
                .objects("entries")?
                .iter()
                .map(|e| {
                    Ok(MoveEntry {
                        src: e.str("src")?,
                        dest: e.str("dest")?,
                    })
                })
                .collect::<Result<Vec<_>, Failure>>()?;
            execd.move_files(&moves).await?;
            Ok(Value::Null)
        }
        "files.set_permissions" => {
            execd.set_permissions(&permissions(args)?).await?;
            Ok(Value::Null)
        }
        "files.create_directories" => {
            execd.create_directories(&permissions(args)?).await?;
            Ok(Value::Null)
        }
        "files.replace_contents" => {
            execd.replace_contents(&replacements(args)?).await?;
            Ok(Value::Null)
        }
        "files.replace_contents_detailed" => {
            let results = execd
                .replace_contents_detailed(&replacements(args)?)
                .await?;
            Ok(Value::Array(
                results
                    .iter()
                    .map(|r| json!({"path": r.path, "replaced_count": r.replaced_count}))
                    .collect(),
            ))
        }
        "files.search" => {
            let pattern = args.opt_str("pattern")?;
            let found = execd.search(&args.str("path")?, pattern.as_deref()).await?;
            Ok(Value::Array(found.iter().map(convert::entry).collect()))
        }
        "files.list_directory" => {
            let listed = execd
                .list_directory(&args.str("path")?, args.opt_u32("depth")?)
                .await?;
            Ok(Value::Array(listed.iter().map(convert::entry).collect()))
        }
        "metrics.watch" => {
            let count = usize::try_from(args.u64("count")?)
                .map_err(|_| Failure::Driver("count is too large".into()))?;
            let mut stream = execd.watch_metrics().await?;
            let mut samples = Vec::with_capacity(count);
            while samples.len() < count {
                match stream.next().await {
                    Some(m) => samples.push(convert::metrics(&m?)),
                    None => break,
                }
            }
            Ok(Value::Array(samples))
        }
        _ => Err(Failure::Unsupported(op.to_owned())),
    }
}
