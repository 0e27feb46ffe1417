//! `questions init CLIENT`: writes the MCP server entry and, where the client has hooks
//! for its own question tool, the hook entries, into the client's config: the project's
//! (at the top of the git work tree, else here) or, with `--user`, the user's. The native
//! path of the running binary goes in, never a launcher. Every other entry is kept as it
//! was; a second run writes nothing (the file stays byte-identical); `--remove` takes ours
//! out; `--dry-run` shows what would be written and writes nothing.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::Outcome;
use crate::cli::{Client, InitArgs};
use questions_core::error::{Error, Result};

/// The name our MCP server goes by in every client's config.
/// The MCP server as `init` writes it for an agent's client: an agent never approves a
/// request, its own or another's, so the server it talks to refuses votes (§12).
const MCP_ARGS: [&str; 2] = ["mcp", "--no-votes"];

const SERVER: &str = "questions";

#[derive(Debug, Serialize)]
struct Report {
    client: &'static str,
    scope: &'static str,
    /// The binary the entries run.
    command: String,
    dry_run: bool,
    files: Vec<FileChange>,
}

#[derive(Debug, Serialize)]
struct FileChange {
    path: String,
    /// `created`, `updated`, `unchanged`, `removed` (our entries taken out) or `deleted`
    /// (nothing else was left in it).
    action: &'static str,
    /// With --dry-run: the text that would be written (none for `deleted`/`unchanged`).
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    /// `init uwf`: how many commands in the file were switched.
    #[serde(skip_serializing_if = "Option::is_none")]
    replaced: Option<usize>,
}

/// One config file and what to do to it.
struct Edit {
    path: PathBuf,
    kind: Kind,
}

/// Puts our entries into a parsed config, or takes them out (`true`).
type JsonChange = Box<dyn Fn(&mut Map<String, Value>, bool)>;
type TomlChange = Box<dyn Fn(&mut toml_edit::DocumentMut, bool)>;

enum Kind {
    /// A JSON object.
    Json(JsonChange),
    /// A TOML document (Codex).
    Toml(TomlChange),
}

pub(super) fn run(args: InitArgs) -> Result<Outcome> {
    let exe = native_binary()?;
    if args.client == Client::Uwf {
        return uwf(&args, &exe);
    }
    let base = if args.user { home()? } else { project_root()? };
    let edits = plan(args.client, args.user, &base, &exe)?;
    let mut files = Vec::new();
    for edit in &edits {
        files.push(apply(edit, args.remove, args.dry_run)?);
    }
    Ok(Outcome::ok(Report {
        client: args.client.name(),
        scope: if args.user { "user" } else { "project" },
        command: exe.display().to_string(),
        dry_run: args.dry_run,
        files,
    }))
}

/// The running binary, symlinks resolved: what an npm or pip launcher would have run.
fn native_binary() -> Result<PathBuf> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::io(format!("cannot tell where this binary is: {e}")))?;
    Ok(std::fs::canonicalize(&exe).unwrap_or(exe))
}

fn home() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| Error::usage("HOME is not set, so --user has no user config to write"))
}

/// The top of the enclosing git work tree, else the current directory.
fn project_root() -> Result<PathBuf> {
    let here = std::env::current_dir()
        .map_err(|e| Error::io(format!("cannot read the current directory: {e}")))?;
    Ok(here
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&here)
        .to_path_buf())
}

/// A command line a shell runs as written: the path quoted when it needs it.
fn shell_command(exe: &Path, args: &str) -> String {
    let path = exe.display().to_string();
    let plain = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+@%:,".contains(c));
    if plain {
        format!("{path} {args}")
    } else {
        format!("'{}' {args}", path.replace('\'', r"'\''"))
    }
}

fn plan(client: Client, user: bool, base: &Path, exe: &Path) -> Result<Vec<Edit>> {
    let exe_text = exe.display().to_string();
    let server = json!({"command": exe_text, "args": MCP_ARGS});
    Ok(match client {
        // Docs, not configs: `uwf` edits them itself.
        Client::Uwf => Vec::new(),
        Client::ClaudeCode => {
            let hook = shell_command(exe, "hook claude-code");
            let mcp_file = if user {
                base.join(".claude.json")
            } else {
                base.join(".mcp.json")
            };
            vec![
                json_edit(mcp_file, server_entry("mcpServers", server)),
                json_edit(
                    base.join(".claude/settings.json"),
                    hook_entries(
                        &[
                            ("PreToolUse", Some("AskUserQuestion")),
                            ("PostToolUse", Some("AskUserQuestion")),
                            ("Stop", None),
                        ],
                        hook,
                        " hook claude-code",
                    ),
                ),
            ]
        }
        Client::Gemini => {
            let settings = base.join(".gemini/settings.json");
            let servers = server_entry("mcpServers", server);
            let hooks = hook_entries(
                &[
                    ("BeforeTool", Some("ask_user")),
                    ("AfterTool", Some("ask_user")),
                ],
                shell_command(exe, "hook gemini"),
                " hook gemini",
            );
            vec![json_edit(settings, move |doc, remove| {
                servers(doc, remove);
                hooks(doc, remove);
            })]
        }
        Client::Cursor => vec![json_edit(
            base.join(".cursor/mcp.json"),
            server_entry("mcpServers", server),
        )],
        Client::Vscode => {
            let (file, entry) = if user {
                let dir = if cfg!(target_os = "macos") {
                    "Library/Application Support/Code/User"
                } else {
                    ".config/Code/User"
                };
                (
                    base.join(dir).join("mcp.json"),
                    json!({"type": "stdio", "command": exe_text, "args": MCP_ARGS}),
                )
            } else {
                // Started in the workspace, so the ledger is found from there.
                (
                    base.join(".vscode/mcp.json"),
                    json!({"type": "stdio", "command": exe_text, "args": MCP_ARGS,
                           "cwd": "${workspaceFolder}"}),
                )
            };
            vec![json_edit(file, server_entry("servers", entry))]
        }
        Client::Codex => {
            let exe_text = exe_text.clone();
            let hook = shell_command(exe, "hook codex");
            vec![Edit {
                path: base.join(".codex/config.toml"),
                kind: Kind::Toml(Box::new(move |doc, remove| {
                    codex_server(doc, &exe_text, remove);
                    for event in ["PreToolUse", "PostToolUse"] {
                        codex_hook(doc, event, &hook, remove);
                    }
                })),
            }]
        }
    })
}

fn json_edit(path: PathBuf, f: impl Fn(&mut Map<String, Value>, bool) + 'static) -> Edit {
    Edit {
        path,
        kind: Kind::Json(Box::new(f)),
    }
}

/// Our server under `key` (`mcpServers`, or VS Code's `servers`), in place when there.
fn server_entry(key: &'static str, entry: Value) -> impl Fn(&mut Map<String, Value>, bool) {
    move |doc, remove| {
        let servers = doc.entry(key).or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(servers) = servers {
            if remove {
                servers.shift_remove(SERVER);
            } else {
                servers.insert(SERVER.to_string(), entry.clone());
            }
        }
        drop_if_empty(doc, key);
    }
}

/// Our command hooks, as Claude Code and Gemini CLI write them: `hooks.<event>` is a list
/// of `{matcher, hooks: [{type: "command", command}]}`. Ours is the hook whose command ends
/// with `marker` (whatever binary path it names); it is replaced where it stands.
fn hook_entries(
    events: &'static [(&'static str, Option<&'static str>)],
    command: String,
    marker: &'static str,
) -> impl Fn(&mut Map<String, Value>, bool) {
    move |doc, remove| {
        let ours = |h: &Value| {
            h.get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| c.ends_with(marker))
        };
        let hooks = doc
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(hooks) = hooks else { return };
        for (event, matcher) in events {
            let groups = hooks
                .entry(event.to_string())
                .or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(groups) = groups else {
                continue;
            };
            let entry = json!({"type": "command", "command": command});
            let mut placed = false;
            for group in groups.iter_mut() {
                let same_matcher = group.get("matcher").and_then(Value::as_str) == *matcher;
                let Some(Value::Array(list)) = group.get_mut("hooks") else {
                    continue;
                };
                if remove || !same_matcher {
                    list.retain(|h| !ours(h));
                    continue;
                }
                for h in list.iter_mut() {
                    if ours(h) && !placed {
                        *h = entry.clone();
                        placed = true;
                    }
                }
                if placed {
                    // Ours once in the group, however often it was written there.
                    let mut first = true;
                    list.retain(|h| !ours(h) || std::mem::take(&mut first));
                }
            }
            groups.retain(|g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .is_none_or(|l| !l.is_empty())
            });
            if !remove && !placed {
                let mut group = Map::new();
                if let Some(m) = matcher {
                    group.insert("matcher".into(), Value::String(m.to_string()));
                }
                group.insert("hooks".into(), json!([entry]));
                groups.push(Value::Object(group));
            }
            if groups.is_empty() {
                hooks.shift_remove(*event);
            }
        }
        drop_if_empty(doc, "hooks");
    }
}

/// Removes `key` when it holds an empty object or list.
fn drop_if_empty(doc: &mut Map<String, Value>, key: &str) {
    let empty = match doc.get(key) {
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    };
    if empty {
        doc.shift_remove(key);
    }
}

/// Codex's `[mcp_servers.questions]`, every other table and comment kept as written.
fn codex_server(doc: &mut toml_edit::DocumentMut, exe: &str, remove: bool) {
    use toml_edit::{value, Array, Item, Table};
    if remove {
        if let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_mut) {
            servers.remove(SERVER);
            if servers.is_empty() {
                doc.remove("mcp_servers");
            }
        }
        return;
    }
    if !doc.contains_key("mcp_servers") {
        let mut servers = Table::new();
        servers.set_implicit(true);
        doc.insert("mcp_servers", Item::Table(servers));
    }
    let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_mut) else {
        return;
    };
    if !servers.contains_key(SERVER) {
        servers.insert(SERVER, Item::Table(Table::new()));
    }
    let Some(ours) = servers.get_mut(SERVER).and_then(Item::as_table_mut) else {
        return;
    };
    if ours.get("command").and_then(Item::as_str) != Some(exe) {
        ours.insert("command", value(exe));
    }
    let args_now: Option<Vec<&str>> = ours
        .get("args")
        .and_then(Item::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect());
    if args_now.as_deref() != Some(&MCP_ARGS[..]) {
        let mut args = Array::new();
        for arg in MCP_ARGS {
            args.push(arg);
        }
        ours.insert("args", value(args));
    }
}

/// Codex's `[[hooks.<event>]]` for `request_user_input`, with ours as its command hook
/// (`[[hooks.<event>.hooks]]`); ours is the hook whose command ends with ` hook codex`.
fn codex_hook(doc: &mut toml_edit::DocumentMut, event: &str, command: &str, remove: bool) {
    use toml_edit::{value, ArrayOfTables, Item, Table};
    let ours = |t: &Table| {
        t.get("command")
            .and_then(Item::as_str)
            .is_some_and(|c| c.ends_with(" hook codex"))
    };
    let matcher = crate::hook::codex::TOOL;
    let mut placed = false;
    if let Some(groups) = doc
        .get_mut("hooks")
        .and_then(|h| h.get_mut(event))
        .and_then(Item::as_array_of_tables_mut)
    {
        for group in groups.iter_mut() {
            let same = group.get("matcher").and_then(Item::as_str) == Some(matcher);
            let Some(list) = group
                .get_mut("hooks")
                .and_then(Item::as_array_of_tables_mut)
            else {
                continue;
            };
            if remove || !same || placed {
                list.retain(|h| !ours(h));
                continue;
            }
            let mut seen = false;
            list.retain(|h| !ours(h) || !std::mem::replace(&mut seen, true));
            if let Some(h) = list.iter_mut().find(|h| ours(h)) {
                if h.get("command").and_then(Item::as_str) != Some(command) {
                    h.insert("command", value(command));
                }
                placed = true;
            }
        }
        groups.retain(|g| {
            g.get("hooks")
                .and_then(Item::as_array_of_tables)
                .is_none_or(|l| !l.is_empty())
        });
    }
    if !remove && !placed {
        if !doc.contains_key("hooks") {
            let mut hooks = Table::new();
            hooks.set_implicit(true);
            doc.insert("hooks", Item::Table(hooks));
        }
        let Some(hooks) = doc.get_mut("hooks").and_then(Item::as_table_mut) else {
            return;
        };
        if !hooks.contains_key(event) {
            hooks.insert(event, Item::ArrayOfTables(ArrayOfTables::new()));
        }
        let Some(groups) = hooks.get_mut(event).and_then(Item::as_array_of_tables_mut) else {
            return;
        };
        let mut hook = Table::new();
        hook.insert("type", value("command"));
        hook.insert("command", value(command));
        let mut list = ArrayOfTables::new();
        list.push(hook);
        let mut group = Table::new();
        group.insert("matcher", value(matcher));
        group.insert("hooks", Item::ArrayOfTables(list));
        groups.push(group);
    }
    // Nothing of ours, or of anyone's, left: the empty tables go too.
    if let Some(hooks) = doc.get_mut("hooks").and_then(Item::as_table_mut) {
        if hooks
            .get(event)
            .and_then(Item::as_array_of_tables)
            .is_some_and(toml_edit::ArrayOfTables::is_empty)
        {
            hooks.remove(event);
        }
        if hooks.is_empty() {
            doc.remove("hooks");
        }
    }
}

/// Reads, edits and (unless a dry run) writes one file.
fn apply(edit: &Edit, remove: bool, dry_run: bool) -> Result<FileChange> {
    let shown = edit.path.display().to_string();
    let before = match std::fs::read_to_string(&edit.path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(format!("cannot read {shown}: {e}"))),
    };
    let after: Option<String> = match &edit.kind {
        Kind::Json(f) => {
            let mut doc = match before.as_deref().map(str::trim) {
                None | Some("") => Map::new(),
                Some(text) => match serde_json::from_str::<Value>(text) {
                    Ok(Value::Object(map)) => map,
                    Ok(_) => {
                        return Err(Error::parse(format!(
                            "{shown} does not hold a JSON object; it was left as it is"
                        )))
                    }
                    Err(e) => {
                        return Err(Error::parse(format!(
                            "{shown} is not JSON that can be read ({e}; comments are not \
                             supported); it was left as it is: add the entry by hand"
                        )))
                    }
                },
            };
            let original = doc.clone();
            f(&mut doc, remove);
            if doc == original {
                before.clone()
            } else if doc.is_empty() {
                None
            } else {
                Some(crate::output::pretty(&doc) + "\n")
            }
        }
        Kind::Toml(f) => {
            let text = before.clone().unwrap_or_default();
            let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
                Error::parse(format!(
                    "{shown} is not TOML that can be read ({e}); it was left as it is"
                ))
            })?;
            f(&mut doc, remove);
            let out = doc.to_string();
            if out == text {
                before.clone()
            } else if out.trim().is_empty() {
                None
            } else {
                Some(out)
            }
        }
    };
    let action = match (&before, &after) {
        (b, a) if b == a => "unchanged",
        (None, Some(_)) => "created",
        (Some(_), None) => "deleted",
        _ if remove => "removed",
        _ => "updated",
    };
    if !dry_run && before != after {
        match &after {
            Some(text) => write_config(&edit.path, text)?,
            None => std::fs::remove_file(&edit.path)
                .map_err(|e| Error::io(format!("cannot remove {shown}: {e}")))?,
        }
    }
    Ok(FileChange {
        path: shown,
        action,
        content: if dry_run && before != after {
            after
        } else {
            None
        },
        replaced: None,
    })
}

/// The uwf question protocol's folder, and how its docs run its script.
const UWF_SKILL: &str = ".github/skills/uwf-question-protocol";
const UWF_SCRIPTS: [&str; 2] = [
    "node ./.github/skills/uwf-question-protocol/questions.mjs",
    "node .github/skills/uwf-question-protocol/questions.mjs",
];
/// The script's commands, the ones `--remove` switches back.
const UWF_COMMANDS: [&str; 7] = ["log", "answer", "skip", "list", "check", "clear", "reset"];

#[derive(Debug, Serialize)]
struct UwfReport {
    client: &'static str,
    scope: &'static str,
    dry_run: bool,
    /// The ledger `questions` uses there (§1): the uwf protocol's own.
    ledger: String,
    files: Vec<FileChange>,
    note: &'static str,
}

/// `init uwf`: in the uwf repository here, the docs that run `node …/questions.mjs` run
/// `questions` instead (`--remove`: back again). The ledger stays the protocol's own
/// `uwf-questions.db`, which `questions` finds by walking up.
fn uwf(args: &InitArgs, _exe: &Path) -> Result<Outcome> {
    if args.user {
        return Err(Error::usage(
            "init uwf switches a repository, not a user: run it inside the repository, without --user",
        ));
    }
    let here = std::env::current_dir()
        .map_err(|e| Error::io(format!("cannot read the current directory: {e}")))?;
    let root = here
        .ancestors()
        .find(|d| d.join(UWF_SKILL).is_dir())
        .ok_or_else(|| {
            Error::not_found(format!(
                "no uwf repository here: no {UWF_SKILL}/ in this directory or above"
            ))
        })?;
    let mut docs = Vec::new();
    markdown_under(&root.join(".github"), &mut docs)?;
    docs.sort();
    let mut files = Vec::new();
    for path in docs {
        let shown = path.display().to_string();
        let before = std::fs::read_to_string(&path)
            .map_err(|e| Error::io(format!("cannot read {shown}: {e}")))?;
        let (after, replaced) = if args.remove {
            uwf_back(&before)
        } else {
            uwf_forward(&before)
        };
        if replaced == 0 {
            continue;
        }
        if !args.dry_run {
            write_config(&path, &after)?;
        }
        files.push(FileChange {
            path: shown,
            action: if args.remove { "removed" } else { "updated" },
            content: args.dry_run.then_some(after),
            replaced: Some(replaced),
        });
    }
    Ok(Outcome::ok(UwfReport {
        client: "uwf",
        scope: "project",
        dry_run: args.dry_run,
        ledger: root
            .join(UWF_SKILL)
            .join("uwf-questions.db")
            .display()
            .to_string(),
        files,
        note: "the docs run `questions` from PATH, as every machine of the repository has it; \
               the ledger stays the protocol's own uwf-questions.db",
    }))
}

/// Every `.md` file under `dir`, symlinks not followed.
fn markdown_under(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(format!("cannot read {}: {e}", dir.display()))),
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            markdown_under(&path, found)?;
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "md") {
            found.push(path);
        }
    }
    Ok(())
}

/// `node …/questions.mjs` becomes `questions`.
fn uwf_forward(text: &str) -> (String, usize) {
    let mut out = text.to_string();
    let mut count = 0;
    for script in UWF_SCRIPTS {
        count += out.matches(script).count();
        out = out.replace(script, "questions");
    }
    (out, count)
}

/// `questions <command>` (one of the script's) becomes `node …/questions.mjs <command>`
/// again, where `questions` stands as a word of its own.
fn uwf_back(text: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut count = 0;
    let mut rest = text;
    while let Some(at) = rest.find("questions ") {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        let before = out.chars().last();
        let standalone = before.is_none_or(|c| c.is_whitespace() || "`$(|;&".contains(c));
        let after = &tail["questions ".len()..];
        let command = UWF_COMMANDS.iter().any(|c| {
            after.starts_with(c)
                && after[c.len()..]
                    .chars()
                    .next()
                    .is_none_or(|n| n.is_whitespace() || n == '`')
        });
        if standalone && command {
            out.push_str(UWF_SCRIPTS[1]);
            out.push(' ');
            count += 1;
        } else {
            out.push_str("questions ");
        }
        rest = after;
    }
    out.push_str(rest);
    (out, count)
}

/// Writes a config file whole or not at all (a temp file beside it, then a rename),
/// keeping the mode of the file it replaces.
fn write_config(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let fail = |e: std::io::Error| Error::io(format!("cannot write {}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let mode = std::fs::metadata(path).ok().map(|m| m.permissions());
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".{}.tmp", std::process::id()));
    let temp = PathBuf::from(temp);
    let written = std::fs::File::create(&temp)
        .and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            if let Some(mode) = mode {
                f.set_permissions(mode)?;
            }
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(fail(e));
    }
    Ok(())
}

impl Client {
    pub fn name(self) -> &'static str {
        match self {
            Client::Uwf => "uwf",
            Client::ClaudeCode => "claude-code",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
            Client::Vscode => "vscode",
            Client::Cursor => "cursor",
        }
    }
}
