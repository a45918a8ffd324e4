//! TODO: being written.

use axum::Router;

use crate::SharedState;

pub const ROUTES: &[(&str, &str)] = &[];

#[derive(Default)]
pub struct Registry;

pub fn routes() -> Router<SharedState> {
    Router::new()
}
