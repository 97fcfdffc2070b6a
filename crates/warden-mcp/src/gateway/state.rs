//! What [`Gateway`] holds. Its methods live in the modules of their jobs (see the gateway's
//! module documentation); this file only says what they share.

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use warden_core::pipeline::Clock;
use warden_core::tool::ToolDescriptor;
use warden_store::Store;

use super::authority::Authorities;
use super::listing::WireCache;
use super::snapshot::{Problems, Snapshot};
use crate::upstream::Upstreams;

/// The gateway: the live snapshot and its sources (kept up to date by [`super::live`]'s watcher),
/// the authorities of runs, and what the handler and the server ask of it.
#[derive(Debug)]
pub struct Gateway {
    pub(super) store: Arc<Store>,
    /// The gateway's clock (the system's, or a test's).
    pub(super) clock: Arc<dyn Clock>,
    /// What the gateway knows now, replaced whole ([`super::live`]).
    pub(super) snapshot: ArcSwap<Snapshot>,
    pub(super) upstreams: Upstreams,
    pub(super) builtins: Vec<ToolDescriptor>,
    pub(super) catalog_changed: broadcast::Sender<()>,
    /// The catalog's problems (a tool skipped, two tools wanting one name, a resource two
    /// upstreams offer) as last built: each is logged when it appears, not at every rebuild.
    pub(super) problems: Mutex<Problems>,
    pub(super) authorities: Authorities,
    pub(super) wire: WireCache,
    pub(super) task_ids: crate::upstream_task_ids::TaskIds,
    /// The server's public base URL, once bound: where the console's pages are.
    pub(super) public_url: std::sync::OnceLock<String>,
    /// The refusals of the last hour that left no audit record.
    pub(super) unaudited: super::unaudited::Tally,
    /// Writes of pins for the watcher to make (GOV-9, [`super::pinning`]).
    pub(super) pin_writes: tokio::sync::mpsc::UnboundedSender<super::pinning::PendingPins>,
    /// The offered tools' definitions as last hashed ([`super::pinning`]).
    pub(super) pin_definitions: super::pinning::Definitions,
    pub(super) cancel: CancellationToken,
}
