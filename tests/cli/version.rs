//! `questions --version`: what a bug report and a launcher need to know of the binary.

use crate::common::{Ledger, BIN};

/// HEAD of the checkout the suite runs in, when it is one (the build names it).
fn head() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short=7", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn version_names_the_version_the_commit_and_the_target() {
    let l = Ledger::new();
    let run = l.run(["--version"]);
    assert_eq!(run.code, 0, "{run:?}");
    let line = run.stdout.trim_end();
    let rest = line
        .strip_prefix(&format!("questions {} (", env!("CARGO_PKG_VERSION")))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{line:?}"));
    let (commit, target) = rest.split_once(", ").unwrap_or_else(|| panic!("{line:?}"));
    match head() {
        Some(head) => assert_eq!(commit, head),
        None => assert_eq!(commit, "unknown"),
    }
    // The suite runs the binary it built for this machine: its target names this
    // architecture and operating system.
    assert!(
        target.starts_with(std::env::consts::ARCH) && target.contains(std::env::consts::OS),
        "{target}"
    );
    l.assert_not_created();
}

#[test]
fn version_json_gives_the_same_facts_and_the_binary_s_own_path() {
    let l = Ledger::new();
    let text = l.run(["--version"]).stdout;
    for args in [
        ["--version", "--json"],
        ["--json", "--version"],
        ["-V", "--json"],
    ] {
        let v = l.ok(args);
        assert_eq!(v["procedure"], "version");
        assert_eq!(v["name"], "questions");
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
        let expected = format!(
            "questions {} ({}, {})",
            v["version"].as_str().unwrap(),
            v["commit"].as_str().unwrap(),
            v["target"].as_str().unwrap()
        );
        assert_eq!(text.trim_end(), expected);
        assert!(v["schema_version"].as_u64().unwrap() >= 1, "{v}");
        let path = std::path::PathBuf::from(v["path"].as_str().unwrap());
        assert_eq!(path, std::fs::canonicalize(BIN).unwrap());
    }
    l.assert_not_created();
}

#[test]
fn json_without_a_command_is_a_usage_error() {
    let l = Ledger::new();
    let run = l.run(["--json"]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    l.assert_not_created();
}

#[test]
fn json_is_accepted_by_every_command_and_changes_nothing_where_json_is_printed() {
    let l = Ledger::new();
    l.ok(["log", "--stage", "s", "--question", "Which database?"]);
    // Before or after the command, the same document as without it (the clock aside).
    let calls: [&[&str]; 6] = [
        &["list"],
        &["check", "--stage", "s"],
        &["info"],
        &["answers", "--stage", "s"],
        &["history", "--stage", "s"],
        &["render", "--stage", "s", "--format", "vscode"],
    ];
    for call in calls {
        let plain = l.run(call);
        for json in [
            [&["--json"][..], call].concat(),
            [call, &["--json"][..]].concat(),
        ] {
            let run = l.run(&json);
            assert_eq!(run.code, plain.code, "{json:?}: {run:?}");
            assert_eq!(run.json, plain.json, "{json:?}");
        }
    }
    // A rendering other than JSON asked for beside it is a clash, named.
    for clash in [
        &["list", "--json", "--format", "table"][..],
        &["render", "--stage", "s", "--format", "markdown", "--json"],
        &["completions", "bash", "--json"],
    ] {
        let run = l.run(clash);
        assert_eq!((run.code, run.error_code()), (2, "usage"), "{clash:?}");
        assert!(
            run.json["error"].as_str().unwrap().contains("--json"),
            "{run:?}"
        );
    }
}

#[test]
fn version_alone_prints_the_line_clap_prints() {
    use clap::CommandFactory;
    // `--version` or `-V` alone is answered without building the command tree; beside a
    // global flag it goes through clap. Every form prints clap's own line, byte for byte.
    let clap_line = questions::cli::Cli::command().render_version().clone();
    assert!(clap_line.starts_with("questions "), "{clap_line:?}");
    let l = Ledger::new();
    for flag in ["--version", "-V"] {
        for with_db_flag in [false, true] {
            let mut cmd = crate::common::bare_command(l.dir.path());
            if with_db_flag {
                cmd.arg("--db").arg(l.db());
            } else {
                cmd.env("QUESTIONS_DB", l.db());
            }
            cmd.arg(flag);
            let run = crate::common::finish(cmd);
            assert_eq!(run.code, 0, "{flag} {run:?}");
            assert_eq!(run.stdout, clap_line, "{flag}, --db given: {with_db_flag}");
            assert_eq!(run.stderr, "", "{flag}");
        }
    }
    l.assert_not_created();
}

/// A build without a front end (`cargo build --no-default-features`) still knows its
/// command, and says how to get it: a usage error, not "unrecognized subcommand". In the
/// default build every front end is there and answers its own help.
#[test]
fn a_front_end_left_out_of_the_build_says_how_to_get_it() {
    let l = crate::common::Ledger::new();
    for (command, built, args) in [
        ("mcp", cfg!(feature = "mcp"), &[][..]),
        ("serve", cfg!(feature = "serve"), &[][..]),
        (
            "watch",
            cfg!(feature = "watch"),
            &["--name", "w", "--exec", "true"][..],
        ),
    ] {
        if built {
            assert_eq!(l.run([command, "--help"]).code, 0, "{command}");
            continue;
        }
        let out = l.run(std::iter::once(command).chain(args.iter().copied()));
        assert_eq!(out.code, 2, "{command}: {}", out.stdout);
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(doc["error_code"], "usage");
        assert_eq!(doc["procedure"], command);
        let message = doc["error"].as_str().unwrap();
        assert!(
            message.contains(&format!("built without '{command}'"))
                && message.contains(&format!("--features {command}")),
            "{message}"
        );
    }
}
