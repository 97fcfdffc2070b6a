//! The web console, served by `warden serve` from the binary (OPS-5).

use std::sync::Arc;

use axum::Router;
use axum::response::Html;
use axum::routing::get;

use crate::state::AppState;

/// The console's routes (its own sign-in; not behind the API's bearer authentication).
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/", get(placeholder))
}

async fn placeholder() -> Html<&'static str> {
    Html(include_str!("placeholder.html"))
}
