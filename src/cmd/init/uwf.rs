//! `init uwf`: in the uwf repository here, the commands in the docs that run
//! `node …/questions.mjs` run `questions` instead (`--remove`: back again), and the
//! protocol's ledger and its SQLite companions are kept out of git. Only code is switched:
//! fenced blocks and `code spans`, where commands stand; prose that happens to say
//! "questions list" is never touched, either way.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::files::{read, write_whole};
use super::FileChange;
use crate::cli::InitArgs;
use crate::cmd::Outcome;
use questions_core::error::{Error, Result};

/// The uwf question protocol's folder, and how its docs run its script.
const UWF_SKILL: &str = ".github/skills/uwf-question-protocol";
const UWF_SCRIPTS: [&str; 2] = [
    "node ./.github/skills/uwf-question-protocol/questions.mjs",
    "node .github/skills/uwf-question-protocol/questions.mjs",
];
/// The script's commands, the ones `--remove` switches back.
const UWF_COMMANDS: [&str; 7] = ["log", "answer", "skip", "list", "check", "clear", "reset"];

/// What `init uwf` adds to the skill folder's `.gitignore`: the ledger and every file
/// SQLite keeps beside it (uwf's own `*.db` leaves the `-wal`, which holds the question
/// texts, to be committed).
const IGNORE_MARK: &str =
    "# questions: the ledger and its SQLite companions stay out of git (questions init uwf)";
const IGNORED: [&str; 4] = [
    "/uwf-questions.db",
    "/uwf-questions.db-wal",
    "/uwf-questions.db-shm",
    "/uwf-questions.db-journal",
];

/// A file `init uwf` changes: path, text before, text after (`None`: it goes), the
/// report's action, and how many commands were switched in it.
type Planned = (
    PathBuf,
    Option<String>,
    Option<String>,
    &'static str,
    Option<usize>,
);

#[derive(Debug, Serialize)]
struct UwfReport {
    client: &'static str,
    scope: &'static str,
    dry_run: bool,
    changed: bool,
    /// The ledger `questions` uses there (§1): the uwf protocol's own.
    ledger: String,
    files: Vec<FileChange>,
    note: &'static str,
}

pub(super) fn run(args: &InitArgs) -> Result<Outcome> {
    if args.user {
        return Err(Error::usage(
            "init uwf switches a repository, not a user: run it inside the repository, without --user",
        ));
    }
    let here = super::current_dir()?;
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
    // (path, before, after, action, replaced): everything is read and checked before
    // anything is written.
    let mut planned: Vec<Planned> = Vec::new();
    for path in docs {
        let before = read(&path, &path)?.unwrap_or_default();
        let (after, replaced) = if args.remove {
            in_code(&before, back)
        } else {
            in_code(&before, forward)
        };
        if replaced > 0 {
            let action = if args.remove { "removed" } else { "updated" };
            planned.push((path, Some(before), Some(after), action, Some(replaced)));
        }
    }
    let ignore = root.join(UWF_SKILL).join(".gitignore");
    let before = read(&ignore, &ignore)?;
    let after = if args.remove {
        unignore(before.as_deref())
    } else {
        Some(ignored(before.as_deref()))
    };
    if before != after {
        let action = match (&before, &after) {
            (None, _) => "created",
            (_, None) => "deleted",
            _ if args.remove => "removed",
            _ => "updated",
        };
        planned.push((ignore, before, after, action, None));
    }
    for (path, ..) in &planned {
        refuse_read_only(path)?;
    }
    let mut files = Vec::new();
    for (path, _, after, action, replaced) in planned {
        if !args.dry_run {
            match &after {
                Some(text) => write_whole(&path, text)?,
                None => std::fs::remove_file(&path)
                    .map_err(|e| Error::io(format!("cannot remove {}: {e}", path.display())))?,
            }
        }
        files.push(FileChange {
            path: path.display().to_string(),
            action,
            target: None,
            content: if args.dry_run { after } else { None },
            replaced,
        });
    }
    let changed = !files.is_empty();
    let mut outcome = Outcome::ok(UwfReport {
        client: "uwf",
        scope: "project",
        dry_run: args.dry_run,
        changed,
        ledger: root
            .join(UWF_SKILL)
            .join("uwf-questions.db")
            .display()
            .to_string(),
        files,
        note: "the docs run `questions` from PATH, as every machine of the repository has it; \
               the ledger stays the protocol's own uwf-questions.db, and it and its -wal and \
               -shm are git-ignored",
    });
    if !changed {
        outcome.note = Some(if args.remove {
            "nothing changed: no doc runs `questions`, and nothing of ours is git-ignored".into()
        } else {
            "nothing changed: the docs already run `questions`, and the ledger is git-ignored"
                .into()
        });
    }
    Ok(outcome)
}

fn refuse_read_only(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Ok(meta) if meta.permissions().mode() & 0o222 == 0 => Err(Error::io(format!(
            "{} is read-only; nothing was changed: make it writable (chmod u+w) and run init \
             uwf again",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// The skill folder's `.gitignore` with our lines, after whatever was there.
fn ignored(before: Option<&str>) -> String {
    let before = before.unwrap_or("");
    if before.lines().any(|l| l == IGNORE_MARK) {
        return before.to_string();
    }
    let mut text = before.to_string();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(IGNORE_MARK);
    text.push('\n');
    for line in IGNORED {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// Our lines taken out again; `None` when nothing else was in the file.
fn unignore(before: Option<&str>) -> Option<String> {
    let before = before?;
    let mut out = String::new();
    let mut ours = false;
    for line in before.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare == IGNORE_MARK {
            ours = true;
            continue;
        }
        if ours && IGNORED.contains(&bare) {
            continue;
        }
        ours = false;
        out.push_str(line);
    }
    (!out.is_empty()).then_some(out)
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

/// `switch` applied to the code in a Markdown text (fenced blocks, and code spans on one
/// line), every other byte copied; with the number of switches.
fn in_code(text: &str, switch: fn(&str) -> (String, usize)) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut count = 0;
    let mut fence: Option<(char, usize)> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        let opener = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = opener.map_or(0, |c| trimmed.chars().take_while(|x| *x == c).count());
        if indent <= 3 && run >= 3 {
            let c = opener.unwrap_or('`');
            match fence {
                None => {
                    fence = Some((c, run));
                    out.push_str(line);
                    continue;
                }
                Some((f, n)) if f == c && run >= n && trimmed[run..].trim().is_empty() => {
                    fence = None;
                    out.push_str(line);
                    continue;
                }
                // A shorter or other fence inside the block: code.
                Some(_) => {}
            }
        }
        if fence.is_some() {
            let (switched, n) = switch(line);
            out.push_str(&switched);
            count += n;
            continue;
        }
        // Code spans: a run of backticks up to the next run of the same length.
        let mut rest = line;
        while let Some(open) = rest.find('`') {
            let ticks = rest[open..].chars().take_while(|c| *c == '`').count();
            let inside_from = open + ticks;
            let marker = "`".repeat(ticks);
            let close = rest[inside_from..].match_indices(&marker).find(|(i, _)| {
                let after = inside_from + i + ticks;
                !rest[after..].starts_with('`')
            });
            let Some((close, _)) = close else {
                break;
            };
            let close = inside_from + close;
            out.push_str(&rest[..inside_from]);
            let (switched, n) = switch(&rest[inside_from..close]);
            out.push_str(&switched);
            count += n;
            out.push_str(&marker);
            rest = &rest[close + ticks..];
        }
        out.push_str(rest);
    }
    (out, count)
}

/// `node …/questions.mjs` becomes `questions`.
fn forward(code: &str) -> (String, usize) {
    let mut out = code.to_string();
    let mut count = 0;
    for script in UWF_SCRIPTS {
        count += out.matches(script).count();
        out = out.replace(script, "questions");
    }
    (out, count)
}

/// `questions <command>` (one of the script's) becomes `node …/questions.mjs <command>`
/// again, where `questions` stands where a command does.
fn back(code: &str) -> (String, usize) {
    let mut out = String::with_capacity(code.len());
    let mut count = 0;
    let mut rest = code;
    while let Some(at) = rest.find("questions ") {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        let before = out.chars().last();
        let standalone = before.is_none_or(|c| c.is_whitespace() || "$(|;&".contains(c));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_code_is_switched() {
        let text = "Run `node .github/skills/uwf-question-protocol/questions.mjs list` to see \
                    the open questions list.\n```sh\nnode .github/skills/uwf-question-protocol/questions.mjs check --stage x\n```\n";
        let (there, n) = in_code(text, forward);
        assert_eq!(n, 2);
        assert!(there.contains("the open questions list."));
        let (back_again, n) = in_code(&there, back);
        assert_eq!(n, 2);
        assert_eq!(back_again, text);
        let prose = "Keep the open questions list short; questions answer themselves rarely.\n";
        assert_eq!(in_code(prose, back), (prose.to_string(), 0));
    }

    #[test]
    fn the_ignore_lines_come_and_go() {
        for before in [None, Some("*.db\n"), Some("*.db")] {
            let with = ignored(before);
            assert_eq!(ignored(Some(&with)), with);
            let without = unignore(Some(&with));
            match before {
                Some("*.db") => assert_eq!(without.as_deref(), Some("*.db\n")),
                other => assert_eq!(without.as_deref(), other),
            }
        }
    }
}
