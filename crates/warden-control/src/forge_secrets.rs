//! A GitProvider's webhook secret as it is applied (WORK-3), the one rule every door takes it
//! through — `warden apply` on the store or a server, `POST /api/v1/resources`, `warden serve
//! --config`:
//!
//! - left out of a provider that exists, it keeps the one set: an unrelated edit cannot disarm
//!   the webhook;
//! - `null` removes it (the webhook then refuses every delivery);
//! - `""` is refused (by the configuration's validation, naming the field);
//! - a `${secret:NAME}` or `${env:NAME}` reference is kept as it is;
//! - a value is written to the secrets directory under a new name,
//!   `gitprovider-NAME-webhook-<random>` (owner-only), and only its reference is kept, so that
//!   no answer shows the value again. The same value applied again keeps the secret it has.
//!
//! A new secret file is written before the configuration that names it and removed again when
//! that write fails, so that the secret in force is always the one the stored configuration
//! names; the file of a secret the apply replaced or removed is removed after it.

use std::fmt;

use warden_core::config::{Config, ConfigError, Kind, Located, Resource, is_sole_reference};
use warden_runtime::Secrets;

/// A secret to write once the apply is known to be valid.
pub(crate) struct Pending {
    /// The provider's key.
    key: String,
    /// The secret's name in the secrets directory.
    name: String,
    /// Its value.
    value: String,
}

impl fmt::Debug for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pending")
            .field("key", &self.key)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// What an apply does to the secrets directory.
#[derive(Debug, Default)]
pub(crate) struct Settled {
    /// The secrets to write before the configuration.
    writes: Vec<Pending>,
    /// The managed secrets no longer named once the configuration is written.
    retired: Vec<String>,
}

fn reference(name: &str) -> String {
    format!("${{secret:{name}}}")
}

/// The secret a managed reference of the provider `provider` names: exactly
/// `gitprovider-NAME-webhook-` and the 12 hex digits an apply gives it, so that no secret of
/// an operator's (nor another provider's) is ever taken for one.
fn managed(provider: &str, reference: Option<&str>) -> Option<String> {
    let name = reference?.strip_prefix("${secret:")?.strip_suffix('}')?;
    let suffix = name.strip_prefix(&format!("gitprovider-{provider}-webhook-"))?;
    (suffix.len() == 12 && suffix.bytes().all(|b| b.is_ascii_hexdigit())).then(|| name.to_owned())
}

fn random_suffix() -> String {
    let mut bytes = [0u8; 6];
    // Without randomness the time keeps names apart.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes.copy_from_slice(nanos.to_le_bytes().get(..6).unwrap_or(&[0; 6]));
    }
    hex::encode(bytes)
}

/// Settles the webhook secret of every GitProvider in `resources` against `current` (see the
/// module's rules).
pub(crate) fn settle(current: &Config, resources: &mut [Located], secrets: &Secrets) -> Settled {
    let mut settled = Settled::default();
    for located in resources {
        let Resource::GitProvider(provider) = &mut located.resource else {
            continue;
        };
        let name = provider.name.to_string();
        let old = match current.get(Kind::GitProvider, &name) {
            Some(Resource::GitProvider(old)) => old.webhook_secret().map(str::to_owned),
            _ => None,
        };
        let new = match provider.webhook_secret.take() {
            None => old.clone(),
            Some(None) => None,
            Some(Some(value)) => {
                // A secret file is read without its trailing line break: so is the value.
                let value = value.trim_end_matches(['\n', '\r']).to_owned();
                if value.is_empty() || is_sole_reference(&value) {
                    Some(value)
                } else if old
                    .as_deref()
                    .is_some_and(|r| secrets.resolve(r).is_ok_and(|known| known == value))
                {
                    old.clone()
                } else {
                    let secret = format!("{}-{}", provider.stored_secret_name(), random_suffix());
                    let named = reference(&secret);
                    settled.writes.push(Pending {
                        key: name.clone(),
                        name: secret,
                        value,
                    });
                    Some(named)
                }
            }
        };
        if let Some(retired) = managed(&name, old.as_deref())
            && new.as_deref() != old.as_deref()
        {
            settled.retired.push(retired);
        }
        provider.webhook_secret = new.map(Some);
    }
    settled
}

impl Settled {
    /// Why the secrets cannot be written here, checked before anything is (a dry run too).
    pub(crate) fn check(&self, secrets: &Secrets) -> Result<(), Vec<ConfigError>> {
        if self.writes.is_empty() || secrets.dir().is_some() {
            return Ok(());
        }
        Err(self
            .writes
            .iter()
            .map(|p| error(p, "is a value, and this Warden has no secrets directory to store it in (`warden serve --secrets-dir`, or `WARDEN_SECRETS_DIR`); give a `${secret:NAME}` reference instead".into()))
            .collect())
    }

    /// Writes the new secrets; on an error, those written are removed again.
    pub(crate) fn write(&self, secrets: &Secrets) -> Result<(), Vec<ConfigError>> {
        for (i, p) in self.writes.iter().enumerate() {
            if let Err(message) = secrets.put(&p.name, &p.value) {
                for written in self.writes.iter().take(i) {
                    let _ = secrets.remove(&written.name);
                }
                return Err(vec![error(p, message)]);
            }
        }
        Ok(())
    }

    /// After the configuration naming them failed to be written: removes the new secrets.
    pub(crate) fn undo(&self, secrets: &Secrets) {
        for p in &self.writes {
            let _ = secrets.remove(&p.name);
        }
    }

    /// After the configuration was written: removes the secrets it no longer names (best
    /// effort: a file left behind holds a secret nothing uses).
    pub(crate) fn finish(&self, secrets: &Secrets) {
        for name in &self.retired {
            let _ = secrets.remove(name);
        }
    }
}

fn error(p: &Pending, message: String) -> ConfigError {
    ConfigError {
        file: None,
        document: None,
        resource: Some(format!("{} `{}`", Kind::GitProvider, p.key)),
        field: Some("webhookSecret".into()),
        message,
    }
}
