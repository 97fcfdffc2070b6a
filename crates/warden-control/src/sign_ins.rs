//! Console sign-ins (OPS-5): opened with a token, kept in the store so that any replica serves
//! any console request and a restart signs nobody out (STORE-3).
//!
//! A sign-in's id is 32 random bytes that only the browser keeps (in an `HttpOnly` cookie);
//! the store holds its SHA-256. The credential is looked up again on every request by the
//! console, so revoking the token, its expiry or the removal of its owner ends the sign-in at
//! its next request (RUN-8). A token created in the console is shown once, on the page after
//! the form's redirect, which another replica may serve: its secret is kept until then sealed
//! (ChaCha20-Poly1305, from `ring`) under a key derived from the sign-in's id, so that the
//! store alone cannot read it.

use std::collections::HashMap;
use std::time::Duration;

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use warden_core::time::Millis;
use warden_store::{SignIn, SignInNote, StoreError};

use crate::Control;

/// A sign-in unused this long ends.
pub const IDLE: Duration = Duration::from_secs(8 * 3600);
/// A sign-in ends this long after it was opened, used or not.
pub const LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// How stale a sign-in's last use may be in the store: a busy one is written once a minute.
const SEEN_STEP: Duration = Duration::from_secs(60);

/// A live sign-in, as a request finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Live {
    /// The id of the credential signed in with.
    pub credential: String,
    /// The anti-forgery token of its forms.
    pub csrf: String,
    /// The message left for this page, taken (each is shown once).
    pub flash: Option<String>,
}

/// A token just created in the console, kept until the page that shows its secret once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewToken {
    /// Its id.
    pub id: String,
    /// Its owner.
    pub principal: String,
    /// Its secret.
    pub secret: String,
}

/// Why a request found no sign-in, as the sign-in page says it (a closed set: the page never
/// shows text taken from its address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// None, or one that timed out.
    Expired,
    /// The token was revoked.
    Revoked,
    /// The token expired.
    TokenExpired,
    /// The token's owner no longer exists, or its authority cannot be resolved.
    OwnerGone,
    /// Signed out.
    SignedOut,
}

impl Ended {
    const ALL: [Self; 5] = [
        Self::Expired,
        Self::Revoked,
        Self::TokenExpired,
        Self::OwnerGone,
        Self::SignedOut,
    ];

    /// Its name (in the store, and in the sign-in page's address).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Expired => "expired",
            Self::Revoked => "revoked",
            Self::TokenExpired => "token-expired",
            Self::OwnerGone => "owner-gone",
            Self::SignedOut => "signed-out",
        }
    }

    /// The reason named `text`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == text)
    }

    /// What the sign-in page says.
    pub fn message(self) -> &'static str {
        match self {
            Self::Expired => "Your session has ended. Sign in again.",
            Self::Revoked => "Your session ended: its token was revoked.",
            Self::TokenExpired => "Your session ended: its token expired.",
            Self::OwnerGone => "Your session ended: the token's owner no longer has access.",
            Self::SignedOut => "You are signed out.",
        }
    }
}

/// 32 random bytes as hex; `None` when the system has no randomness to give.
pub fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}

fn id_hash(id: &str) -> String {
    hex::encode(Sha256::digest(id.as_bytes()))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn live(s: &SignIn, now: Millis) -> bool {
    now.0.saturating_sub(s.opened_at.0) < millis(LIFETIME)
        && now.0.saturating_sub(s.seen_at.0) < millis(IDLE)
}

/// Opens a sign-in with `credential`: its id, for the cookie. `None` when the system has no
/// randomness to give. Sign-ins past their time are deleted on the way.
pub async fn open(control: &Control, credential: &str) -> Result<Option<String>, StoreError> {
    let (Some(id), Some(csrf)) = (random_hex(), random_hex()) else {
        return Ok(None);
    };
    let now = control.now();
    let store = control.store();
    store
        .expire_sign_ins(
            Millis(now.0.saturating_sub(millis(LIFETIME))),
            Millis(now.0.saturating_sub(millis(IDLE))),
        )
        .await?;
    store
        .insert_sign_in(&SignIn {
            id_hash: id_hash(&id),
            credential: credential.to_owned(),
            csrf,
            opened_at: now,
            seen_at: now,
            flash: None,
            new_token: None,
            ended: None,
        })
        .await?;
    Ok(Some(id))
}

/// The sign-in `id` if it is live and has not ended (with its message for this page, taken),
/// marked used; otherwise why not.
pub async fn touch(control: &Control, id: &str) -> Result<Result<Live, Ended>, StoreError> {
    let store = control.store();
    let hash = id_hash(id);
    let Some(found) = store.sign_in(&hash).await? else {
        return Ok(Err(Ended::Expired));
    };
    let now = control.now();
    if !live(&found, now) {
        store.delete_sign_in(&hash).await?;
        return Ok(Err(Ended::Expired));
    }
    if let Some(ended) = &found.ended {
        return Ok(Err(Ended::parse(ended).unwrap_or(Ended::Expired)));
    }
    store
        .touch_sign_in(&hash, now, Millis(now.0.saturating_sub(millis(SEEN_STEP))))
        .await?;
    let flash = match found.flash {
        Some(flash)
            if store
                .take_sign_in_note(&hash, SignInNote::Flash, &flash)
                .await? =>
        {
            Some(flash)
        }
        _ => None,
    };
    Ok(Ok(Live {
        credential: found.credential,
        csrf: found.csrf,
        flash,
    }))
}

/// The sign-in `id` if it is live and has not ended.
async fn find(control: &Control, id: &str) -> Result<Option<SignIn>, StoreError> {
    let now = control.now();
    Ok(control
        .store()
        .sign_in(&id_hash(id))
        .await?
        .filter(|s| s.ended.is_none() && live(s, now)))
}

/// Whether the sign-in `id` is live and grants its credential's authority.
pub async fn active(control: &Control, id: &str) -> Result<bool, StoreError> {
    Ok(find(control, id).await?.is_some())
}

/// The anti-forgery token of the live sign-in `id`.
pub async fn csrf(control: &Control, id: &str) -> Result<Option<String>, StoreError> {
    Ok(find(control, id).await?.map(|s| s.csrf))
}

/// Ends the sign-in `id` for `why`, which its next request is told; it grants nothing after.
pub async fn end(control: &Control, id: &str, why: Ended) -> Result<(), StoreError> {
    control
        .store()
        .set_sign_in_note(&id_hash(id), SignInNote::Ended, why.as_str())
        .await?;
    Ok(())
}

/// Deletes the sign-in `id` (signing out).
pub async fn close(control: &Control, id: &str) -> Result<(), StoreError> {
    control.store().delete_sign_in(&id_hash(id)).await?;
    Ok(())
}

/// How many live sign-ins each credential has, on every replica (credentials with none are
/// left out).
pub async fn counts(control: &Control) -> Result<HashMap<String, u64>, StoreError> {
    let now = control.now();
    control
        .store()
        .count_sign_ins(
            Millis(now.0.saturating_sub(millis(LIFETIME))),
            Millis(now.0.saturating_sub(millis(IDLE))),
        )
        .await
}

/// Leaves `message` for the next page of the sign-in `id`.
pub async fn flash(control: &Control, id: &str, message: &str) -> Result<(), StoreError> {
    control
        .store()
        .set_sign_in_note(&id_hash(id), SignInNote::Flash, message)
        .await?;
    Ok(())
}

/// Keeps `token`, just created by the sign-in `id`, sealed until [`take_new_token`].
pub async fn keep_new_token(
    control: &Control,
    id: &str,
    token: &NewToken,
) -> Result<(), StoreError> {
    let sealed =
        seal(id, token).ok_or_else(|| StoreError::Corrupt("cannot seal a new token".into()))?;
    if control
        .store()
        .set_sign_in_note(&id_hash(id), SignInNote::NewToken, &sealed)
        .await?
    {
        Ok(())
    } else {
        Err(StoreError::Corrupt("the sign-in is gone".into()))
    }
}

/// The token the sign-in `id` just created, taken: it is shown once, by whichever replica
/// serves the page first.
pub async fn take_new_token(control: &Control, id: &str) -> Result<Option<NewToken>, StoreError> {
    let store = control.store();
    let hash = id_hash(id);
    let Some(sealed) = store.sign_in(&hash).await?.and_then(|s| s.new_token) else {
        return Ok(None);
    };
    if !store
        .take_sign_in_note(&hash, SignInNote::NewToken, &sealed)
        .await?
    {
        return Ok(None);
    }
    Ok(unseal(id, &sealed))
}

/// The key that seals what a sign-in keeps for itself: only its id's holder can derive it.
fn sealing_key(id: &str) -> Option<LessSafeKey> {
    let mut hasher = Sha256::new();
    hasher.update(b"warden console sign-in sealing key\n");
    hasher.update(id.as_bytes());
    let key = UnboundKey::new(&CHACHA20_POLY1305, &hasher.finalize()).ok()?;
    Some(LessSafeKey::new(key))
}

/// `token` sealed under the sign-in `id`: hex of a random nonce and the ciphertext.
fn seal(id: &str, token: &NewToken) -> Option<String> {
    let key = sealing_key(id)?;
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).ok()?;
    let mut data = serde_json::to_vec(token).ok()?;
    key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut data)
        .ok()?;
    let mut out = nonce.to_vec();
    out.extend_from_slice(&data);
    Some(hex::encode(out))
}

/// What [`seal`] sealed; `None` when it was sealed under another id or altered.
fn unseal(id: &str, sealed: &str) -> Option<NewToken> {
    let key = sealing_key(id)?;
    let bytes = hex::decode(sealed).ok()?;
    let (nonce, data) = bytes.split_at_checked(NONCE_LEN)?;
    let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
    let mut data = data.to_vec();
    let plain = key.open_in_place(nonce, Aad::empty(), &mut data).ok()?;
    serde_json::from_slice(plain).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_sealed_token_opens_only_under_its_own_sign_in_and_unaltered() {
        let token = NewToken {
            id: "tok_1".into(),
            principal: "user:ann".into(),
            secret: "wdn_secret".into(),
        };
        let sealed = seal("id-a", &token).unwrap();
        assert!(!sealed.contains("wdn_secret"));
        assert_eq!(unseal("id-a", &sealed), Some(token));
        assert_eq!(unseal("id-b", &sealed), None);
        let mut altered = sealed.into_bytes();
        let last = altered.len() - 1;
        altered[last] = if altered[last] == b'0' { b'1' } else { b'0' };
        assert_eq!(unseal("id-a", &String::from_utf8(altered).unwrap()), None);
    }

    #[test]
    fn every_reason_is_named_and_read_back() {
        for e in Ended::ALL {
            assert_eq!(Ended::parse(e.as_str()), Some(e));
        }
        assert_eq!(Ended::parse("<script>"), None);
    }
}
