//! `questions init CLIENT`: the MCP server entry and the hooks written into a client's
//! config, every other byte kept, byte-identical on a second run, `--dry-run` writing
//! nothing, `--remove` taking ours out; what it cannot edit refused whole.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tempfile::TempDir;

use crate::common::{bare_command, finish, Run, BIN};

/// A git project (where project configs go) and a home (where user configs go).
struct Place {
    project: TempDir,
    home: TempDir,
    /// The PATH's folder of this machine's `questions`: a link to the binary under test.
    bin: TempDir,
}

impl Place {
    fn new() -> Place {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join(".git")).unwrap();
        std::fs::create_dir(project.path().join("src")).unwrap();
        let bin = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(BIN, bin.path().join("questions")).unwrap();
        Place {
            project,
            home: tempfile::tempdir().unwrap(),
            bin,
        }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.project.path().join(rel)
    }

    fn h(&self, rel: &str) -> PathBuf {
        self.home.path().join(rel)
    }

    /// `init` run from a folder inside the project.
    fn init(&self, args: &[&str]) -> Run {
        self.init_with_path(&self.bin.path().display().to_string(), args)
    }

    fn init_with_path(&self, path: &str, args: &[&str]) -> Run {
        self.init_with_env(path, &[], args)
    }

    fn init_with_env(&self, path: &str, env: &[(&str, &str)], args: &[&str]) -> Run {
        let mut cmd = bare_command(&self.p("src"));
        cmd.env("HOME", self.home.path())
            .env("PATH", format!("{path}:/usr/bin:/bin"))
            .envs(env.iter().copied())
            .arg("init")
            .args(args);
        finish(cmd)
    }

    fn ok(&self, args: &[&str]) -> Value {
        let run = self.init(args);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.json["ok"], true, "{run:?}");
        run.json
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn native() -> String {
    std::fs::canonicalize(BIN).unwrap().display().to_string()
}

fn actions(report: &Value) -> Vec<String> {
    report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["action"].as_str().unwrap().to_string())
        .collect()
}

/// Runs `init` twice and checks the second run changed no byte.
fn twice(place: &Place, args: &[&str], files: &[PathBuf]) -> Value {
    let first = place.ok(args);
    let bytes: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let second = place.ok(args);
    assert!(
        actions(&second).iter().all(|a| a == "unchanged"),
        "{second}"
    );
    for (f, b) in files.iter().zip(bytes) {
        assert_eq!(std::fs::read(f).unwrap(), b, "{} changed", f.display());
    }
    first
}

const OTHER_HOOK: &str = r#"{
  "permissions": {"allow": ["Bash(ls)"]},
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo bash"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  }
}"#;

#[test]
fn claude_code_gets_the_server_and_both_hooks_and_keeps_the_rest() {
    let place = Place::new();
    write(
        &place.p(".mcp.json"),
        r#"{"mcpServers": {"other": {"command": "other-server", "args": ["--x"]}}}"#,
    );
    write(&place.p(".claude/settings.json"), OTHER_HOOK);
    let files = [place.p(".mcp.json"), place.p(".claude/settings.json")];
    let report = twice(&place, &["claude-code"], &files);
    assert_eq!(actions(&report), ["updated", "updated"]);
    assert_eq!(report["command"], "questions");
    let mcp = read_json(&files[0]);
    assert_eq!(mcp["mcpServers"]["other"]["command"], "other-server");
    assert_eq!(
        mcp["mcpServers"]["questions"],
        json!({"command": "questions", "args": ["mcp", "--no-votes"]})
    );
    let settings = read_json(&files[1]);
    // The least grant a headless agent needs to ask and collect its answers, beside the
    // user's own.
    assert_eq!(
        settings["permissions"],
        json!({"allow": ["Bash(ls)", "mcp__questions__ask_questions",
                         "mcp__questions__wait_for_answers"]})
    );
    let hook = "questions hook claude-code".to_string();
    let pre = settings["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre[0]["matcher"], "Bash", "the other hook stays first");
    assert_eq!(
        pre[1],
        json!({"matcher": "AskUserQuestion", "hooks": [{"type": "command", "command": hook}]})
    );
    assert_eq!(
        settings["hooks"]["PostToolUse"][0],
        json!({"matcher": "AskUserQuestion", "hooks": [{"type": "command", "command": hook}]})
    );
    assert_eq!(
        settings["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send done"
    );
    assert_eq!(
        settings["hooks"]["Stop"][1],
        json!({"hooks": [{"type": "command", "command": hook}]}),
        "ours beside theirs, not inside it"
    );

    // Taken out again: the other entries are as they were.
    let removed = place.ok(&["claude-code", "--remove"]);
    assert_eq!(actions(&removed), ["removed", "removed"]);
    let mcp = read_json(&files[0]);
    assert_eq!(
        mcp,
        json!({"mcpServers": {"other": {"command": "other-server", "args": ["--x"]}}})
    );
    let settings = read_json(&files[1]);
    let original: Value = serde_json::from_str(OTHER_HOOK).unwrap();
    assert_eq!(settings, original);
}

#[test]
fn a_moved_binary_replaces_our_entries_in_place() {
    let place = Place::new();
    let stale = r#"{"hooks": {"PreToolUse": [
        {"matcher": "AskUserQuestion", "hooks": [{"type": "command", "command": "/old/bin/questions hook claude-code"}]},
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo bash"}]}
    ]}}"#;
    write(&place.p(".claude/settings.json"), stale);
    place.ok(&["claude-code"]);
    let settings = read_json(&place.p(".claude/settings.json"));
    let pre = settings["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2, "replaced, not added: {pre:?}");
    assert_eq!(
        pre[0]["hooks"][0]["command"],
        "questions hook claude-code".to_string()
    );
    assert_eq!(pre[1]["matcher"], "Bash");
}

#[test]
fn a_dry_run_shows_the_change_and_writes_nothing() {
    let place = Place::new();
    write(&place.p(".cursor/mcp.json"), r#"{"mcpServers": {}}"#);
    let report = place.ok(&["cursor", "--dry-run"]);
    assert_eq!(report["dry_run"], true);
    assert_eq!(actions(&report), ["updated"]);
    let shown: Value =
        serde_json::from_str(report["files"][0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(shown["mcpServers"]["questions"]["command"], "questions");
    assert_eq!(
        std::fs::read_to_string(place.p(".cursor/mcp.json")).unwrap(),
        r#"{"mcpServers": {}}"#
    );
    let report = place.ok(&["claude-code", "--dry-run"]);
    assert_eq!(actions(&report), ["created", "created"]);
    assert!(!place.p(".mcp.json").exists());
    assert!(!place.p(".claude").exists());
}

#[test]
fn every_client_keeps_other_servers_twice() {
    let place = Place::new();
    let other = r#"{"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}"#;
    for (client, file) in [
        ("gemini", ".gemini/settings.json"),
        ("cursor", ".cursor/mcp.json"),
    ] {
        write(&place.p(file), other);
        twice(&place, &[client], &[place.p(file)]);
        let doc = read_json(&place.p(file));
        assert_eq!(doc["theme"], "dark", "{client}");
        assert_eq!(
            doc["mcpServers"]["other"],
            json!({"command": "x"}),
            "{client}"
        );
        assert_eq!(
            doc["mcpServers"]["questions"]["args"],
            json!(["mcp", "--no-votes"]),
            "{client}"
        );
    }
    let gemini = read_json(&place.p(".gemini/settings.json"));
    for event in ["BeforeTool", "AfterTool"] {
        assert_eq!(
            gemini["hooks"][event],
            json!([{"matcher": "ask_user", "hooks": [
                {"type": "command", "command": "questions hook gemini"}]}]),
            "{gemini}"
        );
    }
    write(
        &place.p(".vscode/mcp.json"),
        r#"{"servers": {"other": {"type": "http", "url": "http://127.0.0.1:1/"}}, "inputs": []}"#,
    );
    twice(&place, &["vscode"], &[place.p(".vscode/mcp.json")]);
    let doc = read_json(&place.p(".vscode/mcp.json"));
    assert_eq!(doc["inputs"], json!([]));
    assert_eq!(doc["servers"]["other"]["type"], "http");
    assert_eq!(
        doc["servers"]["questions"],
        json!({"type": "stdio", "command": "questions", "args": ["mcp", "--no-votes"], "cwd": "${workspaceFolder}"})
    );
}

#[test]
fn codex_keeps_other_tables_and_comments_as_written() {
    let place = Place::new();
    let file = place.h(".codex/config.toml");
    let before = "# my settings\nmodel = \"o4\"  # the model\n\n[mcp_servers.other]\ncommand = \"x\"\nargs = [\"a\"]\n";
    write(&file, before);
    twice(&place, &["codex", "--user"], std::slice::from_ref(&file));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with(before),
        "the rest stays byte for byte:\n{text}"
    );
    let doc: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(
        doc["mcp_servers"]["questions"]["command"].as_str(),
        Some(native().as_str())
    );
    assert_eq!(
        doc["mcp_servers"]["questions"]["args"],
        toml::Value::Array(vec!["mcp".into(), "--no-votes".into()]),
        "an agent's server refuses votes"
    );
    let hook = format!("{} hook codex", native());
    for event in ["PreToolUse", "PostToolUse"] {
        let group = &doc["hooks"][event][0];
        assert_eq!(
            group["matcher"].as_str(),
            Some("request_user_input"),
            "{text}"
        );
        assert_eq!(group["hooks"][0]["command"].as_str(), Some(hook.as_str()));
        assert_eq!(group["hooks"][0]["type"].as_str(), Some("command"));
    }
    place.ok(&["codex", "--user", "--remove"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
}

#[test]
fn user_scope_writes_the_users_config() {
    let place = Place::new();
    write(
        &place.h(".claude.json"),
        r#"{"numStartups": 3, "mcpServers": {}}"#,
    );
    let report = place.ok(&["claude-code", "--user"]);
    assert_eq!(report["scope"], "user");
    let user = read_json(&place.h(".claude.json"));
    assert_eq!(user["numStartups"], 3);
    assert_eq!(user["mcpServers"]["questions"]["command"], native());
    assert!(place.h(".claude/settings.json").exists());
    assert!(
        !place.p(".mcp.json").exists(),
        "the project's config is left alone"
    );
}

#[test]
fn gemini_user_scope_writes_the_policy_headless_runs_need_and_keeps_the_users_rules() {
    let place = Place::new();
    let policy = place.h(".gemini/policies/questions.toml");
    write(
        &policy,
        "# mine\n[[rule]]\ntoolName = \"run_shell_command\"\ndecision = \"ask_user\"\npriority = 10\n",
    );
    twice(
        &place,
        &["gemini", "--user"],
        &[place.h(".gemini/settings.json"), policy.clone()],
    );
    let text = std::fs::read_to_string(&policy).unwrap();
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    let rules = doc["rule"].as_array_of_tables().unwrap();
    let ours: Vec<&str> = rules
        .iter()
        .filter(|r| r.get("mcpName").and_then(|v| v.as_str()) == Some("questions"))
        .inspect(|r| {
            assert_eq!(r["decision"].as_str(), Some("allow"));
            assert_eq!(r["priority"].as_integer(), Some(100));
        })
        .filter_map(|r| r.get("toolName")?.as_str())
        .collect();
    assert_eq!(ours, ["ask_questions", "wait_for_answers"], "{text}");
    assert!(text.starts_with("# mine\n"), "{text}");
    // The project's init names the file, and how to have it written.
    let project = place.ok(&["gemini"]);
    let next = project["next"].to_string();
    assert!(
        next.contains("init gemini --user") && next.contains("wait_for_answers"),
        "{next}"
    );
    place.ok(&["gemini", "--user", "--remove"]);
    let left = std::fs::read_to_string(&policy).unwrap();
    assert!(!left.contains("questions"), "{left}");
    assert!(left.contains("run_shell_command"), "{left}");
}

#[test]
fn removing_what_init_created_leaves_no_file() {
    let place = Place::new();
    place.ok(&["claude-code"]);
    assert!(place.p(".mcp.json").exists());
    let report = place.ok(&["claude-code", "--remove"]);
    assert_eq!(actions(&report), ["deleted", "deleted"]);
    assert!(!place.p(".mcp.json").exists());
    assert!(!place.p(".claude/settings.json").exists());
    let again = place.ok(&["claude-code", "--remove"]);
    assert_eq!(actions(&again), ["unchanged", "unchanged"]);
}

#[test]
fn a_config_that_cannot_be_read_is_left_alone() {
    let place = Place::new();
    let broken = "{\n  \"servers\": {,\n}\n";
    write(&place.p(".vscode/mcp.json"), broken);
    let run = place.init(&["vscode"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.error_code(), "parse_error");
    assert!(
        run.json["error"].as_str().unwrap().contains("line 2"),
        "{run:?}"
    );
    assert_eq!(
        std::fs::read_to_string(place.p(".vscode/mcp.json")).unwrap(),
        broken
    );
    write(&place.p(".cursor/mcp.json"), "[1, 2]");
    assert_eq!(place.init(&["cursor"]).error_code(), "parse_error");
    write(&place.p(".codex/config.toml"), "model = \n");
    assert_eq!(place.init(&["codex"]).error_code(), "parse_error");
    let run = place.init(&["emacs"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.error_code(), "usage");
}

const UWF_SKILL: &str = "Questions are kept in uwf-questions.db via questions.mjs.\n\n\
```sh\nnode .github/skills/uwf-question-protocol/questions.mjs log \\\n  --stage intake --question \"What is the goal?\"\n\
node .github/skills/uwf-question-protocol/questions.mjs check --stage intake --ids 7,8,9\n```\n\n\
Run `node .github/skills/uwf-question-protocol/questions.mjs answer --id 7 --answer x` after asking.\n\n\
Keep the open questions list short; questions answer nothing by themselves.\n";

#[test]
fn uwf_docs_switch_to_questions_and_back() {
    let place = Place::new();
    let skill = place.p(".github/skills/uwf-question-protocol/SKILL.md");
    let agent = place.p(".github/agents/orchestrator.agent.md");
    let other = place.p(".github/README.md");
    write(&skill, UWF_SKILL);
    write(
        &agent,
        "Gate with `node ./.github/skills/uwf-question-protocol/questions.mjs check --stage design`.\n",
    );
    write(&other, "Nothing about questions here.\n");
    let report = place.ok(&["uwf"]);
    assert_eq!(report["client"], "uwf");
    let ledger = place.p(".github/skills/uwf-question-protocol/uwf-questions.db");
    assert_eq!(report["ledger"], ledger.display().to_string());
    let files = report["files"].as_array().unwrap();
    assert_eq!(
        files.len(),
        3,
        "two docs and the ledger's .gitignore: {report}"
    );
    let replaced: Vec<i64> = files
        .iter()
        .filter_map(|f| f["replaced"].as_i64())
        .collect();
    assert_eq!(replaced, vec![1, 3], "{report}");
    let text = std::fs::read_to_string(&skill).unwrap();
    assert!(!text.contains("questions.mjs log"), "{text}");
    assert!(
        text.contains("questions log \\\n  --stage intake"),
        "{text}"
    );
    assert!(text.contains("questions check --stage intake --ids 7,8,9"));
    assert!(text.contains("Run `questions answer --id 7"));
    assert!(text.contains("via questions.mjs."), "prose is left alone");
    assert_eq!(
        std::fs::read_to_string(&other).unwrap(),
        "Nothing about questions here.\n"
    );
    // Again: nothing left to switch.
    assert_eq!(place.ok(&["uwf"])["files"], json!([]));
    // Back: the docs are as they were, byte for byte, and the .gitignore init made goes.
    let back = place.ok(&["uwf", "--remove"]);
    assert_eq!(back["files"].as_array().unwrap().len(), 3);
    assert!(!place
        .p(".github/skills/uwf-question-protocol/.gitignore")
        .exists());
    assert_eq!(std::fs::read_to_string(&skill).unwrap(), UWF_SKILL);
    // The `./` spelling comes back in the protocol's usual one.
    assert_eq!(
        std::fs::read_to_string(&agent).unwrap(),
        "Gate with `node .github/skills/uwf-question-protocol/questions.mjs check --stage design`.\n"
    );
}

#[test]
fn uwf_needs_a_uwf_repository() {
    let place = Place::new();
    let run = place.init(&["uwf"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.error_code(), "not_found");
    write(
        &place.p(".github/skills/uwf-question-protocol/SKILL.md"),
        UWF_SKILL,
    );
    let run = place.init(&["uwf", "--user"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.error_code(), "usage");
    // A dry run shows the switched text and writes nothing.
    let report = place.ok(&["uwf", "--dry-run"]);
    assert!(report["files"][0]["content"]
        .as_str()
        .unwrap()
        .contains("questions check --stage intake"));
    assert_eq!(
        std::fs::read_to_string(place.p(".github/skills/uwf-question-protocol/SKILL.md")).unwrap(),
        UWF_SKILL
    );
}

/// A team's settings as people write them: comments, a trailing comma, a number no double
/// holds, a decimal's own spelling, a key written twice, a hook of their own on the same
/// tool, and one that runs `… hook claude-code` but is not ours.
const TEAM_SETTINGS: &str = r#"{
  // Team settings: keep this comment.
  "permissions": {"allow": ["Bash(ls)"]},
  "cleanupPeriodDays": 123456789012345678901234567890,
  "ratio": 1.50,
  "env": {"A": "1"},
  "env": {"A": "2"},
  "hooks": {
    "PreToolUse": [
      {"matcher": "AskUserQuestion", "hooks": [{"type": "command", "command": "my-wrapper hook claude-code"}]},
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  }
}
"#;

const TEAM_SETTINGS_AFTER: &str = r#"{
  // Team settings: keep this comment.
  "permissions": {"allow": ["Bash(ls)", "mcp__questions__ask_questions", "mcp__questions__wait_for_answers"]},
  "cleanupPeriodDays": 123456789012345678901234567890,
  "ratio": 1.50,
  "env": {"A": "1"},
  "env": {"A": "2"},
  "hooks": {
    "PreToolUse": [
      {"matcher": "AskUserQuestion", "hooks": [{"type": "command", "command": "my-wrapper hook claude-code"}]},
      {
        "matcher": "AskUserQuestion",
        "hooks": [
          {
            "type": "command",
            "command": "questions hook claude-code --wait 90",
            "timeout": 120
          }
        ]
      },
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}, {"hooks": [{"type": "command", "command": "questions hook claude-code --wait 90", "timeout": 120}]}],
    "PostToolUse": [
      {
        "matcher": "AskUserQuestion",
        "hooks": [
          {
            "type": "command",
            "command": "questions hook claude-code --wait 90",
            "timeout": 120
          }
        ]
      }
    ]
  }
}
"#;

#[test]
fn every_byte_it_does_not_own_stays_as_written() {
    let place = Place::new();
    let settings = place.p(".claude/settings.json");
    write(&settings, TEAM_SETTINGS);
    let files = [settings.clone(), place.p(".mcp.json")];
    let report = twice(&place, &["claude-code", "--wait", "90"], &files);
    assert_eq!(report["warnings"], json!([]), "{report}");
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        TEAM_SETTINGS_AFTER
    );
    assert_eq!(
        std::fs::read_to_string(place.p(".mcp.json")).unwrap(),
        "{\n  \"mcpServers\": {\n    \"questions\": {\n      \"command\": \"questions\",\n      \
         \"args\": [\n        \"mcp\",\n        \"--no-votes\"\n      ]\n    }\n  }\n}\n"
    );
    let second = place.init(&["claude-code", "--wait", "90"]);
    assert_eq!(second.json["changed"], false);
    assert!(second.stderr.contains("nothing changed"), "{second:?}");

    // Out again: the file as it was, byte for byte; the file init created goes.
    let removed = place.ok(&["claude-code", "--remove"]);
    assert_eq!(actions(&removed), ["deleted", "removed"], "{removed}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), TEAM_SETTINGS);
    assert!(!place.p(".mcp.json").exists());
}

#[test]
fn a_hook_that_looks_like_ours_is_theirs_and_named() {
    let place = Place::new();
    let settings = place.p(".claude/settings.json");
    let theirs = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "questions hook claude-code --stage mine"}]}]}}"#;
    write(&settings, theirs);
    let report = place.ok(&["claude-code"]);
    assert!(
        report["warnings"][0]
            .as_str()
            .unwrap()
            .contains("--stage mine"),
        "{report}"
    );
    place.ok(&["claude-code", "--remove"]);
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), theirs);
}

#[test]
fn a_symlinked_config_is_written_at_its_target() {
    let place = Place::new();
    let shared = place.p("shared/mcp.json");
    write(&shared, "{\"mcpServers\": {\"a\": {\"command\": \"a\"}}}\n");
    std::os::unix::fs::symlink("shared/mcp.json", place.p(".mcp.json")).unwrap();
    let report = place.ok(&["claude-code"]);
    assert_eq!(report["files"][0]["target"], shared.display().to_string());
    assert!(std::fs::symlink_metadata(place.p(".mcp.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(&shared).unwrap(),
        "{\"mcpServers\": {\"a\": {\"command\": \"a\"}, \"questions\": {\"command\": \"questions\", \"args\": [\"mcp\", \"--no-votes\"]}}}\n"
    );
    place.ok(&["claude-code", "--remove"]);
    assert!(std::fs::symlink_metadata(place.p(".mcp.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(&shared).unwrap(),
        "{\"mcpServers\": {\"a\": {\"command\": \"a\"}}}\n"
    );
    // A linked TOML file emptied again stays a file, empty, behind its link.
    write(&place.p("shared/config.toml"), "");
    std::fs::create_dir_all(place.p(".codex")).unwrap();
    std::os::unix::fs::symlink("../shared/config.toml", place.p(".codex/config.toml")).unwrap();
    place.ok(&["codex"]);
    assert!(std::fs::read_to_string(place.p("shared/config.toml"))
        .unwrap()
        .contains("[mcp_servers.questions]"));
    place.ok(&["codex", "--remove"]);
    assert_eq!(
        std::fs::read_to_string(place.p("shared/config.toml")).unwrap(),
        ""
    );
    assert!(std::fs::symlink_metadata(place.p(".codex/config.toml"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_read_only_or_unreadable_config_is_refused_before_anything_is_written() {
    use std::os::unix::fs::PermissionsExt;
    let place = Place::new();
    let settings = place.p(".claude/settings.json");
    write(&settings, "{}\n");
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o444)).unwrap();
    let run = place.init(&["claude-code"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.error_code(), "io_error");
    assert!(
        run.json["error"].as_str().unwrap().contains("read-only"),
        "{run:?}"
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{}\n");
    assert!(
        !place.p(".mcp.json").exists(),
        "nothing written, not even the other file"
    );
    // Nothing to change: a read-only file that already holds ours is fine.
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o644)).unwrap();
    place.ok(&["claude-code"]);
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o444)).unwrap();
    assert_eq!(place.ok(&["claude-code"])["changed"], false);

    // Unreadable: a folder where the file should be, or bytes that are not text.
    std::fs::create_dir_all(place.p(".gemini/settings.json")).unwrap();
    assert_eq!(place.init(&["gemini"]).error_code(), "io_error");
    write(&place.p(".cursor/mcp.json"), "{\"a\": \"\u{fffd}\"}");
    std::fs::write(place.p(".cursor/mcp.json"), b"{\"a\": \"\xff\"}").unwrap();
    let run = place.init(&["cursor"]);
    assert_eq!(run.error_code(), "parse_error");
    assert_eq!(
        std::fs::read(place.p(".cursor/mcp.json")).unwrap(),
        b"{\"a\": \"\xff\"}"
    );
}

#[test]
fn keys_of_an_unexpected_type_are_refused_never_a_silent_success() {
    let place = Place::new();
    for (file, client, text) in [
        (".claude/settings.json", "claude-code", r#"{"hooks": []}"#),
        (
            ".claude/settings.json",
            "claude-code",
            r#"{"hooks": {"Stop": {}}}"#,
        ),
        (".cursor/mcp.json", "cursor", r#"{"mcpServers": "x"}"#),
        (
            ".vscode/mcp.json",
            "vscode",
            r#"{"servers": {"questions": {"command": "npx", "args": ["questions-ledger", "mcp"]}}}"#,
        ),
        (".codex/config.toml", "codex", "mcp_servers = \"x\"\n"),
        (".codex/config.toml", "codex", "# mine\nhooks = 3\n"),
        (
            ".codex/config.toml",
            "codex",
            "[hooks]\nPreToolUse = [{ matcher = \"x\" }]\n",
        ),
    ] {
        write(&place.p(file), text);
        let run = place.init(&[client]);
        assert_eq!(run.code, 1, "{text}: {run:?}");
        assert_eq!(run.error_code(), "conflict", "{text}");
        assert_eq!(
            std::fs::read_to_string(place.p(file)).unwrap(),
            text,
            "{text}"
        );
        std::fs::remove_file(place.p(file)).unwrap();
    }
}

#[test]
fn codex_toml_keeps_its_comments_byte_for_byte() {
    let place = Place::new();
    let file = place.p(".codex/config.toml");
    let before = "# Team config\nmodel = \"o4\"  # the model\n\n[mcp_servers.other]\ncommand = \"x\"\n\n[[hooks.PreToolUse]]\nmatcher = \"shell\"\n\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"audit\"\n";
    write(&file, before);
    twice(
        &place,
        &["codex", "--db", "../.questions/team.db"],
        std::slice::from_ref(&file),
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!(
            "# Team config\nmodel = \"o4\"  # the model\n\n[mcp_servers.other]\ncommand = \"x\"\n\n\
             [mcp_servers.questions]\ncommand = \"questions\"\nargs = [\"--db\", \".questions/team.db\", \"mcp\", \"--no-votes\"]\n\
             env_vars = [\"QUESTIONS_DB\"]\n\n\
             [mcp_servers.questions.tools.ask_questions]\napproval_mode = \"approve\"\n\n\
             [mcp_servers.questions.tools.wait_for_answers]\napproval_mode = \"approve\"\n\n\
             [[hooks.PreToolUse]]\nmatcher = \"shell\"\n\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"audit\"\n\n\
             [[hooks.PreToolUse]]\nmatcher = \"request_user_input\"\n\n\
             [[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"questions --db .questions/team.db hook codex\"\n\n\
             [[hooks.PostToolUse]]\nmatcher = \"request_user_input\"\n\n\
             [[hooks.PostToolUse.hooks]]\ntype = \"command\"\ncommand = \"questions --db .questions/team.db hook codex\"\n"
        )
    );
    place.ok(&["codex", "--remove"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
}

#[test]
fn project_files_run_questions_from_path_and_say_when_path_finds_another() {
    let place = Place::new();
    // PATH finds this binary: no warning.
    let report = place.ok(&["cursor", "--dry-run"]);
    assert_eq!(report["command"], "questions");
    assert_eq!(report["warnings"], json!([]));
    // None on PATH.
    let empty = tempfile::tempdir().unwrap();
    let run = place.init_with_path(
        &empty.path().display().to_string(),
        &["cursor", "--dry-run"],
    );
    assert!(
        run.json["warnings"][0]
            .as_str()
            .unwrap()
            .contains("PATH has none"),
        "{run:?}"
    );
    assert!(run.stderr.contains("warning: "), "{run:?}");
    // A launcher script first on PATH.
    let launcher = tempfile::tempdir().unwrap();
    write(&launcher.path().join("questions"), "#!/usr/bin/env node\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        launcher.path().join("questions"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let run = place.init_with_path(
        &launcher.path().display().to_string(),
        &["cursor", "--dry-run"],
    );
    assert!(
        run.json["warnings"][0]
            .as_str()
            .unwrap()
            .contains("launcher"),
        "{run:?}"
    );
    // --user: the native path, whatever PATH finds.
    let run = place.init_with_path(
        &launcher.path().display().to_string(),
        &["cursor", "--user", "--dry-run"],
    );
    assert_eq!(run.json["command"], native());
    assert_eq!(run.json["warnings"], json!([]));
}

#[test]
fn db_and_wait_are_carried_and_a_password_is_refused() {
    let place = Place::new();
    let report = place.ok(&["gemini", "--db", "../ledgers/team.db", "--wait", "30"]);
    assert_eq!(report["changed"], true);
    let doc = read_json(&place.p(".gemini/settings.json"));
    assert_eq!(
        doc["mcpServers"]["questions"]["args"],
        json!(["--db", "ledgers/team.db", "mcp", "--no-votes"]),
        "a path inside the project, from the project's top: {doc}"
    );
    assert_eq!(
        doc["hooks"]["BeforeTool"][0]["hooks"][0]["command"],
        "questions --db ledgers/team.db hook gemini --wait 30"
    );
    // --user: absolute.
    place.ok(&["cursor", "--user", "--db", "x.db"]);
    let doc = read_json(&place.h(".cursor/mcp.json"));
    assert_eq!(
        doc["mcpServers"]["questions"]["args"][1],
        place.p("src/x.db").display().to_string()
    );
    for secret in [
        "postgres://me:secret@db/q",
        "host=db password=secret dbname=q",
    ] {
        let run = place.init(&["cursor", "--db", secret]);
        assert_eq!(run.code, 2, "{run:?}");
        assert_eq!(run.error_code(), "usage");
        assert!(!run.stdout.contains("secret") && !run.stderr.contains("secret"));
    }
    let run = place.init(&["cursor", "--wait", "5"]);
    assert_eq!(run.code, 2, "cursor has no hooks: {run:?}");
}

/// A real git repository holding uwf's skill folder and uwf's own `*.db` ignore.
fn uwf_repository() -> Option<TempDir> {
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir.path())
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    git(&["init", "-q"])?;
    write(&dir.path().join(".gitignore"), "*.db\nnode_modules/\n");
    write(
        &dir.path()
            .join(".github/skills/uwf-question-protocol/SKILL.md"),
        UWF_SKILL,
    );
    git(&["add", "-A"])?;
    git(&["commit", "-q", "-m", "uwf"])?;
    Some(dir)
}

fn git_status(dir: &Path) -> String {
    let out = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

fn in_repo(dir: &Path, args: &[&str]) -> Run {
    let mut cmd = bare_command(dir);
    cmd.env("HOME", dir).args(args);
    finish(cmd)
}

#[test]
fn a_uwf_repository_after_init_commits_no_ledger() {
    let Some(repo) = uwf_repository() else {
        return crate::common::skip("git is not installed");
    };
    let dir = repo.path();
    let run = in_repo(dir, &["init", "uwf"]);
    assert_eq!(run.code, 0, "{run:?}");
    let commit = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(["commit", "-qam", "questions"])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(commit.success());
    std::process::Command::new("git")
        .args(["add", "-A"])
        .current_dir(dir)
        .status()
        .unwrap();
    std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-qm",
            "ignore",
        ])
        .current_dir(dir)
        .status()
        .unwrap();
    assert_eq!(git_status(dir), "", "init's own changes committed");
    let run = in_repo(
        dir,
        &[
            "log",
            "--stage",
            "intake",
            "--question",
            "What is the goal?",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        dir.join(".github/skills/uwf-question-protocol/uwf-questions.db")
            .exists(),
        "the uwf ledger"
    );
    assert!(!run.stderr.contains("git"), "nothing to warn of: {run:?}");
    // The companions exist while a connection is open; ignored either way.
    for name in ["uwf-questions.db-wal", "uwf-questions.db-shm"] {
        write(
            &dir.join(".github/skills/uwf-question-protocol").join(name),
            "x",
        );
    }
    assert_eq!(git_status(dir), "", "git status --porcelain after log");
}

#[test]
fn a_ledger_created_where_git_would_commit_it_is_named_once() {
    let Some(repo) = uwf_repository() else {
        return crate::common::skip("git is not installed");
    };
    let dir = repo.path();
    let run = in_repo(
        dir,
        &[
            "log",
            "--stage",
            "intake",
            "--question",
            "What is the goal?",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let warning = run
        .stderr
        .lines()
        .find(|l| l.contains("git does not ignore"));
    let warning = warning.unwrap_or_else(|| panic!("no warning: {run:?}"));
    assert!(warning.contains("uwf-questions.db-wal") && warning.contains("uwf-questions.db-shm"));
    assert!(
        !warning.contains("uwf-questions.db,"),
        "uwf's *.db covers the ledger: {warning}"
    );
    let again = in_repo(
        dir,
        &[
            "log",
            "--stage",
            "intake",
            "--question",
            "And the deadline?",
        ],
    );
    assert!(
        !again.stderr.contains("git does not ignore"),
        "once: {again:?}"
    );
}

/// A hook's `timeout` covers its `--wait`, in each harness's own unit (Gemini CLI counts
/// milliseconds: its default 60 000 killed `--wait 90`); each harness gets the least grant
/// that lets a headless agent call `ask_questions`, and Codex's server the ledger's
/// variable; `init` says what the person must still do, and `--remove` takes it all out.
#[test]
fn hooks_cover_their_wait_in_each_harness_s_unit_and_the_least_grant_is_written() {
    let place = Place::new();
    let report = place.ok(&["gemini", "--wait", "90"]);
    assert!(
        report["next"][0]
            .as_str()
            .unwrap()
            .contains("trust the folder")
            && report["next"][1].as_str().unwrap().contains("policy"),
        "{report}"
    );
    let gemini = read_json(&place.p(".gemini/settings.json"));
    for event in ["BeforeTool", "AfterTool"] {
        let hook = &gemini["hooks"][event][0]["hooks"][0];
        assert_eq!(hook["timeout"], 120_000, "{event}: milliseconds");
    }

    let report = place.ok(&["claude-code", "--wait", "90"]);
    assert!(
        report["next"][0].as_str().unwrap().contains("trust"),
        "{report}"
    );
    let claude = read_json(&place.p(".claude/settings.json"));
    for event in ["PreToolUse", "PostToolUse", "Stop"] {
        assert_eq!(
            claude["hooks"][event][0]["hooks"][0]["timeout"], 120,
            "{event}: seconds"
        );
    }
    assert_eq!(
        claude["permissions"]["allow"],
        json!([
            "mcp__questions__ask_questions",
            "mcp__questions__wait_for_answers"
        ])
    );

    let report = place.ok(&["codex", "--wait", "90"]);
    assert_eq!(report["next"].as_array().unwrap().len(), 3, "{report}");
    // Codex's TUI keeps its first launch's environment for its hooks: how to pin the ledger.
    assert!(
        report["next"][2].as_str().unwrap().contains("--db"),
        "{report}"
    );
    let pinned = place.ok(&["codex", "--db", ".questions/pinned.db"]);
    assert_eq!(pinned["next"].as_array().unwrap().len(), 2, "{pinned}");
    place.ok(&["codex", "--wait", "90"]);
    let text = std::fs::read_to_string(place.p(".codex/config.toml")).unwrap();
    let codex: toml::Table = toml::from_str(&text).unwrap();
    let server = &codex["mcp_servers"]["questions"];
    assert_eq!(
        server["env_vars"],
        toml::Value::Array(vec!["QUESTIONS_DB".into()])
    );
    assert_eq!(
        server["tools"]["ask_questions"]["approval_mode"].as_str(),
        Some("approve")
    );
    for event in ["PreToolUse", "PostToolUse"] {
        let hook = &codex["hooks"][event][0]["hooks"][0];
        assert_eq!(hook["timeout"].as_integer(), Some(120), "{event}: seconds");
    }
    // Run again: nothing changes.
    for client in ["gemini", "claude-code", "codex"] {
        let again = place.ok(&[client, "--wait", "90"]);
        assert_eq!(again["changed"], false, "{client}: {again}");
    }
    // A shorter wait rewrites the timeout with it.
    place.ok(&["codex", "--wait", "5"]);
    let text = std::fs::read_to_string(place.p(".codex/config.toml")).unwrap();
    assert!(text.contains("timeout = 35"), "{text}");

    for client in ["gemini", "claude-code", "codex"] {
        let removed = place.ok(&[client, "--remove"]);
        assert!(removed.get("next").is_none(), "{removed}");
    }
    for file in [
        ".gemini/settings.json",
        ".claude/settings.json",
        ".codex/config.toml",
    ] {
        assert!(
            !place.p(file).exists(),
            "{file} holds only what init wrote: it goes"
        );
    }
}

/// `init codex --check` reads the files Codex reads: the project's trust and each hook's
/// review in `~/.codex/config.toml` (`$CODEX_HOME`), against the hash Codex computes for
/// the hook as written; a hook changed since its review is `modified`. The other clients
/// have no review to check.
#[test]
fn codex_check_reads_the_project_s_trust_and_each_hook_s_review() {
    let place = Place::new();
    place.ok(&["codex", "--wait", "30"]);
    let check = place.init(&["codex", "--check"]);
    assert_eq!(check.code, 1, "{check:?}");
    assert_eq!(check.json["ok"], false);
    assert_eq!(check.json["project_trusted"], false);
    assert_eq!(check.json["next"].as_array().unwrap().len(), 2, "{check:?}");
    let hooks = check.json["hooks"].as_array().unwrap().clone();
    let events: Vec<&str> = hooks.iter().map(|h| h["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["PreToolUse", "PostToolUse"]);
    assert!(
        hooks.iter().all(|h| h["status"] == "untrusted"),
        "{hooks:?}"
    );
    let config = place.p(".codex/config.toml");
    assert_eq!(
        hooks[0]["key"],
        format!("{}:pre_tool_use:0:0", config.display())
    );
    assert!(hooks[0]["hash"].as_str().unwrap().starts_with("sha256:"));

    // The person trusts the project and reviews the hooks, as Codex records them.
    let mut user = format!(
        "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        place.project.path().display()
    );
    for hook in &hooks {
        user.push_str(&format!(
            "\n[hooks.state.\"{}\"]\ntrusted_hash = \"{}\"\n",
            hook["key"].as_str().unwrap(),
            hook["hash"].as_str().unwrap()
        ));
    }
    std::fs::create_dir_all(place.h(".codex")).unwrap();
    std::fs::write(place.h(".codex/config.toml"), user).unwrap();
    let check = place.init(&["codex", "--check"]);
    assert_eq!(check.code, 0, "{check:?}");
    assert_eq!(check.json["hooks_will_run"], true);
    assert!(check.json.get("next").is_none(), "{check:?}");

    // Another wait is another hook to Codex: reviewed no more.
    place.ok(&["codex", "--wait", "5"]);
    let check = place.init(&["codex", "--check"]);
    assert_eq!(check.code, 1, "{check:?}");
    let statuses: Vec<&str> = check.json["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["modified", "modified"]);

    let other = place.init(&["gemini", "--check"]);
    assert_eq!(other.code, 2, "{other:?}");
}

/// Every byte under `dir`, file by file (what a secret must not be found in).
fn all_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(all_bytes(&path));
        } else {
            found.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    found
}

/// `init --url`: each host's HTTP entry for a server's /mcp, the token as a reference to
/// the variable it is read from (in the host's own syntax), never the token, whatever the
/// environment holds; the same least grant as the stdio entries, and no hooks; a second
/// run changes no byte.
#[test]
fn url_entries_name_the_token_s_variable_and_never_the_token() {
    let place = Place::new();
    let secret = "qtok_0123456789abcdef0123456789abcdef";
    let env = [("QUESTIONS_TOKEN", secret), ("CI_TOKEN", secret)];
    let path = place.bin.path().display().to_string();
    let url = "https://questions.example.com/team/";
    let mcp = "https://questions.example.com/team/mcp";
    for (client, more) in [
        ("claude-code", None),
        ("codex", Some("CI_TOKEN")),
        ("gemini", None),
        ("vscode", None),
    ] {
        let mut args = vec![client, "--url", url];
        if let Some(name) = more {
            args.extend(["--token-env", name]);
        }
        for round in 0..2 {
            let run = place.init_with_env(&path, &env, &args);
            assert_eq!(run.code, 0, "{run:?}");
            assert_eq!(run.json["command"], mcp, "{run:?}");
            let changed = actions(&run.json).iter().any(|a| a != "unchanged");
            assert_eq!(changed, round == 0, "{client} round {round}: {run:?}");
        }
    }
    let bearer = |reference: &str| json!({"Authorization": format!("Bearer {reference}")});
    assert_eq!(
        read_json(&place.p(".mcp.json"))["mcpServers"]["questions"],
        json!({"type": "http", "url": mcp, "headers": bearer("${QUESTIONS_TOKEN}")})
    );
    let claude = read_json(&place.p(".claude/settings.json"));
    assert_eq!(
        claude,
        json!({"permissions": {"allow": [
            "mcp__questions__ask_questions", "mcp__questions__wait_for_answers"]}}),
        "the grant alone, no hooks"
    );
    assert_eq!(
        read_json(&place.p(".gemini/settings.json")),
        json!({"mcpServers": {"questions": {"httpUrl": mcp,
                                            "headers": bearer("${QUESTIONS_TOKEN}")}}})
    );
    assert_eq!(
        read_json(&place.p(".vscode/mcp.json"))["servers"]["questions"],
        json!({"type": "http", "url": mcp, "headers": bearer("${env:QUESTIONS_TOKEN}")})
    );
    let codex: toml::Value =
        toml::from_str(&std::fs::read_to_string(place.p(".codex/config.toml")).unwrap()).unwrap();
    let server = &codex["mcp_servers"]["questions"];
    assert_eq!(server["url"].as_str(), Some(mcp));
    assert_eq!(server["bearer_token_env_var"].as_str(), Some("CI_TOKEN"));
    assert!(server.get("command").is_none(), "{server:?}");
    for tool in ["ask_questions", "wait_for_answers"] {
        assert_eq!(
            server["tools"][tool]["approval_mode"].as_str(),
            Some("approve")
        );
    }
    assert!(codex.get("hooks").is_none(), "{codex:?}");
    for dir in [place.project.path(), place.home.path()] {
        for (file, bytes) in all_bytes(dir) {
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains(secret), "{} holds the token", file.display());
        }
    }
}

/// A stdio entry becomes an HTTP one and back in place: nothing of the other kind stays
/// (a `command` beside a `url` would start a process the host cannot); `--remove` with
/// `--url` takes the entry out.
#[test]
fn a_url_entry_and_a_stdio_entry_replace_each_other() {
    let place = Place::new();
    place.ok(&["claude-code"]);
    place.ok(&["claude-code", "--url", "https://q.example.com"]);
    let entry = read_json(&place.p(".mcp.json"))["mcpServers"]["questions"].clone();
    assert_eq!(
        entry,
        json!({"type": "http", "url": "https://q.example.com/mcp",
               "headers": {"Authorization": "Bearer ${QUESTIONS_TOKEN}"}})
    );
    place.ok(&["claude-code"]);
    let entry = read_json(&place.p(".mcp.json"))["mcpServers"]["questions"].clone();
    assert!(
        entry.get("url").is_none() && entry.get("headers").is_none(),
        "{entry}"
    );
    assert_eq!(entry["command"], "questions");

    place.ok(&["codex"]);
    place.ok(&["codex", "--url", "http://127.0.0.1:8466"]);
    let text = std::fs::read_to_string(place.p(".codex/config.toml")).unwrap();
    let codex: toml::Value = toml::from_str(&text).unwrap();
    let server = &codex["mcp_servers"]["questions"];
    assert_eq!(server["url"].as_str(), Some("http://127.0.0.1:8466/mcp"));
    for stdio in ["command", "args", "env_vars"] {
        assert!(server.get(stdio).is_none(), "{stdio}: {text}");
    }
    place.ok(&["codex", "--remove", "--url", "http://127.0.0.1:8466"]);
    let codex: toml::Value =
        toml::from_str(&std::fs::read_to_string(place.p(".codex/config.toml")).unwrap()).unwrap();
    assert!(
        codex.get("mcp_servers").is_none(),
        "{codex:?}: the server entry is gone"
    );
}

/// What `init --url` refuses, before anything is written: a token that would travel in
/// clear (http:// off loopback), a variable's name that is not one (a token pasted in its
/// place, say), a client that takes no HTTP entry here, and --db.
#[test]
fn init_url_refuses_clear_text_a_bad_variable_and_other_clients() {
    let place = Place::new();
    for (args, words) in [
        (
            vec!["codex", "--url", "http://questions.example.com"],
            "http:// only for a loopback address",
        ),
        (vec!["codex", "--url", "ftp://x"], "is not https://HOST"),
        (
            vec!["codex", "--url", "https://x", "--token-env", "qtok_abc-123"],
            "is not the name of an environment variable",
        ),
        (vec!["cursor", "--url", "https://x"], "takes no --url"),
        (
            vec!["codex", "--url", "https://x", "--db", "x.db"],
            "takes no --db",
        ),
        (vec!["codex", "--token-env", "X"], "--url"),
    ] {
        let run = place.init(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.json["error_code"], "usage", "{args:?}: {run:?}");
        let message = run.json["error"].as_str().unwrap_or_default();
        assert!(message.contains(words), "{args:?}: {message}");
    }
    assert!(all_bytes(place.project.path())
        .iter()
        .all(|(f, _)| f.starts_with(place.p(".git"))));
}
