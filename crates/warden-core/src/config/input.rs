//! Rules for configuration as it is written — `warden apply`, the admin API — that a
//! configuration already in the store is not held to: older versions accepted what they
//! refuse, and a stored configuration that no longer loads would stop the server and block
//! every later apply. Each is also enforced where it matters at run time.

use super::{ParseFailure, Resource, label};

/// `resource`, or the first rule of new input it breaks.
pub(super) fn check(resource: Resource) -> Result<Resource, ParseFailure> {
    if let Resource::Workspace(w) = &resource {
        for (i, r) in w.repositories.iter().enumerate() {
            // Materialisation refuses such a URL too (warden-server `materialise.rs`).
            if let Err(problem) = crate::git_url::classify(&r.url) {
                return Err((
                    Some(label(resource.kind(), &resource.key())),
                    Some(format!("repositories[{i}].url")),
                    problem,
                ));
            }
        }
    }
    Ok(resource)
}
