//! The admin API under `/api/v1` (JSON; OPS-5), described by `/api/v1/openapi.json`.
//!
//! One module per resource: [`resources`] (configuration of every kind), [`tokens`],
//! [`killswitches`], [`notifiers`], [`audit`], [`runs`], [`approvals`], [`agents`], [`tasks`] (and
//! workspaces), [`threads`] (agent chat), [`identity`] (whoami, explain, the tool inventory). What they share are leaves:
//! [`error`] (the one error shape) and [`access`] (the capabilities and the table of which
//! operation needs which; docs/api.md). [`openapi`] finishes the document that the one route
//! list below collects from the handlers' own types, so that router and document cannot
//! disagree.

use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

mod access;
mod agents;
mod approvals;
mod audit;
mod epics;
mod error;
mod forges;
mod identity;
mod killswitches;
mod notifiers;
mod openapi;
mod resources;
mod runs;
mod tasks;
mod threads;
mod tokens;
mod tools;

pub use access::{AGENTS_RUN, APPROVALS_READ, EXPLAIN_ANY, RUNS_READ, TOOLS_INVENTORY};
#[allow(
    unused_imports,
    reason = "the console names the API's capabilities from here"
)]
pub(crate) use access::{
    APPROVALS_DECIDE, AUDIT_READ, CONFIG_READ, CONFIG_WRITE, KILLSWITCHES_WRITE, TASKS_CREATE,
    TASKS_READ, TOKENS_READ, TOKENS_WRITE,
};
pub(crate) use error::ApiError;
pub use identity::inventory_row;

/// Every route of the admin API, relative to `/api/v1`, with the document it makes.
fn api() -> (Router<Arc<AppState>>, utoipa::openapi::OpenApi) {
    OpenApiRouter::new()
        .routes(routes!(identity::whoami))
        .routes(routes!(identity::explain))
        .routes(routes!(identity::inventory))
        .routes(routes!(identity::upstreams))
        .routes(routes!(tools::list))
        .routes(routes!(tools::get))
        .routes(routes!(tools::accept))
        .routes(routes!(tools::reject))
        .routes(routes!(resources::apply))
        .routes(routes!(resources::list))
        .routes(routes!(resources::get, resources::delete))
        .routes(routes!(tokens::create, tokens::list))
        .routes(routes!(tokens::revoke))
        .routes(routes!(killswitches::pull, killswitches::list))
        .routes(routes!(killswitches::release))
        .routes(routes!(notifiers::list))
        .routes(routes!(audit::list))
        .routes(routes!(audit::export))
        .routes(routes!(audit::verify))
        .routes(routes!(runs::list))
        .routes(routes!(runs::get))
        .routes(routes!(approvals::list))
        .routes(routes!(approvals::get))
        .routes(routes!(approvals::approve))
        .routes(routes!(approvals::reject))
        .routes(routes!(approvals::veto))
        .routes(routes!(agents::list))
        .routes(routes!(agents::start, agents::runs))
        .routes(routes!(tasks::create, tasks::list))
        .routes(routes!(tasks::get))
        .routes(routes!(tasks::workspaces))
        .routes(routes!(epics::create, epics::list))
        .routes(routes!(epics::get, epics::update))
        .routes(routes!(epics::add_task))
        .routes(routes!(epics::move_task))
        .routes(routes!(epics::review))
        .routes(routes!(epics::accept))
        .routes(routes!(forges::discover))
        .routes(routes!(forges::import))
        .routes(routes!(threads::start))
        .routes(routes!(threads::send))
        .routes(routes!(threads::list))
        .routes(routes!(threads::get, threads::delete))
        .split_for_parts()
}

/// The admin API's routes, to nest under `/api/v1` behind authentication. A path no route
/// serves, or a method a route does not, gets the one error shape too.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    api()
        .0
        .fallback(error::no_route)
        .method_not_allowed_fallback(error::wrong_method)
}

/// The OpenAPI document, made once.
fn document() -> &'static [u8] {
    static DOCUMENT: OnceLock<Vec<u8>> = OnceLock::new();
    DOCUMENT.get_or_init(|| serde_json::to_vec(&openapi::finish(api().1)).unwrap_or_default())
}

/// `GET /api/v1/openapi.json` (no authentication: it describes, it holds nothing).
pub(crate) async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], document()).into_response()
}

#[cfg(test)]
mod tests;
