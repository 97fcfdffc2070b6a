//! rmcp's in-memory session manager, recording in each request which SSE stream it
//! arrived on (SEP-1699: a tool closes its own stream).

use std::sync::Arc;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions as _};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionHandle, LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

/// Where a session request's response goes: its session and the HTTP request (SSE stream) it
/// arrived on. Put in the request's extensions by [`Sessions`] so a tool can close its own stream
/// (SEP-1699 polling); rmcp does not hand that id to handlers.
#[derive(Clone, Debug)]
pub(super) struct RequestStream {
    pub(super) session: LocalSessionHandle,
    pub(super) http_request_id: u64,
}

/// rmcp's in-memory session manager, but recording in each request where its stream is.
#[derive(Debug, Default)]
pub(super) struct Sessions {
    inner: LocalSessionManager,
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<rmcp::model::ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // What `LocalSessionManager::create_stream` does, plus the marker.
        let handle = self
            .inner
            .sessions
            .read()
            .await
            .get(id)
            .cloned()
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
        let receiver = handle.establish_request_wise_channel().await?;
        let http_request_id = receiver.http_request_id;
        if let (ClientJsonRpcMessage::Request(request), Some(http_request_id)) =
            (&mut message, http_request_id)
        {
            request.request.extensions_mut().insert(RequestStream {
                session: handle.clone(),
                http_request_id,
            });
        }
        handle.push_message(message, http_request_id).await?;
        let mut rx = receiver.inner;
        Ok(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}
