//! `init codex --check`: whether Codex will run the hooks `init` wrote into a project, read
//! from the files Codex reads. Codex 0.169.0 loads a project's `.codex/config.toml` only
//! when the project is trusted (`[projects."<path>"] trust_level = "trusted"` in
//! `$CODEX_HOME/config.toml`), and then runs a hook of a user's or a project's only when
//! its current hash is the one the person trusted in the TUI's hook review, kept in the
//! same file as `[hooks.state."<config path>:<event>:<group>:<handler>"] trusted_hash`
//! (codex-rs/hooks/src/engine/discovery.rs: `command_hook_hash`, `hook_trust_status`);
//! `codex exec` skips the others without a word. The hash is SHA-256 over the canonical
//! JSON (keys sorted, compact) of the hook's normalized identity: the event's label, the
//! matcher, and the one command handler with Codex's defaults filled in (`timeout` 600,
//! `async` false), unset fields left out (codex-rs/config/src/fingerprint.rs).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Map, Value};
use toml_edit::{DocumentMut, Item};

use super::super::Outcome;
use questions_core::error::{Error, Result};

#[derive(Debug, Serialize)]
struct Check {
    client: &'static str,
    /// Whether Codex will run every hook `init` wrote here.
    hooks_will_run: bool,
    project: String,
    /// The user config Codex keeps trust in (`$CODEX_HOME/config.toml`).
    codex_config: String,
    project_trusted: bool,
    hooks: Vec<HookTrust>,
    /// What the person must still do, if anything.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    next: Vec<String>,
}

#[derive(Debug, Serialize)]
struct HookTrust {
    event: String,
    command: String,
    /// Codex's key for the hook's state.
    key: String,
    /// The hash Codex computes for it now, which its review records once trusted.
    hash: String,
    /// `trusted`, `untrusted` (never reviewed), `modified` (reviewed, changed since) or
    /// `disabled`.
    status: &'static str,
}

pub(super) fn check(project: &Path) -> Result<Outcome> {
    let project_config = project.join(".codex/config.toml");
    let ours = read_toml(&project_config)?.unwrap_or_default();
    let home = codex_home()?;
    let user_config = home.join("config.toml");
    let user = read_toml(&user_config)?.unwrap_or_default();

    let project_trusted = ancestors_trusted(&user, project);
    let mut hooks = Vec::new();
    if let Some(events) = ours.get("hooks").and_then(Item::as_table_like) {
        for (event, groups) in events.iter() {
            let Some(groups) = groups.as_array_of_tables() else {
                continue;
            };
            let label = event_label(event);
            for (gi, group) in groups.iter().enumerate() {
                let matcher = group.get("matcher").and_then(Item::as_str);
                let Some(handlers) = group.get("hooks").and_then(Item::as_array_of_tables) else {
                    continue;
                };
                for (hi, handler) in handlers.iter().enumerate() {
                    let command = handler.get("command").and_then(Item::as_str);
                    let Some(command) = command.filter(|c| super::is_our_hook(c, "codex")) else {
                        continue;
                    };
                    if handler.get("type").and_then(Item::as_str) != Some("command") {
                        continue;
                    }
                    let key = format!("{}:{label}:{gi}:{hi}", project_config.display());
                    let hash = hook_hash(&label, matcher, handler);
                    let state = user
                        .get("hooks")
                        .and_then(|h| h.get("state"))
                        .and_then(|s| s.get(&key));
                    let status = match state {
                        _ if state.and_then(|s| s.get("enabled")).and_then(Item::as_bool)
                            == Some(false) =>
                        {
                            "disabled"
                        }
                        Some(s) => match s.get("trusted_hash").and_then(Item::as_str) {
                            Some(h) if h == hash => "trusted",
                            Some(_) => "modified",
                            None => "untrusted",
                        },
                        None => "untrusted",
                    };
                    hooks.push(HookTrust {
                        event: event.to_string(),
                        command: command.to_string(),
                        key,
                        hash,
                        status,
                    });
                }
            }
        }
    }
    let mut next = Vec::new();
    if hooks.is_empty() {
        next.push(format!(
            "{} holds no hook of ours: run `questions init codex`",
            project_config.display()
        ));
    }
    if !project_trusted {
        next.push(format!(
            "trust the project in Codex (answer its trust prompt, or run `codex exec --trust` \
             once here): {} has no trust_level = \"trusted\" for {}",
            user_config.display(),
            project.display()
        ));
    }
    if hooks.iter().any(|h| h.status != "trusted") {
        next.push(
            "review and trust the hooks in Codex's TUI (/hooks): it runs no hook whose hash \
             it has not been told to trust"
                .to_string(),
        );
    }
    let hooks_will_run = next.is_empty();
    let report = Check {
        client: "codex",
        hooks_will_run,
        project: project.display().to_string(),
        codex_config: user_config.display().to_string(),
        project_trusted,
        hooks,
        next,
    };
    let mut outcome = Outcome::json(hooks_will_run, report, u8::from(!hooks_will_run));
    if !hooks_will_run {
        outcome.note = Some("Codex will not run the hooks init wrote here (see next)".into());
    }
    Ok(outcome)
}

/// `$CODEX_HOME`, else `~/.codex`, as Codex finds its home.
fn codex_home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    Ok(super::home()?.join(".codex"))
}

fn read_toml(path: &Path) -> Result<Option<DocumentMut>> {
    match std::fs::read_to_string(path) {
        Ok(text) => text.parse::<DocumentMut>().map(Some).map_err(|e| {
            Error::io(format!(
                "{} is not TOML Codex can read: {e}",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("cannot read {}: {e}", path.display()))),
    }
}

/// Whether Codex trusts `project` or a folder above it (the repository's top).
fn ancestors_trusted(user: &DocumentMut, project: &Path) -> bool {
    let Some(projects) = user.get("projects").and_then(Item::as_table_like) else {
        return false;
    };
    project.ancestors().any(|dir| {
        projects
            .get(&dir.display().to_string())
            .and_then(|p| p.get("trust_level"))
            .and_then(Item::as_str)
            == Some("trusted")
    })
}

/// Codex's label for an event: `PreToolUse` → `pre_tool_use`.
fn event_label(event: &str) -> String {
    let mut label = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                label.push('_');
            }
            label.push(c.to_ascii_lowercase());
        } else {
            label.push(c);
        }
    }
    label
}

/// The hash Codex computes for a command hook (see the module's doc).
fn hook_hash(label: &str, matcher: Option<&str>, handler: &toml_edit::Table) -> String {
    use sha2::{Digest, Sha256};
    let timeout = handler
        .get("timeout")
        .or_else(|| handler.get("timeout_sec"))
        .and_then(Item::as_integer)
        .unwrap_or(600)
        .max(1);
    let asynchronous = handler
        .get("async")
        .and_then(Item::as_bool)
        .unwrap_or(false);
    let command = handler.get("command").and_then(Item::as_str).unwrap_or("");
    let status = handler
        .get("statusMessage")
        .or_else(|| handler.get("status_message"))
        .and_then(Item::as_str);
    // Keys in sorted order: the canonical form Codex hashes.
    let mut hook = Map::new();
    hook.insert("async".into(), json!(asynchronous));
    hook.insert("command".into(), json!(command));
    if let Some(status) = status {
        hook.insert("statusMessage".into(), json!(status));
    }
    hook.insert("timeout".into(), json!(timeout));
    hook.insert("type".into(), json!("command"));
    let mut identity = Map::new();
    identity.insert("event_name".into(), json!(label));
    identity.insert("hooks".into(), Value::Array(vec![Value::Object(hook)]));
    if let Some(matcher) = matcher {
        identity.insert("matcher".into(), json!(matcher));
    }
    let canonical = Value::Object(identity).to_string();
    let digest = Sha256::digest(canonical.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        use std::fmt::Write;
        let _ = write!(hex, "{byte:02x}");
    }
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_hashes_are_codex_s() {
        assert_eq!(event_label("PreToolUse"), "pre_tool_use");
        assert_eq!(event_label("PostToolUse"), "post_tool_use");
        let doc: DocumentMut = "type = \"command\"\ncommand = \"questions hook codex\"\n"
            .parse()
            .unwrap();
        // sha256 of {"event_name":"pre_tool_use","hooks":[{"async":false,"command":
        // "questions hook codex","timeout":600,"type":"command"}],"matcher":"request_user_input"}
        let canonical = r#"{"event_name":"pre_tool_use","hooks":[{"async":false,"command":"questions hook codex","timeout":600,"type":"command"}],"matcher":"request_user_input"}"#;
        use sha2::{Digest, Sha256};
        let want: String = Sha256::digest(canonical.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hook_hash("pre_tool_use", Some("request_user_input"), doc.as_table()),
            format!("sha256:{want}")
        );
    }
}
