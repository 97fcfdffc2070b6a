//! Running one verb both ways and comparing what it printed.

use std::path::Path;
use std::process::Command;

use crate::common::{TestWarden, WARDEN, stdio_upstream};

/// A Warden with a resource of every kind: a project whose upstream has dangerous tools (one
/// kept in full by the audit trail, one as a hash only), a user with a role whose dangerous
/// calls are staged (autonomy level 3, a veto window) under a write budget, a service account
/// that a kill switch freezes and an identity provider's client acts as, a kanban workspace
/// and an agent that can run, a review policy, a forge and a notifier.
pub(crate) fn config() -> String {
    format!(
        "kind: Project\nname: alpha\n---\n{}---\n\
         kind: ToolPolicy\nproject: alpha\ntool: alpha__add_note\nclass: mutation\nrisk: dangerous\naudit: {{ arguments: full }}\n---\n\
         kind: ToolPolicy\nproject: alpha\ntool: alpha__delete_note\nclass: mutation\nrisk: dangerous\naudit: {{ arguments: hash }}\n---\n\
         kind: User\nname: alice\n---\n\
         kind: Role\nname: reader\npermissions: [\"run:projects:alpha\"]\n---\n\
         kind: RoleBinding\nrole: reader\nsubject: {{ user: alice }}\n---\n\
         kind: Workspace\nname: board\nmode: kanban\nproject: alpha\n---\n\
         kind: Model\nname: local\nurl: \"http://127.0.0.1:11434/v1\"\nmodel: llama3.1\napiKey: \"${{secret:model-key}}\"\n---\n\
         kind: Agent\nname: bot\nmemberships: [alpha]\nmodel: local\nrunner: {{ command: \"true\" }}\n---\n\
         kind: ServiceAccount\nname: deploy-bot\ndescription: ci\n---\n\
         kind: Autonomy\nsubject: {{ user: alice }}\nlevel: 3\nvetoWindow: 10m\n---\n\
         kind: WriteBudget\nsubject: {{ user: alice }}\nmaxWritesPerMinute: 20\n---\n\
         kind: KillSwitch\nscope: {{ principal: {{ serviceAccount: deploy-bot }} }}\nreason: drill\n---\n\
         kind: Issuer\nname: corp\nissuer: \"https://login.example.com\"\njwksUri: \"http://127.0.0.1:9/keys\"\nclients: {{ deploy-pipeline: deploy-bot }}\n---\n\
         kind: ReviewPolicy\nproject: alpha\napprovals: {{ high: 3 }}\n---\n\
         kind: GitProvider\nname: forge\nproject: alpha\ntype: git\nurl: \"https://git.example/alpha\"\nrepositories: [app.git]\ncredentials: \"${{secret:forge-token}}\"\nwebhookSecret: \"${{secret:forge-hook}}\"\n---\n\
         kind: Reconciler\nname: janitor\nproject: alpha\nschedule: \"*/15 * * * *\"\nrole: reader\nautonomyCap: 1\nstaleAfter: 2h\n---\n\
         kind: Notifier\nname: pager\nurl: \"http://127.0.0.1:9/hook\"\nsecret: \"${{secret:pager-hmac}}\"\nevents: [tool.quarantined]\n",
        stdio_upstream("alpha", "alpha", "")
    )
}

/// What one run of the CLI printed.
#[derive(Debug)]
pub(crate) struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    fn of(out: std::process::Output) -> Self {
        Self {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Its stdout as JSON.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", self.stdout, self.stderr))
    }

    /// Asserts it succeeded.
    pub(crate) fn ok(self) -> Self {
        assert_eq!(self.code, Some(0), "{}", self.stderr);
        self
    }
}

/// The CLI with none of the caller's `WARDEN_*` settings and a configuration home of its own
/// (so that no `warden context` of the machine's chooses for it).
pub(crate) fn warden(config_home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(WARDEN);
    cmd.args(args).env("XDG_CONFIG_HOME", config_home);
    for (k, _) in std::env::vars() {
        if k.starts_with("WARDEN_") || k.starts_with("OTEL_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// The CLI of one Warden, both ways.
pub(crate) struct Both<'a> {
    pub w: &'a TestWarden,
    pub home: tempfile::TempDir,
}

impl<'a> Both<'a> {
    pub(crate) fn new(w: &'a TestWarden) -> Self {
        Self {
            w,
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// `args` through the admin API, as the first admin.
    pub(crate) fn api(&self, args: &[&str]) -> Ran {
        Ran::of(
            warden(self.home.path(), args)
                .args(["--server", &self.w.base])
                .env("WARDEN_TOKEN", &self.w.admin)
                .output()
                .unwrap(),
        )
    }

    /// `args` on the store.
    pub(crate) fn store(&self, args: &[&str]) -> Ran {
        Ran::of(
            warden(self.home.path(), args)
                .args(self.w.store_args())
                .output()
                .unwrap(),
        )
    }

    /// `args` both ways (the API first: what the server spooled is in the store then),
    /// asserting the same exit status, the same stdout and the same stderr; the API's run.
    pub(crate) fn same(&self, args: &[&str]) -> Ran {
        let api = self.api(args);
        let store = self.store(args);
        assert_eq!(
            api.code, store.code,
            "{args:?}: exit status\napi: {}\nstore: {}",
            api.stderr, store.stderr
        );
        assert_eq!(api.stdout, store.stdout, "{args:?}: stdout");
        assert_eq!(api.stderr, store.stderr, "{args:?}: stderr");
        api
    }

    /// `args` both ways, both failing with `code` and exactly `stderr`.
    pub(crate) fn same_failure(&self, args: &[&str], code: i32, stderr: &str) {
        for (way, ran) in [("api", self.api(args)), ("store", self.store(args))] {
            assert_eq!(ran.code, Some(code), "{way} {args:?}: {}", ran.stderr);
            assert_eq!(ran.stderr, stderr, "{way} {args:?}");
            assert_eq!(ran.stdout, "", "{way} {args:?}");
        }
    }
}

/// Writes `text` to `name` in `dir`; its path.
pub(crate) fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}
