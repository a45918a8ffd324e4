//! Following a background command's output live, from any process that knows its id:
//! `GET /command/{id}/logs?cursor=` polled as a stream of byte chunks with their
//! offsets. Each chunk starts where the previous one ended, so nothing is lost or
//! repeated; the stream ends once the command has finished and its log is drained
//! (the agent's status says finished only after the log is complete).

use std::time::Duration;

use bytes::Bytes;
use reqwest::Method;

use super::commands::{require, TAIL_CURSOR_HEADER};
use super::ExecdClient;
use crate::error::{Error, Result};
use crate::lifecycle::seg;
use crate::models::CommandStatus;

/// Poll interval when a follower is given none.
pub const DEFAULT_FOLLOW_INTERVAL: Duration = Duration::from_millis(200);

/// One slice of a background command's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogChunk {
    /// Byte offset of the first byte in the log. Equals the previous chunk's end,
    /// except after the agent cut an over-long log (`--log-cap`; a marker line in the
    /// log says how much was dropped).
    pub offset: u64,
    /// The bytes, as the command wrote them (stdout and stderr combined).
    pub data: Bytes,
}

/// A background command's log as a pulled stream (see the module docs).
#[derive(Debug)]
pub struct LogFollower {
    client: ExecdClient,
    id: String,
    cursor: u64,
    interval: Duration,
    /// The command was seen finished: one more read, then the end.
    finished: Option<CommandStatus>,
    done: bool,
}

impl LogFollower {
    /// The offset after the last byte returned (pass it as `cursor` to resume).
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// The command's final status, once the stream has ended.
    pub fn status(&self) -> Option<&CommandStatus> {
        self.finished.as_ref().filter(|_| self.done)
    }

    /// The next chunk, waiting (polling) for one; `None` once the command finished
    /// and everything it wrote was returned.
    pub async fn next(&mut self) -> Result<Option<LogChunk>> {
        loop {
            if self.done {
                return Ok(None);
            }
            let (data, next) = self
                .client
                .background_command_log_bytes(&self.id, self.cursor)
                .await?;
            if !data.is_empty() {
                let offset = next.saturating_sub(data.len() as u64);
                self.cursor = next;
                return Ok(Some(LogChunk { offset, data }));
            }
            self.cursor = next.max(self.cursor);
            if self.finished.is_some() {
                self.done = true;
                return Ok(None);
            }
            let status = self.client.get_command_status(&self.id).await?;
            if status.running {
                tokio::time::sleep(self.interval).await;
            } else {
                self.finished = Some(status);
            }
        }
    }
}

impl ExecdClient {
    /// `GET /command/{id}/logs?cursor=` as raw bytes and the next cursor (the
    /// `EXECD-COMMANDS-TAIL-CURSOR` header).
    pub async fn background_command_log_bytes(
        &self,
        execution_id: &str,
        cursor: u64,
    ) -> Result<(Bytes, u64)> {
        const OP: &str = "commands.follow_background_command_logs";
        require(OP, execution_id)?;
        let req = self
            .req(
                OP,
                Method::GET,
                &format!("/command/{}/logs", seg(execution_id)),
            )
            .query("cursor", cursor);
        let (headers, body) = self.http.bytes(req).await?;
        let next = headers
            .get(TAIL_CURSOR_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                Error::stream(
                    OP,
                    format!("the logs of command {execution_id} came without a valid {TAIL_CURSOR_HEADER} header"),
                )
            })?;
        Ok((body, next))
    }

    /// Follows background command `execution_id` from `cursor` (0 = from the start),
    /// polling every `interval` while no new output has arrived.
    pub fn follow_background_command_logs(
        &self,
        execution_id: &str,
        cursor: u64,
        interval: Option<Duration>,
    ) -> LogFollower {
        LogFollower {
            client: self.clone(),
            id: execution_id.to_owned(),
            cursor,
            interval: interval.unwrap_or(DEFAULT_FOLLOW_INTERVAL),
            finished: None,
            done: false,
        }
    }
}
