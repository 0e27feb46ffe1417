//! Which files each client reads, and our entries in each: the MCP server, and the hooks on
//! the client's own question tool. A hook is one `(event, matcher)` and the fields `init`
//! owns in it (`hook_fields`); another field a harness takes (a timeout) is one more entry
//! there.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::files::{Edit, Kind};
use super::json::{Jsonc, Shape, Step};
use super::{is_our_hook, looks_like_our_hook, runs_questions, Invocation, Remote, SERVER};
use crate::cli::Client;

/// Where a hook goes: the harness's event, and the tool its matcher names (none: every
/// occasion of the event, as Claude Code's `Stop`).
type HookSpot = (&'static str, Option<&'static str>);

const CLAUDE_HOOKS: &[HookSpot] = &[
    ("PreToolUse", Some("AskUserQuestion")),
    ("PostToolUse", Some("AskUserQuestion")),
    ("Stop", None),
];
const GEMINI_HOOKS: &[HookSpot] = &[
    ("BeforeTool", Some("ask_user")),
    ("AfterTool", Some("ask_user")),
];
const CODEX_EVENTS: [&str; 2] = ["PreToolUse", "PostToolUse"];

pub(super) fn plan(client: Client, user: bool, base: &Path, how: &Invocation) -> Vec<Edit> {
    let server = json!({"command": how.program, "args": how.mcp_args()});
    match client {
        // Docs, not configs: `uwf` edits them itself; pi's files are whole (`init::pi`).
        Client::Uwf | Client::Pi => Vec::new(),
        Client::ClaudeCode => {
            let mcp_file = if user {
                base.join(".claude.json")
            } else {
                base.join(".mcp.json")
            };
            let mut edits = Vec::new();
            if how.mcp {
                edits.push(json_edit(mcp_file, json_server("mcpServers", server)));
            }
            let hooks = json_hooks(CLAUDE_HOOKS, "claude-code", how.clone());
            let grant = how.mcp;
            edits.push(json_edit(
                base.join(".claude/settings.json"),
                move |doc, remove, warnings| {
                    hooks(doc, remove, warnings)?;
                    if grant {
                        claude_grant(doc, remove, warnings)?;
                    }
                    Ok(())
                },
            ));
            edits
        }
        Client::Gemini => {
            let servers = json_server("mcpServers", server);
            let hooks = json_hooks(GEMINI_HOOKS, "gemini", how.clone());
            let mcp = how.mcp;
            let mut edits = vec![json_edit(
                base.join(".gemini/settings.json"),
                move |doc, remove, warnings| {
                    if mcp {
                        servers(doc, remove, warnings)?;
                    }
                    hooks(doc, remove, warnings)
                },
            )];
            // Headless Gemini CLI lists an MCP tool to the model only when a policy allows
            // it, and only the user's policies can: `--user` writes that rule too.
            if user && how.mcp {
                edits.push(Edit {
                    path: base.join(GEMINI_POLICY),
                    kind: Kind::Toml(Box::new(gemini_policy)),
                });
            }
            edits
        }
        Client::Cursor => vec![json_edit(
            base.join(".cursor/mcp.json"),
            json_server("mcpServers", server),
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
                    json!({"type": "stdio", "command": how.program, "args": how.mcp_args()}),
                )
            } else {
                // Started in the workspace, so the ledger is found from there.
                (
                    base.join(".vscode/mcp.json"),
                    json!({"type": "stdio", "command": how.program, "args": how.mcp_args(),
                           "cwd": "${workspaceFolder}"}),
                )
            };
            vec![json_edit(file, json_server("servers", entry))]
        }
        Client::Codex => {
            let how = how.clone();
            vec![Edit {
                path: base.join(".codex/config.toml"),
                kind: Kind::Toml(Box::new(move |doc, remove, warnings| {
                    if how.mcp {
                        codex_server(doc, &Transport::Stdio(&how), remove)?;
                    }
                    for event in CODEX_EVENTS {
                        codex_hook(doc, event, &how, remove, warnings)?;
                    }
                    Ok(())
                })),
            }]
        }
    }
}

/// The entries of `init --url`: each host's HTTP server entry, the token read from the
/// environment variable as the host expands it, and the same least grant as the stdio
/// entries. No hooks: they run `questions` beside the agent, which a host that reaches
/// the server over HTTP does not have.
///
/// How each host expands a variable in its config: Claude Code `${NAME}` in `.mcp.json`
/// (url, headers, command, args, env); Gemini CLI `$NAME` or `${NAME}` in every string of
/// its settings (packages/cli/src/utils/envVarResolver.ts); VS Code `${env:NAME}`; Codex
/// takes the variable's name (`bearer_token_env_var`) and reads it itself.
pub(super) fn plan_remote(client: Client, user: bool, base: &Path, remote: &Remote) -> Vec<Edit> {
    let bearer = |reference: String| json!({ "Authorization": format!("Bearer {reference}") });
    match client {
        Client::ClaudeCode => {
            let mcp_file = if user {
                base.join(".claude.json")
            } else {
                base.join(".mcp.json")
            };
            let entry = json!({"type": "http", "url": remote.url,
                               "headers": bearer(format!("${{{}}}", remote.token_env))});
            vec![
                json_edit(mcp_file, json_server("mcpServers", entry)),
                json_edit(base.join(".claude/settings.json"), claude_grant),
            ]
        }
        Client::Gemini => {
            let entry = json!({"httpUrl": remote.url,
                               "headers": bearer(format!("${{{}}}", remote.token_env))});
            let mut edits = vec![json_edit(
                base.join(".gemini/settings.json"),
                json_server("mcpServers", entry),
            )];
            if user {
                edits.push(Edit {
                    path: base.join(GEMINI_POLICY),
                    kind: Kind::Toml(Box::new(gemini_policy)),
                });
            }
            edits
        }
        Client::Vscode => {
            let file = if user {
                let dir = if cfg!(target_os = "macos") {
                    "Library/Application Support/Code/User"
                } else {
                    ".config/Code/User"
                };
                base.join(dir).join("mcp.json")
            } else {
                base.join(".vscode/mcp.json")
            };
            let entry = json!({"type": "http", "url": remote.url,
                               "headers": bearer(format!("${{env:{}}}", remote.token_env))});
            vec![json_edit(file, json_server("servers", entry))]
        }
        Client::Codex => {
            let (url, env) = (remote.url.clone(), remote.token_env.clone());
            vec![Edit {
                path: base.join(".codex/config.toml"),
                kind: Kind::Toml(Box::new(move |doc, remove, _| {
                    codex_server(doc, &Transport::Http(&url, &env), remove)
                })),
            }]
        }
        Client::Cursor | Client::Uwf | Client::Pi => Vec::new(),
    }
}

/// The fields of a server entry that say how it is reached: what one kind of entry holds
/// and the other must not keep when `init` turns one into the other.
const TRANSPORT_FIELDS: [&str; 8] = [
    "type", "command", "args", "cwd", "url", "httpUrl", "headers", "env_vars",
];

/// Whether a server entry is one `init` wrote: it runs `questions`, or reaches a
/// server's `/mcp` over HTTP.
fn is_our_server(command: Option<&str>, url: Option<&str>) -> bool {
    command.is_some_and(runs_questions) || url.is_some_and(|u| u.ends_with("/mcp"))
}

fn json_edit(
    path: std::path::PathBuf,
    f: impl Fn(&mut Jsonc, bool, &mut Vec<String>) -> Result<(), String> + 'static,
) -> Edit {
    Edit {
        path,
        kind: Kind::Json(Box::new(f)),
    }
}

/// What a hook's `timeout` gives beyond its `--wait`: the start, the ledger's reads and
/// the reply, with room to spare on a loaded machine.
const HOOK_MARGIN_SECONDS: u64 = 30;

/// The fields of our hook `init` owns; the rest of the hook object is the user's. With
/// `--wait`, a `timeout` that covers it, in the harness's own unit: Gemini CLI counts
/// milliseconds (default 60 000, which killed a longer wait), Codex and Claude Code
/// seconds.
fn hook_fields(how: &Invocation, harness: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("type".into(), json!("command"));
    fields.insert("command".into(), json!(how.hook_command(harness)));
    if let Some(wait) = how.wait {
        let seconds = wait + HOOK_MARGIN_SECONDS;
        let timeout = if harness == "gemini" {
            seconds * 1000
        } else {
            seconds
        };
        fields.insert("timeout".into(), json!(timeout));
    }
    fields
}

/// A field of our hook as TOML: a string or a whole number.
fn toml_field(want: &Value) -> toml_edit::Item {
    match want.as_i64() {
        Some(n) => toml_edit::value(n),
        None => toml_edit::value(want.as_str().unwrap_or_default()),
    }
}

/// Whether a TOML hook's field already holds what we want there.
fn toml_field_is(item: Option<&toml_edit::Item>, want: &Value) -> bool {
    match want.as_i64() {
        Some(n) => item.and_then(toml_edit::Item::as_integer) == Some(n),
        None => item.and_then(toml_edit::Item::as_str) == want.as_str(),
    }
}

/// The tools a headless agent must be allowed to call to ask and then collect its
/// answers: `ask_questions` returns within 50 s, pending if nobody answered yet, and tells
/// the agent to call `wait_for_answers`. The other tools only read (a host may still ask
/// before each), and votes are refused anyway.
pub(super) const AGENT_TOOLS: [&str; 2] = ["ask_questions", "wait_for_answers"];

/// What Claude Code's `permissions.allow` gains: `AGENT_TOOLS` as it names MCP tools.
const CLAUDE_GRANTS: [&str; 2] = [
    "mcp__questions__ask_questions",
    "mcp__questions__wait_for_answers",
];

/// Gemini CLI's policy file for our rules, in the user's `~/.gemini` (a project's
/// settings cannot allow a tool in headless runs).
pub(super) const GEMINI_POLICY: &str = ".gemini/policies/questions.toml";

/// Gemini CLI's `[[rule]]`s allowing `AGENT_TOOLS` of our server, added once each, taken
/// out with `--remove`; any other rule in the file is the user's.
fn gemini_policy(
    doc: &mut toml_edit::DocumentMut,
    remove: bool,
    _: &mut Vec<String>,
) -> Result<(), String> {
    use toml_edit::{value, ArrayOfTables, Item, Table};
    let ours = |t: &Table, tool: &str| {
        t.get("mcpName").and_then(Item::as_str) == Some(super::SERVER)
            && t.get("toolName").and_then(Item::as_str) == Some(tool)
    };
    if doc.get("rule").is_none() {
        if remove {
            return Ok(());
        }
        doc.insert("rule", Item::ArrayOfTables(ArrayOfTables::new()));
    }
    let rules = doc
        .get_mut("rule")
        .and_then(Item::as_array_of_tables_mut)
        .ok_or("`rule` is not a list of [[rule]] tables")?;
    if remove {
        rules.retain(|t| !AGENT_TOOLS.iter().any(|tool| ours(t, tool)));
        if rules.is_empty() {
            doc.remove("rule");
        }
        return Ok(());
    }
    for tool in AGENT_TOOLS {
        if rules.iter().any(|t| ours(t, tool)) {
            continue;
        }
        let mut rule = Table::new();
        rule.insert("mcpName", value(super::SERVER));
        rule.insert("toolName", value(tool));
        rule.insert("decision", value("allow"));
        rule.insert("priority", value(100));
        rules.push(rule);
    }
    Ok(())
}

/// Claude Code's least grant: our `permissions.allow` entries, each added once, taken out
/// with `--remove` (with the list and the object when that empties them).
fn claude_grant(doc: &mut Jsonc, remove: bool, _: &mut Vec<String>) -> Result<(), String> {
    let perms = [Step::Key("permissions")];
    let allow = [Step::Key("permissions"), Step::Key("allow")];
    match doc.shape(&perms) {
        Shape::Missing if remove => return Ok(()),
        Shape::Missing => {
            doc.set(&[], "permissions", &json!({ "allow": CLAUDE_GRANTS }));
            return Ok(());
        }
        Shape::Object => {}
        other => {
            return Err(format!(
                "`permissions` is {}, not an object",
                shape_name(&other)
            ))
        }
    }
    match doc.shape(&allow) {
        Shape::Missing if remove => return Ok(()),
        Shape::Missing => {
            doc.set(&perms, "allow", &json!(CLAUDE_GRANTS));
            return Ok(());
        }
        Shape::Array => {}
        other => {
            return Err(format!(
                "`permissions.allow` is {}, not a list",
                shape_name(&other)
            ))
        }
    }
    for grant in CLAUDE_GRANTS {
        let list = doc
            .get(&allow)
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default();
        let at = list.iter().position(|v| v.as_str() == Some(grant));
        match (at, remove) {
            (None, false) => doc.push(&allow, &json!(grant)),
            (Some(i), true) => doc.remove_at(&allow, i),
            _ => {}
        }
    }
    let emptied = doc
        .get(&allow)
        .is_some_and(|v| v.as_array().is_some_and(Vec::is_empty));
    if remove && emptied {
        doc.remove(&perms, "allow");
        if doc
            .get(&perms)
            .is_some_and(|p| p.as_object().is_some_and(Map::is_empty))
        {
            doc.remove(&[], "permissions");
        }
    }
    Ok(())
}

fn shape_name(shape: &Shape) -> &'static str {
    match shape {
        Shape::Missing => "missing",
        Shape::Object => "an object",
        Shape::Array => "a list",
        Shape::Other(name) => name,
    }
}

/// Our server under `key` (`mcpServers`, or VS Code's `servers`): its fields set in place
/// when it is there, the entry's other fields (an `env` of the user's) kept.
fn json_server(
    key: &'static str,
    entry: Value,
) -> impl Fn(&mut Jsonc, bool, &mut Vec<String>) -> Result<(), String> {
    move |doc, remove, _| {
        let servers = [Step::Key(key)];
        let ours_at = [Step::Key(key), Step::Key(SERVER)];
        match doc.shape(&servers) {
            Shape::Missing if remove => return Ok(()),
            Shape::Missing => {
                doc.set(&[], key, &json!({ SERVER: entry }));
                return Ok(());
            }
            Shape::Object => {}
            other => return Err(format!("`{key}` is {}, not an object", shape_name(&other))),
        }
        let Some(current) = doc.get(&ours_at) else {
            if !remove {
                doc.set(&servers, SERVER, &entry);
            }
            return Ok(());
        };
        let command = current.get("command").and_then(Value::as_str);
        let url = current
            .get("url")
            .or_else(|| current.get("httpUrl"))
            .and_then(Value::as_str);
        if !is_our_server(command, url) {
            if remove {
                return Ok(());
            }
            return Err(format!(
                "`{key}.{SERVER}` is a server of someone else's (its command is {}), not one \
                 init wrote",
                command.map_or_else(|| "missing".to_string(), |c| format!("'{c}'"))
            ));
        }
        if remove {
            doc.remove(&servers, SERVER);
            if doc
                .get(&servers)
                .is_some_and(|s| s.as_object().is_some_and(Map::is_empty))
            {
                doc.remove(&[], key);
            }
            return Ok(());
        }
        if !current.is_object() {
            doc.set(&servers, SERVER, &entry);
            return Ok(());
        }
        for field in TRANSPORT_FIELDS {
            if current.get(field).is_some() && entry.get(field).is_none() {
                doc.remove(&ours_at, field);
            }
        }
        for (field, value) in entry.as_object().into_iter().flatten() {
            doc.set(&ours_at, field, value);
        }
        Ok(())
    }
}

/// Our command hooks, as Claude Code and Gemini CLI write them: `hooks.<event>` is a list
/// of `{matcher, hooks: [{type: "command", command}]}`. Ours is kept where it stands, in
/// the first group of the right matcher that holds it; every other copy of ours goes, and
/// a group or event that held nothing else goes with it.
fn json_hooks(
    spots: &'static [HookSpot],
    harness: &'static str,
    how: Invocation,
) -> impl Fn(&mut Jsonc, bool, &mut Vec<String>) -> Result<(), String> {
    move |doc, remove, warnings| {
        let fields = hook_fields(&how, harness);
        let group = |matcher: Option<&str>| {
            let mut g = Map::new();
            if let Some(m) = matcher {
                g.insert("matcher".into(), json!(m));
            }
            g.insert("hooks".into(), json!([Value::Object(fields.clone())]));
            Value::Object(g)
        };
        match doc.shape(&[Step::Key("hooks")]) {
            Shape::Missing if remove => return Ok(()),
            Shape::Missing => {
                let mut all = Map::new();
                for (event, matcher) in spots {
                    all.insert((*event).to_string(), json!([group(*matcher)]));
                }
                doc.set(&[], "hooks", &Value::Object(all));
                return Ok(());
            }
            Shape::Object => {}
            other => return Err(format!("`hooks` is {}, not an object", shape_name(&other))),
        }
        let mut took_out = false;
        for (event, matcher) in spots {
            let at = [Step::Key("hooks"), Step::Key(event)];
            let groups = match doc.shape(&at) {
                Shape::Missing => {
                    if !remove {
                        doc.set(&[Step::Key("hooks")], event, &json!([group(*matcher)]));
                    }
                    continue;
                }
                Shape::Array => doc
                    .get(&at)
                    .and_then(|g| g.as_array().cloned())
                    .unwrap_or_default(),
                other => {
                    return Err(format!(
                        "`hooks.{event}` is {}, not a list",
                        shape_name(&other)
                    ))
                }
            };
            let mut keep = None;
            let mut drop: Vec<(usize, usize)> = Vec::new();
            for (gi, g) in groups.iter().enumerate() {
                let Some(list) = g.get("hooks").and_then(Value::as_array) else {
                    continue;
                };
                let same = g.get("matcher").and_then(Value::as_str) == *matcher;
                for (hi, h) in list.iter().enumerate() {
                    let command = h.get("command").and_then(Value::as_str).unwrap_or("");
                    if !h.is_object() || !is_our_hook(command, harness) {
                        if looks_like_our_hook(command, harness) && !remove {
                            warnings.push(format!(
                                "a hook in `hooks.{event}` runs '{command}', which init did not \
                                 write and left as it is: with ours beside it, the harness runs both"
                            ));
                        }
                        continue;
                    }
                    if !remove && same && keep.is_none() {
                        keep = Some((gi, hi));
                    } else {
                        drop.push((gi, hi));
                    }
                }
            }
            if let Some((gi, hi)) = keep {
                let ours = [
                    at[0],
                    at[1],
                    Step::Index(gi),
                    Step::Key("hooks"),
                    Step::Index(hi),
                ];
                for (field, value) in &fields {
                    doc.set(&ours, field, value);
                }
            }
            drop.sort_unstable_by(|a, b| b.cmp(a));
            for (n, &(gi, hi)) in drop.iter().enumerate() {
                let list = [at[0], at[1], Step::Index(gi), Step::Key("hooks")];
                doc.remove_at(&list, hi);
                let last_of_group = drop.get(n + 1).is_none_or(|next| next.0 != gi);
                let emptied = doc
                    .get(&list)
                    .is_some_and(|l| l.as_array().is_some_and(Vec::is_empty));
                if last_of_group && emptied {
                    doc.remove_at(&at, gi);
                }
            }
            if !drop.is_empty() {
                took_out = true;
                if doc
                    .get(&at)
                    .is_some_and(|l| l.as_array().is_some_and(Vec::is_empty))
                {
                    doc.remove(&[Step::Key("hooks")], event);
                }
            }
            if !remove && keep.is_none() {
                doc.push(&at, &group(*matcher));
            }
        }
        if took_out
            && doc
                .get(&[Step::Key("hooks")])
                .is_some_and(|h| h.as_object().is_some_and(Map::is_empty))
        {
            doc.remove(&[], "hooks");
        }
        Ok(())
    }
}

/// What a TOML item is, in words.
fn toml_kind(item: &toml_edit::Item) -> &'static str {
    use toml_edit::Item;
    match item {
        Item::None => "missing",
        Item::Table(_) => "a table",
        Item::ArrayOfTables(_) => "an array of tables",
        Item::Value(v) if v.is_inline_table() => "an inline table (init edits [tables] only)",
        Item::Value(v) if v.is_array() => "an inline array (init edits [[tables]] only)",
        Item::Value(_) => "a value",
    }
}

/// Codex's `[mcp_servers.questions]`, every other table and comment kept as written.
/// How Codex reaches our server: it starts `questions mcp`, or it calls a server's `/mcp`
/// (the URL, and the variable its token is read from).
enum Transport<'a> {
    Stdio(&'a Invocation),
    Http(&'a str, &'a str),
}

fn codex_server(
    doc: &mut toml_edit::DocumentMut,
    transport: &Transport<'_>,
    remove: bool,
) -> Result<(), String> {
    use toml_edit::{value, Array, Item, Table};
    match doc.get("mcp_servers") {
        None if remove => return Ok(()),
        None => {
            let mut servers = Table::new();
            servers.set_implicit(true);
            doc.insert("mcp_servers", Item::Table(servers));
        }
        Some(Item::Table(_)) => {}
        Some(other) => {
            return Err(format!(
                "`mcp_servers` is {}, not a table",
                toml_kind(other)
            ));
        }
    }
    let servers = doc
        .get_mut("mcp_servers")
        .and_then(Item::as_table_mut)
        .ok_or("`mcp_servers` is not a table")?;
    match servers.get(SERVER) {
        None if remove => return Ok(()),
        None => {
            servers.insert(SERVER, Item::Table(Table::new()));
        }
        Some(Item::Table(t)) => {
            let command = t.get("command").and_then(Item::as_str);
            if !is_our_server(command, t.get("url").and_then(Item::as_str)) {
                if remove {
                    return Ok(());
                }
                return Err(format!(
                    "`mcp_servers.{SERVER}` is a server of someone else's (its command is {}), \
                     not one init wrote",
                    command.map_or_else(|| "missing".to_string(), |c| format!("'{c}'"))
                ));
            }
        }
        Some(other) => {
            return Err(format!(
                "`mcp_servers.{SERVER}` is {}, not a table",
                toml_kind(other)
            ));
        }
    }
    if remove {
        servers.remove(SERVER);
        if servers.is_empty() {
            doc.remove("mcp_servers");
        }
        return Ok(());
    }
    let ours = servers
        .get_mut(SERVER)
        .and_then(Item::as_table_mut)
        .ok_or("`mcp_servers.questions` is not a table")?;
    let how = match transport {
        Transport::Stdio(how) => how,
        Transport::Http(url, env) => {
            for field in ["command", "args", "env_vars", "cwd"] {
                ours.remove(field);
            }
            if ours.get("url").and_then(Item::as_str) != Some(url) {
                ours.insert("url", value(*url));
            }
            if ours.get("bearer_token_env_var").and_then(Item::as_str) != Some(env) {
                ours.insert("bearer_token_env_var", value(*env));
            }
            return codex_grant(ours);
        }
    };
    for field in ["url", "bearer_token_env_var"] {
        ours.remove(field);
    }
    if ours.get("command").and_then(Item::as_str) != Some(how.program.as_str()) {
        ours.insert("command", value(&how.program));
    }
    let want = how.mcp_args();
    let args_now: Option<Vec<&str>> = ours
        .get("args")
        .and_then(Item::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect());
    if args_now != Some(want.iter().map(String::as_str).collect()) {
        let mut args = Array::new();
        for arg in &want {
            args.push(arg.as_str());
        }
        ours.insert("args", value(args));
    }
    // Codex passes its MCP servers no environment variable it is not told to: without
    // this, a server started with QUESTIONS_DB set wrote another ledger than the hooks'.
    let passes_db = ours
        .get("env_vars")
        .and_then(Item::as_array)
        .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(DB_VARIABLE)));
    if !passes_db {
        if let Some(Item::Value(toml_edit::Value::Array(vars))) = ours.get_mut("env_vars") {
            vars.push(DB_VARIABLE);
        } else {
            let mut vars = Array::new();
            vars.push(DB_VARIABLE);
            ours.insert("env_vars", value(vars));
        }
    }
    codex_grant(ours)
}

/// The least grant that lets `codex exec` (approval policy "never") ask and collect the
/// answers: those two tools are approved; the other read-only tools need none.
fn codex_grant(ours: &mut toml_edit::Table) -> Result<(), String> {
    use toml_edit::{value, Item, Table};
    let tools = ours
        .entry("tools")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .ok_or("`mcp_servers.questions.tools` is not a table")?;
    for tool in AGENT_TOOLS {
        let grant = tools
            .entry(tool)
            .or_insert_with(|| Item::Table(Table::new()))
            .as_table_mut()
            .ok_or_else(|| format!("`mcp_servers.questions.tools.{tool}` is not a table"))?;
        if grant.get("approval_mode").and_then(Item::as_str) != Some("approve") {
            grant.insert("approval_mode", value("approve"));
        }
    }
    Ok(())
}

/// The variable that names the ledger, which Codex must pass its MCP server.
const DB_VARIABLE: &str = "QUESTIONS_DB";

/// Codex's `[[hooks.<event>]]` for `request_user_input`, with ours as its command hook
/// (`[[hooks.<event>.hooks]]`), kept and taken out as `json_hooks` does.
fn codex_hook(
    doc: &mut toml_edit::DocumentMut,
    event: &str,
    how: &Invocation,
    remove: bool,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    use toml_edit::{value, ArrayOfTables, Item, Table};
    let harness = "codex";
    let fields = hook_fields(how, harness);
    let ours = |t: &Table| {
        t.get("command")
            .and_then(Item::as_str)
            .is_some_and(|c| is_our_hook(c, harness))
    };
    let matcher = crate::hook::codex::TOOL;
    let mut created = false;
    match doc.get("hooks") {
        None if remove => return Ok(()),
        None => {
            let mut hooks = Table::new();
            hooks.set_implicit(true);
            doc.insert("hooks", Item::Table(hooks));
            created = true;
        }
        Some(Item::Table(_)) => {}
        Some(other) => return Err(format!("`hooks` is {}, not a table", toml_kind(other))),
    }
    let hooks = doc
        .get_mut("hooks")
        .and_then(Item::as_table_mut)
        .ok_or("`hooks` is not a table")?;
    match hooks.get(event) {
        None | Some(Item::ArrayOfTables(_)) => {}
        Some(other) => {
            return Err(format!(
                "`hooks.{event}` is {}, not an array of tables",
                toml_kind(other)
            ))
        }
    }
    let mut placed = false;
    let mut took_out = false;
    if let Some(groups) = hooks.get_mut(event).and_then(Item::as_array_of_tables_mut) {
        let mut emptied = Vec::new();
        for (gi, group) in groups.iter_mut().enumerate() {
            let same = group.get("matcher").and_then(Item::as_str) == Some(matcher);
            let Some(list) = group
                .get_mut("hooks")
                .and_then(Item::as_array_of_tables_mut)
            else {
                continue;
            };
            for h in list.iter() {
                if let Some(c) = h.get("command").and_then(Item::as_str) {
                    if !ours(h) && looks_like_our_hook(c, harness) && !remove {
                        warnings.push(format!(
                            "a hook in `hooks.{event}` runs '{c}', which init did not write and \
                             left as it is: with ours beside it, the harness runs both"
                        ));
                    }
                }
            }
            let had = list.len();
            if remove || !same || placed {
                list.retain(|h| !ours(h));
            } else {
                let mut seen = false;
                list.retain(|h| !ours(h) || !std::mem::replace(&mut seen, true));
                if let Some(h) = list.iter_mut().find(|h| ours(h)) {
                    for (field, want) in &fields {
                        if !toml_field_is(h.get(field), want) {
                            h.insert(field, toml_field(want));
                        }
                    }
                    placed = true;
                }
            }
            if list.len() != had {
                took_out = true;
                // Emptied by us: the group goes too.
                if list.is_empty() {
                    emptied.push(gi);
                }
            }
        }
        for gi in emptied.into_iter().rev() {
            groups.remove(gi);
        }
    }
    if !remove && !placed {
        if !hooks.contains_key(event) {
            hooks.insert(event, Item::ArrayOfTables(ArrayOfTables::new()));
        }
        let groups = hooks
            .get_mut(event)
            .and_then(Item::as_array_of_tables_mut)
            .ok_or_else(|| format!("`hooks.{event}` is not an array of tables"))?;
        let mut hook = Table::new();
        for (field, want) in &fields {
            hook.insert(field, toml_field(want));
        }
        let mut list = ArrayOfTables::new();
        list.push(hook);
        let mut group = Table::new();
        group.insert("matcher", value(matcher));
        group.insert("hooks", Item::ArrayOfTables(list));
        groups.push(group);
    }
    // Emptied by us, or created and then not filled: the empty tables go too.
    if hooks
        .get(event)
        .and_then(Item::as_array_of_tables)
        .is_some_and(ArrayOfTables::is_empty)
        && (took_out || remove)
    {
        hooks.remove(event);
    }
    if hooks.is_empty() && (took_out || created) {
        doc.remove("hooks");
    }
    Ok(())
}
