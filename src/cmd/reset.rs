use std::io::ErrorKind;

use serde::Serialize;

use super::Outcome;
use crate::cli::ResetArgs;
use crate::error::{Error, Result};
use crate::store::{Ledger, Location};

#[derive(Serialize)]
struct Reset {
    deleted: String,
    existed: bool,
}

/// Deletes the ledger without opening it, so a damaged ledger can be reset too.
pub fn run(ledger: &mut Ledger, args: ResetArgs) -> Result<Outcome> {
    let location = ledger.location();
    if !args.yes {
        return Err(Error::usage(format!(
            "reset deletes the ledger {} and every question and answer in it; pass --yes to confirm",
            location.display()
        )));
    }
    let path = match location {
        Location::File { path, .. } => path,
        Location::Postgres { url } => {
            let existed = crate::store::drop_postgres(url)?;
            return Ok(Outcome::ok(Reset {
                deleted: location.display(),
                existed,
            }));
        }
    };
    // Everything is checked before anything is deleted: what is not a ledger stays whole.
    for (i, file) in location.files().iter().enumerate() {
        crate::store::refuse_non_ledger(file, i == 0)?;
    }
    // Deleted under the ledger's write lock: a write in flight finishes first, and one
    // waiting for the lock finds its ledger gone (and records nothing).
    let existed = crate::store::locked_for_reset(path, || {
        let mut existed = false;
        for suffix in ["", "-wal", "-shm"] {
            let mut file = path.clone().into_os_string();
            file.push(suffix);
            match std::fs::remove_file(&file) {
                Ok(()) => existed |= suffix.is_empty(),
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(Error::io(format!(
                        "cannot delete {}: {e}",
                        std::path::Path::new(&file).display()
                    )))
                }
            }
        }
        Ok(existed)
    })?;
    Ok(Outcome::ok(Reset {
        deleted: path.display().to_string(),
        existed,
    }))
}
