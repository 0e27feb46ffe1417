use std::time::Duration;

use super::{door, nobody, take, Outcome};
use crate::cli::CheckArgs;
use questions_core::error::Result;
use questions_core::ops::{self, CheckRequest, GateReport, Ledger, Reply, Request, Wait};

pub(super) fn run(ledger: &mut Ledger, args: CheckArgs) -> Result<Outcome> {
    let req = CheckRequest {
        stage: args.stage,
        ids: args.ids.map(|i| i.0),
        strict: args.strict,
        wait: match (args.wait, args.timeout) {
            (false, _) => Wait::No,
            (true, limit) => Wait::Until(limit.map(Duration::from_secs_f64)),
        },
        allow_unknown_stage: args.allow_unknown_stage,
        ledger: None,
    };
    let report = take!(door(ledger, nobody(), Request::Check(req))?, Reply::Gate);
    let passes = report.gate.passes();
    // A new stage is checked before anything is logged into it (uwf does so at every
    // step): only a name close to a known one, perhaps a typo, is worth a line. A wait
    // that timed out on it failed, and says why.
    let note = if report.known_stage == Some(false) && passes {
        (!report.nearest.is_empty()).then(|| unknown(&report, ledger))
    } else if report.known_stage == Some(false) {
        Some(never_held(&report, ledger))
    } else {
        (!passes).then(|| note(&report))
    };
    let mut outcome = Outcome::json(passes, report, u8::from(!passes));
    outcome.note = note;
    Ok(outcome)
}

/// The stderr line of a gate over a stage that never held a question: perhaps a typo.
fn unknown(report: &GateReport, ledger: &Ledger) -> String {
    let stage = crate::output::sanitize(report.stage.as_deref().unwrap_or(""), false);
    let mut line = format!(
        "stage '{stage}' has never held a question in the ledger {}; the gate passes \
         (--strict makes this an error)",
        super::shown_location(ledger)
    );
    line.push_str(&did_you_mean(report));
    line
}

/// The stderr line of a wait that timed out on a stage that never held a question.
fn never_held(report: &GateReport, ledger: &Ledger) -> String {
    let stage = crate::output::sanitize(report.stage.as_deref().unwrap_or(""), false);
    let mut line = format!(
        "gate fails (timed out): stage '{stage}' has never held a question in the ledger {}; \
         a wait does not pass on a stage nobody logged into (--allow-unknown-stage passes \
         it at once)",
        super::shown_location(ledger)
    );
    line.push_str(&did_you_mean(report));
    line
}

/// The stderr line of a failed gate, for people reading a CI log.
fn note(report: &GateReport) -> String {
    let scope = report
        .stage
        .as_deref()
        .map_or("the given ids".to_string(), |s| {
            format!("stage '{}'", crate::output::sanitize(s, false))
        });
    let ids = |ids: Vec<i64>| {
        let mut shown: Vec<String> = ids.iter().take(10).map(i64::to_string).collect();
        if ids.len() > 10 {
            shown.push("…".to_string());
        }
        shown.join(", ")
    };
    let mut parts = Vec::new();
    if !report.pending.is_empty() {
        parts.push(format!(
            "{} required question(s) pending in {scope} (ids {})",
            report.pending.len(),
            ids(report.pending.iter().map(|q| q.id).collect())
        ));
    }
    if !report.declined.is_empty() {
        parts.push(format!(
            "{} required question(s) declined in {scope}, to be asked another way (ids {})",
            report.declined.len(),
            ids(report.declined.iter().map(|d| d.id).collect())
        ));
    }
    format!(
        "gate fails{}: {}{}",
        if report.timed_out { " (timed out)" } else { "" },
        parts.join("; "),
        if report.expired {
            "; a pending question's time is up"
        } else {
            ""
        }
    )
}

/// "; did you mean 'a', 'b'?" for the known stages near the one asked for; empty when none.
fn did_you_mean(report: &GateReport) -> String {
    if report.nearest.is_empty() {
        return String::new();
    }
    let names: Vec<String> = report
        .nearest
        .iter()
        .map(|n| crate::output::sanitize(n, false))
        .collect();
    format!("; did you mean {}?", ops::quoted(&names))
}
