//! Identity file operations: every file and directory route under
//! `/v1/filesystem/{uid}/{gid}` (protocol.md §3.6), performed as that user.
//!
//! `uid` and `gid` are decimal `0..=4294967294` (`(uid_t)-1` means "unchanged" to the
//! kernel): anything else is a 400 before any work. The handlers are the plain file
//! handlers; the route layer below gives them [`Scope::Identity`], under which their
//! filesystem work runs on a thread with that fsuid/fsgid and no supplementary group
//! (`crate::files::scope`). So a file created as 1000:1000 belongs to 1000, a 0600
//! root file is a 403 `PERMISSION_DENIED`, and giving a file away is refused, as the
//! kernel decides for that user. Where the switch itself is impossible (an id the
//! sandbox does not map, an agent without CAP_SETUID) the answer is upstream's 503
//! `FILESYSTEM_IDENTITY_UNAVAILABLE`.

use axum::extract::{RawPathParams, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;

use crate::error::ApiError;
use crate::files::scope::Scope;
use crate::SharedState;

pub const PREFIX: &str = "/v1/filesystem/{uid}/{gid}";

pub fn routes() -> Router<SharedState> {
    crate::files::handlers_at(PREFIX).route_layer(axum::middleware::from_fn(identity_scope))
}

/// A uid or gid as the route spells it.
pub fn parse_id(what: &str, raw: &str) -> Result<u32, ApiError> {
    let invalid = || {
        ApiError::bad_request(
            "INVALID_REQUEST_BODY",
            format!("invalid {what}: identity must be a decimal integer between 0 and 4294967294, got {raw:?}"),
        )
    };
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    match raw.parse::<u32>() {
        Ok(id) if id != u32::MAX => Ok(id),
        _ => Err(invalid()),
    }
}

async fn identity_scope(params: RawPathParams, mut request: Request, next: Next) -> Response {
    let find = |name: &str| {
        params
            .iter()
            .find(|(key, _)| *key == name)
            .map_or("", |(_, value)| value)
    };
    let ids = parse_id("uid", find("uid")).and_then(|uid| Ok((uid, parse_id("gid", find("gid"))?)));
    match ids {
        Ok((uid, gid)) => {
            request
                .extensions_mut()
                .insert(Scope::Identity { uid, gid });
            next.run(request).await
        }
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_decimal_and_below_the_reserved_value() {
        assert_eq!(parse_id("uid", "0").ok(), Some(0));
        assert_eq!(parse_id("uid", "4294967294").ok(), Some(4_294_967_294));
        for bad in [
            "",
            "-1",
            "+1",
            "1e3",
            "0x10",
            "4294967295",
            "99999999999",
            " 1",
        ] {
            let err = parse_id("uid", bad).unwrap_err();
            assert_eq!(err.code, "INVALID_REQUEST_BODY", "{bad}");
        }
    }
}
