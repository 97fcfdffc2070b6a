//! A fixture whose tools change under Warden (GOV-9): the definitions file, read at each
//! `tools/list`.

use std::path::Path;
use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::Value;

/// `tools` with the changes of `file`, when it exists: `{"<tool>": {"description": …,
/// "inputSchema": …}}` replaces those fields of the tools it names.
pub(super) fn revised(file: Option<&Path>, mut tools: Vec<Tool>) -> Vec<Tool> {
    let Some(changes) = file
        .and_then(|f| std::fs::read(f).ok())
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
    else {
        return tools;
    };
    for tool in &mut tools {
        let Some(change) = changes.get(tool.name.as_ref()) else {
            continue;
        };
        if let Some(d) = change.get("description").and_then(Value::as_str) {
            tool.description = Some(d.to_owned().into());
        }
        if let Some(Value::Object(s)) = change.get("inputSchema") {
            tool.input_schema = Arc::new(s.clone());
        }
    }
    tools
}
