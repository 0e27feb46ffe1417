//! The button grammar, once: which buttons a question's card has, what each is labelled,
//! and the value each carries, signed for its card (`<delivery>:<value>:<signature>`,
//! which the core checks). The values: `a` approve and `r` reject (an approval), `oN` the
//! option N, `tMASK` a multi-select's options toggled to MASK (hex) and `mMASK` done with
//! them, `p` the proposal as it stands, `x` "Other…" (a typed answer). A channel renders
//! the rows (an inline keyboard, blocks). A channel without buttons takes replies
//! instead: the card numbers its options and the core reads a reply's number or label;
//! an approval's reply is read by `verdict`.

use questions_core::model::Question;
use questions_core::ops::relay::{ButtonKey, Given};

/// What a button does, so that a channel may mark it (a colour, an emoji).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Approve,
    Reject,
    /// An option, or a multi-select's toggle of one.
    Option {
        recommended: bool,
    },
    Done,
    Proposal,
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Button {
    pub(crate) label: String,
    /// Unsigned: `signed` makes what the provider carries.
    pub(crate) value: String,
    pub(crate) role: Role,
}

/// The card's buttons in rows: Approve and Reject on one row for an approval; else one
/// row each: an option (the recommended one starred; toggles for a multi-select, `mask`
/// the options on, and Done once any is), "Use the proposal" where a proposal stands with
/// no options, "Other…" where typed answers are allowed. At most `most` options get one
/// (the provider's limit).
pub(crate) fn rows(q: &Question, mask: u64, most: usize) -> Vec<Vec<Button>> {
    let button = |label: String, value: String, role: Role| Button { label, value, role };
    if q.state.approval.is_some() {
        return vec![vec![
            button("Approve".into(), "a".into(), Role::Approve),
            button("Reject".into(), "r".into(), Role::Reject),
        ]];
    }
    let mut rows = Vec::new();
    for (i, o) in q.options.iter().enumerate().take(most.min(64)) {
        let star = if o.recommended { " ★" } else { "" };
        let role = Role::Option {
            recommended: o.recommended,
        };
        rows.push(vec![if q.multi_select {
            let on = mask & (1 << i) != 0;
            button(
                format!(
                    "{} {}. {}{star}",
                    if on { "☑" } else { "☐" },
                    i + 1,
                    o.label
                ),
                format!("t{:x}", mask ^ (1 << i)),
                role,
            )
        } else {
            button(
                format!("{}. {}{star}", i + 1, o.label),
                format!("o{}", i + 1),
                role,
            )
        }]);
    }
    if q.multi_select && mask != 0 {
        rows.push(vec![button(
            "Done".into(),
            format!("m{mask:x}"),
            Role::Done,
        )]);
    }
    if q.options.is_empty() && q.proposed.is_some() {
        rows.push(vec![button(
            "Use the proposal".into(),
            "p".into(),
            Role::Proposal,
        )]);
    }
    if q.allow_freeform || q.options.is_empty() {
        rows.push(vec![button("Other…".into(), "x".into(), Role::Other)]);
    }
    rows
}

/// A button's value as the provider carries it, signed for the card of `delivery`.
pub(crate) fn signed(key: &ButtonKey, delivery: i64, value: &str) -> String {
    format!("{delivery}:{value}:{}", key.sign(delivery, value))
}

/// What a verified button does on the card alone, recording nothing: a toggle shows the
/// card with that selection (`Some(mask)`), "Other…" asks for a typed answer (`None`).
/// `Err(())`: a button the core hears.
pub(crate) fn on_the_card(value: &str) -> Result<Option<u64>, ()> {
    if let Some(mask) = value.strip_prefix('t') {
        return Ok(Some(u64::from_str_radix(mask, 16).unwrap_or(0)));
    }
    if value == "x" {
        return Ok(None);
    }
    Err(())
}

/// An approval's reply, on a channel without buttons: `APPROVE` alone on its first line
/// (a comment may follow on the next ones), or `REJECT` and a reason; anything else as
/// typed, which the core refuses saying why: a first word is not a vote ("Approved by
/// legal? Not yet." approves nothing).
pub(crate) fn verdict(text: &str) -> Given {
    let trimmed = text.trim();
    let (first, rest) = trimmed.split_once('\n').unwrap_or((trimmed, ""));
    let first = first.trim();
    let word = first.trim_end_matches(['.', '!']).to_uppercase();
    if word == "APPROVE" || word == "APPROVED" {
        return Given::Approve;
    }
    let split = first
        .find(|c: char| !c.is_alphabetic())
        .unwrap_or(first.len());
    let (word, after) = first.split_at(split);
    let rejects = matches!(word.to_uppercase().as_str(), "REJECT" | "REJECTED");
    if rejects && (after.is_empty() || after.starts_with([' ', '\t', ':', '-', '—', '.', ','])) {
        let reason = format!(
            "{}\n{}",
            after
                .trim_start_matches([' ', '\t', ':', '-', '—', '.', ','])
                .trim(),
            rest.trim()
        );
        let reason = reason.trim();
        return Given::Reject((!reason.is_empty()).then(|| reason.to_string()));
    }
    Given::Text(trimmed.to_string())
}
