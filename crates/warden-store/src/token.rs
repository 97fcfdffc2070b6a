//! What a token is made from, and what making one gives back (`Store::create_token`).

use std::time::Duration;

use warden_core::capability::CapabilitySet;
use warden_core::name::Name;
use warden_core::principal::{Credential, CredentialKind, Principal};

/// A token just created: the credential and its secret, shown once.
#[derive(Debug)]
pub struct NewToken {
    /// The stored credential (no secret).
    pub credential: Credential,
    /// The secret (`wdn_…`). Never stored; print it once.
    pub secret: String,
}

/// What to create a token for.
#[derive(Clone, Debug)]
pub struct TokenRequest {
    /// The owner.
    pub principal: Principal,
    /// Project bindings (`None` = all of the owner's projects).
    pub projects: Option<Vec<Name>>,
    /// Capability scopes (`None` = all of the owner's capabilities).
    pub scopes: Option<CapabilitySet>,
    /// Time to live.
    pub ttl: Option<Duration>,
    /// Listing note.
    pub description: Option<String>,
    /// API key or run credential.
    pub kind: CredentialKind,
}
