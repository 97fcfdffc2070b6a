//! How an upstream's `tools/call` leaves Warden: one exit per upstream, chosen when it
//! connects (and again when its tool list changes), never per call.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult};
use rmcp::service::PeerRequestOptions;
use tokio_util::sync::CancellationToken;

use super::failure::CallError;
use super::http::{HttpCallError, HttpExit};
use super::peer::PeerExit;
use super::suspend::Owner;
use crate::client::ClientContext;

/// The exit of a connected upstream.
#[derive(Clone, Debug)]
pub(super) enum Exit {
    /// Through rmcp's client ([`super::peer`]): stdio, 2025-11-25 (an upstream's, or the
    /// 2025-11-25 session a 2025-11-25 client's calls take), and upstreams with a tool whose
    /// name needs rmcp's header encoding.
    Peer(PeerExit),
    /// Straight over HTTP from the calling task ([`super::http`]): a Streamable HTTP upstream
    /// that speaks 2026-07-28.
    Http(Arc<HttpExit>),
}

impl Exit {
    /// One `tools/call` round trip within `timeout`, relaying to `client` what the upstream
    /// sends meanwhile and passing on its cancellation.
    pub(super) async fn call(
        &self,
        params: &CallToolRequestParams,
        client: Option<&ClientContext>,
        timeout: Duration,
        bearer: Option<&str>,
    ) -> Result<ServerResult, CallError> {
        match self {
            // A call acting as its caller is routed to the HTTP exit only (`call_route`).
            Exit::Peer(_) if bearer.is_some() => Err(CallError::Unreachable(
                "a call acting as its caller cannot take a shared session".into(),
            )),
            Exit::Peer(peer) => {
                // What Warden tells the upstream for this call alone (log level, the client's
                // capabilities) goes over rmcp's own `_meta` entries.
                let mut options = PeerRequestOptions::with_timeout(timeout);
                options.meta = params.meta.clone();
                let owner = || {
                    Owner::of(
                        client,
                        "tools/call",
                        &params.name,
                        params.arguments.as_ref(),
                    )
                };
                let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
                // Boxed: rmcp's exit (its relays, its suspension) is larger than the HTTP exit,
                // and every call's future would otherwise be as large (stdio calls cost far
                // more than one allocation).
                Box::pin(peer.request(request, options, client, Some(owner))).await
            }
            Exit::Http(http) => call_http(http, params, client, timeout, bearer).await,
        }
    }
}

/// A round trip through the HTTP exit, bounded by `timeout` and the client's cancellation.
async fn call_http(
    http: &Arc<HttpExit>,
    params: &CallToolRequestParams,
    client: Option<&ClientContext>,
    timeout: Duration,
    bearer: Option<&str>,
) -> Result<ServerResult, CallError> {
    let id = http.next_id();
    let never = CancellationToken::new();
    let cancelled = client.map_or(&never, |c| &c.cancel);
    let tell_upstream = || {
        let http = http.clone();
        let bearer = bearer.map(str::to_owned);
        tokio::spawn(async move { http.cancel(id, bearer.as_deref()).await });
    };
    let answer = tokio::select! {
        answer = tokio::time::timeout(timeout, http.call(id, params, client, bearer)) => answer,
        () = cancelled.cancelled() => {
            tell_upstream();
            return Err(CallError::Cancelled);
        }
    };
    match answer {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(HttpCallError::Refused(message))) => Err(CallError::Refused(message)),
        Ok(Err(HttpCallError::Transport(why))) => Err(CallError::Unreachable(why)),
        Err(_elapsed) => {
            tell_upstream();
            Err(CallError::TimedOut)
        }
    }
}
