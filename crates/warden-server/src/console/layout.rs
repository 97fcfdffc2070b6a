//! The frame of every console page: the head (the console's own stylesheet and script, nothing
//! from elsewhere), the navigation of the pages the credential may open, the message left by
//! the previous request, and the refusals.

use std::sync::OnceLock;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};
use sha2::{Digest, Sha256};

use warden_control::{ConfigRefusal, Refusal};

use super::caps::Section;
use super::csrf;
use super::signed_in::Signed;

/// The stylesheet.
pub(crate) const CSS: &str = include_str!("assets/console.css");
/// The script: live updates of the inbox, countdowns, confirmations.
pub(crate) const JS: &str = include_str!("assets/console.js");

/// A short hash of the assets, in their URLs: they are cached for a year, and a new build
/// changes the URL.
pub(crate) fn asset_version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let digest = Sha256::new()
            .chain_update(CSS.as_bytes())
            .chain_update(JS.as_bytes())
            .finalize();
        hex::encode(digest).chars().take(12).collect()
    })
}

fn head(title: &str) -> Markup {
    let v = asset_version();
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · Warden" }
            link rel="stylesheet" href={ "/assets/" (v) "/console.css" };
            link rel="icon" href="data:,";
            script src={ "/assets/" (v) "/console.js" } defer {}
        }
    }
}

/// The hidden anti-forgery field of a form.
pub(crate) fn csrf_field(signed: &Signed) -> Markup {
    html! { input type="hidden" name=(csrf::FIELD) value=(signed.csrf); }
}

/// A signed-in page.
pub(crate) fn page(signed: &Signed, section: Section, title: &str, body: Markup) -> Response {
    render(StatusCode::OK, signed, Some(section), title, body)
}

/// A signed-in page answered with `status` (a form shown again with its error).
pub(crate) fn page_with(
    status: StatusCode,
    signed: &Signed,
    section: Section,
    title: &str,
    body: Markup,
) -> Response {
    render(status, signed, Some(section), title, body)
}

/// Why a form was not accepted: the page shows the form again as it was typed, with this
/// beside the field it names (or above the form, when it names none).
#[derive(Debug)]
pub(crate) struct FormError {
    pub(crate) status: StatusCode,
    /// The form's field, by its `name`.
    pub(crate) field: Option<&'static str>,
    pub(crate) message: String,
}

impl FormError {
    pub(crate) fn new(status: StatusCode, field: Option<&'static str>, message: String) -> Self {
        Self {
            status,
            field,
            message,
        }
    }

    /// A service's refusal, beside the form field that `fields` maps the argument it names
    /// to (the admin API's name → the form's), where it needs no field name; else above the
    /// form, naming the argument.
    pub(crate) fn refusal(e: &Refusal, fields: &[(&str, &'static str)]) -> Self {
        let field = e.field().and_then(|f| {
            fields
                .iter()
                .find(|(api, _)| *api == f)
                .map(|(_, form)| *form)
        });
        let message = match field {
            Some(_) => e.message(),
            None => e.to_string(),
        };
        Self::new(refusal_status(e), field, super::fmt::cut(&message, 2000))
    }
}

/// The error of `error` that belongs beside `field`, if any (`None` for the form's own).
pub(crate) fn form_error(error: Option<&FormError>, field: Option<&str>) -> Markup {
    html! {
        @if let Some(e) = error.filter(|e| e.field == field) {
            p.field-error role="alert" data-field=[e.field] { (super::fmt::prose(&e.message)) }
        }
    }
}

fn render(
    status: StatusCode,
    signed: &Signed,
    section: Option<Section>,
    title: &str,
    body: Markup,
) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                header.top {
                    a.brand href="/" { span.mark { "◆" } " Warden" }
                    nav {
                        @for s in Section::ALL {
                            @if s.open_to(&signed.authority) {
                                a href=(s.path()) class=[(section == Some(s)).then_some("active")] { (s.title()) }
                            }
                        }
                    }
                    form.signout method="post" action="/sign-out" {
                        (csrf_field(signed))
                        span.who title=(signed.credential.id) { (signed.credential.principal) }
                        button type="submit" { "Sign out" }
                    }
                }
                main {
                    @for (key, scope, reason) in &signed.kill_switches {
                        p.killed role="alert" data-kill=(key) {
                            "Kill switch " code { (key) } " is pulled: "
                            @if scope == "all" { "every call is refused" } @else { "every call in " (scope) " is refused" }
                            " (" code { "KILL_SWITCH" } "). " (reason)
                            " " a href="/kill-switches" { "Kill switches" }
                        }
                    }
                    @if let Some(flash) = &signed.flash {
                        p.flash role="status" { (flash) }
                    }
                    h1 { (title) }
                    (body)
                }
            }
        }
    };
    html_response(status, markup)
}

/// A page without a session (sign-in).
pub(crate) fn bare(status: StatusCode, title: &str, body: Markup) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body.bare {
                main.narrow {
                    p.brand { span.mark { "◆" } " Warden" }
                    (body)
                }
            }
        }
    };
    html_response(status, markup)
}

fn html_response(status: StatusCode, markup: Markup) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        markup.into_string(),
    )
        .into_response()
}

/// A page that refuses what was asked, as a service refused it: its words, and the status the
/// admin API would answer.
pub(crate) fn refused(signed: &Signed, e: &Refusal) -> Response {
    refusal(
        signed,
        refusal_status(e),
        &super::fmt::cut(&e.to_string(), 2000),
    )
}

/// The status the admin API answers a service's refusal with.
pub(crate) fn refusal_status(e: &Refusal) -> StatusCode {
    match e {
        Refusal::Invalid { .. } | Refusal::Malformed(_) => StatusCode::BAD_REQUEST,
        Refusal::Unprocessable { .. }
        | Refusal::Config {
            refusal: ConfigRefusal::Rejected,
            ..
        } => StatusCode::UNPROCESSABLE_ENTITY,
        Refusal::Config {
            refusal: ConfigRefusal::InUse,
            ..
        }
        | Refusal::Conflict(_) => StatusCode::CONFLICT,
        Refusal::Missing { .. } | Refusal::Forbidden(_) => StatusCode::FORBIDDEN,
        Refusal::NotFound { .. } => StatusCode::NOT_FOUND,
        Refusal::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
    }
}

/// A refusal or failure shown inside the frame, with its status.
pub(crate) fn refusal(signed: &Signed, status: StatusCode, message: &str) -> Response {
    let title = match status {
        StatusCode::FORBIDDEN => "Not allowed",
        StatusCode::NOT_FOUND => "Not found",
        StatusCode::CONFLICT => "Already decided",
        StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY => "Not accepted",
        _ => "Unavailable",
    };
    let body = html! {
        p.refusal role="alert" data-status=(status.as_u16()) { (super::fmt::prose(message)) }
        p { a href="/" { "Back to the overview" } }
    };
    render(status, signed, None, title, body)
}

/// The refusal of a page the credential may not open.
pub(crate) fn closed(signed: &Signed, section: Section) -> Response {
    refusal(
        signed,
        StatusCode::FORBIDDEN,
        &format!(
            "{} needs the {} capability.",
            section.title(),
            section.needs()
        ),
    )
}

/// A `303 See Other` to `location` (after a form).
pub(crate) fn see_other(location: &str) -> Response {
    (
        StatusCode::SEE_OTHER,
        [(
            header::LOCATION,
            axum::http::HeaderValue::from_str(location)
                .unwrap_or(axum::http::HeaderValue::from_static("/")),
        )],
    )
        .into_response()
}

/// A JSON document shown as text, pretty when it parses.
pub(crate) fn json_block(text: &str) -> Markup {
    let pretty = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| text.to_owned());
    html! { pre.json { (pretty) } }
}

/// A badge for a decision, outcome or status.
pub(crate) fn badge(text: &str) -> Markup {
    let tone = match text {
        "allow" | "executed" | "approve" | "approved" | "up" | "succeeded" | "pass" | "ok"
        | "governed" => "good",
        "deny" | "denied" | "failed" | "rejected" | "reject" | "vetoed" | "veto" | "refuse"
        | "down" | "expired" | "expire" | "timed_out" | "interrupted" | "ungoverned" => "bad",
        "park" | "stage" | "pending" | "staged" | "pending_approval" | "executing" | "starting"
        | "queued" | "running" | "limit" => "wait",
        _ => "plain",
    };
    html! { span class={ "badge " (tone) } { (text) } }
}
