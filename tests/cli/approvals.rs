//! Approvals (§12): a required question whose answers are votes from certain people, N
//! of them, never the one who asked. Every vote is cast by a real identity: on a file
//! ledger the operating-system user (`USER`), on PostgreSQL a real role created here
//! that logs in with its own password.

use crate::common::*;
use serde_json::Value;

const ROLE_PASSWORD: &str = "approver-password";

/// Makes `who` a PostgreSQL role that may use the ledger's tables (the ledger must
/// exist); returns the ledger's URL as `who` logs in.
fn role_url(l: &Ledger, who: &str) -> String {
    let url = l.url.as_deref().expect("a PostgreSQL ledger");
    // The ledger's tables, made by the server's owner (a role may not create tables):
    // `clear` of a stage that holds nothing writes nothing else.
    l.ok(["clear", "--stage", "nothing-here"]);
    let admin = postgres_server().unwrap();
    let mut server = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
    // Roles are the server's, shared by every test database: made once, whichever test
    // comes first (another may be making it at the same moment).
    for _ in 0..20 {
        let made = server.batch_execute(&format!(
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{who}') THEN \
             CREATE ROLE {who} LOGIN PASSWORD '{ROLE_PASSWORD}'; END IF; END $$"
        ));
        if made.is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut db = postgres::Client::connect(url, postgres::NoTls).unwrap();
    db.batch_execute(&format!(
        "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {who}; \
         GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {who}"
    ))
    .unwrap();
    let (scheme, rest) = url.split_once("://").unwrap();
    let (_, host) = rest.split_once('@').unwrap();
    format!("{scheme}://{who}:{ROLE_PASSWORD}@{host}")
}

/// The ledger as `who` reaches it.
fn db_as(l: &Ledger, who: &str) -> std::ffi::OsString {
    match &l.url {
        None => l.path.clone().into_os_string(),
        Some(_) => role_url(l, who).into(),
    }
}

/// The people of these tests. On a file ledger each is an operating-system user told by
/// uid (none of them is in the password database, so each is `uid:N`), numbered in the
/// order of their names so that lists sort the same; on PostgreSQL each is a role.
const PEOPLE: [&str; 8] = [
    "alice", "bob", "carol", "ci", "dave", "erin", "mallory", "ops",
];

fn uid(name: &str) -> Option<u32> {
    PEOPLE
        .iter()
        .position(|p| *p == name)
        .map(|i| 61_000 + i as u32)
}

/// `name` as the ledger knows them: the role's name, or on a file `uid:N`.
pub(crate) fn known_as(l: &Ledger, name: &str) -> String {
    match (&l.url, uid(name)) {
        (None, Some(uid)) => format!("uid:{uid}"),
        _ => name.to_string(),
    }
}

/// The arguments with each person named as the ledger knows them (a lone name or a
/// comma list of names and groups); other arguments as they are.
fn as_known(l: &Ledger, args: &[&str]) -> Vec<String> {
    args.iter()
        .map(|arg| {
            let items: Vec<&str> = arg.split(',').collect();
            let people = items
                .iter()
                .all(|i| uid(i).is_some() || i.starts_with("group:"))
                && items.iter().any(|i| uid(i).is_some());
            if !people {
                return arg.to_string();
            }
            items
                .iter()
                .map(|i| known_as(l, i))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}

/// The run with each person's `uid:N` named again, so that assertions read the same on
/// every engine.
fn named(l: &Ledger, mut run: Run) -> Run {
    if l.url.is_none() {
        for name in PEOPLE {
            run.stdout = run.stdout.replace(&known_as(l, name), name);
        }
        run.json = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    }
    run
}

/// Lets every user write the file ledger (it is made first when it is not there yet).
fn open_to_all(l: &Ledger) {
    use std::os::unix::fs::PermissionsExt;
    if !l.path.exists() {
        l.ok(["clear", "--stage", "nothing-here"]);
    }
    let _ = std::fs::set_permissions(l.dir.path(), std::fs::Permissions::from_mode(0o777));
    for suffix in ["", "-wal", "-shm"] {
        let path = format!("{}{suffix}", l.path.display());
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666));
    }
}

/// The command, run as the person `who`: on PostgreSQL as their role (with `USER` and
/// `LOGNAME` naming another person, which must change nothing), on a file as their uid.
pub(crate) fn person_command(l: &Ledger, who: &str) -> std::process::Command {
    let mut cmd = match (&l.url, uid(who)) {
        (None, Some(uid)) => {
            open_to_all(l);
            let mut cmd = std::process::Command::new("setpriv");
            let id = uid.to_string();
            cmd.args(["--reuid", &id, "--regid", &id, "--clear-groups"])
                .arg(BIN);
            cmd
        }
        _ => std::process::Command::new(BIN),
    };
    cmd.current_dir(l.dir.path())
        .env_remove("QUESTIONS_DB")
        .env_remove("QUESTIONS_USER")
        .env("QUESTIONS_NOW", NOW)
        .env("USER", "mallory")
        .env("LOGNAME", "mallory")
        .arg("--db")
        .arg(db_as(l, who));
    cmd
}

fn as_person(l: &Ledger, who: &str) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::from_std(person_command(l, who));
    cmd.timeout(std::time::Duration::from_mins(2));
    cmd
}

fn run_as(l: &Ledger, who: &str, args: &[&str]) -> Run {
    let mut cmd = as_person(l, who);
    cmd.args(as_known(l, args));
    named(l, finish(cmd))
}

/// A command of whoever runs the tests, with people named as in `run_as`.
fn run(l: &Ledger, args: &[&str]) -> Run {
    named(l, l.run(as_known(l, args)))
}

fn ok(l: &Ledger, args: &[&str]) -> Value {
    let run = run(l, args);
    assert_eq!(run.code, 0, "{run:?}");
    run.json
}

/// A `group` command of `ops`, the admin of the tests' groups, with `args` as they are
/// (members named as a `serve --users` file names them, say).
fn ops_group(l: &Ledger, args: &[&str]) -> Run {
    let mut cmd = as_person(l, "ops");
    cmd.arg("group").args(args);
    named(l, finish(cmd))
}

/// The group `name` made by `ops`, its admin, with these members (as they are).
fn group_of(l: &Ledger, name: &str, members: &[&str]) {
    let admin = known_as(l, "ops");
    let mut args = vec!["create", name, "--admins", &admin];
    args.extend_from_slice(members);
    let made = ops_group(l, &args);
    assert_eq!(made.code, 0, "{made:?}");
}

// New roles cannot log in through PgBouncer (its user list is fixed): the role tests are
// `unpooled`, run on the direct PostgreSQL pass and the SQLite pass.

/// An approval logged by `requester`.
fn approval(l: &Ledger, requester: &str, approvers: &str, min: &str, more: &[&str]) -> i64 {
    let mut args = vec![
        "log",
        "--stage",
        "deploy",
        "--question",
        "Deploy v2 to production?",
        "--approval",
        "--approvers",
        approvers,
        "--min",
        min,
    ];
    args.extend_from_slice(more);
    let run = run_as(l, requester, &args);
    assert_eq!(run.code, 0, "{run:?}");
    let q = &run.json["question"];
    assert_eq!(q["approval"]["requester"], requester, "{q}");
    q["id"].as_i64().unwrap()
}

fn check(l: &Ledger) -> Run {
    run(l, &["check", "--stage", "deploy"])
}

fn kinds(l: &Ledger, id: i64) -> Vec<(String, Value)> {
    ok(l, &["history", "--id", &id.to_string()])["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["event"].as_str().unwrap().to_string(), e.clone()))
        .collect()
}

#[test]
fn unpooled_two_of_three_passes_after_the_second_distinct_approver() {
    crate::unpooled!();
    let l = Ledger::new();
    let id = approval(&l, "carol", "alice,bob,dave", "2", &[]);
    let ids = id.to_string();
    let gate = check(&l);
    assert_eq!(gate.code, 1, "an open approval holds the gate: {gate:?}");

    let one = run_as(
        &l,
        "alice",
        &["approve", "--id", &ids, "--comment", "diff read"],
    );
    assert_eq!(one.code, 0, "{one:?}");
    assert_eq!(one.json["question"]["status"], "pending");
    let gate = check(&l);
    assert_eq!(gate.code, 1, "one approval of two: {gate:?}");
    let report = &gate.json["approvals"][0];
    assert_eq!(report["state"], "open");
    assert_eq!(report["approvals"], 1);
    assert_eq!(report["needed"], 1);
    assert_eq!(report["may_vote"], serde_json::json!(["bob", "dave"]));
    assert_eq!(report["votes"][0]["by"], "alice");
    assert_eq!(report["votes"][0]["comment"], "diff read");

    // The same person again is still one approval: their vote is replaced, in the history.
    let again = run_as(&l, "alice", &["approve", "--id", &ids]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(
        check(&l).code,
        1,
        "the same person twice is not two approvals"
    );
    let history = kinds(&l, id);
    let replaced = history
        .iter()
        .filter(|(k, _)| k == "voted")
        .nth(1)
        .expect("the second vote is in the history");
    assert_eq!(
        replaced.1["detail"]["replaces"], "approve",
        "{:?}",
        replaced.1
    );
    assert_eq!(replaced.1["answered_by"], "alice");

    let two = run_as(&l, "bob", &["approve", "--id", &ids]);
    assert_eq!(two.code, 0, "{two:?}");
    assert_eq!(two.json["question"]["status"], "answered");
    assert_eq!(two.json["question"]["answer"], "approved");
    let gate = check(&l);
    assert_eq!(gate.code, 0, "two distinct approvers: {gate:?}");
    assert_eq!(gate.json["approvals"][0]["state"], "approved");
    let settled: Vec<_> = kinds(&l, id)
        .into_iter()
        .filter(|(k, _)| k == "approved")
        .collect();
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0].1["answered_by"], "bob");

    // Settled: a later vote changes nothing.
    let late = run_as(
        &l,
        "dave",
        &["reject", "--id", &ids, "--reason", "too late"],
    );
    assert_eq!(late.error_code(), "conflict");
    assert_eq!(check(&l).code, 0);
}

#[test]
fn unpooled_the_requester_and_strangers_are_refused_and_recorded() {
    crate::unpooled!();
    let l = Ledger::new();
    let id = approval(&l, "carol", "alice,carol", "1", &[]);
    let ids = id.to_string();
    for who in ["carol", "mallory"] {
        let run = run_as(&l, who, &["approve", "--id", &ids]);
        assert_eq!(run.code, 2, "{run:?}");
        assert_eq!(run.error_code(), "forbidden", "{who}");
    }
    let refused: Vec<Value> = kinds(&l, id)
        .into_iter()
        .filter(|(k, _)| k == "refused")
        .map(|(_, e)| e)
        .collect();
    let who: Vec<&str> = refused
        .iter()
        .map(|e| e["answered_by"].as_str().unwrap())
        .collect();
    assert_eq!(who, ["carol", "mallory"]);
    assert!(refused[0]["detail"]["refused"]
        .as_str()
        .unwrap()
        .contains("asked"));
    assert_eq!(check(&l).code, 1, "refused votes leave it open");

    // --by cannot vote in someone else's name; answering around the vote is refused.
    let forged = run_as(&l, "mallory", &["--by", "alice", "approve", "--id", &ids]);
    assert_eq!(forged.code, 2);
    assert_eq!(forged.error_code(), "usage");
    assert!(forged.json["error"].as_str().unwrap().contains("--by"));
    for args in [
        vec!["answer", "--id", &ids, "--answer", "yes"],
        vec!["skip", "--id", &ids],
        vec!["decline", "--id", &ids, "--reason", "no"],
    ] {
        let run = l.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.error_code(), "forbidden");
    }
    assert_eq!(check(&l).code, 1);
    let ok = run_as(&l, "alice", &["approve", "--id", &ids]);
    assert_eq!(ok.code, 0, "{ok:?}");
    assert_eq!(check(&l).code, 0);
}

#[test]
fn unpooled_one_rejection_fails_the_gate_with_who_and_why() {
    crate::unpooled!();
    let l = Ledger::new();
    let id = approval(&l, "carol", "alice,bob", "1", &[]);
    let ids = id.to_string();
    let no_reason = run_as(&l, "bob", &["reject", "--id", &ids]);
    assert_eq!(no_reason.error_code(), "usage");
    let run = run_as(
        &l,
        "bob",
        &["reject", "--id", &ids, "--reason", "not during the freeze"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json["question"]["status"], "declined");
    let gate = check(&l);
    assert_eq!(gate.code, 1, "{gate:?}");
    assert_eq!(gate.json["declined"][0]["reason"], "not during the freeze");
    let report = &gate.json["approvals"][0];
    assert_eq!(report["state"], "rejected");
    assert_eq!(report["rejected_by"], "bob");
    assert_eq!(report["reason"], "not during the freeze");
    // The first rejection settles it: an approval afterwards is a conflict.
    let late = run_as(&l, "alice", &["approve", "--id", &ids]);
    assert_eq!(late.error_code(), "conflict");
    assert_eq!(check(&l).code, 1);
    assert!(kinds(&l, id)
        .iter()
        .any(|(k, e)| k == "rejected" && e["detail"]["reason"] == "not during the freeze"));
}

#[test]
fn unpooled_group_members_may_vote_and_group_changes_are_in_the_history() {
    crate::unpooled!();
    let l = Ledger::new();
    group_of(&l, "release", &[]);
    let id = approval(&l, "carol", "group:release", "1", &[]);
    let ids = id.to_string();
    let outsider = run_as(&l, "dave", &["approve", "--id", &ids]);
    assert_eq!(outsider.error_code(), "forbidden");
    let added = run_as(&l, "ops", &["group", "add", "release", "dave", "erin"]);
    assert_eq!(added.json["members"], serde_json::json!(["dave", "erin"]));
    assert_eq!(added.json["admins"], serde_json::json!(["ops"]));
    let removed = run_as(&l, "ops", &["group", "remove", "release", "erin"]);
    assert_eq!(removed.json["removed"], serde_json::json!(["erin"]));
    let bad = run_as(&l, "ops", &["group", "add", "release", "group:ops"]);
    assert_eq!(bad.error_code(), "usage");
    let events = run(&l, &["events"]);
    let group_events: Vec<Value> = events
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|e| e["event"] == "group")
        .collect();
    assert_eq!(
        group_events.len(),
        3,
        "the group made and two changes, recorded: {events:?}"
    );
    assert_eq!(group_events[0]["detail"]["created"], true);
    assert_eq!(group_events[2]["answered_by"], "ops");
    assert_eq!(
        group_events[2]["detail"]["removed"],
        serde_json::json!(["erin"])
    );
    let gate = check(&l);
    assert_eq!(
        gate.json["approvals"][0]["may_vote"],
        serde_json::json!(["dave"])
    );
    let ok = run_as(&l, "dave", &["approve", "--id", &ids]);
    assert_eq!(ok.code, 0, "{ok:?}");
    assert_eq!(check(&l).code, 0);
}

#[test]
fn unpooled_expiry_rejects_or_keeps_an_approval() {
    crate::unpooled!();
    let l = Ledger::new();
    let rejected = approval(
        &l,
        "carol",
        "alice",
        "1",
        &["--expires-in", "1h", "--on-expiry", "reject"],
    );
    let later_check = l.run_at(&later(2 * 3600), ["check", "--ids", &rejected.to_string()]);
    assert_eq!(later_check.code, 1, "{later_check:?}");
    assert_eq!(later_check.json["declined"][0]["reason"], "expired");
    assert_eq!(later_check.json["approvals"][0]["state"], "rejected");
    let expired = kinds(&l, rejected);
    let (_, event) = expired.iter().find(|(k, _)| k == "expired").unwrap();
    assert_eq!(event["channel"], "expiry");
    assert_eq!(event["answered_by"], Value::Null);

    let l = Ledger::new();
    let kept = approval(&l, "carol", "alice", "1", &["--expires-in", "1h"]);
    let gate = l.run_at(&later(2 * 3600), ["check", "--stage", "deploy"]);
    assert_eq!(gate.code, 1);
    assert_eq!(gate.json["expired"], true);
    assert_eq!(gate.json["approvals"][0]["state"], "open");
    let ok = run_as(&l, "alice", &["approve", "--id", &kept.to_string()]);
    assert_eq!(ok.code, 0, "a kept approval still takes votes: {ok:?}");
    assert_eq!(
        l.run_at(&later(2 * 3600), ["check", "--stage", "deploy"])
            .code,
        0
    );
}

#[test]
fn unpooled_concurrent_votes_that_reach_the_quorum_settle_once() {
    crate::unpooled!();
    let voters = ["alice", "bob", "dave", "erin"];
    for _round in 0..3 {
        let l = Ledger::new();
        let id = approval(&l, "carol", "alice,bob,dave,erin", "2", &[]);
        // Each voter's command is made (and, on PostgreSQL, its role granted) first, then
        // all are started at once.
        let commands: Vec<std::process::Command> = voters
            .iter()
            .map(|who| {
                let mut std_cmd = person_command(&l, who);
                std_cmd.args(["approve", "--id", &id.to_string()]);
                std_cmd
            })
            .collect();
        let children: Vec<_> = commands
            .into_iter()
            .map(|mut c| {
                c.stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut codes = Vec::new();
        for child in children {
            let out = child.wait_with_output().unwrap();
            let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            codes.push((out.status.code(), json["error_code"].clone()));
        }
        for (code, error) in &codes {
            assert!(
                *code == Some(0) || (*code == Some(1) && error == "conflict"),
                "a vote either counts or finds it settled: {codes:?}"
            );
        }
        let history = kinds(&l, id);
        let settled = history.iter().filter(|(k, _)| k == "approved").count();
        assert_eq!(settled, 1, "settled exactly once: {history:?}");
        let voted = history.iter().filter(|(k, _)| k == "voted").count();
        let counted = codes.iter().filter(|(c, _)| *c == Some(0)).count();
        assert_eq!(voted, counted, "each vote that succeeded is recorded once");
        assert_eq!(check(&l).code, 0);
    }
}

#[test]
fn bad_approval_input_is_a_clear_error() {
    let l = Ledger::new();
    let base = [
        "log",
        "--stage",
        "deploy",
        "--question",
        "Ship?",
        "--approval",
    ];
    let cases: Vec<Vec<&str>> = vec![
        vec!["--min", "1"],
        vec!["--approvers", "alice"],
        vec!["--approvers", "alice", "--min", "0"],
        vec!["--approvers", "alice", "--min", "x"],
        vec![
            "--approvers",
            "alice,bob",
            "--min",
            "3",
            "--requester",
            "carol",
        ],
        vec!["--approvers", "alice", "--min", "1", "--requester", "alice"],
        vec!["--approvers", "alice,,bob", "--min", "1"],
        vec!["--approvers", "alice,group:nobody-made-it", "--min", "1"],
        vec!["--approvers", "alice", "--min", "1", "--proposed", "yes"],
        vec!["--approvers", "alice", "--min", "1", "--required", "false"],
        vec!["--approvers", "alice", "--min", "1", "--option", "yes"],
        vec![
            "--approvers",
            "alice",
            "--min",
            "1",
            "--expires-in",
            "1h",
            "--on-expiry",
            "skip",
        ],
    ];
    for more in cases {
        let mut args = base.to_vec();
        args.extend(more.iter());
        let run = l.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.error_code(), "usage", "{args:?}");
    }
    // The model's one rule of what an approval may be, worded with the flag that clashes.
    for (more, flag) in [
        (&["--proposed", "yes"][..], "--proposed"),
        (&["--required", "false"][..], "--required false"),
        (&["--option", "yes"][..], "--option"),
        (&["--option", "a", "--multi-select"][..], "--option"),
        (&["--multi-select"][..], "--multi-select"),
        (&["--no-freeform"][..], "--no-freeform"),
    ] {
        let mut args = base.to_vec();
        args.extend(["--approvers", "alice", "--min", "1"]);
        args.extend(more.iter());
        let run = l.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        let said = run.json["error"].as_str().unwrap_or_default();
        assert!(
            said.starts_with(&format!("{flag} does not go with --approval")),
            "{args:?}: {said}"
        );
    }
    assert_eq!(l.run(["list"]).json["count"], 0, "nothing was logged");
    let not_approval = l.run([
        "log",
        "--stage",
        "s",
        "--question",
        "Q?",
        "--expires-in",
        "1h",
        "--on-expiry",
        "reject",
    ]);
    assert_eq!(not_approval.error_code(), "usage");
    let plain = l.log("s", "Plain?");
    let vote = l.run(["approve", "--id", &plain.to_string()]);
    assert_eq!(vote.error_code(), "invalid_answer", "{vote:?}");
    let missing = l.run(["approve", "--id", "999"]);
    assert_eq!(missing.error_code(), "not_found");
    let zero = l.run(["reject", "--id", "0", "--reason", "x"]);
    assert_eq!(zero.error_code(), "usage");
    assert_eq!(l.run(["group", "add", "release"]).error_code(), "usage");
    assert_eq!(
        l.run(["group", "rename", "release", "a"]).error_code(),
        "usage"
    );
}

#[test]
fn unpooled_approval_output_matches_the_schemas() {
    crate::unpooled!();
    use crate::schema::assert_valid;
    let l = Ledger::new();
    group_of(&l, "oncall", &[]);
    let logged = run_as(
        &l,
        "carol",
        &[
            "log",
            "--stage",
            "deploy",
            "--question",
            "Ship?",
            "--approval",
            "--approvers",
            "alice,bob,group:oncall",
            "--min",
            "2",
        ],
    );
    assert_valid("log", &logged.json);
    assert_valid(
        "group",
        &run_as(&l, "ops", &["group", "add", "oncall", "dave"]).json,
    );
    assert_valid(
        "approve",
        &run_as(&l, "alice", &["approve", "--id", "1"]).json,
    );
    let forbidden = run_as(&l, "mallory", &["approve", "--id", "1"]);
    assert_valid("error", &forbidden.json);
    assert_valid("check", &check(&l).json);
    assert_valid(
        "reject",
        &run_as(&l, "bob", &["reject", "--id", "1", "--reason", "no"]).json,
    );
    assert_valid("check", &check(&l).json);
    assert_valid("history", &l.ok(["history", "--id", "1"]));
    for line in l.run(["events"]).stdout.lines() {
        assert_valid("event", &serde_json::from_str(line).unwrap());
    }
}

/// A `--users` file only its owner may read.
#[cfg(feature = "serve")]
pub(crate) fn users_file(l: &Ledger, text: &str, mode: u32) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = l.dir.path().join("users");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path.to_str().unwrap().to_string()
}

#[cfg(feature = "serve")]
const ALICE_TOKEN: &str = "alice-token-0123456789";
#[cfg(feature = "serve")]
const BOB_TOKEN: &str = "bob-token-0123456789ab";

/// An API call with a person's own token.
#[cfg(feature = "serve")]
fn vote_as(served: &crate::serve::Served, token: &str, path: &str, body: Value) -> (u16, Value) {
    let bearer = format!("Authorization: Bearer {token}");
    let reply = served.request(
        "POST",
        path,
        &[&bearer, "Content-Type: application/json"],
        &body.to_string(),
    );
    (reply.status, reply.json())
}

#[test]
#[cfg(feature = "serve")]
fn through_serve_each_token_votes_as_its_person() {
    use crate::serve::Served;
    let l = Ledger::new();
    let id = l.ok([
        "log",
        "--stage",
        "deploy",
        "--question",
        "Ship?",
        "--approval",
        "--approvers",
        "alice,bob",
        "--min",
        "2",
        "--requester",
        "carol",
    ])["question_id"]
        .as_i64()
        .unwrap();
    let users = users_file(
        &l,
        &format!("# people\nalice {ALICE_TOKEN}\nbob {BOB_TOKEN}\ncarol carol-token-0123456789\n"),
        0o600,
    );
    let served = Served::start(&l, &["--users", &users, "--user", "alice"]);
    let approve = format!("/api/questions/{id}/approve");
    let reject = format!("/api/questions/{id}/reject");

    // The server's own token names nobody, whatever --user says: it cannot vote.
    let (status, body) = served.api("POST", &approve, Some(serde_json::json!({})));
    assert_eq!(
        (status, body["error_code"].as_str()),
        (403, Some("forbidden")),
        "{body}"
    );
    // The requester's own token is refused too, and recorded.
    let (status, body) = vote_as(
        &served,
        "carol-token-0123456789",
        &approve,
        serde_json::json!({}),
    );
    assert_eq!(
        (status, body["error_code"].as_str()),
        (403, Some("forbidden")),
        "{body}"
    );
    // A rejection needs its reason (the model's refusal, with the code `questions reject`
    // gives); a token that is nobody's is not let in.
    let (status, body) = vote_as(&served, ALICE_TOKEN, &reject, serde_json::json!({}));
    assert_eq!(
        (status, body["error_code"].as_str()),
        (422, Some("invalid_answer")),
        "{body}"
    );
    let (status, _) = vote_as(
        &served,
        "nobody-token-0123456789",
        &approve,
        serde_json::json!({}),
    );
    assert_eq!(status, 401);

    let (status, body) = vote_as(
        &served,
        ALICE_TOKEN,
        &approve,
        serde_json::json!({"comment": "ok"}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["question"]["status"], "pending");
    assert_eq!(l.run(["check", "--stage", "deploy"]).code, 1);
    let (status, body) = vote_as(&served, BOB_TOKEN, &approve, serde_json::json!({}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["question"]["status"], "answered");
    assert_eq!(l.run(["check", "--stage", "deploy"]).code, 0);

    let votes = &l.question(id)["approval"]["votes"];
    let by: Vec<(&str, &str)> = votes
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["by"].as_str().unwrap(), v["channel"].as_str().unwrap()))
        .collect();
    assert_eq!(by, [("alice", "web"), ("bob", "web")]);
    let refused: Vec<String> = l.ok(["history", "--id", &id.to_string()])["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "refused")
        .map(|e| e["answered_by"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(refused, ["carol"]);
}

#[test]
#[cfg(feature = "serve")]
fn a_users_file_others_may_read_or_with_short_tokens_is_refused() {
    let l = Ledger::new();
    for (text, mode) in [
        (format!("alice {ALICE_TOKEN}\n"), 0o644),
        (format!("alice {ALICE_TOKEN}\n"), 0o640),
        ("alice short\n".to_string(), 0o600),
        (format!("alice {ALICE_TOKEN}\nalice {BOB_TOKEN}\n"), 0o600),
    ] {
        let users = users_file(&l, &text, mode);
        let run = l.run(["serve", "--bind", "127.0.0.1:0", "--users", &users]);
        assert_eq!(run.code, 2, "{text:?} {mode:o}: {run:?}");
        assert_eq!(run.error_code(), "usage");
    }
    let missing = l.run(["serve", "--bind", "127.0.0.1:0", "--users", "no-such-file"]);
    assert_eq!(missing.error_code(), "io_error");
}

/// One tool call to `questions mcp` (started with `more` flags, as the user `user`) over
/// raw JSON-RPC on stdio: the tool's result.
#[cfg(feature = "mcp")]
fn mcp_call(l: &Ledger, user: &str, more: &[&str], tool: &str, args: Value) -> Value {
    use std::io::{BufRead, BufReader, Write};
    let mut child = std::process::Command::new(BIN)
        .current_dir(l.dir.path())
        .env_remove("QUESTIONS_DB")
        .env("QUESTIONS_USER", user)
        .env("QUESTIONS_NOW", NOW)
        .arg("--db")
        .arg(l.db())
        .arg("mcp")
        .args(more)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let messages = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}),
    ];
    for m in messages {
        writeln!(stdin, "{m}").unwrap();
    }
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let result = loop {
        let line = lines.next().expect("a reply").unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        if reply["id"] == 2 {
            break reply["result"].clone();
        }
    };
    drop(stdin);
    child.wait().unwrap();
    result
}

#[test]
#[cfg(feature = "mcp")]
fn mcp_votes_as_its_configured_user_and_no_votes_refuses() {
    let l = Ledger::new();
    // An agent asks for an approval: it is requested by the server's user, carol.
    let asked = mcp_call(
        &l,
        "carol",
        &["--no-votes"],
        "ask_questions",
        serde_json::json!({"stage": "deploy", "questions": [{"question": "Ship?",
            "approval": {"approvers": ["alice", "carol"], "min": 1}}]}),
    );
    assert_ne!(asked["isError"], true, "{asked}");
    let id: i64 = asked["structuredContent"]["question_ids"][0]
        .as_str()
        .map(|s| s.parse().unwrap())
        .or_else(|| asked["structuredContent"]["question_ids"][0].as_i64())
        .unwrap();
    assert_eq!(l.question(id)["approval"]["requester"], "carol");
    let vote = serde_json::json!({"id": id, "vote": "approve", "comment": "fine"});

    // An agent cannot answer around the vote, nor vote with --no-votes, nor as the requester.
    let around = mcp_call(
        &l,
        "alice",
        &[],
        "record_answers",
        serde_json::json!({"stage": "deploy", "answers": {id.to_string(): "approved"}}),
    );
    assert_eq!(around["isError"], true, "{around}");
    assert_eq!(around["structuredContent"]["error_code"], "forbidden");
    let refused = mcp_call(&l, "alice", &["--no-votes"], "vote", vote.clone());
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(refused["structuredContent"]["error_code"], "forbidden");
    let own = mcp_call(&l, "carol", &[], "vote", vote.clone());
    assert_eq!(own["structuredContent"]["error_code"], "forbidden", "{own}");
    // A vote is approve or reject, as the core names them: anything else is a usage error.
    let maybe = serde_json::json!({"id": id, "vote": "maybe"});
    let unsure = mcp_call(&l, "alice", &[], "vote", maybe);
    assert_eq!(
        unsure["structuredContent"]["error_code"], "usage",
        "{unsure}"
    );
    let said = unsure["structuredContent"]["error"].as_str().unwrap();
    assert!(
        said.contains("vote 'maybe' is not one of approve or reject"),
        "{said}"
    );
    assert_eq!(l.run(["check", "--stage", "deploy"]).code, 1);

    let voted = mcp_call(&l, "alice", &[], "vote", vote);
    assert_ne!(voted["isError"], true, "{voted}");
    let q = &voted["structuredContent"]["question"];
    assert_eq!(q["status"], "answered");
    assert_eq!(q["approval"]["votes"][0]["by"], "alice");
    assert_eq!(q["approval"]["votes"][0]["channel"], "mcp");
    assert_eq!(l.run(["check", "--stage", "deploy"]).code, 0);
}

#[test]
fn ingest_logs_every_question_of_an_envelope_as_an_approval() {
    let l = Ledger::new();
    let block = "QUESTIONS_NEEDED\n[Release]\nQ: Deploy build 42?\nQ: Run the migration?\n";
    let run = l.run_stdin(
        [
            "ingest",
            "--stage",
            "deploy",
            "--approval",
            "--approvers",
            "alice,bob",
            "--min",
            "2",
            "--requester",
            "carol",
        ],
        block,
    );
    assert_eq!(run.code, 0, "{run:?}");
    for q in run.json["questions"].as_array().unwrap() {
        assert_eq!(q["approval"]["min"], 2, "{q}");
        assert_eq!(q["approval"]["requester"], "carol");
    }
    assert_eq!(
        l.run(["check", "--stage", "deploy"]).json["approvals"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let proposed = l.run_stdin(
        [
            "ingest",
            "--stage",
            "other",
            "--approval",
            "--approvers",
            "alice",
            "--min",
            "1",
        ],
        "QUESTIONS_NEEDED\n[Release]\nQ: Deploy?\nProposed: yes\n",
    );
    assert_eq!(proposed.error_code(), "usage");
    assert_eq!(
        l.run(["list", "--stage", "other"]).json["count"],
        0,
        "nothing was logged"
    );
}

/// The shell block after `<!-- recipe: NAME` in the guide to approvals.
fn recipe(name: &str) -> String {
    let readme = include_str!("../../docs/guide/approvals.md");
    let at = readme
        .find(&format!("<!-- recipe: {name}"))
        .unwrap_or_else(|| panic!("docs/guide/approvals.md has no recipe '{name}'"));
    let block = &readme[at..];
    let start = block.find("```sh\n").unwrap() + "```sh\n".len();
    let end = block[start..].find("```").unwrap();
    block[start..start + end].to_string()
}

/// Runs the docs' approval recipe for build 42 while `votes` are cast from elsewhere;
/// the recipe's exit code and its output.
fn approval_recipe(votes: &[(&str, &[&str])]) -> (i32, Value) {
    let l = Ledger::new();
    // The group the recipe names is made once, beforehand, by its admin.
    group_of(&l, "release", &[]);
    // The recipe's approvers, as the ledger knows them.
    let mut script = recipe("approval");
    for name in PEOPLE {
        script = script.replace(&format!("{name},"), &format!("{},", known_as(&l, name)));
    }
    let bin_dir = std::path::Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let gate = std::process::Command::new("sh")
        .arg("-c")
        .arg(&script)
        .current_dir(l.dir.path())
        .env("PATH", path)
        .env("QUESTIONS_DB", l.db())
        .env("QUESTIONS_NOW", NOW)
        .env("BUILD", "42")
        .env_remove("QUESTIONS_USER")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The approval is logged, then the approvers vote.
    let deadline = std::time::Instant::now() + std::time::Duration::from_mins(1);
    while l.run(["list", "--stage", "release-42"]).json["count"] != 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the recipe logged nothing"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    for (who, args) in votes {
        let run = run_as(&l, who, args);
        assert_eq!(run.code, 0, "{who} {args:?}: {run:?}");
    }
    let out = gate.wait_with_output().unwrap();
    let text = named(
        &l,
        Run {
            code: 0,
            json: Value::Null,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::new(),
        },
    )
    .stdout;
    // The log's document, then the check's: the last one is the gate's.
    let last = text.rfind("\n{\n").map_or(0, |i| i + 1);
    let check: Value = serde_json::from_str(&text[last..]).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), check)
}

#[test]
fn unpooled_the_readme_approval_recipe_passes_on_two_approvals_and_fails_on_a_rejection() {
    crate::unpooled!();
    let approve: &[&str] = &["approve", "--id", "1"];
    let (code, check) = approval_recipe(&[("alice", approve), ("bob", approve)]);
    assert_eq!(code, 0, "{check}");
    assert_eq!(check["gate"], "pass");
    assert_eq!(check["approvals"][0]["approvals"], 2);

    let reject: &[&str] = &["reject", "--id", "1", "--reason", "not during the freeze"];
    let (code, check) = approval_recipe(&[("alice", approve), ("bob", reject)]);
    assert_eq!(code, 1, "{check}");
    assert_eq!(check["gate"], "fail");
    assert_eq!(check["declined"][0]["reason"], "not during the freeze");
}

#[test]
#[cfg(feature = "watch")]
fn unpooled_watch_delivers_each_vote_and_the_settlement() {
    crate::unpooled!();
    let l = Ledger::new();
    let id = approval(&l, "carol", "alice,bob", "2", &[]).to_string();
    let watch = || {
        l.run([
            "watch",
            "--name",
            "gate",
            "--on",
            "voted,refused,approved",
            "--timeout",
            "1",
            "--exec",
            "cat >> delivered.jsonl",
        ])
    };
    // A new watcher starts at the end of the history; it is started once first.
    assert_eq!(watch().code, 0);
    for who in ["alice", "mallory", "bob"] {
        run_as(&l, who, &["approve", "--id", &id]);
    }
    let run = watch();
    assert_eq!(run.code, 0, "{run:?}");
    let text = named(
        &l,
        Run {
            code: 0,
            json: Value::Null,
            stdout: std::fs::read_to_string(l.dir.path().join("delivered.jsonl")).unwrap(),
            stderr: String::new(),
        },
    )
    .stdout;
    let seen: Vec<(String, String)> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_string(),
                e["answered_by"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let expected = [
        ("voted", "alice"),
        ("refused", "mallory"),
        ("voted", "bob"),
        ("approved", "bob"),
    ];
    assert_eq!(
        seen,
        expected.map(|(k, b)| (k.to_string(), b.to_string())),
        "{text}"
    );
}

#[test]
#[cfg(feature = "serve")]
fn the_inbox_shows_an_approval_s_votes_and_its_form_votes_as_the_token_s_person() {
    use crate::serve::Served;
    let l = Ledger::new();
    let id = l.ok([
        "log",
        "--stage",
        "deploy",
        "--question",
        "Ship?",
        "--approval",
        "--approvers",
        "alice,bob",
        "--min",
        "2",
        "--requester",
        "carol",
    ])["question_id"]
        .as_i64()
        .unwrap();
    let users = users_file(
        &l,
        &format!("alice {ALICE_TOKEN}\nbob {BOB_TOKEN}\n"),
        0o600,
    );
    let served = Served::start(&l, &["--users", &users]);
    let alice = format!("Authorization: Bearer {ALICE_TOKEN}");
    let form = "Content-Type: application/x-www-form-urlencoded";
    let voted = served.request(
        "POST",
        &format!("/q/{id}/approve"),
        &[&alice, form],
        "comment=looks+good",
    );
    assert_eq!(voted.status, 303, "{voted:?}");
    let page = served.request("GET", "/", &[&alice, "Accept: text/html"], "");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Approval: 1 of 2"), "{}", page.body);
    assert!(
        page.body.contains("alice — approve: looks good"),
        "{}",
        page.body
    );
    assert!(page.body.contains(&format!("action=\"/q/{id}/approve\"")));
    assert!(
        !page.body.contains(&format!("action=\"/q/{id}/answer\"")),
        "no answer form"
    );
    // The server's own token names nobody: its vote is refused on the page.
    let server = format!("Authorization: Bearer {}", crate::serve::TOKEN);
    let refused = served.request(
        "POST",
        &format!("/q/{id}/reject"),
        &[&server, form],
        "comment=no",
    );
    assert_eq!(refused.status, 403, "{refused:?}");
    let bob = format!("Authorization: Bearer {BOB_TOKEN}");
    let no_reason = served.request(
        "POST",
        &format!("/q/{id}/reject"),
        &[&bob, form],
        "comment=",
    );
    // The model's refusal (invalid_answer), in the page's own words.
    assert_eq!(no_reason.status, 422);
    assert!(
        no_reason
            .body
            .contains("say why in the reason field to reject"),
        "{no_reason:?}"
    );
    let votes = &l.question(id)["approval"]["votes"];
    assert_eq!(votes.as_array().unwrap().len(), 1, "{votes}");
    assert_eq!(votes[0]["by"], "alice");
    assert_eq!(votes[0]["channel"], "web");
}

#[test]
#[cfg(feature = "serve")]
fn the_inbox_shows_a_delegate_s_vote_as_theirs_for_the_approver() {
    use crate::serve::Served;
    let l = Ledger::new();
    let me = crate::relay_harness::me(&l);
    l.ok(["group", "create", "people", "--admins", &me]);
    l.ok([
        "people",
        "delegate",
        "alice",
        "--to",
        "bob",
        "--until",
        &crate::common::later(7 * 86_400),
    ]);
    let id = l.ok([
        "log",
        "--stage",
        "deploy",
        "--question",
        "Ship?",
        "--approval",
        "--approvers",
        "alice,carol",
        "--min",
        "2",
        "--requester",
        "dave",
    ])["question_id"]
        .as_i64()
        .unwrap();
    let users = users_file(&l, &format!("bob {BOB_TOKEN}\n"), 0o600);
    let served = Served::start(&l, &["--users", &users]);
    let bob = format!("Authorization: Bearer {BOB_TOKEN}");
    let form = "Content-Type: application/x-www-form-urlencoded";
    let voted = served.request(
        "POST",
        &format!("/q/{id}/approve"),
        &[&bob, form],
        "comment=%3Cb%3Eread%3C%2Fb%3E",
    );
    assert_eq!(voted.status, 303, "{voted:?}");
    let q = l.question(id);
    assert_eq!(q["approval"]["votes"][0]["on_behalf_of"], "alice", "{q}");
    let page = served.request("GET", "/", &[&bob, "Accept: text/html"], "");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Approval: 1 of 2"), "{}", page.body);
    // In the votes and in the history, the vote is bob's, made for alice; the comment
    // is text, never markup.
    assert!(
        page.body
            .contains("<li>bob for alice — approve: &lt;b&gt;read&lt;/b&gt;</li>"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("by bob for alice via web"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("<b>read"), "{}", page.body);
    // bob may vote for alice: the page offers him the buttons, not a refusal.
    assert!(
        page.body.contains(&format!("action=\"/q/{id}/approve\"")),
        "{}",
        page.body
    );
    assert!(
        !page.body.contains("not among its approvers"),
        "{}",
        page.body
    );
}

#[test]
#[cfg(feature = "serve")]
fn unpooled_the_inbox_offers_a_vote_only_to_those_who_may_cast_it() {
    crate::unpooled!();
    use crate::serve::Served;
    let l = Ledger::new();
    group_of(&l, "leads", &["dave"]);
    let id = l.ok([
        "log",
        "--stage",
        "deploy",
        "--question",
        "Ship?",
        "--approval",
        "--approvers",
        "alice,group:leads",
        "--min",
        "1",
        "--requester",
        "carol",
    ])["question_id"]
        .as_i64()
        .unwrap();
    let users = users_file(
        &l,
        &format!(
            "alice {ALICE_TOKEN}\nbob {BOB_TOKEN}\ncarol carol-token-0123456789\n\
             dave dave-token-0123456789\n"
        ),
        0o600,
    );
    let served = Served::start(&l, &["--users", &users]);
    let page_for = |token: &str| {
        let auth = format!("Authorization: Bearer {token}");
        let page = served.request("GET", "/", &[&auth, "Accept: text/html"], "");
        assert_eq!(page.status, 200);
        assert!(page.body.contains("Approval: 0 of 1"), "{}", page.body);
        page.body
    };
    let buttons = format!("action=\"/q/{id}/approve\"");
    // An approver named in person, and one through a group: the form.
    for token in [ALICE_TOKEN, "dave-token-0123456789"] {
        let body = page_for(token);
        assert!(body.contains(&buttons), "{body}");
        assert!(!body.contains("class=\"no-vote\""), "{body}");
    }
    // The requester, someone who is no approver, and the server's own token: no form,
    // and the reason in its place.
    for (token, why) in [
        (
            "carol-token-0123456789",
            "You (carol) asked for this approval",
        ),
        (
            BOB_TOKEN,
            "You (bob) are not among its approvers: alice, group:leads.",
        ),
        (crate::serve::TOKEN, "A vote needs your own token"),
    ] {
        let body = page_for(token);
        assert!(!body.contains(&buttons), "{body}");
        assert!(!body.contains(&format!("/q/{id}/reject")), "{body}");
        assert!(body.contains(why), "{why}: {body}");
    }
    // Someone leaves the group: the page stops offering them the vote.
    assert_eq!(ops_group(&l, &["remove", "leads", "dave"]).code, 0);
    assert!(!page_for("dave-token-0123456789").contains(&buttons));

    // A vote names what it was shown, as an answer does: another text is a conflict.
    let approve = format!("/api/questions/{id}/approve");
    let (status, body) = vote_as(
        &served,
        ALICE_TOKEN,
        &approve,
        serde_json::json!({"question": "Drop the database?"}),
    );
    assert_eq!(
        (status, body["error_code"].as_str()),
        (409, Some("conflict"))
    );
    // An inbox for another stage takes no vote on this one, by the API or the form.
    let other = Served::start(&l, &["--users", &users, "--stage", "docs"]);
    let (status, _) = vote_as(&other, ALICE_TOKEN, &approve, serde_json::json!({}));
    assert_eq!(status, 404);
    let alice = format!("Authorization: Bearer {ALICE_TOKEN}");
    let form = "Content-Type: application/x-www-form-urlencoded";
    let voted = other.request("POST", &format!("/q/{id}/approve"), &[&alice, form], "");
    assert_eq!(voted.status, 404, "{voted:?}");
    assert_eq!(l.question(id)["approval"]["votes"], serde_json::json!([]));
}

#[test]
fn render_leaves_approvals_to_their_approvers() {
    let l = Ledger::new();
    let plain = l.log("deploy", "Release notes?");
    let gate = l.ok([
        "log",
        "--stage",
        "deploy",
        "--question",
        "Ship?",
        "--approval",
        "--approvers",
        "alice",
        "--min",
        "1",
        "--requester",
        "carol",
    ])["question_id"]
        .as_i64()
        .unwrap();
    let render = l.ok(["render", "--stage", "deploy"]);
    assert_eq!(
        render["batches"][0]["question_ids"],
        serde_json::json!([plain])
    );
    assert_eq!(render["left_out"][0]["question_id"], gate, "{render}");
    let uwf = l.run(["render", "--stage", "deploy", "--format", "uwf"]);
    assert!(!uwf.stdout.contains("Ship?"), "{uwf:?}");
    assert!(uwf.stderr.contains("approval"), "{uwf:?}");
}

#[test]
fn unpooled_an_approval_never_merges_with_another_question() {
    crate::unpooled!();
    let l = Ledger::new();
    let text = "Deploy v2 to production?";
    // A plain question of the same text, answered: an approval logged over it would
    // pass its gate with no vote.
    let plain = l.log("deploy", text);
    l.ok(["answer", "--id", &plain.to_string(), "--answer", "yes"]);
    let merged = run_as(
        &l,
        "carol",
        &[
            "log",
            "--stage",
            "deploy",
            "--question",
            text,
            "--approval",
            "--approvers",
            "alice,bob",
            "--min",
            "1",
        ],
    );
    assert_eq!(merged.code, 1, "{merged:?}");
    assert_eq!(merged.error_code(), "conflict");
    // The same through ingest, all or nothing.
    let ingested = l.run_stdin(
        [
            "ingest",
            "--stage",
            "deploy",
            "--approval",
            "--approvers",
            "alice",
            "--min",
            "1",
        ],
        format!("{{\"questions\": [{{\"question\": \"{text}\"}}]}}"),
    );
    assert_eq!(ingested.error_code(), "conflict", "{ingested:?}");
    assert_eq!(l.all().len(), 1, "nothing was logged");

    // Another approval of the same text with another policy is no merge either; the
    // same approval again is the one on record.
    let l = Ledger::new();
    let id = approval(&l, "carol", "alice,bob", "2", &[]);
    let other = run_as(
        &l,
        "carol",
        &[
            "log",
            "--stage",
            "deploy",
            "--question",
            text,
            "--approval",
            "--approvers",
            "alice",
            "--min",
            "1",
        ],
    );
    assert_eq!(other.error_code(), "conflict", "{other:?}");
    let plain = run(&l, &["log", "--stage", "deploy", "--question", text]);
    assert_eq!(plain.error_code(), "conflict", "{plain:?}");
    let same = run_as(
        &l,
        "carol",
        &[
            "log",
            "--stage",
            "deploy",
            "--question",
            text,
            "--approval",
            "--approvers",
            "bob,alice",
            "--min",
            "2",
        ],
    );
    assert_eq!(same.code, 0, "{same:?}");
    assert_eq!(same.json["created"], false);
    assert_eq!(same.json["question_id"], id);
    assert_eq!(check(&l).code, 1, "still open");
}

#[test]
fn unpooled_an_open_approval_cannot_be_cleared() {
    crate::unpooled!();
    let l = Ledger::new();
    let id = approval(&l, "carol", "alice", "1", &[]);
    l.log("deploy", "Which region?");
    for more in [&[][..], &["--strict"][..]] {
        let mut args = vec!["clear", "--stage", "deploy"];
        args.extend_from_slice(more);
        let cleared = run(&l, &args);
        // `clear` takes no --strict: it is a usage error, and clears nothing either.
        assert_ne!(cleared.code, 0, "{cleared:?}");
        assert_eq!(l.all().len(), 2, "nothing was cleared: {cleared:?}");
    }
    let cleared = run(&l, &["clear", "--stage", "deploy"]);
    assert_eq!(cleared.error_code(), "conflict");
    assert!(cleared.json["error"].as_str().unwrap().contains("approval"));
    let gate = run(&l, &["check", "--stage", "deploy", "--strict"]);
    assert_eq!(gate.code, 1, "the gate still fails: {gate:?}");
    // Settled, it clears with the rest.
    run_as(&l, "alice", &["approve", "--id", &id.to_string()]);
    assert_eq!(ok(&l, &["clear", "--stage", "deploy"])["deleted"], 2);
}

#[test]
fn sqlite_only_a_vote_is_the_uid_s_never_the_environment_s() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let id = approval(&l, "carol", "alice", "1", &[]).to_string();
    // Whoever runs the tests, claiming to be alice in every variable there is.
    let mut cmd = l.command();
    cmd.env("USER", known_as(&l, "alice"))
        .env("LOGNAME", known_as(&l, "alice"))
        .env("QUESTIONS_USER", known_as(&l, "alice"))
        .args(["approve", "--id", &id]);
    let forged = named(&l, finish(cmd));
    assert_eq!(forged.code, 2, "{forged:?}");
    assert_eq!(forged.error_code(), "forbidden");
    let refused = kinds(&l, id.parse().unwrap())
        .into_iter()
        .find(|(k, _)| k == "refused")
        .unwrap()
        .1;
    assert_ne!(refused["answered_by"], "alice", "{refused}");
    assert_eq!(check(&l).code, 1);
    // A requester taken by default is the uid's too.
    let logged = run_as(
        &l,
        "carol",
        &[
            "log",
            "--stage",
            "s",
            "--question",
            "Ship?",
            "--approval",
            "--approvers",
            "alice",
            "--min",
            "1",
        ],
    );
    assert_eq!(
        logged.json["question"]["approval"]["requester"], "carol",
        "{logged:?}"
    );
    // And alice herself is alice, whatever USER says (mallory, in `as_person`).
    let real = run_as(&l, "alice", &["approve", "--id", &id]);
    assert_eq!(real.code, 0, "{real:?}");
    assert_eq!(real.json["question"]["approval"]["votes"][0]["by"], "alice");
}

#[test]
fn unpooled_groups_are_changed_by_their_admins_only() {
    crate::unpooled!();
    let l = Ledger::new();
    // An approval may name only a group that exists: one named first could be made by
    // anyone, who would then decide who votes.
    let early = run_as(
        &l,
        "carol",
        &[
            "log",
            "--stage",
            "s",
            "--question",
            "Ship?",
            "--approval",
            "--approvers",
            "group:release",
            "--min",
            "1",
        ],
    );
    assert_eq!(early.error_code(), "usage", "{early:?}");
    assert!(early.json["error"]
        .as_str()
        .unwrap()
        .contains("group create"));
    group_of(&l, "release", &[]);
    let again = ops_group(&l, &["create", "release", "--admins", "mallory"]);
    assert_eq!(again.error_code(), "conflict");
    let id = approval(&l, "carol", "group:release", "1", &[]).to_string();

    // Anyone who can write the ledger is not an admin: joining to vote is refused.
    let joined = run_as(&l, "mallory", &["group", "add", "release", "mallory"]);
    assert_eq!(joined.code, 2, "{joined:?}");
    assert_eq!(joined.error_code(), "forbidden");
    let by = run_as(
        &l,
        "mallory",
        &["--by", "ops", "group", "add", "release", "mallory"],
    );
    assert_eq!(by.error_code(), "usage");
    assert!(by.json["error"].as_str().unwrap().contains("--by"));
    let vote = run_as(&l, "mallory", &["approve", "--id", &id]);
    assert_eq!(vote.error_code(), "forbidden");
    assert_eq!(check(&l).code, 1);
    let missing = run_as(&l, "ops", &["group", "add", "nosuch", "dave"]);
    assert_eq!(missing.error_code(), "not_found");
    let admins_elsewhere = run_as(
        &l,
        "ops",
        &["group", "add", "release", "dave", "--admins", "x"],
    );
    assert_eq!(admins_elsewhere.error_code(), "usage");

    // The admin adds a member, who votes.
    let added = run_as(&l, "ops", &["group", "add", "release", "dave"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert_eq!(run_as(&l, "dave", &["approve", "--id", &id]).code, 0);
    assert_eq!(check(&l).code, 0);
}

#[test]
fn unpooled_one_count_of_approvals_across_group_changes() {
    crate::unpooled!();
    let l = Ledger::new();
    group_of(&l, "leads", &[]);
    run_as(&l, "ops", &["group", "add", "leads", "dave", "erin"]);
    let id = approval(&l, "carol", "group:leads", "2", &[]);
    let ids = id.to_string();
    assert_eq!(run_as(&l, "dave", &["approve", "--id", &ids]).code, 0);
    // dave leaves: his vote no longer counts, anywhere.
    run_as(&l, "ops", &["group", "remove", "leads", "dave"]);
    let report = check(&l).json["approvals"][0].clone();
    assert_eq!(report["approvals"], 0, "{report}");
    assert_eq!(report["needed"], 2);
    assert_eq!(report["may_vote"], serde_json::json!(["erin"]));
    assert_eq!(run_as(&l, "erin", &["approve", "--id", &ids]).code, 0);
    assert_eq!(check(&l).code, 1);
    // dave is back: two eligible approvals, so the change that brought him settles it,
    // rather than leaving it open with nobody left to vote.
    let back = run_as(&l, "ops", &["group", "add", "leads", "dave"]);
    assert_eq!(back.code, 0, "{back:?}");
    assert_eq!(back.json["settled"], serde_json::json!([id]));
    let gate = check(&l);
    assert_eq!(gate.code, 0, "{gate:?}");
    let report = &gate.json["approvals"][0];
    assert_eq!(report["state"], "approved");
    assert_eq!(report["approvals"], 2);
    assert_eq!(report["needed"], 0);
    let approved = kinds(&l, id)
        .into_iter()
        .find(|(k, _)| k == "approved")
        .unwrap()
        .1;
    assert_eq!(approved["answered_by"], "ops");
}

#[test]
#[cfg(feature = "mcp")]
fn an_agent_that_names_another_requester_still_may_not_vote_on_what_it_logged() {
    let l = Ledger::new();
    // The agent's server acts for alice and names bob as the requester.
    let asked = mcp_call(
        &l,
        "alice",
        &[],
        "ask_questions",
        serde_json::json!({"stage": "deploy", "questions": [{"question": "Ship?",
            "approval": {"approvers": ["alice", "dave"], "min": 1, "requester": "bob"}}]}),
    );
    assert_ne!(asked["isError"], true, "{asked}");
    let approval = &l.all()[0]["approval"];
    assert_eq!(approval["requester"], "bob");
    assert_eq!(approval["logged_by"], "alice");
    let id = l.all()[0]["id"].as_i64().unwrap();
    let own = mcp_call(
        &l,
        "alice",
        &[],
        "vote",
        serde_json::json!({"id": id, "vote": "approve"}),
    );
    assert_eq!(own["structuredContent"]["error_code"], "forbidden", "{own}");
    assert_eq!(l.run(["check", "--stage", "deploy"]).code, 1);
    let gate = l.run(["check", "--stage", "deploy"]);
    assert_eq!(
        gate.json["approvals"][0]["may_vote"],
        serde_json::json!(["dave"])
    );
}

#[test]
fn unpooled_only_the_ledgers_owner_names_who_administers_people() {
    crate::unpooled!();
    let l = Ledger::new();
    // The ledger is made by whoever runs the tests: its owner. Another user who can write
    // it, where nobody made the group `people` yet, cannot make it, nor link anyone else.
    l.ok(["clear", "--stage", "nothing-here"]);
    let claimed = run_as(
        &l,
        "mallory",
        &["group", "create", "people", "--admins", "mallory"],
    );
    assert_eq!(claimed.error_code(), "forbidden", "{claimed:?}");
    assert!(claimed.json["error"].as_str().unwrap().contains("owner"));
    let linked = run_as(&l, "mallory", &["people", "link", "alice", "telegram:666"]);
    assert_eq!(linked.error_code(), "forbidden", "{linked:?}");
    let joined = run_as(&l, "mallory", &["group", "add", "people", "mallory"]);
    assert_eq!(joined.error_code(), "not_found", "{joined:?}");

    // The owner names the people admins; those change anyone's links, others still not.
    let made = run(&l, &["group", "create", "people", "--admins", "ops"]);
    assert_eq!(made.code, 0, "{made:?}");
    for (who, identity) in [("alice", "telegram:1001"), ("bob", "telegram:2002")] {
        let by_admin = run_as(&l, "ops", &["people", "link", who, identity]);
        assert_eq!(by_admin.code, 0, "{by_admin:?}");
    }
    let unlinked = run_as(
        &l,
        "mallory",
        &["people", "unlink", "alice", "telegram:1001"],
    );
    assert_eq!(unlinked.error_code(), "forbidden", "{unlinked:?}");
    let relinked = run_as(&l, "mallory", &["people", "link", "alice", "telegram:666"]);
    assert_eq!(relinked.error_code(), "forbidden", "{relinked:?}");
    let joined = run_as(&l, "mallory", &["group", "add", "people", "mallory"]);
    assert_eq!(joined.error_code(), "forbidden", "{joined:?}");
    let people = ok(&l, &["people", "list"]);
    assert_eq!(people["count"], 2, "{people}");
    assert!(!people.to_string().contains("telegram:666"), "{people}");
}
