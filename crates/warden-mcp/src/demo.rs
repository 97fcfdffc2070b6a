//! The demo project's tool set: a small notebook served as a real MCP server over stdio
//! (`warden demo-server`), which the embedded default registers as the upstream `notes` of the
//! project `demo` so that governance is visible at once.
//!
//! Deliberately small: one read (`list_notes`), one ordinary mutation (`add_note`), one
//! dangerous mutation (`delete_note`), a prompt (`summarize`) and a resource (`notes://all`).
//! The notes live in a JSON file that every process serving it reads before each use, so
//! `warden serve` and `warden stdio` on one data directory see the same notebook.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, JsonObject, ListPromptsResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt, PromptMessage,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, Role, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt as _};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// A note.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Note {
    id: u64,
    text: String,
}

/// The demo notebook server.
#[derive(Clone, Debug)]
pub struct DemoNotes {
    /// The notes when there is no file; with one, what was read from it last.
    notes: Arc<Mutex<Vec<Note>>>,
    file: Option<PathBuf>,
    tools: Arc<Vec<Tool>>,
}

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The notebook's three tools, as it lists them.
pub fn tools() -> Vec<Tool> {
    let mutation = |destructive| {
        ToolAnnotations::new()
            .read_only(false)
            .destructive(destructive)
            .open_world(false)
    };
    vec![
        Tool::new(
            "list_notes",
            "List every note",
            object(json!({"type": "object", "properties": {}})),
        )
        .with_annotations(ToolAnnotations::new().read_only(true).open_world(false)),
        Tool::new(
            "add_note",
            "Add a note",
            object(json!({"type": "object", "properties": {"text": {"type": "string", "minLength": 1}}, "required": ["text"]})),
        )
        .with_annotations(mutation(false)),
        Tool::new(
            "delete_note",
            "Delete a note by id",
            object(json!({"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}}, "required": ["id"]})),
        )
        .with_annotations(mutation(true)),
    ]
}

fn structured(v: Value) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(v.to_string())]);
    r.structured_content = Some(v);
    r
}

impl DemoNotes {
    /// A notebook kept in `file` (JSON), or in memory without one.
    pub fn new(file: Option<PathBuf>) -> Self {
        Self {
            notes: Arc::new(Mutex::new(Vec::new())),
            file,
            tools: Arc::new(tools()),
        }
    }

    /// The notes, read again from the file when there is one (another process may share it).
    async fn load(&self, notes: &mut Vec<Note>) {
        let Some(file) = &self.file else { return };
        match tokio::fs::read_to_string(file).await {
            Ok(text) => match serde_json::from_str::<Vec<Note>>(&text) {
                Ok(on_disk) => *notes = on_disk,
                Err(e) => {
                    tracing::warn!(file = %file.display(), error = %e, "cannot read the notes")
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => notes.clear(),
            Err(e) => tracing::warn!(file = %file.display(), error = %e, "cannot read the notes"),
        }
    }

    async fn save(&self, notes: &[Note]) -> Result<(), McpError> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let text = serde_json::to_string_pretty(notes)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        // Written beside and renamed over: a reader (another process sharing the file) sees
        // the old notes or the new ones, never half of them.
        let mut temporary = file.clone().into_os_string();
        temporary.push(format!(".{}.tmp", std::process::id()));
        let saved = async {
            tokio::fs::write(&temporary, text).await?;
            tokio::fs::rename(&temporary, file).await
        };
        saved
            .await
            .map_err(|e| McpError::internal_error(format!("cannot save the notes: {e}"), None))
    }

    /// Runs one of [`tools`]; another name is an invalid-params error.
    pub async fn call(&self, name: &str, args: &JsonObject) -> Result<CallToolResult, McpError> {
        let mut notes = self.notes.lock().await;
        self.load(&mut notes).await;
        match name {
            "list_notes" => Ok(structured(json!({"notes": *notes}))),
            "add_note" => {
                let text = args
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| McpError::invalid_params("`text` is required", None))?;
                let id = notes.iter().map(|n| n.id).max().unwrap_or(0) + 1;
                notes.push(Note {
                    id,
                    text: text.to_owned(),
                });
                self.save(&notes).await?;
                Ok(structured(json!({"id": id})))
            }
            "delete_note" => {
                let id = args
                    .get("id")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| McpError::invalid_params("`id` is required", None))?;
                let before = notes.len();
                notes.retain(|n| n.id != id);
                let deleted = notes.len() != before;
                self.save(&notes).await?;
                Ok(structured(json!({"deleted": deleted})))
            }
            other => Err(McpError::invalid_params(
                format!("unknown tool `{other}`"),
                None,
            )),
        }
    }
}

impl ServerHandler for DemoNotes {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new(
            "warden-notes",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions("A small notebook: list_notes, add_note, delete_note.")
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        self.call(&request.name, &args).await.map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "summarize",
            Some("Summarize the notes"),
            None,
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name != "summarize" {
            return Err(McpError::invalid_params(
                format!("unknown prompt `{}`", request.name),
                None,
            ));
        }
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            "Summarize the notes in one line.",
        )])
        .into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("notes://all", "all notes").with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if request.uri != "notes://all" {
            return Err(McpError::invalid_params(
                format!("unknown resource `{}`", request.uri),
                Some(json!({ "uri": request.uri })),
            ));
        }
        let mut notes = self.notes.lock().await;
        self.load(&mut notes).await;
        let text = serde_json::to_string(&*notes)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri.clone())]).into())
    }
}

/// Serves the notebook over stdin/stdout until stdin closes.
pub async fn serve_stdio(notes: DemoNotes) -> anyhow::Result<()> {
    let running = notes.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
