//! The card's words, the same on every channel: its question, context and options
//! numbered, cut to a provider's limit where they must be.

use questions_core::model;
use questions_core::ops::relay;

/// What a card says on every channel: the question, its context and proposal, its options
/// numbered, then `how_to_reply` where a typed answer is taken; at most `limit`
/// characters once `escape` (the channel's markup escaping) has run over it. A card too
/// long for that is cut in its context, then its question, each marked where it was cut,
/// with a note of how much: its options, which say what each button means, are kept
/// whole.
pub(crate) fn card_text(
    q: &model::Question,
    how_to_reply: &str,
    limit: usize,
    escape: fn(&str) -> String,
) -> String {
    let question = q.question.as_str();
    let context = q
        .context
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| clip(c, 1500));
    let whole = escape(&card_parts(
        q,
        question,
        context.as_deref(),
        None,
        how_to_reply,
    ));
    if whole.chars().count() <= limit {
        return whole;
    }
    let asked = question.chars().count();
    let told = context.as_deref().map_or(0, |c| c.chars().count());
    // What the question and context may take: the rest of the card, with a note of the
    // most a cut can be, measured first; then less while the escaped card is too long.
    let note = |cut: usize| {
        format!("(cut: {cut} characters; the whole question is in the inbox and the ledger)")
    };
    let rest = escape(&card_parts(
        q,
        "",
        None,
        Some(note(asked + told)),
        how_to_reply,
    ))
    .chars()
    .count();
    let mut room = limit.saturating_sub(rest + 4);
    loop {
        let keep_question = room.min(asked);
        let keep_context = room.saturating_sub(keep_question + 2).min(told);
        let q_text = cut(question, keep_question);
        let c_text = context
            .as_deref()
            .map(|c| cut(c, keep_context))
            .filter(|c| !c.is_empty());
        let removed = asked - keep_question + told - keep_context;
        let text = escape(&card_parts(
            q,
            &q_text,
            c_text.as_deref(),
            Some(note(removed)),
            how_to_reply,
        ));
        let over = text.chars().count().saturating_sub(limit);
        if over == 0 {
            return text;
        }
        if room == 0 {
            // The options alone are longer than a card: nothing more to cut but them.
            return clip(&text, limit);
        }
        room = room.saturating_sub(over.max(1));
    }
}

/// `text`'s first `n` characters, marked with an ellipsis when that is not all of it.
fn cut(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        return text.to_string();
    }
    let mut out: String = text.chars().take(n).collect();
    out.push('…');
    out
}

fn card_parts(
    q: &model::Question,
    question: &str,
    context: Option<&str>,
    note: Option<String>,
    how_to_reply: &str,
) -> String {
    let mut text = String::new();
    if let Some(header) = q.header.as_deref().filter(|h| !h.trim().is_empty()) {
        text.push_str(&format!("[{}] ", header.trim()));
    }
    text.push_str(&format!(
        "Question {} · {}\n{question}",
        q.id,
        q.stage.trim()
    ));
    if let Some(context) = context {
        text.push_str(&format!("\n\n{context}"));
    }
    if let Some(note) = note {
        text.push_str(&format!("\n{note}"));
    }
    if let Some(a) = &q.state.approval {
        text.push_str(&format!(
            "\n\nApproval: {} of {} (requested by {})",
            a.min,
            a.approvers.join(", "),
            a.requester
        ));
    } else if let Some(p) = q.proposed.as_deref() {
        text.push_str(&format!("\n\nProposed: {p}"));
    }
    for (i, o) in q.options.iter().enumerate() {
        text.push_str(&format!(
            "\n{}. {}{}",
            i + 1,
            o.label,
            if o.recommended { " (recommended)" } else { "" }
        ));
        if let Some(d) = o.description.as_deref().filter(|d| !d.trim().is_empty()) {
            text.push_str(&format!(" — {}", d.trim()));
        }
    }
    if q.state.approval.is_none() && (q.allow_freeform || q.options.is_empty()) {
        text.push_str(&format!("\n\n{how_to_reply}"));
    }
    text
}

/// A card's text, `card_text` given the room left: under a reposted card's note (§14a)
/// when it is one.
pub(crate) fn noted(card: &relay::Card, limit: usize, text: impl Fn(usize) -> String) -> String {
    match card.note() {
        Some(note) => {
            let room = limit.saturating_sub(note.chars().count() + 4);
            format!("⏰ {note}\n\n{}", text(room))
        }
        None => text(limit),
    }
}

/// Text as it is: for channels with no markup in their cards.
pub(crate) fn plain(text: &str) -> String {
    text.to_string()
}

/// At most `n` characters.
pub(crate) fn clip(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        return text.to_string();
    }
    let mut out: String = text.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}
