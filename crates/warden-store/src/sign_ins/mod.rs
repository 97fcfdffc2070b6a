//! Console sign-ins, kept where every replica reads them (STORE-3, OPS-5): a sign-in made
//! through one replica is served by any other, and a restart signs nobody out.
//!
//! The browser alone holds a sign-in's id; a row is found by the id's SHA-256, so that reading
//! the store does not give anyone a session. What the rows mean (lifetimes, why one ended, the
//! sealing of a new token's secret) is the console service's (`warden_control::sign_ins`);
//! here they are only kept.

pub(crate) mod sql;
mod store;

use warden_core::time::Millis;

/// A stored console sign-in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignIn {
    /// The hex SHA-256 of its id.
    pub id_hash: String,
    /// The id of the credential signed in with.
    pub credential: String,
    /// The anti-forgery token of its forms.
    pub csrf: String,
    /// When it was opened.
    pub opened_at: Millis,
    /// When it was last used (updated at most once a minute).
    pub seen_at: Millis,
    /// A message left for its next page.
    pub flash: Option<String>,
    /// A token it just created, sealed (opaque here), until its page is shown.
    pub new_token: Option<String>,
    /// Why it ended, kept for its next request (opaque here).
    pub ended: Option<String>,
}

/// One of a sign-in's values that are taken once: set, then read and cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignInNote {
    /// [`SignIn::flash`].
    Flash,
    /// [`SignIn::new_token`].
    NewToken,
    /// [`SignIn::ended`] (set only; never cleared).
    Ended,
}

impl SignInNote {
    pub(crate) fn column(self) -> &'static str {
        match self {
            Self::Flash => "flash",
            Self::NewToken => "new_token",
            Self::Ended => "ended",
        }
    }
}
