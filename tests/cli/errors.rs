use std::os::unix::ffi::OsStrExt;

use crate::common::*;

#[test]
fn usage_errors_print_the_failure_json_and_exit_2() {
    let l = Ledger::new();
    let run = l.run(["log", "--stage", "s", "--question", "q", "--bogus"]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    assert_eq!(run.json["procedure"], "log");
    assert!(
        run.json["error"].as_str().unwrap().contains("--bogus"),
        "{run:?}"
    );

    let run = l.run(["frobnicate"]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    assert!(
        run.json.get("procedure").is_none(),
        "no command could be read"
    );

    let run = l.run(Vec::<&str>::new());
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    l.assert_not_created();
}

#[test]
fn help_and_version_print_text_and_exit_0() {
    let l = Ledger::new();
    let help = l.run(["--help"]);
    assert_eq!(help.code, 0);
    assert!(help.stdout.contains("check"), "{}", help.stdout);
    let help = l.run(["log", "--help"]);
    assert_eq!(help.code, 0);
    assert!(help.stdout.contains("Example"), "{}", help.stdout);
    let version = l.run(["--version"]);
    assert_eq!(version.code, 0);
    assert!(version.stdout.starts_with("questions "));
}

#[test]
fn invalid_utf8_in_an_argument_is_a_usage_error() {
    let l = Ledger::new();
    let bad = std::ffi::OsStr::from_bytes(b"caf\xe9");
    let mut cmd = l.command();
    cmd.args(["log", "--stage", "s", "--question"]).arg(bad);
    let run = finish(cmd);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    l.assert_not_created();
}

#[test]
fn sqlite_only_a_file_that_is_not_a_database_is_left_untouched() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let text = b"# my notes\nnot a database, but precious\n".repeat(200);
    std::fs::write(&l.path, &text).unwrap();
    for args in [
        vec!["log", "--stage", "s", "--question", "q"],
        vec!["list"],
        vec!["check", "--stage", "s"],
    ] {
        let run = l.run(&args);
        assert_eq!((run.code, run.error_code()), (1, "db_error"), "{args:?}");
        assert!(l.bytes() == text, "{args:?} changed the file");
    }
}

#[test]
fn sqlite_only_a_directory_as_ledger_is_an_io_error() {
    crate::sqlite_only!();
    let l = Ledger::new();
    std::fs::create_dir(&l.path).unwrap();
    for args in [vec!["log", "--stage", "s", "--question", "q"], vec!["list"]] {
        let run = l.run(&args);
        assert_eq!((run.code, run.error_code()), (1, "io_error"), "{args:?}");
    }
}

#[test]
fn sqlite_only_a_file_in_place_of_the_folder_is_an_io_error() {
    crate::sqlite_only!();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plain"), b"x").unwrap();
    let mut cmd = bare_command(dir.path());
    cmd.arg("--db")
        .arg(dir.path().join("plain/ledger.db"))
        .args(["log", "--stage", "s", "--question", "q"]);
    let run = finish(cmd);
    assert_eq!((run.code, run.error_code()), (1, "io_error"));
}

#[test]
fn sqlite_only_a_read_only_folder_is_a_clear_error() {
    crate::sqlite_only!();
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Root writes through permissions, so as root the call runs as an unprivileged user.
    let as_root = std::fs::write(locked.join("probe"), b"").is_ok();
    let mut cmd = if as_root {
        let mut c = assert_cmd::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
        c
    } else {
        assert_cmd::Command::new(BIN)
    };
    cmd.current_dir(dir.path())
        .env_remove("QUESTIONS_DB")
        .arg("--db")
        .arg(locked.join("ledger.db"))
        .args(["log", "--stage", "s", "--question", "q"]);
    let run = finish(cmd);
    assert_eq!((run.code, run.error_code()), (1, "io_error"), "{run:?}");
    assert!(
        run.json["error"].as_str().unwrap().contains("ermission"),
        "{run:?}"
    );
    assert!(!locked.join("ledger.db").exists());
}

#[test]
fn a_closed_stdout_is_not_a_panic() {
    let l = Ledger::new();
    for i in 0..30 {
        l.log("s", &format!("question {i}"));
    }
    let mut child = std::process::Command::new(BIN)
        .arg("--db")
        .arg(l.db())
        .arg("list")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn completions_and_the_man_page_come_from_the_command_definition() {
    let l = Ledger::new();
    for shell in ["bash", "zsh", "fish"] {
        let run = l.run(["completions", shell]);
        assert_eq!(run.code, 0, "{shell}");
        let stage_flag = if shell == "fish" {
            "-l stage"
        } else {
            "--stage"
        };
        for word in ["ingest", "accept-defaults", stage_flag] {
            assert!(run.stdout.contains(word), "{shell} completion lacks {word}");
        }
    }
    let run = l.run(["completions", "tcsh"]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    let man = l.run(["man"]);
    assert_eq!(man.code, 0);
    assert!(
        man.stdout.starts_with(".ie") || man.stdout.contains(".TH questions"),
        "{}",
        &man.stdout[..200.min(man.stdout.len())]
    );
    assert!(man.stdout.contains("check"));
    l.assert_not_created();
}

#[test]
fn every_command_help_has_a_real_example() {
    let l = Ledger::new();
    for command in commands() {
        let help = l.run([command.as_str(), "--help"]);
        assert_eq!(help.code, 0, "{command}");
        assert!(
            help.stdout.contains(&format!("questions {command}")),
            "{command} --help has no example:\n{}",
            help.stdout
        );
    }
}

#[test]
fn a_panic_keeps_its_message_and_says_whether_the_change_was_recorded() {
    let l = Ledger::new();
    l.log("s", "already here");
    let panicking = |point: &str, question: &str| {
        let out = l
            .command()
            .env("QUESTIONS_TEST_PANIC", point)
            .args(["log", "--stage", "s", "--question", question])
            .output()
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            out.status.code(),
            json,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    let (code, json, stderr) = panicking("before-write", "never written");
    assert_eq!(code, Some(1));
    assert_eq!(json["error_code"], "db_error");
    assert!(json["error"]
        .as_str()
        .unwrap()
        .contains("nothing this call started was recorded"));
    // The panic's own words reach stderr, for the bug report.
    assert!(
        stderr.contains("panicked") && stderr.contains("injected at before-write"),
        "{stderr}"
    );

    let (code, json, stderr) = panicking("after-commit", "written, then a panic");
    assert_eq!(code, Some(1));
    let error = json["error"].as_str().unwrap();
    assert!(error.contains("after its change was recorded"), "{error}");
    assert!(!error.contains("nothing"), "{error}");
    assert!(stderr.contains("injected at after-commit"), "{stderr}");

    let texts: Vec<String> = l
        .all()
        .iter()
        .map(|q| q["question"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts, ["already here", "written, then a panic"]);
}

#[test]
fn text_that_looks_like_sql_is_stored_and_read_back_as_text() {
    let l = Ledger::new();
    let evil = "'); DROP TABLE questions; --";
    let id = l.log("s", evil);
    l.log("s", "an innocent bystander");
    let answered = l.ok(["answer", "--id", &id.to_string(), "--answer", evil]);
    assert_eq!(answered["question"]["answer"], evil);
    let listed = l.all();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["question"], evil);
    assert_eq!(l.ok(["list", "--stage", evil])["count"], 0);
}

#[test]
fn ledger_and_input_text_reaches_stderr_without_escape_sequences() {
    let l = Ledger::new();
    let evil = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[31mA blog\u{9b}31m\u{8}";
    let id = l.log(evil, "Goal?").to_string();
    l.ok(["answer", "--id", &id, "--answer", evil]);
    let conflict = l.run(["answer", "--id", &id, "--answer", "other"]);
    assert_eq!(conflict.error_code(), "conflict");
    let outside = l.run(["check", "--stage", "elsewhere", "--ids", &id]);
    assert_eq!(outside.error_code(), "not_found");
    let parse = l.run_stdin(
        ["ingest", "--stage", "s", "--format", "open-questions"],
        format!(
            "```json\n{{\"openQuestions\": [{{\"question\": \"{}\"}}]}}\n```\n",
            "\\u001b[31mQ?"
        ),
    );
    l.log(evil, "Deadline?");
    let gate = l.run(["check", "--stage", evil]);
    for run in [&conflict, &outside, &parse, &gate] {
        for c in ['\u{1b}', '\u{7}', '\u{9b}', '\u{8}'] {
            assert!(!run.stderr.contains(c), "{c:?} on stderr: {:?}", run.stderr);
        }
    }
    // The JSON keeps the text exact.
    assert!(
        conflict.json["error"].as_str().unwrap().contains(evil),
        "{conflict:?}"
    );
    assert_eq!(gate.code, 1, "{gate:?}");
}

#[test]
fn help_texts_a_newcomer_needs() {
    let l = Ledger::new();
    let help = |args: &[&str]| -> String {
        let run = l.run(args);
        assert_eq!(run.code, 0, "{args:?}");
        run.stdout
    };
    for command in [
        "log",
        "list",
        "check",
        "clear",
        "history",
        "ingest",
        "render",
        "import",
        "answers",
        "accept-defaults",
        "ask",
    ] {
        let text = help(&[command, "--help"]);
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.trim_start().starts_with("--stage <STAGE>"))
            .unwrap_or_else(|| panic!("{command} has no --stage:\n{text}"));
        let same_line = lines[at].trim_start()["--stage <STAGE>".len()..].trim();
        let next_line = lines.get(at + 1).map_or("", |l| l.trim());
        assert!(
            !same_line.is_empty() || !(next_line.is_empty() || next_line.starts_with('-')),
            "{command} --stage has no help text:\n{text}"
        );
    }
    let text = help(&["--help"]);
    assert!(text.contains("PostgreSQL"), "--db help:\n{text}");
    let text = help(&["check", "--help"]);
    assert!(text.contains("waits forever"), "check --wait help:\n{text}");
    assert!(help(&["answer", "--help"]).contains("'-'"));
}

#[test]
fn the_man_page_names_no_page_that_does_not_exist() {
    let l = Ledger::new();
    let man = l.run(["man"]);
    assert_eq!(man.code, 0);
    assert!(
        !man.stdout.contains("(1)"),
        "a reference to another page: {}",
        man.stdout
            .lines()
            .filter(|l| l.contains("(1)"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    for command in [
        "log",
        "check",
        "ingest",
        "render",
        "info",
        "accept\\-defaults",
    ] {
        assert!(
            man.stdout.contains(&format!("questions {command}")),
            "the man page lacks {command}"
        );
    }
}
