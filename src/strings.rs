//! Every text the inbox and the terminal prompts show, in one place: a translation is a
//! copy of this file.
//! The page's script takes its few words from the page (`data-strings`), built from here.

pub(crate) const TITLE: &str = "Questions";
pub(crate) const NONE_PENDING: &str = "No pending questions";
pub(crate) const EMPTY: &str =
    "Nothing is waiting for an answer. New questions appear here as agents log them.";
pub(crate) const REQUIRED: &str = "Required";
pub(crate) const OPTIONAL: &str = "Optional";
pub(crate) const RECOMMENDED: &str = "Recommended";
pub(crate) const CHOOSE_ONE: &str = "Choose one";
pub(crate) const CHOOSE_ANY: &str = "Choose any";
pub(crate) const YOUR_ANSWER: &str = "Your answer";
pub(crate) const OWN_WORDS: &str = "Or in your own words";
pub(crate) const ANSWER: &str = "Answer";
pub(crate) const PROPOSED: &str = "Proposed:";
pub(crate) const ACCEPT_PROPOSED: &str = "Accept proposed";
pub(crate) const SKIP_OR_DECLINE: &str = "Skip or decline";
pub(crate) const SKIP_REASON: &str = "Reason to skip (optional)";
pub(crate) const DECLINE_REASON: &str =
    "Reason to decline (needed): what is wrong with the question";
pub(crate) const SKIP: &str = "Skip";
pub(crate) const DECLINE: &str = "Decline";
pub(crate) const HISTORY: &str = "History";
pub(crate) const NEXT_REQUIRED: &str = "Next required";
/// The inbox's button that ends a sign-in's session.
pub(crate) const SIGN_OUT: &str = "Sign out";

/// Who the inbox is open as, when they signed in (`person` already escaped).
pub(crate) fn signed_in_as(person: &str) -> String {
    format!("<span>Signed in as <strong>{person}</strong></span> ")
}
pub(crate) const KEYS: &str = "Keys: j / k next / previous · r next required · o open or close · \
                        1–9 choose · Enter answer (Ctrl+Enter in text) · a accept proposed";
pub(crate) const TIME_UP: &str = "time is up";
pub(crate) const VOTE_NEEDS_TOKEN: &str = "A vote needs your own token: the server's token names \
                                    nobody. Open the inbox with the link made from your token \
                                    (serve --users).";

pub(crate) fn requester_may_not_vote(person: &str) -> String {
    format!("You ({person}) asked for this approval, so another approver must vote on it.")
}

pub(crate) fn not_an_approver(person: &str, approvers: &str) -> String {
    format!("You ({person}) are not among its approvers: {approvers}.")
}

pub(crate) fn title(stage: Option<&str>) -> String {
    match stage {
        Some(stage) => format!("{TITLE} · {stage}"),
        None => TITLE.to_string(),
    }
}

pub(crate) fn page_title(title: &str, count: usize) -> String {
    format!("{title} ({count} pending)")
}

pub(crate) fn summary(count: usize, required: usize) -> String {
    match count {
        0 => NONE_PENDING.to_string(),
        1 => format!("1 pending question, {required} required"),
        n => format!("{n} pending questions, {required} required"),
    }
}

/// A stage's heading count: "3 questions · 1 required".
pub(crate) fn stage_count(count: usize, required: usize) -> String {
    let questions = match count {
        1 => "1 question".to_string(),
        n => format!("{n} questions"),
    };
    match required {
        0 => questions,
        r => format!("{questions} · {r} required"),
    }
}

pub(crate) fn history(events: usize) -> String {
    format!("{HISTORY} ({events})")
}

pub(crate) fn answered(id: i64) -> String {
    format!("Question {id} answered.")
}

pub(crate) fn accepted(id: i64) -> String {
    format!("Question {id} answered with its proposal.")
}

pub(crate) fn skipped(id: i64) -> String {
    format!("Question {id} skipped.")
}

pub(crate) fn declined(id: i64) -> String {
    format!("Question {id} declined.")
}

pub(crate) fn decline_needs_reason(id: i64) -> String {
    format!("Question {id} was not declined: say why in the reason, so it can be asked better.")
}

/// A history event's name as the page shows it: a proposal taken is said to be accepted.
pub(crate) fn event_kind(kind: &str) -> &str {
    match kind {
        "defaulted" => "accepted the proposal",
        other => other,
    }
}

/// Who made a change in the history: "by carol".
pub(crate) fn by(name: &str) -> String {
    format!("by {name}")
}

/// A delegate's answer or vote, made for the person they stand in for: "bob for alice".
pub(crate) fn standing_in(delegate: &str, person: &str) -> String {
    format!("{delegate} for {person}")
}

/// Through what: "via web".
pub(crate) fn via(channel: &str) -> String {
    format!("via {channel}")
}

/// A change refused, with the reason the ledger gave: said of the question once (a reason
/// that already names it is not prefixed with it again).
pub(crate) fn refused(id: i64, why: &str) -> String {
    if why.contains(&format!("question {id} ")) {
        let mut chars = why.chars();
        chars.next().map_or_else(String::new, |first| {
            first.to_uppercase().chain(chars).collect()
        })
    } else {
        format!("Question {id}: {why}")
    }
}

pub(crate) fn unreadable(message: &str) -> String {
    format!("The inbox cannot read the ledger: {message}\n")
}

/// What happens when a question's time runs out, after the time left: ": answered “No”
/// unless you answer".
pub(crate) fn on_expiry(what: Expiry<'_>) -> String {
    match what {
        Expiry::Answered(value) => format!("answered “{value}” unless you answer"),
        Expiry::Skipped => "skipped unless you answer".to_string(),
        Expiry::Overdue => "then shown as overdue to whoever waits on it".to_string(),
        Expiry::Rejected => "rejected unless it is approved".to_string(),
    }
}

pub(crate) enum Expiry<'a> {
    Answered(&'a str),
    Skipped,
    Overdue,
    Rejected,
}

/// Time left, as a person reads it: "1 h 52 min", "4 min 12 s", "42 s". The page's
/// script counts down with the same units (`units`).
pub(crate) fn time_left(seconds: i64) -> String {
    if seconds <= 0 {
        return TIME_UP.to_string();
    }
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    if d > 0 {
        format!("in {d} d {h} h")
    } else if h > 0 {
        format!("in {h} h {m} min")
    } else if m >= 10 {
        format!("in {m} min")
    } else if m > 0 {
        format!("in {m} min {s} s")
    } else {
        format!("in {s} s")
    }
}

/// The words the script needs to count down, as the JSON of `data-strings`.
pub(crate) fn script_words() -> String {
    serde_json::json!({
        "in": "in",
        "d": "d",
        "h": "h",
        "min": "min",
        "s": "s",
        "up": TIME_UP,
    })
    .to_string()
}

/// Standard base64 with padding (an email's encoded words, an MCP routing header).
#[cfg(any(feature = "relay", feature = "remote"))]
pub(crate) fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{refused, time_left};

    #[test]
    fn a_refusal_names_its_question_once() {
        assert_eq!(
            refused(
                9,
                "the answer to question 9 is empty: give the answer text, or skip the question"
            ),
            "The answer to question 9 is empty: give the answer text, or skip the question"
        );
        assert_eq!(
            refused(1, "the answer to question 19 is empty"),
            "Question 1: the answer to question 19 is empty"
        );
        assert_eq!(refused(4, "it has expired"), "Question 4: it has expired");
    }

    #[test]
    fn time_left_reads_as_a_person_says_it() {
        assert_eq!(time_left(2 * 86_400 + 3 * 3600), "in 2 d 3 h");
        assert_eq!(time_left(6720), "in 1 h 52 min");
        assert_eq!(time_left(1800), "in 30 min");
        assert_eq!(time_left(252), "in 4 min 12 s");
        assert_eq!(time_left(42), "in 42 s");
        assert_eq!(time_left(0), "time is up");
    }
}
