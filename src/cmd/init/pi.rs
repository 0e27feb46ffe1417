//! `questions init pi`: the pi package's extension and skill, written whole into the
//! project's `.pi/` (or, with `--user`, the user's pi folder: `PI_CODING_AGENT_DIR`, else
//! `~/.pi/agent`), where pi loads them with no build step and no install:
//!
//! - `extensions/questions/index.ts`: the `ask_user` tool (contrib/pi);
//! - `extensions/questions/questions.json`: the command it runs and the ledger (`--db`);
//! - `skills/ask-user/SKILL.md`: when to ask.
//!
//! These files are ours whole: a second run leaves them byte-identical, `--remove` takes
//! them out (and the folders they leave empty).

use std::path::{Path, PathBuf};

use super::files::{follow, read, write_whole};
use super::{FileChange, Invocation, Report};
use questions_core::error::{Error, Result};

const EXTENSION: &str = include_str!("../../../contrib/pi/extensions/ask-user.ts");
const SKILL: &str = include_str!("../../../contrib/pi/skills/ask-user/SKILL.md");

/// The user's pi folder: `PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
pub(super) fn user_dir(home: &Path) -> PathBuf {
    std::env::var_os("PI_CODING_AGENT_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| home.join(".pi").join("agent"), PathBuf::from)
}

/// The files `init pi` owns under `dir` (the project's `.pi`, or the user's pi folder),
/// and what each holds.
fn files(dir: &Path, how: &Invocation) -> Vec<(PathBuf, String)> {
    let mut config = serde_json::Map::new();
    config.insert("command".into(), how.program.clone().into());
    if let Some(db) = &how.db {
        config.insert("db".into(), db.clone().into());
    }
    let config = format!(
        "{}\n",
        serde_json::to_string_pretty(&serde_json::Value::Object(config))
            .unwrap_or_else(|_| "{}".into())
    );
    let ext = dir.join("extensions").join("questions");
    vec![
        (ext.join("index.ts"), EXTENSION.to_string()),
        (ext.join("questions.json"), config),
        (
            dir.join("skills").join("ask-user").join("SKILL.md"),
            SKILL.to_string(),
        ),
    ]
}

pub(super) fn run(
    user: bool,
    base: &Path,
    how: &Invocation,
    remove: bool,
    dry_run: bool,
    warnings: Vec<String>,
) -> Result<Report> {
    let dir = if user {
        user_dir(base)
    } else {
        base.join(".pi")
    };
    // Every file is read first: one that cannot be refuses the whole run.
    let mut planned = Vec::new();
    for (path, text) in files(&dir, how) {
        let target = follow(&path)?;
        let before = read(&path, &target)?;
        let after = (!remove).then_some(text);
        if before != after {
            if let Ok(meta) = std::fs::metadata(&target) {
                use std::os::unix::fs::PermissionsExt;
                if meta.permissions().mode() & 0o222 == 0 {
                    return Err(Error::io(format!(
                        "{} is read-only; it was left as it is",
                        path.display()
                    )));
                }
            }
        }
        planned.push((path, target, before, after));
    }
    let mut reported = Vec::new();
    for (path, target, before, after) in planned {
        let action = match (&before, &after) {
            (b, a) if b == a => "unchanged",
            (None, Some(_)) => "created",
            (Some(_), None) => "deleted",
            _ => "updated",
        };
        if !dry_run && before != after {
            if let Some(text) = &after {
                write_whole(&target, text)?;
            } else {
                std::fs::remove_file(&target)
                    .map_err(|e| Error::io(format!("cannot remove {}: {e}", target.display())))?;
                // The folders it leaves empty go too, up to the pi folder.
                let mut at = target.parent();
                while let Some(d) = at.filter(|d| d.starts_with(&dir) && *d != dir) {
                    if std::fs::remove_dir(d).is_err() {
                        break;
                    }
                    at = d.parent();
                }
            }
        }
        reported.push(FileChange {
            path: path.display().to_string(),
            action,
            target: (target != path).then(|| target.display().to_string()),
            content: if dry_run && before != after {
                after
            } else {
                None
            },
            replaced: None,
        });
    }
    let changed = reported.iter().any(|f| f.action != "unchanged");
    Ok(Report {
        client: "pi",
        scope: if user { "user" } else { "project" },
        command: how.program.clone(),
        dry_run,
        changed,
        files: reported,
        warnings,
        next: Vec::new(),
    })
}
