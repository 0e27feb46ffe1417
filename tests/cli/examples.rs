//! Every example in every `--help` runs as written, and the README's setup holds.

use std::path::Path;

use crate::common::*;

/// The commands `questions --help` lists.
fn commands() -> Vec<String> {
    let run = finish({
        let mut cmd = bare_command(Path::new("."));
        cmd.arg("--help");
        cmd
    });
    run.stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A wrapped description goes on under its command, further in.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The shell lines under "Example:" in a help text; a line ending in `\` goes on.
fn examples(help: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    let mut inside = false;
    for line in help.lines() {
        if line.trim_end() == "Example:" || line.trim_end() == "Examples:" {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if !line.starts_with("  ") {
            inside = false;
            continue;
        }
        let text = line.trim();
        if let Some(head) = text.strip_suffix('\\') {
            current.push_str(head);
            current.push(' ');
        } else {
            current.push_str(text);
            lines.push(std::mem::take(&mut current));
        }
    }
    lines
}

/// A ledger in `dir` as the examples assume it: questions 1 to 9 in `intake` (7 the goal,
/// 8 optional, 9 a choice of database) and the same choice pending in `design`.
fn seed(dir: &Path) {
    let log = |args: &[&str]| {
        let mut cmd = bare_command(dir);
        cmd.arg("log").args(args);
        let run = finish(cmd);
        assert_eq!(run.code, 0, "seeding: {run:?}");
    };
    for n in 1..=6 {
        let q = format!("Filler {n}?");
        log(&[
            "--stage",
            "intake",
            "--question",
            &q,
            "--required",
            "false",
            "--proposed",
            "x",
        ]);
    }
    log(&[
        "--stage",
        "intake",
        "--group",
        "Goal",
        "--question",
        "What is the goal?",
        "--proposed",
        "A blog",
    ]);
    log(&[
        "--stage",
        "intake",
        "--question",
        "Risk level?",
        "--required",
        "false",
    ]);
    for stage in ["intake", "design"] {
        log(&[
            "--stage",
            stage,
            "--question",
            "Which database?",
            "--option",
            "PostgreSQL (Recommended)",
            "--option",
            "SQLite",
        ]);
    }
    // Approval 11, for approve's and reject's examples: logged by the pipeline (another
    // uid, one the password database does not name), with whoever runs the tests among
    // its approvers.
    use std::os::unix::fs::PermissionsExt;
    let me = String::from_utf8(
        std::process::Command::new("id")
            .arg("-un")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let ledger = dir.join(".questions");
    for (path, mode) in [
        (ledger.clone(), 0o777),
        (ledger.join("ledger.db"), 0o666),
        (ledger.join("ledger.db-wal"), 0o666),
        (ledger.join("ledger.db-shm"), 0o666),
    ] {
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode));
    }
    let pipeline = std::process::Command::new("setpriv")
        .args(["--reuid", "61099", "--regid", "61099", "--clear-groups"])
        .arg(crate::common::BIN)
        .args(["log", "--stage", "deploy", "--question", "Deploy build 42?"])
        .args(["--approval", "--min", "1", "--approvers"])
        .arg(format!("{},bob", me.trim()))
        .current_dir(dir)
        .env_remove("QUESTIONS_DB")
        .env("QUESTIONS_NOW", crate::common::NOW)
        .output()
        .unwrap();
    assert!(
        pipeline.status.success(),
        "seeding approval 11: {pipeline:?}"
    );
    std::fs::write(
        dir.join("subagent-output.txt"),
        "Done.\n\nQUESTIONS_NEEDED\n[Deadline]\nQ: When is the launch?\nProposed: June\nRequired: true\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("subagent-output.md"),
        "```json\n{\"openQuestions\": [{\"question\": \"Which cloud?\", \
         \"options\": [{\"label\": \"AWS\"}, {\"label\": \"Azure\"}]}]}\n```\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("answers.json"),
        "{\"7\": \"A monitoring dashboard\"}",
    )
    .unwrap();
}

/// The examples whose exit is not 0, and why.
const NOT_ZERO: &[(&str, i32)] = &[
    // The gate holds: question 7 is required and pending.
    ("questions check --stage intake", 1),
    ("questions check --stage intake --ids 7,8,9", 1),
    // No terminal here: ask says to use render and import instead.
    ("questions ask --stage intake", 2),
    // No server of that name can be reached from the tests, and nobody logged in to it:
    // login is `unavailable`, a call without a token `unauthorized` (logout of a server
    // never logged in to has nothing to do, exit 0).
    #[cfg(feature = "remote")]
    ("questions login https://questions.example.com", 1),
    #[cfg(feature = "remote")]
    ("questions --db https://questions.example.com list", 2),
];

/// The examples that run until interrupted (a server): each must print its start line,
/// then stop with exit 0 on SIGINT, as from Ctrl-C.
const UNTIL_INTERRUPTED: &[&str] = &["questions serve"];

/// The front ends this build was made without (`--no-default-features`).
const LEFT_OUT: &[&str] = &[
    #[cfg(not(feature = "mcp"))]
    "mcp",
    #[cfg(not(feature = "serve"))]
    "serve",
    #[cfg(not(feature = "watch"))]
    "watch",
    #[cfg(not(feature = "remote"))]
    "login",
    #[cfg(not(feature = "remote"))]
    "logout",
    #[cfg(not(feature = "remote"))]
    "--db https://",
];

fn interrupted(line: &str, dir: &Path, path: &str) -> std::process::ExitStatus {
    use std::io::BufRead;
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut command = std::process::Command::new(BIN);
    command.args(&words[1..]);
    // The example binds the documented port; here the system picks a free one, so that an
    // inbox left open on this machine does not fail the suite.
    if !words.contains(&"--bind") {
        command.args(["--bind", "127.0.0.1:0"]);
    }
    let mut child = command
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("QUESTIONS_DB")
        .env("QUESTIONS_NOW", NOW)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("\"ok\":true"), "`{line}` printed {first:?}");
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    child.wait().unwrap()
}

#[test]
fn sqlite_only_every_help_example_runs_as_written() {
    crate::sqlite_only!();
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut seen_not_zero = Vec::new();
    let mut ran = 0;
    let mut helps = vec![(None, vec!["--help".to_string()])];
    for c in commands() {
        helps.push((Some(c.clone()), vec![c, "--help".to_string()]));
    }
    assert!(helps.len() > 15, "the command list was not read: {helps:?}");
    for (command, args) in helps {
        let work = tempfile::tempdir().unwrap();
        let home = work.path().join("home");
        let dir = work.path().join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        if command.is_some() {
            seed(&dir);
        }
        if command.as_deref() == Some("check") {
            // A release gate already settled: `check --wait` on it passes at once (a wait
            // on a stage that never held a question would wait for one).
            let mut log = bare_command(&dir);
            log.args(["log", "--stage", "release", "--question", "Ship it?"]);
            let logged = finish(log);
            assert_eq!(logged.code, 0, "seeding the release gate: {logged:?}");
            let id = logged.json["question_id"].to_string();
            let mut answer = bare_command(&dir);
            answer.args(["answer", "--id", &id, "--answer", "yes"]);
            assert_eq!(finish(answer).code, 0, "seeding the release gate");
        }
        let mut help = bare_command(&dir);
        help.args(&args);
        let help = finish(help);
        assert_eq!(help.code, 0, "{args:?}");
        let lines = examples(&help.stdout);
        assert!(
            !lines.is_empty(),
            "{args:?} has no example:\n{}",
            help.stdout
        );
        for line in lines {
            // A front end this build leaves out has its own test (version.rs).
            if LEFT_OUT
                .iter()
                .any(|c| line.contains(&format!("questions {c}")))
            {
                continue;
            }
            if UNTIL_INTERRUPTED.iter().any(|c| line.starts_with(c)) {
                let status = interrupted(&line, &dir, &path);
                assert_eq!(status.code(), Some(0), "`{line}` stopped with {status:?}");
                ran += 1;
                continue;
            }
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(&line)
                .current_dir(&dir)
                .env("PATH", &path)
                .env("HOME", &home)
                .env_remove("QUESTIONS_DB")
                .env("QUESTIONS_NOW", NOW)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let expected = NOT_ZERO
                .iter()
                .find(|(l, _)| *l == line)
                .map_or(0, |(_, code)| *code);
            if expected != 0 {
                seen_not_zero.push(line.clone());
            }
            assert_eq!(
                out.status.code(),
                Some(expected),
                "{args:?} example `{line}`:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!stderr.contains("not found"), "`{line}`: {stderr}");
            ran += 1;
        }
    }
    assert!(ran > 30, "only {ran} examples ran");
    assert_eq!(seen_not_zero.len(), NOT_ZERO.len(), "{seen_not_zero:?}");
}

#[test]
fn the_readme_installs_as_cargo_wants_and_the_license_matches() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(readme.contains("cargo install --locked --path ."));
    assert!(!readme.contains("cargo install --path"));
    let msrv = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .unwrap()
        .trim_matches('"');
    assert!(
        readme.contains(&format!("Rust {msrv} or newer")),
        "the README names the minimum Rust, {msrv}"
    );
    assert!(manifest.contains("license = \"MIT\""));
    let license = std::fs::read_to_string(root.join("LICENSE")).expect("a LICENSE file");
    assert!(license.starts_with("MIT License"));
}

/// A command's `--help` opens with the line the command list gives it: its flags are
/// defined only when it is called, and a doc comment on a group of flags it takes in
/// would then replace that line.
#[test]
fn each_command_s_help_opens_with_its_own_line() {
    use clap::CommandFactory;
    let top = questions::cli::Cli::command();
    for name in crate::common::commands() {
        let about = top
            .find_subcommand(&name)
            .and_then(|c| c.get_about())
            .map_or_else(
                || panic!("{name} has no line in the command list"),
                std::string::ToString::to_string,
            );
        let run = finish({
            let mut cmd = bare_command(Path::new("."));
            cmd.args([name.as_str(), "--help"]);
            cmd
        });
        assert_eq!(run.code, 0, "{name} --help: {run:?}");
        assert_eq!(
            run.stdout.lines().next(),
            Some(about.as_str()),
            "{name} --help"
        );
    }
}
