//! Read-only federation (FED-2): the prompts, resources and completions a run may read — the
//! knowledge of its projects and what the upstreams of the projects whose tools it may use
//! offer — routed to the upstream that owns each. Unknown and unreadable names answer alike.

#![allow(
    deprecated,
    reason = "logging is still part of the 2025-11-25 protocol"
)]

use std::collections::HashSet;
use std::sync::Arc;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse, Prompt,
    ReadResourceRequestParams, ReadResourceResponse, Reference, Resource, ResourceTemplate,
    SetLevelRequestParams,
};
use warden_core::authority::Authority;
use warden_core::tool::catalog_name;

use super::snapshot::prefix;
use super::state::Gateway;
use crate::client::ClientContext;
use crate::knowledge;
use crate::upstream::UpstreamSlot;

impl Gateway {
    /// Upstreams whose prompts and resources the run may read: those of projects whose tools
    /// it may use (the same project authority).
    fn readable_upstreams(&self, authority: &Authority) -> Vec<Arc<UpstreamSlot>> {
        if authority.withheld.is_some() {
            return Vec::new();
        }
        self.upstreams
            .all()
            .into_iter()
            .filter(|u| authority.projects.contains_key(&u.spec.project))
            .collect()
    }

    /// `prompts/list`: the knowledge projects' prompts (`<project>/<prompt>`) and the prompts
    /// of readable upstreams (`<upstream>__<prompt>`).
    pub fn prompts(&self, authority: &Authority) -> Vec<Prompt> {
        let mut prompts = knowledge::project_prompts(&self.peek().policy, authority);
        for slot in self.readable_upstreams(authority) {
            let prefix = prefix(&slot.spec);
            prompts.extend(slot.offer().prompts.iter().map(|p| {
                let mut p = p.clone();
                p.name = catalog_name(&prefix, &p.name);
                p
            }));
        }
        prompts
    }

    /// `prompts/get`.
    pub async fn get_prompt(
        &self,
        authority: &Authority,
        request: GetPromptRequestParams,
        client: Option<&ClientContext>,
    ) -> Result<GetPromptResponse, rmcp::ErrorData> {
        let name = request.name.as_str();
        if let Some(p) = knowledge::project_prompt(&self.peek().policy, authority, name) {
            return Ok(p.into());
        }
        for slot in self.readable_upstreams(authority) {
            let prefix = prefix(&slot.spec);
            let own = slot
                .offer()
                .prompts
                .iter()
                .find(|p| catalog_name(&prefix, &p.name) == name)
                .map(|p| p.name.clone());
            if let Some(own) = own {
                let mut params = GetPromptRequestParams::new(own);
                if let Some(args) = request.arguments.clone() {
                    params = params.with_arguments(args);
                }
                // A 2026-07-28 retry after `input_required`: the answers and the upstream's
                // state go back to it as they came.
                params.input_responses = request.input_responses.clone();
                params.request_state = request.request_state.clone();
                return slot.get_prompt(params, client).await;
            }
        }
        Err(rmcp::ErrorData::invalid_params(
            format!("unknown prompt `{name}`"),
            None,
        ))
    }

    /// `resources/list`: the knowledge projects' documents and the resources of readable
    /// upstreams, each URI once: as the one that answers `resources/read` for it (a document,
    /// else the first upstream by name that lists it).
    pub fn resources(&self, authority: &Authority) -> Vec<Resource> {
        let mut resources = knowledge::project_documents(&self.peek().policy, authority);
        let mut seen: HashSet<String> = resources.iter().map(|r| r.uri.clone()).collect();
        for slot in self.readable_upstreams(authority) {
            resources.extend(
                slot.offer()
                    .resources
                    .iter()
                    .filter(|r| seen.insert(r.uri.clone()))
                    .cloned(),
            );
        }
        resources
    }

    /// `resources/read`, for the calling `client` (what an upstream asks meanwhile goes to
    /// it; a 2026-07-28 retry's answers and state go back to the upstream).
    pub async fn read_resource(
        &self,
        authority: &Authority,
        request: ReadResourceRequestParams,
        client: Option<&ClientContext>,
    ) -> Result<ReadResourceResponse, rmcp::ErrorData> {
        let uri = request.uri.as_str();
        if let Some(r) = knowledge::project_document(&self.peek().policy, authority, uri) {
            return Ok(r.into());
        }
        match self.resource_owner(authority, uri) {
            Some(slot) => {
                let mut params = ReadResourceRequestParams::new(uri.to_owned());
                params.input_responses = request.input_responses;
                params.request_state = request.request_state;
                slot.read_resource(params, client).await
            }
            None => Err(unknown_resource(uri)),
        }
    }

    /// The readable upstream a resource URI belongs to: one that lists it, else one whose
    /// template it matches.
    fn resource_owner(&self, authority: &Authority, uri: &str) -> Option<Arc<UpstreamSlot>> {
        let readable = self.readable_upstreams(authority);
        readable
            .iter()
            .find(|s| s.offer().resources.iter().any(|r| r.uri == uri))
            .or_else(|| readable.iter().find(|s| s.owns(uri)))
            .cloned()
    }

    /// `resources/templates/list`: the templates of readable upstreams, each URI template
    /// once (the first upstream's by name, as reads of URIs no upstream lists go).
    pub fn resource_templates(&self, authority: &Authority) -> Vec<ResourceTemplate> {
        let mut seen = HashSet::new();
        self.readable_upstreams(authority)
            .iter()
            .flat_map(|s| s.offer().templates.clone())
            .filter(|t| seen.insert(t.uri_template.clone()))
            .collect()
    }

    /// `resources/subscribe` (or one URI of `subscriptions/listen`): `subscriber` hears
    /// `notifications/resources/updated` for `uri`.
    pub async fn subscribe(
        &self,
        authority: &Authority,
        uri: &str,
        key: &str,
        subscriber: crate::upstream::Subscriber,
    ) -> Result<(), rmcp::ErrorData> {
        match self.resource_owner(authority, uri) {
            Some(slot) => slot.subscribe(uri, key, subscriber).await,
            None => Err(unknown_resource(uri)),
        }
    }

    /// `resources/unsubscribe`.
    pub async fn unsubscribe(
        &self,
        authority: &Authority,
        uri: &str,
        session: &str,
    ) -> Result<(), rmcp::ErrorData> {
        match self.resource_owner(authority, uri) {
            Some(slot) => slot.unsubscribe(uri, session).await,
            None => Ok(()),
        }
    }

    /// `completion/complete`, forwarded to the readable upstream that owns the prompt or the
    /// resource template; project prompts and unknown references complete to nothing.
    pub async fn complete(
        &self,
        authority: &Authority,
        mut params: CompleteRequestParams,
        client: Option<&ClientContext>,
    ) -> Result<CompleteResult, rmcp::ErrorData> {
        let owner = match &mut params.r#ref {
            Reference::Prompt(prompt) => {
                self.readable_upstreams(authority)
                    .into_iter()
                    .find_map(|slot| {
                        let prefix = prefix(&slot.spec);
                        let own = slot
                            .offer()
                            .prompts
                            .iter()
                            .find(|p| catalog_name(&prefix, &p.name) == prompt.name)
                            .map(|p| p.name.clone())?;
                        prompt.name = own;
                        Some(slot)
                    })
            }
            Reference::Resource(template) => {
                self.readable_upstreams(authority).into_iter().find(|slot| {
                    slot.offer()
                        .templates
                        .iter()
                        .any(|t| t.uri_template == template.uri)
                })
            }
            // A kind of reference this build does not know: nothing to complete.
            _ => None,
        };
        match owner {
            Some(slot) => {
                // The client's own `_meta` keys are not the upstream's business.
                params.meta = None;
                slot.complete(params, client).await
            }
            None => Ok(CompleteResult::default()),
        }
    }

    /// `logging/setLevel`, forwarded to the upstreams whose tools the run may use.
    pub async fn set_log_level(&self, authority: &Authority, params: SetLevelRequestParams) {
        for slot in self.readable_upstreams(authority) {
            slot.set_log_level(params.clone()).await;
        }
    }
}

/// A resource no readable upstream offers — or one the run may not read, answered the same
/// way: invalid params (-32602) naming the URI in `data.uri` (SEP-2164; -32002 before it).
fn unknown_resource(uri: &str) -> rmcp::ErrorData {
    rmcp::ErrorData::invalid_params(
        format!("unknown resource `{uri}`"),
        Some(serde_json::json!({ "uri": uri })),
    )
}
