use super::*;

const APPENDIX_A: &str = include_str!("../../tests/fixtures/appendix-a.yaml");

fn errors(file: &str, text: &str) -> Vec<String> {
    match parse_documents(file, text).and_then(Config::validate) {
        Ok(_) => Vec::new(),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
    }
}

#[test]
fn the_configuration_of_appendix_a_is_accepted_as_written() {
    let docs = parse_documents("appendix-a.yaml", APPENDIX_A).unwrap();
    assert_eq!(docs.len(), 13);
    let config = Config::validate(docs).unwrap();
    assert!(config.contains(Kind::ToolPolicy, "payments/ledger__refund"));
    assert!(config.contains(Kind::RoleBinding, "payments-operator:user:alice"));
    assert!(config.contains(Kind::KillSwitch, "tool:ledger__refund"));
}

#[test]
fn a_misspelt_field_names_the_file_the_resource_and_the_field() {
    let text = "kind: Project\nname: payments\n---\nkind: ToolPolicy\nproject: payments\ntool: ledger__refund\ncapabilty: ledger:write\n";
    assert_eq!(
        errors("bad.yaml", text),
        vec![
            "bad.yaml (document 2): ToolPolicy `payments/ledger__refund`: field `capabilty`: unknown field `capabilty`, expected one of `name`, `project`, `tool`, `class`, `capability`, `risk`, `rateLimit`, `strict`, `deny`, `ungoverned`, `projectArguments`, `audit`, `selfApproval`, `approvals`, `rules`"
        ]
    );
}

#[test]
fn a_wrong_type_names_the_nested_field() {
    let text = "kind: Project\nname: payments\n---\nkind: ToolPolicy\nproject: payments\ntool: x\nrateLimit: { perMinute: lots }\n";
    assert_eq!(
        errors("bad.yaml", text),
        vec![
            "bad.yaml (document 2): ToolPolicy `payments/x`: field `rateLimit.perMinute`: invalid type: string \"lots\", expected u32"
        ]
    );
}

#[test]
fn an_unknown_kind_suggests_the_right_one() {
    assert_eq!(
        errors("k.yaml", "kind: toolpolicy\nname: x\n"),
        vec![
            "k.yaml (document 1): field `kind`: unknown kind `toolpolicy` (did you mean `ToolPolicy`?); expected one of `User`, `ServiceAccount`, `Role`, `RoleBinding`, `Project`, `Upstream`, `Model`, `Agent`, `ToolPolicy`, `Autonomy`, `WriteBudget`, `KillSwitch`, `Workspace`, `Issuer`, `ReviewPolicy`, `GitProvider`, `Reconciler`, `Notifier`"
        ]
    );
}

#[test]
fn dangling_references_are_refused_with_the_field() {
    let text = "kind: RoleBinding\nrole: payments-operator\nsubject: { user: alice }\n---\nkind: Agent\nname: sre-bot\nmemberships: [payments]\n";
    assert_eq!(
        errors("refs.yaml", text),
        vec![
            "refs.yaml (document 1): RoleBinding `payments-operator:user:alice`: field `role`: no Role named `payments-operator`; apply it first or fix the name",
            "refs.yaml (document 1): RoleBinding `payments-operator:user:alice`: field `subject.user`: no User named `alice`; apply it first or fix the name",
            "refs.yaml (document 2): Agent `sre-bot`: field `memberships[0]`: no Project named `payments`; apply it first or fix the name",
        ]
    );
}

#[test]
fn a_subject_with_an_unknown_key_is_refused() {
    let text =
        "kind: User\nname: alice\n---\nkind: RoleBinding\nrole: admin\nsubject: { usr: alice }\n";
    assert_eq!(
        errors("s.yaml", text),
        vec![
            "s.yaml (document 2): RoleBinding: field `subject`: unknown variant `usr`, expected one of `user`, `serviceAccount`, `group`, `agent`"
        ]
    );
}

#[test]
fn bad_values_are_refused_with_guidance() {
    let text = r#"
kind: Project
name: p
---
kind: Role
name: r
permissions: ["Run:Projects:P"]
---
kind: Upstream
name: u
project: p
http: { url: "ftp://x", headers: { Authorization: "${vault:x}" } }
---
kind: Autonomy
subject: { project: p }
level: 7
---
kind: KillSwitch
scope: { all: true }
reason: ""
"#;
    assert_eq!(
        errors("v.yaml", text),
        vec![
            "v.yaml (document 2): Role `r`: field `permissions[0]`: `Run:Projects:P` may only contain lowercase letters, digits, `-`, `_`, `.`, `*` and `:`",
            "v.yaml (document 3): Upstream `u`: field `http.url`: `ftp://x` is not an http:// or https:// URL",
            "v.yaml (document 3): Upstream `u`: field `http.headers.Authorization`: `${vault:x}` is not a reference; write `${env:NAME}` or `${secret:NAME}`",
            "v.yaml (document 4): Autonomy `project:p`: field `level`: 7 is not a level; use 0, 1, 2, 3 or 4",
            "v.yaml (document 5): KillSwitch `all`: field `reason`: say why the scope is frozen",
        ]
    );
}

/// RUN-9: a Model names an http(s) API base and a model; its key is a reference, never the
/// key itself (FED-3); an Agent's `model` must exist.
#[test]
fn a_model_is_checked_field_by_field_and_an_agent_names_one_that_exists() {
    let text = r#"
kind: Model
name: local
url: http://127.0.0.1:11434/v1
model: llama3.1
---
kind: Model
name: bad
url: ollama
model: " "
apiKey: sk-live-123
maxToolRounds: 0
---
kind: Agent
name: helper
model: nowhere
"#;
    assert_eq!(
        errors("m.yaml", text),
        vec![
            "m.yaml (document 2): Model `bad`: field `url`: `ollama` is not an http:// or https:// URL; give the API base, e.g. `http://127.0.0.1:11434/v1`",
            "m.yaml (document 2): Model `bad`: field `model`: name the model the endpoint serves",
            "m.yaml (document 2): Model `bad`: field `apiKey`: write a reference, `${secret:NAME}` or `${env:NAME}`, not the key itself",
            "m.yaml (document 2): Model `bad`: field `maxToolRounds`: must be at least 1",
            "m.yaml (document 3): Agent `helper`: field `model`: no Model named `nowhere`; apply it first or fix the name",
        ]
    );
    let good = "kind: Model\nname: local\nurl: https://api.openai.com/v1\nmodel: gpt-4o-mini\napiKey: \"${secret:openai}\"\n---\nkind: Agent\nname: helper\nmodel: local\n";
    assert!(errors("g.yaml", good).is_empty());
}

/// AUTH-6: an upstream that acts as its caller is an HTTP one, names an Issuer that says how
/// Warden authenticates there, and Warden's secret is a reference.
#[test]
fn an_upstream_acting_as_its_caller_names_an_issuer_that_can_exchange() {
    let text = r#"
kind: Project
name: p
---
kind: Issuer
name: plain
issuer: https://login.example.com
---
kind: Issuer
name: leaky
issuer: https://other.example.com
exchange: { clientId: " ", clientSecret: s3cret, tokenEndpoint: "ldap://x" }
---
kind: Upstream
name: a
project: p
stdio: { command: server }
auth: { exchange: { issuer: nowhere, audience: "" } }
---
kind: Upstream
name: b
project: p
http: { url: "https://ledger.example/mcp" }
auth: { exchange: { issuer: plain, audience: "https://ledger.example/mcp", scopes: ["a b"] } }
protocol: "2025-11-25"
"#;
    assert_eq!(
        errors("x.yaml", text),
        vec![
            "x.yaml (document 3): Issuer `leaky`: field `exchange.clientId`: cannot be empty",
            "x.yaml (document 3): Issuer `leaky`: field `exchange.clientSecret`: write a reference, `${secret:NAME}` or `${env:NAME}`, not the secret itself",
            "x.yaml (document 3): Issuer `leaky`: field `exchange.tokenEndpoint`: `ldap://x` is not an http(s) URL",
            "x.yaml (document 4): Upstream `a`: field `auth`: token exchange sends the caller's token over HTTP: a stdio upstream has no request to carry it",
            "x.yaml (document 4): Upstream `a`: field `auth.exchange.issuer`: no Issuer named `nowhere`; apply it first or fix the name",
            "x.yaml (document 4): Upstream `a`: field `auth.exchange.audience`: name the audience the upstream's tokens are for (usually its URL)",
            "x.yaml (document 5): Upstream `b`: field `auth.exchange.issuer`: Issuer `plain` does not say how Warden authenticates there: give it `exchange: { clientId: …, clientSecret: \"${secret:NAME}\" }`",
            "x.yaml (document 5): Upstream `b`: field `auth.exchange.scopes[0]`: `a b` is not one scope",
            "x.yaml (document 5): Upstream `b`: field `protocol`: token exchange needs 2026-07-28, where each call carries its own bearer; 2025-11-25 calls share a session",
        ]
    );
    let good = "kind: Project\nname: p\n---\nkind: Issuer\nname: corp\nissuer: https://login.example.com\nexchange: { clientId: warden, clientSecret: \"${secret:x}\" }\n---\nkind: Upstream\nname: b\nproject: p\nhttp: { url: \"https://ledger.example/mcp\" }\nauth: { exchange: { issuer: corp, audience: \"https://ledger.example/mcp\" } }\n";
    assert!(
        errors("g.yaml", good).is_empty(),
        "{:?}",
        errors("g.yaml", good)
    );
}

#[test]
fn a_resource_defined_twice_in_one_apply_is_refused() {
    let text = "kind: User\nname: alice\n---\nkind: User\nname: alice\n";
    assert_eq!(
        errors("d.yaml", text),
        vec![
            "d.yaml (document 2): User `alice`: defined more than once in this apply; keep one definition"
        ]
    );
}

#[test]
fn deleting_a_referenced_resource_is_refused() {
    let config = Config::validate(parse_documents("a.yaml", APPENDIX_A).unwrap()).unwrap();
    let err: Vec<String> = config
        .without(Kind::Project, "payments")
        .unwrap_err()
        .into_iter()
        .map(|e| e.to_string())
        .collect();
    assert!(
        err.iter()
            .any(|e| e.contains("Upstream `ledger`: field `project`: no Project named `payments`")),
        "{err:?}"
    );
    assert!(
        config
            .without(Kind::KillSwitch, "tool:ledger__refund")
            .is_ok()
    );
}

#[test]
fn invalid_yaml_is_reported_with_its_location() {
    let errs = errors("y.yaml", "kind: User\nname: [unclosed\n");
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with("y.yaml (document 1): not valid YAML: "),
        "{}",
        errs[0]
    );
    assert!(errs[0].contains("line"), "{}", errs[0]);
}

#[test]
fn the_json_schema_is_generated_from_the_same_types() {
    let schema = json_schema();
    let text = schema.to_string();
    for kind in Kind::ALL {
        assert!(
            text.contains(&format!("\"{}\"", kind.as_str())),
            "{kind} missing"
        );
    }
    assert!(text.contains("maxWritesPerMinute"));
}

#[test]
fn a_reconciler_is_checked_field_by_field_and_names_what_exists() {
    let text = r#"
kind: Project
name: shop
---
kind: Role
name: janitor
permissions: ["run:projects:shop", "work:write"]
---
kind: Reconciler
name: stale-work
project: shop
schedule: "*/15 * * * *"
role: janitor
---
kind: Reconciler
name: bad
project: nowhere
schedule: "every hour"
role: ghost
autonomyCap: 5
staleAfter: 10s
"#;
    let errors = errors("r.yaml", text);
    assert_eq!(errors.len(), 5, "{errors:#?}");
    for (field, message) in [
        ("project", "no Project named `nowhere`"),
        ("role", "no Role named `ghost`"),
        ("schedule", ""),
        ("autonomyCap", "5 is not a level; use 0, 1, 2, 3 or 4"),
        ("staleAfter", "must be at least 1m"),
    ] {
        let prefix = format!("r.yaml (document 4): Reconciler `bad`: field `{field}`: {message}");
        assert!(
            errors.iter().any(|e| e.starts_with(&prefix)),
            "{prefix} in {errors:#?}"
        );
    }
    let good = parse_documents(
        "r.yaml",
        text.split("---\nkind: Reconciler\nname: bad")
            .next()
            .unwrap(),
    )
    .and_then(Config::validate)
    .unwrap();
    let Some(Resource::Reconciler(r)) = good.get(Kind::Reconciler, "stale-work") else {
        panic!("no reconciler");
    };
    assert_eq!(r.autonomy_cap, 2, "the default level (APR-1)");
    assert_eq!(r.stale_after(), DEFAULT_STALE_AFTER);
    assert_eq!(r.intent(), "reconciler:stale-work");
}

#[test]
fn four_eyes_settings_are_checked_at_apply() {
    let base = "kind: Project\nname: p\n---\n";
    for (extra, error) in [
        (
            "kind: ToolPolicy\nproject: p\ntool: t\napprovals: 6\n",
            "f.yaml (document 2): ToolPolicy `p/t`: field `approvals`: must be between 1 and 5",
        ),
        (
            "kind: ToolPolicy\nproject: p\ntool: t\napprovals: 0\n",
            "f.yaml (document 2): ToolPolicy `p/t`: field `approvals`: must be between 1 and 5",
        ),
        (
            "kind: Autonomy\nsubject: { project: p }\nlevel: 2\nselfApproval: never\n",
            "f.yaml (document 2): Autonomy: field `selfApproval`: unknown variant `never`, expected `allow` or `deny`",
        ),
    ] {
        assert_eq!(errors("f.yaml", &format!("{base}{extra}")), vec![error]);
    }
    let good = "kind: ToolPolicy\nproject: p\ntool: t\napprovals: 2\nselfApproval: deny\n";
    assert!(errors("f.yaml", &format!("{base}{good}")).is_empty());
}

#[test]
fn a_condition_is_compiled_at_apply_and_each_mistake_is_named() {
    let base = "kind: Project\nname: p\n---\nkind: ToolPolicy\nproject: p\ntool: t\nrules:\n";
    let prefix = "c.yaml (document 2): ToolPolicy `p/t`: field";
    for (rules, error) in [
        (
            "  - { name: big, when: \"args.amount >\", risk: dangerous }\n",
            format!("{prefix} `rules[0].when`: rule `big`: line 1, column "),
        ),
        (
            "  - { when: \"amount > 500\", risk: dangerous }\n",
            format!(
                "{prefix} `rules[0].when`: rule `0`: line 1, column 1: unknown variable `amount`; an expression reads `args`, `principal`, `agent`, `project`, `tool`, `mode`, `now`"
            ),
        ),
        (
            "  - { name: none, when: \"true\" }\n",
            format!(
                "{prefix} `rules[0]`: rule `none` needs exactly one effect: `deny: message`, `risk: dangerous` or `capability: NAME`"
            ),
        ),
        (
            "  - { name: two, when: \"true\", deny: no, capability: x }\n",
            format!("{prefix} `rules[0]`: rule `two` needs exactly one effect"),
        ),
        (
            "  - { name: calm, when: \"true\", risk: ordinary }\n",
            "c.yaml (document 2): ToolPolicy `p/t`: field `rules[0].risk`: unknown variant `ordinary`, expected `dangerous`".to_owned(),
        ),
        (
            "  - { name: mute, when: \"true\", deny: \" \" }\n",
            format!("{prefix} `rules[0].deny`: rule `mute`: say why calls are refused"),
        ),
    ] {
        let errors = errors("c.yaml", &format!("{base}{rules}"));
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(errors[0].starts_with(&error), "{} / {error}", errors[0]);
    }
    let good = "  - { name: big, when: \"args.amount > 500 && principal.kind == 'user'\", risk: dangerous }\n";
    assert!(errors("c.yaml", &format!("{base}{good}")).is_empty());
}

#[test]
fn a_conditions_macros_bind_their_own_names_and_principal_has_two_fields() {
    let base = "kind: Project\nname: p\n---\nkind: ToolPolicy\nproject: p\ntool: t\nrules:\n";
    let ok = "  - { when: \"args.items.all(x, x > 1) && args.tags.exists(t, t == 'vip')\", risk: dangerous }\n";
    assert!(errors("c.yaml", &format!("{base}{ok}")).is_empty());
    for (rules, error) in [
        (
            "  - { when: \"args.items.all(x, x > 1) && x > 2\", risk: dangerous }\n",
            "field `rules[0].when`: rule `0`: line 1, column 29: unknown variable `x`",
        ),
        (
            "  - name: multi\n    when: |\n      args.a &&\n      principal.nmae == 'bob'\n    deny: no\n",
            "field `rules[0].when`: rule `multi`: line 2, column 10: `principal` has no field `nmae`; it has `kind` and `name`",
        ),
        (
            "  - { when: \"args.a +\", deny: no }\n",
            "field `rules[0].when`: rule `0`: line 1, column ",
        ),
    ] {
        let errors = errors("c.yaml", &format!("{base}{rules}"));
        assert_eq!(errors.len(), 1, "{errors:#?}");
        let prefix = format!("c.yaml (document 2): ToolPolicy `p/t`: {error}");
        assert!(errors[0].starts_with(&prefix), "{}\n{prefix}", errors[0]);
    }
}
