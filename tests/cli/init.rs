//! `questions init CLIENT`: the MCP server entry and the hooks written into a client's
//! config, every other entry kept, byte-identical on a second run, `--dry-run` writing
//! nothing, `--remove` taking ours out.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tempfile::TempDir;

use crate::common::{bare_command, finish, Run, BIN};

/// A git project (where project configs go) and a home (where user configs go).
struct Place {
    project: TempDir,
    home: TempDir,
}

impl Place {
    fn new() -> Place {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join(".git")).unwrap();
        std::fs::create_dir(project.path().join("src")).unwrap();
        Place {
            project,
            home: tempfile::tempdir().unwrap(),
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
        let mut cmd = bare_command(&self.p("src"));
        cmd.env("HOME", self.home.path()).arg("init").args(args);
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
    assert_eq!(report["command"], native());
    let mcp = read_json(&files[0]);
    assert_eq!(mcp["mcpServers"]["other"]["command"], "other-server");
    assert_eq!(
        mcp["mcpServers"]["questions"],
        json!({"command": native(), "args": ["mcp", "--no-votes"]})
    );
    let settings = read_json(&files[1]);
    assert_eq!(settings["permissions"], json!({"allow": ["Bash(ls)"]}));
    let hook = format!("{} hook claude-code", native());
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
        format!("{} hook claude-code", native())
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
    assert_eq!(shown["mcpServers"]["questions"]["command"], native());
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
                {"type": "command", "command": format!("{} hook gemini", native())}]}]),
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
        json!({"type": "stdio", "command": native(), "args": ["mcp", "--no-votes"], "cwd": "${workspaceFolder}"})
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
    let commented = "{\n  // my servers\n  \"servers\": {}\n}\n";
    write(&place.p(".vscode/mcp.json"), commented);
    let run = place.init(&["vscode"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.error_code(), "parse_error");
    assert_eq!(
        std::fs::read_to_string(place.p(".vscode/mcp.json")).unwrap(),
        commented
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
Run `node .github/skills/uwf-question-protocol/questions.mjs answer --id 7 --answer x` after asking.\n";

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
    assert_eq!(files.len(), 2, "{report}");
    let replaced: Vec<i64> = files
        .iter()
        .map(|f| f["replaced"].as_i64().unwrap())
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
    // Back: the docs are as they were, byte for byte.
    let back = place.ok(&["uwf", "--remove"]);
    assert_eq!(back["files"].as_array().unwrap().len(), 2);
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
