//! A ledger created inside a git work tree that git would not ignore is named once, on
//! stderr, by the call that created it: its `-wal` holds the question texts, and
//! `git add -A` would commit them. git itself answers (`git check-ignore`, with every
//! ignore file and setting it reads), and only then: a call that finds the ledger there
//! already spawns nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use questions_core::ops::Location;

/// The ledger's files, when it is a file this call may create: not there yet, and not in
/// the default `.questions/` folder (whose own `.gitignore` of `*` keeps it out of git).
pub(super) fn not_there_yet(location: &Location) -> Option<Vec<PathBuf>> {
    match location {
        Location::File {
            path,
            make_folder: false,
        } if std::fs::symlink_metadata(path).is_err() => Some(location.files()),
        _ => None,
    }
}

/// After the call: when it created the ledger, says which of its files git would not
/// ignore. Without git, or outside a work tree, nothing is said.
pub(super) fn warn_if_created_unignored(files: &[PathBuf]) {
    let Some(ledger) = files.first() else {
        return;
    };
    if std::fs::symlink_metadata(ledger).is_err() {
        return;
    }
    let unignored = unignored(files);
    if unignored.is_empty() {
        return;
    }
    let names: Vec<String> = unignored.iter().map(|p| p.display().to_string()).collect();
    crate::output::note(&format!(
        "warning: the new ledger is inside a git work tree, and git does not ignore {}: \
         `git add -A` would commit the questions. Add {} to a .gitignore (a uwf repository: \
         run `questions init uwf`)",
        names.join(", "),
        if names.len() == 1 { "it" } else { "them" }
    ));
}

/// The files git would not ignore, by `git check-ignore` in the ledger's folder; none when
/// git cannot tell (not installed, not a work tree).
fn unignored(files: &[PathBuf]) -> Vec<PathBuf> {
    let Some(dir) = files[0].parent().filter(|d| !d.as_os_str().is_empty()) else {
        return unignored_in(Path::new("."), files);
    };
    unignored_in(dir, files)
}

fn unignored_in(dir: &Path, files: &[PathBuf]) -> Vec<PathBuf> {
    let names: Vec<&std::ffi::OsStr> = files.iter().filter_map(|f| f.file_name()).collect();
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["check-ignore", "--"])
        .args(&names)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let Ok(output) = output else {
        return Vec::new();
    };
    // 0: some are ignored, 1: none is; anything else (128: not a work tree) tells nothing.
    if !matches!(output.status.code(), Some(0 | 1)) {
        return Vec::new();
    }
    let ignored = String::from_utf8_lossy(&output.stdout);
    let ignored: Vec<&str> = ignored.lines().collect();
    files
        .iter()
        .zip(&names)
        .filter(|(_, name)| !ignored.contains(&name.to_string_lossy().as_ref()))
        .map(|(f, _)| f.clone())
        .collect()
}
