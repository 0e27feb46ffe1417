//! The points where the suite injects faults, and the one fact a panic report needs from
//! the store: whether this call's change was already committed.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write of this call has committed: from then on, a failure must not claim
/// that nothing was recorded.
static COMMITTED: AtomicBool = AtomicBool::new(false);

/// Called by the store after each commit.
pub(crate) fn committed() {
    COMMITTED.store(true, Ordering::SeqCst);
    self::point("after-commit");
}

/// The faults the suite injects to check what a panic reports: `QUESTIONS_TEST_PANIC`
/// names the point. Compiled into debug builds only.
pub fn point(point: &str) {
    #[cfg(debug_assertions)]
    {
        assert!(
            std::env::var_os("QUESTIONS_TEST_PANIC").is_none_or(|p| p != point),
            "injected at {point} (QUESTIONS_TEST_PANIC)"
        );
        // `QUESTIONS_TEST_PAUSE=<point>:<file>`: wait here until the file exists (10 s at
        // most), so a test can act while this call is in the middle of its work. Arriving,
        // it creates `<file>.reached` (each time), so that the test waits for that rather
        // than for time to pass.
        if let Ok(pause) = std::env::var("QUESTIONS_TEST_PAUSE") {
            if let Some(file) = pause.strip_prefix(&format!("{point}:")) {
                let _ = std::fs::write(format!("{file}.reached"), b"");
                let file = std::path::Path::new(file);
                let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
                while !file.exists() && std::time::Instant::now() < end {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
        }
    }
    let _ = point;
}

/// Whether the suite makes the call fail at `point`, as on a ledger that cannot be
/// written for a moment: `QUESTIONS_TEST_FAIL` names the point. Never in a release build.
pub fn fails(point: &str) -> bool {
    #[cfg(debug_assertions)]
    return std::env::var_os("QUESTIONS_TEST_FAIL").is_some_and(|p| p == point);
    #[cfg(not(debug_assertions))]
    {
        let _ = point;
        false
    }
}

/// Whether a write of this call has committed (see `committed`).
pub fn has_committed() -> bool {
    COMMITTED.load(Ordering::SeqCst)
}
