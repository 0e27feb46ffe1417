//! Reading and writing the configs: through a symbolic link to its target, never over a
//! read-only file, whole or not at all.

use std::path::{Path, PathBuf};

use super::json::Jsonc;
use super::FileChange;
use questions_core::error::{Error, Result};

/// Puts our entries into a config, or takes them out (`true`); an `Err` says which key
/// holds what cannot be edited. Warnings name look-alike entries left alone.
pub(super) type JsonChange =
    Box<dyn Fn(&mut Jsonc, bool, &mut Vec<String>) -> std::result::Result<(), String>>;
pub(super) type TomlChange = Box<
    dyn Fn(&mut toml_edit::DocumentMut, bool, &mut Vec<String>) -> std::result::Result<(), String>,
>;

/// One config file and what to do to it.
pub(super) struct Edit {
    pub(super) path: PathBuf,
    pub(super) kind: Kind,
}

pub(super) enum Kind {
    /// JSON, comments allowed.
    Json(JsonChange),
    /// A TOML document (Codex).
    Toml(TomlChange),
}

/// A file read and edited, not yet written.
pub(super) struct Change {
    /// As named (the report's path).
    path: PathBuf,
    /// Where the bytes are: `path` with its symbolic links followed.
    target: PathBuf,
    before: Option<String>,
    /// `None`: the file goes (nothing but what `init` wrote was in it).
    after: Option<String>,
    /// What an emptied file holds when it stays (a link's target): `{}` or nothing.
    empty: &'static str,
}

/// Reads the file `edit` names and edits it in memory; refuses a file it could not write
/// back, before anything is written anywhere.
pub(super) fn prepare(edit: &Edit, remove: bool, warnings: &mut Vec<String>) -> Result<Change> {
    let shown = edit.path.display().to_string();
    let target = follow(&edit.path)?;
    let before = read(&edit.path, &target)?;
    let left = |why: String| Error::parse(format!("{shown}: {why}; it was left as it is"));
    let after = match &edit.kind {
        Kind::Json(f) => {
            let mut doc = Jsonc::parse(before.as_deref().unwrap_or("")).map_err(&left)?;
            f(&mut doc, remove, warnings).map_err(|why| {
                Error::conflict(format!(
                    "{shown}: {why}; it was left as it is: fix that key, or add the entries by hand"
                ))
            })?;
            if before.is_none() && doc.is_empty_object() {
                None
            } else if remove
                && doc.is_empty_object()
                && doc.text() != before.as_deref().unwrap_or("")
            {
                // Nothing but what `init` had put there: the file goes, as it came.
                None
            } else {
                Some(doc.text().to_string())
            }
        }
        Kind::Toml(f) => {
            let text = before.clone().unwrap_or_default();
            let mut doc: toml_edit::DocumentMut =
                text.parse().map_err(|e: toml_edit::TomlError| {
                    left(format!(
                        "it is not TOML that can be read ({})",
                        e.to_string().trim()
                    ))
                })?;
            f(&mut doc, remove, warnings).map_err(|why| {
                Error::conflict(format!(
                    "{shown}: {why}; it was left as it is: fix that key, or add the entries by hand"
                ))
            })?;
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
    // Nothing to write where nothing was and nothing goes in (a removal from no file).
    let after = if before.is_none() && after.is_none() {
        None
    } else {
        after
    };
    let change = Change {
        path: edit.path.clone(),
        target,
        before,
        after,
        empty: match edit.kind {
            Kind::Json(_) => "{}\n",
            Kind::Toml(_) => "",
        },
    };
    if change.changes() {
        change.check_writable()?;
    }
    Ok(change)
}

impl Change {
    fn changes(&self) -> bool {
        self.before != self.after
    }

    /// A file whose mode lets no one write it is the owner's word that it stays as it is,
    /// even to root.
    fn check_writable(&self) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let Ok(meta) = std::fs::metadata(&self.target) else {
            return Ok(());
        };
        if meta.permissions().mode() & 0o222 == 0 {
            return Err(Error::io(format!(
                "{} is read-only; it was left as it is: make it writable (chmod u+w) and run \
                 init again, or add the entries by hand (--dry-run shows them)",
                self.path.display()
            )));
        }
        Ok(())
    }

    pub(super) fn write(&self) -> Result<()> {
        if !self.changes() {
            return Ok(());
        }
        match &self.after {
            Some(text) => write_whole(&self.target, text),
            // A link to a config stays, pointing at an emptied file rather than at none.
            None if self.target != self.path => write_whole(&self.target, self.empty),
            None => std::fs::remove_file(&self.target)
                .map_err(|e| Error::io(format!("cannot remove {}: {e}", self.target.display()))),
        }
    }

    pub(super) fn report(self, remove: bool, dry_run: bool) -> FileChange {
        let action = match (&self.before, &self.after) {
            (b, a) if b == a => "unchanged",
            (None, Some(_)) => "created",
            (Some(_), None) => "deleted",
            _ if remove => "removed",
            _ => "updated",
        };
        let changes = self.changes();
        FileChange {
            path: self.path.display().to_string(),
            action,
            target: (self.target != self.path).then(|| self.target.display().to_string()),
            content: if dry_run && changes { self.after } else { None },
            replaced: None,
        }
    }
}

/// `path` with its symbolic links followed to the file they name (which need not exist
/// yet); a loop of links is refused.
pub(super) fn follow(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let to = std::fs::read_link(&at).map_err(|e| {
                    Error::io(format!("cannot read the link {}: {e}", at.display()))
                })?;
                at = match at.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(at),
        }
    }
    Err(Error::io(format!(
        "{} is a loop of symbolic links; it was left as it is",
        path.display()
    )))
}

/// The text of a config, `None` when there is none yet.
pub(super) fn read(shown: &Path, target: &Path) -> Result<Option<String>> {
    match std::fs::read(target) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            Error::parse(format!(
                "{} is not UTF-8 text; it was left as it is",
                shown.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!(
            "cannot read {}: {e}; it was left as it is",
            shown.display()
        ))),
    }
}

/// Writes a file whole or not at all (a temp file beside it, then a rename), keeping the
/// mode of the file it replaces.
pub(super) fn write_whole(path: &Path, text: &str) -> Result<()> {
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
