//! The admin API's one error shape, `{"error": "…", "code": "…"}`, and the one mapping from
//! what went wrong to it (STYLE: errors that convert themselves). `error` stays a one-line
//! (for configuration, one line per problem) string for people and the CLI; `code` is for
//! programs.

use axum::Json;
use axum::extract::rejection::{BytesRejection, JsonRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use warden_control::{ConfigRefusal, Refusal};
use warden_core::config::ConfigError;
use warden_store::StoreError;

/// The body of every refusal of the admin API.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorBody {
    /// What is wrong and, where possible, what to do; user input in backticks.
    pub(crate) error: String,
    /// The kind of refusal, for programs: `INVALID_INPUT`, `INVALID_CONFIG`,
    /// `MISSING_CAPABILITY`, `FORBIDDEN`, `NOT_FOUND`, `CONFLICT`, `IN_USE`, `CONFIG_REJECTED`,
    /// `UNPROCESSABLE`, `UNAVAILABLE`, `METHOD_NOT_ALLOWED`, or a task admission code
    /// (`OFFICE_SESSION`, `KANBAN_ONLY`, …; docs/tasks.md).
    pub(crate) code: String,
    /// For configuration that is refused: each problem with the file, resource and field it
    /// names (the same problems `error` lists, one per line).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) errors: Vec<FieldError>,
}

/// One configuration problem, as `warden apply` reports it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FieldError {
    /// The file (the `file` of the request, or `body`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) file: Option<String>,
    /// The 1-based YAML document within the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) document: Option<usize>,
    /// ``Kind `key` ``, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) resource: Option<String>,
    /// The offending field's path (`scope.project`, `permissions[1]`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) field: Option<String>,
    /// What is wrong.
    pub(crate) message: String,
}

/// A refusal of the admin API: its status, its code and its message.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    errors: Vec<ConfigError>,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            errors: Vec::new(),
        }
    }

    /// 400: the request is malformed; the message names the field.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "INVALID_INPUT", message)
    }

    /// 403: the caller lacks `capability` for `what` (``"listing tokens needs the `tokens:read`
    /// capability"``).
    pub(crate) fn missing(capability: &str, what: &str) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "MISSING_CAPABILITY",
            format!("{what} needs the `{capability}` capability"),
        )
    }

    /// 403 for another reason than one missing capability.
    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "FORBIDDEN", message)
    }

    /// 404.
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", message)
    }

    /// 409: the state of things does not allow it (now).
    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "CONFLICT", message)
    }

    /// 422: well-formed, but it cannot be done as asked.
    pub(crate) fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "UNPROCESSABLE", message)
    }

    /// 503: the store (or another part Warden needs) cannot be used.
    pub(crate) fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE", message)
    }

    /// A refusal with its own status and code (task admission's codes).
    pub(crate) fn coded(status: StatusCode, code: &'static str, message: String) -> Self {
        Self::new(status, code, message)
    }

    /// Configuration refused, every problem one per line as `warden apply` prints them:
    /// unreadable (400 `INVALID_CONFIG`), refused by the configuration as a whole (422
    /// `CONFIG_REJECTED`), or still referenced by others (409 `IN_USE`).
    pub(crate) fn config(status: StatusCode, errors: Vec<ConfigError>) -> Self {
        let code = match status {
            StatusCode::BAD_REQUEST => "INVALID_CONFIG",
            StatusCode::CONFLICT => "IN_USE",
            _ => "CONFIG_REJECTED",
        };
        let message = errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n");
        Self {
            status,
            code,
            message,
            errors,
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict(m) => Self::conflict(format!("{m}; try again")),
            other => Self::unavailable(format!("the store cannot be used: {other}")),
        }
    }
}

impl From<Refusal> for ApiError {
    fn from(e: Refusal) -> Self {
        match e {
            Refusal::Invalid { .. } | Refusal::Malformed(_) => Self::invalid(e.to_string()),
            Refusal::Unprocessable { .. } => Self::unprocessable(e.to_string()),
            Refusal::Missing { capability, what } => Self::missing(capability, &what),
            Refusal::Forbidden(m) => Self::forbidden(m),
            Refusal::NotFound { .. } => Self::not_found(e.to_string()),
            Refusal::Conflict(m) => Self::conflict(m),
            Refusal::Config { refusal, errors } => Self::config(
                match refusal {
                    ConfigRefusal::Rejected => StatusCode::UNPROCESSABLE_ENTITY,
                    ConfigRefusal::InUse => StatusCode::CONFLICT,
                },
                errors,
            ),
            Refusal::Store(e) => e.into(),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        Self::invalid(e.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> Self {
        Self::invalid(e.body_text())
    }
}

impl From<BytesRejection> for ApiError {
    fn from(e: BytesRejection) -> Self {
        Self::new(e.status(), "INVALID_INPUT", e.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let errors = self
            .errors
            .into_iter()
            .map(|e| FieldError {
                file: e.file,
                document: e.document,
                resource: e.resource,
                field: e.field,
                message: e.message,
            })
            .collect();
        let body = ErrorBody {
            error: self.message,
            code: self.code.to_owned(),
            errors,
        };
        (self.status, Json(body)).into_response()
    }
}

/// The answer for a path under `/api/v1` that no route serves.
pub(crate) async fn no_route(uri: axum::http::Uri) -> ApiError {
    // The path as nested under `/api/v1`, without that prefix.
    ApiError::not_found(format!(
        "no admin API route `/api/v1{}`; see /api/v1/openapi.json",
        uri.path().chars().take(128).collect::<String>()
    ))
}

/// The answer for a route asked with a method it does not serve.
pub(crate) async fn wrong_method(method: axum::http::Method) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "METHOD_NOT_ALLOWED",
        format!("this route does not serve {method}; see /api/v1/openapi.json"),
    )
}
