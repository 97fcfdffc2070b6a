//! `tools/list` in MCP form: each catalog entry converted once per catalog rather than once
//! per request (PERF-3), and only when a list first shows it — a server whose callers each see
//! one project never builds the other projects'.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use warden_core::tool::{Catalog, ToolDescriptor};

/// The MCP form of the entries of the current catalog.
#[derive(Debug, Default)]
pub(super) struct WireCache {
    current: ArcSwap<WireTools>,
}

/// The MCP `Tool` of the entries of one catalog (by name), each built on first use.
#[derive(Debug, Default)]
struct WireTools {
    catalog: Option<Arc<Catalog>>,
    tools: HashMap<Arc<str>, OnceLock<Box<WireTool>>>,
}

impl WireTools {
    /// The MCP form of `name` in this cache's catalog.
    fn get(&self, name: &str) -> Option<&WireTool> {
        let cell = self.tools.get(name)?;
        if let Some(wire) = cell.get() {
            return Some(wire);
        }
        let descriptor = self.catalog.as_ref()?.get(name)?;
        Some(cell.get_or_init(|| {
            Box::new(WireTool {
                json: crate::wire::tool_json(descriptor)
                    .ok()
                    .map(String::into_boxed_str),
                tool: OnceLock::new(),
                descriptor: descriptor.clone(),
            })
        }))
    }
}

/// One tool in MCP form: its JSON, written from the schema texts without parsing them, and
/// rmcp's `Tool` (schemas parsed) once an rmcp-served `tools/list` needed it.
#[derive(Debug)]
struct WireTool {
    json: Option<Box<str>>,
    tool: OnceLock<rmcp::model::Tool>,
    descriptor: Arc<ToolDescriptor>,
}

impl WireTool {
    fn tool(&self) -> &rmcp::model::Tool {
        self.tool
            .get_or_init(|| crate::wire::tool(&self.descriptor))
    }
}

impl WireCache {
    /// The tools in rmcp's form.
    pub(super) fn tools(
        &self,
        catalog: &Arc<Catalog>,
        tools: &[Arc<ToolDescriptor>],
    ) -> Vec<rmcp::model::Tool> {
        let cache = self.of(catalog);
        tools
            .iter()
            .map(|t| {
                cache
                    .get(&t.name)
                    .map(|w| w.tool().clone())
                    .unwrap_or_else(|| crate::wire::tool(t))
            })
            .collect()
    }

    /// The tools as a JSON array, each written once per catalog, so that an answer costs a
    /// copy of its bytes. `None` when a tool cannot be serialized.
    pub(super) fn json(
        &self,
        catalog: &Arc<Catalog>,
        tools: &[Arc<ToolDescriptor>],
    ) -> Option<Vec<u8>> {
        let cache = self.of(catalog);
        let mut out = Vec::with_capacity(2 + tools.len() * 512);
        out.push(b'[');
        for (i, t) in tools.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match cache.get(&t.name) {
                Some(w) => out.extend_from_slice(w.json.as_deref()?.as_bytes()),
                None => out.extend_from_slice(crate::wire::tool_json(t).ok()?.as_bytes()),
            }
        }
        out.push(b']');
        Some(out)
    }

    /// The cache of `catalog` (its index built on first use after a catalog change).
    fn of(&self, catalog: &Arc<Catalog>) -> Arc<WireTools> {
        let cache = self.current.load_full();
        if cache
            .catalog
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, catalog))
        {
            return cache;
        }
        let built = Arc::new(WireTools {
            tools: catalog
                .iter()
                .map(|t| (t.name.clone(), OnceLock::new()))
                .collect(),
            catalog: Some(catalog.clone()),
        });
        self.current.store(built.clone());
        built
    }
}
