//! Knowledge (RUN-1, RUN-5): what a run knows, whoever asks — the agent's instructions and
//! the instructions, prompts and documents of every project it belongs to — and the context
//! boundary notice for projects whose tools the run may not call.
//!
//! Knowledge is not capability: it travels with the agent. The tool boundary is enforced by
//! the decision function; the disclosure boundary stated by the notice is guidance to the
//! model, not an enforcement.

use rmcp::model::{
    GetPromptResult, Prompt, PromptMessage, ReadResourceResult, Resource, ResourceContents, Role,
};
use warden_core::authority::Authority;
use warden_core::config::ProjectSpec;
use warden_core::policy::Policy;

/// The URI scheme of project documents.
pub const DOCUMENT_SCHEME: &str = "warden://projects/";

const GATEWAY_NOTE: &str = "Tools here are governed by Warden: every call is checked against this run's authority and recorded. A refused call answers with status `denied`, a code and a message.";

/// The server instructions of a run.
pub fn instructions(policy: &Policy, authority: &Authority) -> String {
    let mut parts = Vec::new();
    if let Some(agent) = authority
        .agent
        .as_ref()
        .and_then(|a| policy.agent(a.as_str()))
        && let Some(text) = &agent.instructions
    {
        parts.push(text.trim().to_owned());
    }
    for project in knowledge_projects(policy, authority) {
        if let Some(text) = &project.instructions {
            parts.push(format!("## Project `{}`\n\n{}", project.name, text.trim()));
        }
    }
    if let Some(notice) = boundary_notice(authority) {
        parts.push(notice);
    }
    if let Some(reason) = &authority.withheld {
        parts.push(format!("This run has no tools at the moment: {reason}."));
    }
    parts.push(GATEWAY_NOTE.to_owned());
    parts.join("\n\n")
}

/// The context boundary notice (RUN-5): names exactly the projects whose knowledge the run
/// carries without their tools. `None` when there are none.
pub fn boundary_notice(authority: &Authority) -> Option<String> {
    if authority.knowledge_only.is_empty() || authority.withheld.is_some() {
        return None;
    }
    let names: Vec<String> = authority
        .knowledge_only
        .keys()
        .map(|p| format!("`{p}`"))
        .collect();
    let (noun, them) = if names.len() == 1 {
        ("project", "its")
    } else {
        ("projects", "their")
    };
    Some(format!(
        "Context boundary: this run carries knowledge of the {noun} {} but has no tools for {}; calling any of {them} tools would fail. \
         Use that knowledge for your own judgement only: do not reproduce it verbatim, and do not point the person you work with to it.",
        names.join(", "),
        if names.len() == 1 { "it" } else { "them" },
    ))
}

/// The projects whose knowledge the run carries, in name order.
pub fn knowledge_projects<'a>(policy: &'a Policy, authority: &Authority) -> Vec<&'a ProjectSpec> {
    authority
        .knowledge
        .iter()
        .filter_map(|p| policy.projects().get(p))
        .collect()
}

/// Project prompts as MCP prompts, named `<project>/<prompt>`.
pub fn project_prompts(policy: &Policy, authority: &Authority) -> Vec<Prompt> {
    knowledge_projects(policy, authority)
        .into_iter()
        .flat_map(|p| {
            p.prompts.iter().map(move |prompt| {
                Prompt::new(
                    format!("{}/{}", p.name, prompt.name),
                    prompt.description.clone(),
                    None,
                )
            })
        })
        .collect()
}

/// One project prompt, if the run carries that project's knowledge.
pub fn project_prompt(
    policy: &Policy,
    authority: &Authority,
    name: &str,
) -> Option<GetPromptResult> {
    let (project, prompt) = name.split_once('/')?;
    let spec = knowledge_projects(policy, authority)
        .into_iter()
        .find(|p| p.name.as_str() == project)?;
    let prompt = spec.prompts.iter().find(|p| p.name.as_str() == prompt)?;
    let mut result = GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        prompt.text.clone(),
    )]);
    if let Some(d) = &prompt.description {
        result = result.with_description(d.clone());
    }
    Some(result)
}

fn document_uri(project: &str, document: &str) -> String {
    format!("{DOCUMENT_SCHEME}{project}/documents/{document}")
}

/// Project documents as MCP resources.
pub fn project_documents(policy: &Policy, authority: &Authority) -> Vec<Resource> {
    knowledge_projects(policy, authority)
        .into_iter()
        .flat_map(|p| {
            p.documents.iter().map(move |d| {
                let mut r = Resource::new(
                    document_uri(p.name.as_str(), d.name.as_str()),
                    d.name.to_string(),
                )
                .with_mime_type(
                    d.mime_type
                        .clone()
                        .unwrap_or_else(|| "text/markdown".into()),
                );
                if let Some(title) = &d.title {
                    r = r.with_title(title.clone());
                }
                r
            })
        })
        .collect()
}

/// One project document, if the run carries that project's knowledge.
pub fn project_document(
    policy: &Policy,
    authority: &Authority,
    uri: &str,
) -> Option<ReadResourceResult> {
    let rest = uri.strip_prefix(DOCUMENT_SCHEME)?;
    let (project, document) = rest.split_once("/documents/")?;
    let spec = knowledge_projects(policy, authority)
        .into_iter()
        .find(|p| p.name.as_str() == project)?;
    let d = spec
        .documents
        .iter()
        .find(|d| d.name.as_str() == document)?;
    let mime = d
        .mime_type
        .clone()
        .unwrap_or_else(|| "text/markdown".into());
    Some(ReadResourceResult::new(vec![
        ResourceContents::text(d.text.clone(), uri.to_owned()).with_mime_type(mime),
    ]))
}
