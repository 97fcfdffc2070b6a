//! `apply`, `get`, `describe`, `delete` and `kill` of configuration resources, both ways.

use warden_core::config::{Kind, Resource};

use crate::common::TestWarden;
use crate::support::{Both, config, write};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_prints_the_same_changes_and_refuses_the_same_configuration_both_ways() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    let dir = tempfile::tempdir().unwrap();
    let team = write(
        dir.path(),
        "team.yaml",
        "kind: User\nname: bob\n---\nkind: Project\nname: beta\n",
    );
    let dry = cli.same(&["apply", "-f", &team, "--dry-run"]).ok();
    assert_eq!(
        dry.stdout,
        "User/bob created (dry run)\nProject/beta created (dry run)\n"
    );
    // A write one way, undone, then the other way: the same lines.
    let created = cli.api(&["apply", "-f", &team]).ok();
    assert_eq!(created.stdout, "User/bob created\nProject/beta created\n");
    cli.api(&["delete", "user", "bob"]).ok();
    cli.store(&["delete", "project", "beta"]).ok();
    assert_eq!(
        cli.store(&["apply", "-f", &team]).ok().stdout,
        created.stdout
    );
    let unchanged = cli.same(&["apply", "-f", &team]).ok();
    assert_eq!(
        unchanged.stdout,
        "User/bob unchanged\nProject/beta unchanged\n"
    );
    let ops = write(
        dir.path(),
        "ops.yaml",
        "kind: User\nname: bob\ngroups: [ops]\n",
    );
    let plain = write(dir.path(), "plain.yaml", "kind: User\nname: bob\n");
    let configured = cli.api(&["apply", "-f", &ops]).ok();
    assert_eq!(configured.stdout, "User/bob configured\n");
    assert_eq!(
        cli.store(&["apply", "-f", &plain]).ok().stdout,
        configured.stdout
    );

    // Refused by the configuration as a whole (the server validates it: 422), and unreadable
    // (read here): exit 2 with the same lines, naming the file, the resource and the field.
    let dangling = write(
        dir.path(),
        "dangling.yaml",
        "kind: RoleBinding\nrole: nope\nsubject: { user: alice }\n",
    );
    cli.same_failure(
        &["apply", "-f", &dangling],
        2,
        &format!(
            "error: {dangling} (document 1): RoleBinding `nope:user:alice`: field `role`: no Role named `nope`; apply it first or fix the name\n"
        ),
    );
    cli.same_failure(
        &["apply", "-f", &dangling, "--dry-run"],
        2,
        &format!(
            "error: {dangling} (document 1): RoleBinding `nope:user:alice`: field `role`: no Role named `nope`; apply it first or fix the name\n"
        ),
    );
    let misspelt = write(
        dir.path(),
        "bad.yaml",
        "kind: Role\nname: r\npermisions: []\n",
    );
    cli.same_failure(
        &["apply", "-f", &misspelt],
        2,
        &format!(
            "error: {misspelt} (document 1): Role `r`: field `permisions`: unknown field `permisions`, expected one of `name`, `permissions`, `description`\n"
        ),
    );
    // Nothing of either was applied.
    cli.same_failure(&["get", "role", "r"], 1, "error: no Role named `r`\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_describe_print_the_same_resources_of_every_kind_in_every_format() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    // The configuration has a resource of every kind; each is listed, got and described alike.
    for kind in Kind::ALL {
        let listed = cli.same(&["get", kind.as_str(), "-o", "json"]).ok().json();
        let resources: Vec<Resource> = serde_json::from_value(listed.clone())
            .unwrap_or_else(|e| panic!("{kind}: {e}: {listed}"));
        assert!(!resources.is_empty(), "{kind}: none in the configuration");
        for format in ["table", "json", "yaml"] {
            cli.same(&["get", kind.as_str(), "-o", format]).ok();
            for r in &resources {
                let key = r.key();
                cli.same(&["get", kind.as_str(), &key, "-o", format]).ok();
                cli.same(&["describe", kind.as_str(), &key, "-o", format])
                    .ok();
            }
        }
        let first = resources[0].key();
        let got = cli
            .same(&["get", kind.as_str(), &first, "-o", "json"])
            .json();
        assert_eq!(
            serde_json::from_value::<Resource>(got).unwrap(),
            resources[0],
            "{kind} `{first}`"
        );
    }
    // A kind as on the command line: any case, dashes, a plural.
    assert_eq!(
        cli.same(&["get", "tool-policies"]).ok().stdout,
        cli.same(&["get", "ToolPolicy"]).ok().stdout
    );
    // The built-in role in a listing, one resource, a key with a `/`.
    let roles = cli.same(&["get", "roles"]).ok();
    assert!(
        roles.stdout.contains("built-in: every capability"),
        "{}",
        roles.stdout
    );
    cli.same(&["get", "role", "admin"]).ok();
    assert_eq!(
        cli.same(&["get", "user", "alice", "-o", "json"])
            .ok()
            .json()["name"],
        "alice"
    );
    for format in ["json", "yaml", "table"] {
        cli.same(&[
            "describe",
            "toolpolicy",
            "alpha/alpha__add_note",
            "-o",
            format,
        ])
        .ok();
        cli.same(&["describe", "upstream", "alpha", "-o", format])
            .ok();
    }
    let policy = cli
        .same(&[
            "describe",
            "toolpolicy",
            "alpha/alpha__add_note",
            "-o",
            "json",
        ])
        .json();
    assert_eq!(policy["kind"], "ToolPolicy");

    cli.same_failure(
        &["get", "user", "nobody"],
        1,
        "error: no User named `nobody`\n",
    );
    cli.same_failure(
        &["describe", "user", "nobody"],
        1,
        "error: no User named `nobody`\n",
    );
    let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    cli.same_failure(
        &["get", "widgets"],
        2,
        &format!(
            "error: unknown kind `widgets`; expected one of {}\n",
            kinds.join(", ")
        ),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_and_kill_print_the_same_and_refuse_the_same_both_ways() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    let dir = tempfile::tempdir().unwrap();
    let carol = write(dir.path(), "carol.yaml", "kind: User\nname: carol\n");
    cli.api(&["apply", "-f", &carol]).ok();
    let deleted = cli.api(&["delete", "user", "carol"]).ok();
    assert_eq!(deleted.stdout, "User/carol deleted\n");
    cli.store(&["apply", "-f", &carol]).ok();
    assert_eq!(
        cli.store(&["delete", "user", "carol"]).ok().stdout,
        deleted.stdout
    );
    cli.same_failure(
        &["delete", "user", "carol"],
        1,
        "error: no User named `carol`\n",
    );
    cli.same_failure(
        &["delete", "role", "admin"],
        2,
        "error: role `admin` is built in and cannot be deleted\n",
    );
    // Still referenced: the server's 409 names the same resources and fields.
    cli.same_failure(
        &["delete", "role", "reader"],
        2,
        "error: role `reader` is still referenced by rolebinding `reader:user:alice` (field `role`), reconciler `janitor` (field `role`); delete those first\n",
    );

    // A kill switch pulled one way is released the other, and the lines are the same.
    let kill = ["kill", "--tool", "alpha__echo", "--reason", "drill"];
    let pulled = cli.api(&kill).ok();
    assert_eq!(
        pulled.stdout,
        "KillSwitch/tool:alpha__echo pulled: drill\nrelease it with: warden delete killswitch tool:alpha__echo\n"
    );
    cli.same(&["get", "killswitches", "-o", "json"]).ok();
    let released = cli
        .store(&["delete", "killswitch", "tool:alpha__echo"])
        .ok();
    assert_eq!(released.stdout, "KillSwitch/tool:alpha__echo deleted\n");
    assert_eq!(cli.store(&kill).ok().stdout, pulled.stdout);
    assert_eq!(
        cli.api(&["delete", "killswitch", "tool:alpha__echo"])
            .ok()
            .stdout,
        released.stdout
    );
    let named = ["kill", "--all", "--reason", "drill", "--name", "everything"];
    let pulled = cli.api(&named).ok();
    cli.api(&["delete", "killswitch", "everything"]).ok();
    assert_eq!(cli.store(&named).ok().stdout, pulled.stdout);
    cli.store(&["delete", "killswitch", "everything"]).ok();
    // A scope the configuration does not have: the kill switch and its field, no file.
    cli.same_failure(
        &["kill", "--project", "nope", "--reason", "drill"],
        2,
        "error: KillSwitch `project:nope`: field `scope.project`: no Project named `nope`; apply it first or fix the name\n",
    );
    cli.same_failure(
        &["kill", "--project", "No Such", "--reason", "drill"],
        2,
        "error: --project: `No Such` is not a valid name: use lowercase letters, digits, `-`, `_`, `.` and `@` only\n",
    );
}
