//! OAuth 2.1 resource server (AUTH-4): JWT access tokens of the configured issuers
//! (`kind: Issuer`), accepted on the MCP endpoints beside Warden's own `wdn_` tokens.
//!
//! A token is verified with `jsonwebtoken` against its issuer's keys (`keys`): the issuer
//! must be configured (`iss`), the algorithm one the issuer allows (never `none`, never an
//! HMAC algorithm), the signature good, `aud` one of the issuer's audiences (by default this
//! server's MCP resource URLs, so a token minted for another resource is refused), `exp` and
//! `nbf` within the clock skew. This server's resource URLs come from its own identity, never
//! from a request (`resource`). Its claims then name a principal (`warden_core::oauth`).
//! A verified token is remembered by its SHA-256 until it expires, so the signature is
//! checked once per token, not once per call; what it grants is resolved again on every
//! call (RUN-8). `metadata` serves RFC 9728 protected-resource metadata and the challenges.

mod keys;
mod metadata;
pub(crate) mod resource;
pub(crate) mod verify;

pub(crate) use metadata::{challenge, metadata_routes};
pub(crate) use verify::{Refusal, looks_like_jwt};
