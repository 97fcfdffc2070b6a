//! What the fixture offers beyond its notebook to show pass-through (XPORT-5): a prompt, a
//! resource and a resource template carrying every field that is not Warden's — titles,
//! icons, `_meta` (MCP Apps' `ui` among others) and annotations — as the upstream's JSON, so
//! that tests compare what a client gets with exactly what the upstream sent.

use serde_json::{Value, json};

fn icons() -> Value {
    json!([{"src": "https://example.com/notes.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "light"}])
}

/// The prompt `brief`, as `prompts/list` carries it.
pub fn prompt() -> Value {
    json!({
        "name": "brief",
        "title": "Brief",
        "description": "A one-line brief of the notes",
        "arguments": [{"name": "tone", "title": "Tone", "description": "How it sounds", "required": false}],
        "icons": icons(),
        "_meta": {"example.com/origin": "notes", "ui": {"resourceUri": "ui://notes/brief"}}
    })
}

/// The answer to `prompts/get` of `brief`.
pub fn prompt_result() -> Value {
    json!({
        "description": "A brief",
        "messages": [{"role": "user", "content": {"type": "text", "text": "Brief the notes."}}],
        "_meta": {"example.com/origin": "notes"}
    })
}

/// The resource `notes://readme`, as `resources/list` carries it.
pub fn resource() -> Value {
    json!({
        "uri": "notes://readme",
        "name": "readme",
        "title": "Read me",
        "description": "What this notebook is",
        "mimeType": "text/markdown",
        "size": 23,
        "icons": icons(),
        "_meta": {"example.com/origin": "notes"},
        "annotations": {"audience": ["user", "assistant"], "priority": 0.5, "lastModified": "2026-01-01T00:00:00Z"}
    })
}

/// The answer to `resources/read` of `notes://readme`.
pub fn resource_result() -> Value {
    json!({
        "contents": [{
            "uri": "notes://readme",
            "mimeType": "text/markdown",
            "text": "# Notes\n\nA small notebook.",
            "_meta": {"example.com/origin": "notes"}
        }]
    })
}

/// The resource template `notes://note/{id}`, as `resources/templates/list` carries it.
pub fn template() -> Value {
    json!({
        "uriTemplate": "notes://note/{id}",
        "name": "note",
        "title": "A note",
        "description": "One note, by its id",
        "mimeType": "application/json",
        "icons": icons(),
        "_meta": {"example.com/origin": "notes"},
        "annotations": {"audience": ["assistant"], "priority": 0.25}
    })
}
