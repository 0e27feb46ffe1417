//! Every call of the uwf question protocol's SKILL.md, as an orchestrator makes it, with
//! the output keys questions.mjs gave.

use crate::common::*;

#[test]
fn the_skill_walkthrough_works_unchanged() {
    let l = Ledger::new();
    let mut ids = Vec::new();
    for (group, question, proposed, required) in [
        (
            "Goal",
            "What is the primary goal of this project?",
            "Build a blog platform",
            "true",
        ),
        (
            "Constraints",
            "Are there any technical constraints (language, framework, budget, timeline)?",
            "None specified",
            "false",
        ),
        (
            "Success metrics",
            "How will you measure success for this project?",
            "Ability to publish and view posts",
            "true",
        ),
        (
            "Risk tolerance",
            "What is the acceptable risk level for this project (low/medium/high)?",
            "medium",
            "false",
        ),
    ] {
        let out = l.ok([
            "log",
            "--stage",
            "intake",
            "--group",
            group,
            "--question",
            question,
            "--proposed",
            proposed,
            "--required",
            required,
        ]);
        for key in ["ok", "procedure", "question_id", "question"] {
            assert!(out.get(key).is_some(), "log lacks {key}");
        }
        ids.push(out["question_id"].as_i64().unwrap());
    }
    let id_list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");

    let gate = l.run(["check", "--stage", "intake"]);
    assert_eq!(gate.code, 1);
    for key in [
        "ok",
        "procedure",
        "gate",
        "pending_count",
        "pending",
        "stage",
    ] {
        assert!(gate.json.get(key).is_some(), "check lacks {key}");
    }
    assert_eq!(gate.json["pending_count"], 2);
    assert_eq!(
        l.run(["check", "--stage", "intake", "--ids", &id_list])
            .code,
        1
    );

    l.ok([
        "answer",
        "--id",
        &ids[0].to_string(),
        "--answer",
        "Create a monitoring dashboard",
    ]);
    l.ok([
        "answer",
        "--id",
        &ids[1].to_string(),
        "--answer",
        "React, deploy to Azure",
    ]);
    l.ok(["skip", "--id", &ids[2].to_string()]);
    assert_eq!(l.run(["check", "--stage", "intake"]).code, 0);
    assert_eq!(
        l.run(["check", "--stage", "intake", "--ids", &id_list])
            .code,
        0
    );

    let list = l.ok(["list", "--stage", "intake", "--status", "pending"]);
    for key in ["ok", "procedure", "count", "questions"] {
        assert!(list.get(key).is_some(), "list lacks {key}");
    }
    assert_eq!(list["count"], 1);

    let cleared = l.ok(["clear", "--stage", "intake"]);
    for key in ["ok", "procedure", "stage", "deleted"] {
        assert!(cleared.get(key).is_some(), "clear lacks {key}");
    }
    assert_eq!(cleared["deleted"], 4);
}

#[test]
fn the_contrib_script_is_a_drop_in_for_questions_mjs() {
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("node is needed for this test (the uwf skill runs on it)");
    }
    let repo = tempfile::tempdir().unwrap();
    let skill = repo.path().join(".github/skills/uwf-question-protocol");
    std::fs::create_dir_all(&skill).unwrap();
    let script = skill.join("questions.mjs");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/uwf/questions.mjs"),
        &script,
    )
    .unwrap();
    let node = |args: &[&str]| {
        let out = std::process::Command::new("node")
            .arg(&script)
            .args(args)
            .current_dir(repo.path())
            .env("QUESTIONS_BINARY", crate::common::BIN)
            .env_remove("QUESTIONS_DB")
            .output()
            .unwrap();
        let json: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
        (out.status.code(), json)
    };
    let (code, logged) = node(&["log", "--stage", "intake", "--question", "Goal?"]);
    assert_eq!(code, Some(0), "{logged}");
    assert!(skill.join("uwf-questions.db").is_file());
    assert_eq!(node(&["check", "--stage", "intake"]).0, Some(1));
    let id = logged["question_id"].to_string();
    assert_eq!(
        node(&["answer", "--id", &id, "--answer", "A blog"]).0,
        Some(0)
    );
    assert_eq!(node(&["check", "--stage", "intake"]).0, Some(0));
    assert_eq!(node(&["log", "--stage"]).0, Some(2));
    // And `questions` itself, run anywhere in the repository, sees the same ledger.
    let mut cmd = crate::common::bare_command(repo.path());
    cmd.args(["check", "--stage", "intake"]);
    assert_eq!(crate::common::finish(cmd).code, 0);
}
