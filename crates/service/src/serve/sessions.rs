//! MCP sessions over HTTP, capped: rmcp's in-memory session manager keeps every session a client
//! opens until it is closed (an idle one's worker stops after its keep-alive, its entry stays), so
//! clients that open sessions and walk away grow the server without bound. [`Capped`] keeps at
//! most [`MAX_SESSIONS`]: opening one more closes the oldest (its client gets "session not found"
//! and opens a new one, as after a restart).
use std::collections::VecDeque;
use std::sync::Mutex;

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};

/// MCP sessions open at once over HTTP (each holds ~130 KB and a task).
pub const MAX_SESSIONS: usize = 256;

/// [`LocalSessionManager`] with at most `max` sessions, the oldest closed first.
pub struct Capped {
    inner: LocalSessionManager,
    /// Open sessions, oldest first.
    order: Mutex<VecDeque<SessionId>>,
    max: usize,
}

impl Capped {
    pub fn new(max: usize) -> Self {
        Capped {
            inner: LocalSessionManager::default(),
            order: Mutex::new(VecDeque::new()),
            max: max.max(1),
        }
    }

    fn forget(&self, id: &SessionId) {
        if let Ok(mut order) = self.order.lock() {
            order.retain(|x| x != id);
        }
    }
}

// `restore_session` is not handed on: rmcp's would bring back a session this cap closed (or any
// id a client names) outside `order`; the trait's default refuses, and the client opens anew.
impl SessionManager for Capped {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        let evicted: Vec<SessionId> = match self.order.lock() {
            Ok(mut order) => {
                order.push_back(id.clone());
                let over = order.len().saturating_sub(self.max);
                order.drain(..over).collect()
            }
            Err(_) => Vec::new(),
        };
        for old in evicted {
            let _ = self.inner.close_session(&old).await;
        }
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.forget(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
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
}
