//! Configuration resources of every kind (OPS-2) over the API: apply (with a dry run), list,
//! get and delete — what `warden apply|get|delete` do on the store, with the same parser, the
//! same validation and the same errors naming the file, the resource and the field.

use std::borrow::Cow;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::{Ref, RefOr};
use utoipa::{IntoParams, PartialSchema, ToSchema};
use warden_control::{Caller, resources};
use warden_core::config::{Kind, Located, Resource, parse_documents};
use warden_mcp::Authenticated;

use super::access::own_authority;
use super::error::{ApiError, ErrorBody};
use super::openapi::RESOURCE_SCHEMA;
use crate::state::AppState;

/// A configuration resource as `kind:`-tagged JSON (SPEC Appendix A); its schema is the one
/// `warden config schema` prints, generated from the same types that parse it.
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub(crate) struct ResourceDoc<'a>(pub(crate) Cow<'a, Resource>);

impl PartialSchema for ResourceDoc<'_> {
    fn schema() -> RefOr<Schema> {
        Ref::from_schema_name(RESOURCE_SCHEMA).into()
    }
}

impl ToSchema for ResourceDoc<'_> {
    fn name() -> Cow<'static, str> {
        RESOURCE_SCHEMA.into()
    }
}

/// The files of one apply, each with its name for the errors, as `warden apply -f A -f B`
/// sends them.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApplyFiles {
    /// The files, applied together.
    files: Vec<ApplyFile>,
}

/// One file of an apply.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApplyFile {
    /// The file's name, as errors name it.
    name: String,
    /// Its YAML (or JSON) text: one or more documents.
    content: String,
}

/// The JSON forms of an apply's body (YAML, `application/yaml`, is a stream of documents).
#[derive(Debug, ToSchema)]
#[expect(
    dead_code,
    clippy::large_enum_variant,
    reason = "documents the forms the body takes; it is read as YAML, never built"
)]
pub(crate) enum ApplyJson {
    /// One resource.
    One(ResourceDoc<'static>),
    /// Several resources, applied together.
    Many(Vec<ResourceDoc<'static>>),
    /// Named files, applied together.
    Files(ApplyFiles),
}

/// `?dryRun=true&file=NAME`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub(crate) struct ApplyQuery {
    /// Validate and show what would change, without writing anything.
    dry_run: Option<bool>,
    /// The name errors give the body (default `body`).
    file: Option<String>,
}

/// What an apply did (or, on a dry run, would do) to one resource.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Change {
    /// The kind.
    kind: String,
    /// The resource's key within its kind.
    name: String,
    /// `created`, `configured` or `unchanged`.
    status: &'static str,
}

/// The answer of an apply.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Applied {
    /// Whether this was a dry run (nothing written).
    dry_run: bool,
    /// The configuration's revision after the apply (before it, on a dry run).
    revision: u64,
    /// Every resource of the body, in order.
    changes: Vec<Change>,
}

/// The resources of a body: a JSON array or a `files` object, else a YAML stream.
fn read_body(label: &str, body: &[u8]) -> Result<Vec<Located>, ApiError> {
    let text =
        std::str::from_utf8(body).map_err(|_| ApiError::invalid("the body is not UTF-8 text"))?;
    let json: Option<Value> = match text.trim_start().chars().next() {
        Some('[' | '{') => serde_json::from_str(text).ok(),
        _ => None,
    };
    let mut resources = Vec::new();
    let mut errors = Vec::new();
    // `document`: the number of a JSON array's item, which is parsed as a text of its own.
    let mut parse =
        |file: &str, text: &str, document: Option<usize>| match parse_documents(file, text) {
            Ok(docs) => resources.extend(docs.into_iter().map(|mut l| {
                if let (Some(n), Some(source)) = (document, l.source.as_mut()) {
                    source.document = n;
                }
                l
            })),
            Err(es) => errors.extend(es.into_iter().map(|mut e| {
                if document.is_some() {
                    e.document = document;
                }
                e
            })),
        };
    match json {
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                parse(label, &item.to_string(), Some(i + 1));
            }
        }
        Some(v @ Value::Object(_)) if v.get("files").is_some() && v.get("kind").is_none() => {
            let files: ApplyFiles = serde_json::from_value(v)
                .map_err(|e| ApiError::invalid(format!("`files`: {e}")))?;
            for f in &files.files {
                parse(&f.name, &f.content, None);
            }
        }
        _ => parse(label, text, None),
    }
    if !errors.is_empty() {
        return Err(ApiError::config(StatusCode::BAD_REQUEST, errors));
    }
    if resources.is_empty() {
        return Err(ApiError::invalid("the body holds no resources"));
    }
    Ok(resources)
}

/// Applies resources: create or replace each by kind and key, after validating the whole
/// configuration they make with what is applied (nothing is written when any is wrong).
/// The body is YAML (one or more documents), or JSON: one resource, an array of them, or
/// named files.
#[utoipa::path(post, path = "/resources", operation_id = "applyResources", tag = "resources",
    params(ApplyQuery),
    request_body(description = "resources: a YAML stream, or JSON", content(
        (String = "application/yaml"),
        (ApplyJson = "application/json"),
    )),
    responses(
        (status = 200, description = "applied (or, with `dryRun`, validated)", body = Applied),
        (status = 400, description = "unreadable configuration, naming file, resource and field", body = ErrorBody),
        (status = 403, description = "without `config:write`", body = ErrorBody),
        (status = 409, description = "a concurrent change; try again", body = ErrorBody),
        (status = 422, description = "refused by the configuration as a whole (a dangling reference, …)", body = ErrorBody),
    ))]
pub(crate) async fn apply(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    query: Result<Query<ApplyQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Applied>, ApiError> {
    let Query(query) = query?;
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    resources::may_write(&caller, "applying resources")?;
    let resources = read_body(query.file.as_deref().unwrap_or("body"), &body?)?;
    let dry_run = query.dry_run.unwrap_or(false);
    let applied = resources::apply(&state.control, &caller, resources, dry_run).await?;
    Ok(Json(Applied {
        dry_run,
        revision: applied.revision,
        changes: applied
            .changes
            .iter()
            .map(|c| Change {
                kind: c.kind.to_string(),
                name: c.key.clone(),
                status: c.status.as_str(),
            })
            .collect(),
    }))
}

/// A kind named in a path, in any case, singular or plural (as on the command line).
fn kind_of(s: &str) -> Result<Kind, ApiError> {
    Kind::parse_loose(s).ok_or_else(|| {
        let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        ApiError::not_found(format!(
            "unknown kind `{}`; expected one of {}",
            s.chars().take(64).collect::<String>(),
            kinds.join(", ")
        ))
    })
}

/// Every applied resource of one kind.
#[utoipa::path(get, path = "/resources/{kind}", operation_id = "listResources", tag = "resources",
    params(("kind" = String, Path, description = "`User`, `toolpolicies`, … (any case, singular or plural)")),
    responses(
        (status = 200, description = "the resources, in key order", body = Vec<ResourceDoc>),
        (status = 403, description = "without `config:read`", body = ErrorBody),
        (status = 404, description = "an unknown kind", body = ErrorBody),
    ))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(kind): Path<String>,
) -> Result<Json<Vec<ResourceDoc<'static>>>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    resources::may_read(&caller)?;
    let kind = kind_of(&kind)?;
    let listed = resources::list(&state.control, &caller, kind).await?;
    Ok(Json(
        listed
            .into_iter()
            .map(|r| ResourceDoc(Cow::Owned(r)))
            .collect(),
    ))
}

/// One applied resource.
#[utoipa::path(get, path = "/resources/{kind}/{name}", operation_id = "getResource", tag = "resources",
    params(
        ("kind" = String, Path, description = "the kind (any case, singular or plural)"),
        ("name" = String, Path, description = "the resource's key within its kind"),
    ),
    responses(
        (status = 200, description = "the resource", body = ResourceDoc),
        (status = 403, description = "without `config:read`", body = ErrorBody),
        (status = 404, description = "an unknown kind, or no such resource", body = ErrorBody),
    ))]
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path((kind, name)): Path<(String, String)>,
) -> Result<Json<ResourceDoc<'static>>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    resources::may_read(&caller)?;
    let kind = kind_of(&kind)?;
    let resource = resources::get(&state.control, &caller, kind, &name).await?;
    Ok(Json(ResourceDoc(Cow::Owned(resource))))
}

/// What a delete removed.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Deleted {
    /// The kind.
    kind: String,
    /// The resource's key.
    name: String,
    /// The configuration's revision after the delete.
    revision: u64,
}

/// Deletes one resource, refusing while others still reference it.
#[utoipa::path(delete, path = "/resources/{kind}/{name}", operation_id = "deleteResource", tag = "resources",
    params(
        ("kind" = String, Path, description = "the kind (any case, singular or plural)"),
        ("name" = String, Path, description = "the resource's key within its kind"),
    ),
    responses(
        (status = 200, description = "deleted", body = Deleted),
        (status = 403, description = "without `config:write`", body = ErrorBody),
        (status = 404, description = "an unknown kind, or no such resource", body = ErrorBody),
        (status = 409, description = "other resources still reference it (each named)", body = ErrorBody),
    ))]
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path((kind, name)): Path<(String, String)>,
) -> Result<Json<Deleted>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    resources::may_write(&caller, "deleting resources")?;
    let kind = kind_of(&kind)?;
    let revision = resources::delete(&state.control, &caller, kind, &name).await?;
    Ok(Json(Deleted {
        kind: kind.to_string(),
        name,
        revision,
    }))
}
