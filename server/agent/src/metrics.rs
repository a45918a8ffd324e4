//! TODO: being written.

use axum::Router;

use crate::SharedState;

pub const ROUTES: &[(&str, &str)] = &[];


pub fn routes() -> Router<SharedState> {
    Router::new()
}
