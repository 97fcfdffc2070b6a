//! Signed checkpoints of the chain's head: the chain's anchor outside the database (AUD-2).
//!
//! The hash chain shows any record edited, removed or reordered — except at its end: who can
//! write the database can cut the tail off and move the head back, and what is left verifies.
//! A checkpoint is the head's sequence number and hash, and when it was taken, signed with an
//! Ed25519 key that the database does not hold. Kept outside the database too (a file, an
//! operator's copy), the latest checkpoint proves how long the chain was: a chain shorter than
//! its checkpoint, or whose record at the checkpoint's sequence number is another, was
//! truncated or rewritten, and [`check`] says which and where.
//!
//! A checkpoint names the store it was taken of (its id, made when the store was created), so
//! that checkpoints of several stores kept in one file — every PostgreSQL database verified
//! from one machine shares its default key — are never held against each other's chains.
//!
//! The signed message is the text [`message`] writes: a version line, then `store` (from
//! version 2), `seq`, `hash` and `at` (milliseconds since the epoch), one per line. A
//! checkpoint of version 1 names no store.

use std::fmt;

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::time::Millis;

/// The first line of every signed message; a new format gets a new line.
const VERSION_1: &str = "warden audit checkpoint v1";
/// The first line of a message that names its store.
const VERSION_2: &str = "warden audit checkpoint v2";

/// A signed head of the chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The store whose chain it signed (its id); none for a checkpoint of version 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// The head's sequence number.
    pub seq: i64,
    /// The head's hash.
    pub hash: String,
    /// When it was taken.
    pub at: Millis,
    /// The public key that signed it (hex).
    pub key: String,
    /// The Ed25519 signature of [`message`] (hex).
    pub signature: String,
}

/// What a checkpoint shows to be wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnchorProblem {
    /// Not signed by the trusted key, or not a valid signature.
    Forged {
        /// The sequence number it claims.
        seq: i64,
    },
    /// The chain ends before the checkpoint's head.
    Truncated {
        /// The head the checkpoint signed.
        checkpoint: i64,
        /// When.
        at: Millis,
        /// Where the chain ends now.
        head: i64,
    },
    /// The record at the checkpoint's sequence number is not the one it signed.
    Rewritten {
        /// The sequence number.
        seq: i64,
        /// When the checkpoint was taken.
        at: Millis,
    },
}

impl fmt::Display for AnchorProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnchorProblem::Forged { seq } => write!(
                f,
                "the checkpoint of seq {seq} is not signed by the audit key: it cannot be trusted"
            ),
            AnchorProblem::Truncated {
                checkpoint,
                at,
                head,
            } => write!(
                f,
                "records after seq {head} are missing; the checkpoint of {} saw seq {checkpoint}",
                crate::time::rfc3339(*at)
            ),
            AnchorProblem::Rewritten { seq, at } => write!(
                f,
                "the record at seq {seq} is not the one the checkpoint of {} signed: the chain was rewritten from there",
                crate::time::rfc3339(*at)
            ),
        }
    }
}

/// The text a checkpoint's signature covers.
pub fn message(store: Option<&str>, seq: i64, hash: &str, at: Millis) -> String {
    match store {
        Some(store) => format!(
            "{VERSION_2}\nstore {store}\nseq {seq}\nhash {hash}\nat {}\n",
            at.0
        ),
        None => format!("{VERSION_1}\nseq {seq}\nhash {hash}\nat {}\n", at.0),
    }
}

/// The first line of what an archive cut's signature covers (AUD-6): a cut is signed apart
/// from checkpoints, so that no checkpoint can be passed off as one.
const CUT_HEADER: &str = "warden-audit-cut-v1";

/// The text an archive cut's signature covers.
pub fn cut_message(store: Option<&str>, seq: i64, hash: &str, at: Millis) -> String {
    format!(
        "{CUT_HEADER}\nstore {}\nseq {seq}\nhash {hash}\nat {}\n",
        store.unwrap_or_default(),
        at.0
    )
}

/// Signs the archive cut `(seq, hash)` of the chain of `store` at `at`: the last record
/// archived, which the store's chain continues from (AUD-6).
pub fn sign_cut(secret: &[u8; 32], store: &str, seq: i64, hash: &str, at: Millis) -> Checkpoint {
    signed(
        secret,
        store,
        seq,
        hash,
        at,
        cut_message(Some(store), seq, hash, at),
    )
}

/// The public key (hex) of a secret key.
pub fn public_key(secret: &[u8; 32]) -> String {
    hex::encode(SigningKey::from_bytes(secret).verifying_key().to_bytes())
}

/// Signs the head `(seq, hash)` of the chain of `store` at `at`.
pub fn sign(secret: &[u8; 32], store: &str, seq: i64, hash: &str, at: Millis) -> Checkpoint {
    signed(
        secret,
        store,
        seq,
        hash,
        at,
        message(Some(store), seq, hash, at),
    )
}

/// `(seq, hash)` of `store` at `at`, with `secret`'s signature of `text`.
fn signed(
    secret: &[u8; 32],
    store: &str,
    seq: i64,
    hash: &str,
    at: Millis,
    text: String,
) -> Checkpoint {
    let key = SigningKey::from_bytes(secret);
    let signature = key.sign(text.as_bytes());
    Checkpoint {
        store: Some(store.to_owned()),
        seq,
        hash: hash.to_owned(),
        at,
        key: hex::encode(key.verifying_key().to_bytes()),
        signature: hex::encode(signature.to_bytes()),
    }
}

impl Checkpoint {
    /// Whether `trusted` (a public key, hex) signed this checkpoint.
    pub fn verify(&self, trusted: &str) -> Result<(), AnchorProblem> {
        self.verify_signed(
            trusted,
            &message(self.store.as_deref(), self.seq, &self.hash, self.at),
        )
    }

    /// Whether `trusted` signed this as an archive cut ([`sign_cut`]); a checkpoint's
    /// signature does not verify as one.
    pub fn verify_cut(&self, trusted: &str) -> Result<(), AnchorProblem> {
        self.verify_signed(
            trusted,
            &cut_message(self.store.as_deref(), self.seq, &self.hash, self.at),
        )
    }

    fn verify_signed(&self, trusted: &str, message: &str) -> Result<(), AnchorProblem> {
        let forged = AnchorProblem::Forged { seq: self.seq };
        let key = decode::<32>(trusted)
            .and_then(|k| VerifyingKey::from_bytes(&k).ok())
            .ok_or_else(|| forged.clone())?;
        let signature = decode::<64>(&self.signature)
            .map(|s| Signature::from_bytes(&s))
            .ok_or_else(|| forged.clone())?;
        key.verify_strict(message.as_bytes(), &signature)
            .map_err(|_| forged)
    }
}

/// Checks a (verified) checkpoint against the chain: `head` its last sequence number,
/// `hash_at_seq` the hash of its record at the checkpoint's sequence number, if there is one.
pub fn check(
    checkpoint: &Checkpoint,
    head: i64,
    hash_at_seq: Option<&str>,
) -> Result<(), AnchorProblem> {
    if head < checkpoint.seq {
        return Err(AnchorProblem::Truncated {
            checkpoint: checkpoint.seq,
            at: checkpoint.at,
            head,
        });
    }
    if checkpoint.seq > 0 && hash_at_seq != Some(checkpoint.hash.as_str()) {
        return Err(AnchorProblem::Rewritten {
            seq: checkpoint.seq,
            at: checkpoint.at,
        });
    }
    Ok(())
}

fn decode<const N: usize>(text: &str) -> Option<[u8; N]> {
    hex::decode(text).ok()?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: [u8; 32] = [7; 32];

    #[test]
    fn a_checkpoint_verifies_with_its_key_only() {
        let c = sign(&SECRET, "sto_a", 42, "abc", Millis(1_800_000_000_000));
        assert_eq!(c.key, public_key(&SECRET));
        assert_eq!(c.verify(&public_key(&SECRET)), Ok(()));
        assert_eq!(
            c.verify(&public_key(&[8; 32])),
            Err(AnchorProblem::Forged { seq: 42 })
        );
        let moved = Checkpoint {
            seq: 41,
            ..c.clone()
        };
        assert_eq!(
            moved.verify(&public_key(&SECRET)),
            Err(AnchorProblem::Forged { seq: 41 })
        );
        // Nor can it be moved to another store's chain.
        let other = Checkpoint {
            store: Some("sto_b".into()),
            ..c.clone()
        };
        assert_eq!(
            other.verify(&public_key(&SECRET)),
            Err(AnchorProblem::Forged { seq: 42 })
        );
    }

    #[test]
    fn a_checkpoint_of_version_1_names_no_store_and_still_verifies() {
        let key = SigningKey::from_bytes(&SECRET);
        let at = Millis(1_800_000_000_000);
        let signature = key.sign(message(None, 7, "h", at).as_bytes());
        let line = format!(
            r#"{{"seq":7,"hash":"h","at":{},"key":"{}","signature":"{}"}}"#,
            at.0,
            public_key(&SECRET),
            hex::encode(signature.to_bytes())
        );
        let c: Checkpoint = serde_json::from_str(&line).unwrap();
        assert_eq!(c.store, None);
        assert_eq!(c.verify(&public_key(&SECRET)), Ok(()));
    }

    #[test]
    fn a_shorter_or_rewritten_chain_is_named() {
        let c = sign(&SECRET, "sto_a", 42, "abc", Millis(1_800_000_000_000));
        assert_eq!(check(&c, 42, Some("abc")), Ok(()));
        assert_eq!(check(&c, 50, Some("abc")), Ok(()));
        let truncated = check(&c, 30, None).unwrap_err();
        assert_eq!(
            truncated.to_string(),
            "records after seq 30 are missing; the checkpoint of 2027-01-15T08:00:00Z saw seq 42"
        );
        assert_eq!(
            check(&c, 42, Some("abd")).unwrap_err().to_string(),
            "the record at seq 42 is not the one the checkpoint of 2027-01-15T08:00:00Z signed: the chain was rewritten from there"
        );
    }

    #[test]
    fn a_checkpoint_is_no_archive_cut_and_a_cut_no_checkpoint() {
        let key = public_key(&SECRET);
        let checkpoint = sign(&SECRET, "s", 10, "abc", Millis(5));
        let cut = sign_cut(&SECRET, "s", 10, "abc", Millis(5));
        assert_eq!(checkpoint.verify(&key), Ok(()));
        assert_eq!(cut.verify_cut(&key), Ok(()));
        assert!(checkpoint.verify_cut(&key).is_err());
        assert!(cut.verify(&key).is_err());
    }
}
