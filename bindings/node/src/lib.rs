//! napi-rs addon of the npm package (skeleton: the owner of this crate fills it in).
