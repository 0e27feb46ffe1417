//! The inbox's HTML. Every text from the ledger goes through `esc`: a question holding
//! `<script>` is shown as those characters, never run. No inline script or style: the
//! Content-Security-Policy allows only the files under /assets/.

use std::fmt::Write;

use super::esc;
use crate::strings;
use questions_core::model::{Event, EventKind, OnExpiry, Question};

/// A message at the top of the page: what was just recorded, or why it was not. Only the
/// web inbox (`serve`) shows one.
#[cfg_attr(not(feature = "serve"), allow(dead_code))]
pub(crate) enum Flash {
    Done(String),
    Failed(String),
}

pub(crate) struct Page<'a> {
    pub seq: i64,
    /// The server's now, from the one clock: deadlines are counted from it.
    pub now: &'a str,
    /// The ledger's id: every form sends it back with the question's fingerprint, so an
    /// answer never lands on another question that took its id (see `ops::Shown`).
    pub ledger: Option<&'a str>,
    pub stage: Option<&'a str>,
    pub questions: &'a [(Question, Vec<Event>)],
    /// Whose token opened the page (none for the server's own): a vote counts as them.
    pub person: Option<&'a str>,
    /// Who may vote on each approval (see `ops::Inbox::voters`).
    pub voters: &'a std::collections::HashMap<i64, std::collections::BTreeSet<String>>,
    pub flash: Option<Flash>,
    /// The person signed in through the server's OpenID provider: the page says who, and
    /// offers to sign out.
    pub signed_in: bool,
    /// The form token every form carries back (see `serve::guard::form_token`).
    pub csrf: Option<&'a str>,
}

type Item = (Question, Vec<Event>);

/// Which comes first: required ones, the most urgent (nearest deadline) first, then the
/// rest in the order they were asked.
fn urgency(q: &Question) -> (bool, bool, &str, i64) {
    let expires = q.expires_at.as_deref();
    (!q.required, expires.is_none(), expires.unwrap_or(""), q.id)
}

/// The questions by stage: each stage's questions by urgency, and the stages by their most
/// urgent question (a stage with a required question before one without).
fn by_stage(questions: &[Item]) -> Vec<(&str, Vec<&Item>)> {
    let mut groups: Vec<(&str, Vec<&Item>)> = Vec::new();
    let mut sorted: Vec<&Item> = questions.iter().collect();
    sorted.sort_by(|(a, _), (b, _)| urgency(a).cmp(&urgency(b)));
    for item in sorted {
        let stage = item.0.stage.as_str();
        match groups.iter_mut().find(|(s, _)| *s == stage) {
            Some((_, items)) => items.push(item),
            None => groups.push((stage, vec![item])),
        }
    }
    groups
}

/// The form token's hidden field, when the page has one.
fn csrf_field(page: &Page) -> String {
    page.csrf.map_or_else(String::new, |t| {
        format!("<input type=\"hidden\" name=\"csrf\" value=\"{}\">", esc(t))
    })
}

pub(crate) fn inbox(page: &Page) -> String {
    let count = page.questions.len();
    let required = page.questions.iter().filter(|(q, _)| q.required).count();
    let mut out = String::with_capacity(4096 + count * 2048);
    let title = esc(&strings::title(page.stage));
    let groups = by_stage(page.questions);
    let first_required = groups
        .first()
        .and_then(|(_, items)| items.first())
        .filter(|(q, _)| q.required)
        .map(|(q, _)| q.id);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{page_title}</title>\
         <link rel=\"stylesheet\" href=\"/assets/inbox.css\">\
         <script src=\"/assets/inbox.js\" defer></script></head>\
         <body data-seq=\"{seq}\" data-ledger=\"{ledger}\" data-now=\"{now}\" \
         data-strings=\"{words}\"{csrf}>\
         <header class=\"top\"><div class=\"bar\"><h1>{title}</h1>",
        page_title = strings::page_title(&title, count),
        seq = page.seq,
        ledger = esc(page.ledger.unwrap_or("")),
        now = esc(page.now),
        words = esc(&strings::script_words()),
        csrf = page
            .csrf
            .map_or_else(String::new, |t| format!(" data-csrf=\"{}\"", esc(t))),
    );
    let who = match (page.signed_in, page.person) {
        (true, Some(person)) => format!(
            "<form class=\"who\" method=\"post\" action=\"/signout\">{}{}\
             <button type=\"submit\">{}</button></form>",
            csrf_field(page),
            strings::signed_in_as(&esc(person)),
            strings::SIGN_OUT,
        ),
        _ => String::new(),
    };
    let _ = write!(
        out,
        "<a id=\"next-required\" class=\"jump\" href=\"#q-{}\"{}>{}</a></div>{who}\
         <p id=\"summary\" aria-live=\"polite\">{}</p>\
         <p id=\"keys\" class=\"keys\" hidden>{}</p></header><main>",
        first_required.unwrap_or(0),
        if first_required.is_some() {
            ""
        } else {
            " hidden"
        },
        strings::NEXT_REQUIRED,
        strings::summary(count, required),
        esc(strings::KEYS),
    );
    match &page.flash {
        Some(Flash::Done(text)) => {
            let _ = write!(
                out,
                "<p id=\"flash\" class=\"flash done\" role=\"status\">{}</p>",
                esc(text)
            );
        }
        Some(Flash::Failed(text)) => {
            let _ = write!(
                out,
                "<p id=\"flash\" class=\"flash failed\" role=\"alert\">{}</p>",
                esc(text)
            );
        }
        None => {}
    }
    out.push_str("<section id=\"questions\">");
    let now = instant(page.now);
    for (n, (stage, items)) in groups.iter().enumerate() {
        let required = items.iter().filter(|(q, _)| q.required).count();
        let _ = write!(
            out,
            "<section class=\"stage\" id=\"stage-{n}\" data-stage=\"{stage}\">\
             <h2 class=\"stage-head\"><span class=\"name\">{stage}</span> \
             <span class=\"count\">{count}</span></h2>",
            stage = esc(stage),
            count = strings::stage_count(items.len(), required),
        );
        for (q, history) in items {
            let open = Some(q.id) == first_required;
            question(&mut out, q, history, now, open, page);
        }
        out.push_str("</section>");
    }
    out.push_str("</section><p id=\"empty\" class=\"empty\"");
    if count > 0 {
        out.push_str(" hidden");
    }
    let _ = write!(out, ">{}</p>", strings::EMPTY);
    out.push_str("</main></body></html>\n");
    out
}

/// Seconds since the epoch of an RFC 3339 instant.
fn instant(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.timestamp())
}

/// Time left until `expires_at`, and what happens then: "in 1 h 52 min" and "answered
/// “No” unless you answer".
fn deadline(q: &Question, now: Option<i64>) -> Option<(String, String, String)> {
    let expires = q.expires_at.as_deref()?;
    let left = match (instant(expires), now) {
        (Some(at), Some(now)) => strings::time_left(at - now),
        _ => strings::time_left(1),
    };
    let then = match q.on_expiry {
        OnExpiry::Default => match q.proposed.as_deref() {
            Some(p) => strings::on_expiry(strings::Expiry::Answered(p)),
            None => strings::on_expiry(strings::Expiry::Overdue),
        },
        OnExpiry::Skip => strings::on_expiry(strings::Expiry::Skipped),
        OnExpiry::Keep => strings::on_expiry(strings::Expiry::Overdue),
        OnExpiry::Reject => strings::on_expiry(strings::Expiry::Rejected),
    };
    Some((esc(expires), left, esc(&then)))
}

fn question(
    out: &mut String,
    q: &Question,
    history: &[Event],
    now: Option<i64>,
    open: bool,
    page: &Page,
) {
    let id = q.id;
    // What this page showed, sent back with every change (see `Page::ledger`).
    let shown = format!(
        "<input type=\"hidden\" name=\"ledger\" value=\"{}\">\
         <input type=\"hidden\" name=\"fingerprint\" value=\"{}\">{}",
        esc(page.ledger.unwrap_or("")),
        q.fingerprint(),
        csrf_field(page)
    );
    let due = deadline(q, now);
    let _ = write!(
        out,
        "<details id=\"q-{id}\" class=\"question{req}\" data-id=\"{id}\"{open}>\
         <summary class=\"line\">{badge}<span class=\"text\">{text}</span>",
        req = if q.required { " required" } else { "" },
        open = if open { " open" } else { "" },
        badge = if q.required {
            format!("<span class=\"badge req\">{}</span>", strings::REQUIRED)
        } else {
            format!("<span class=\"badge opt\">{}</span>", strings::OPTIONAL)
        },
        text = esc(&q.question),
    );
    if let Some((expires, left, _)) = &due {
        let _ = write!(
            out,
            "<span class=\"due\" data-expires=\"{expires}\">{left}</span>"
        );
    }
    let _ = write!(
        out,
        "<span class=\"id\">#{id}</span></summary><div class=\"body\">"
    );
    // The stage is the group's heading; the group and header, when there are any, here.
    let group = q.group_name.as_deref().filter(|g| !g.trim().is_empty());
    let header = q.header.as_deref().filter(|h| !h.trim().is_empty());
    if group.is_some() || header.is_some() {
        out.push_str("<p class=\"meta\">");
        if let Some(group) = group {
            let _ = write!(out, "<span class=\"group\">{}</span>", esc(group));
        }
        if let Some(header) = header {
            let _ = write!(out, "<span class=\"header\">{}</span>", esc(header));
        }
        out.push_str("</p>");
    }
    if let Some((expires, left, then)) = &due {
        let _ = write!(
            out,
            "<p class=\"deadline\"><span class=\"due\" data-expires=\"{expires}\">{left}</span>: {then}</p>"
        );
    }
    if let Some(context) = q.context.as_deref().filter(|c| !c.trim().is_empty()) {
        let _ = write!(
            out,
            "<div class=\"context\">{}</div>",
            super::markdown::render(context)
        );
    }
    let proposed = q.proposed.as_deref().filter(|p| !p.trim().is_empty());
    if let Some(p) = proposed {
        let _ = write!(
            out,
            "<p class=\"proposed\">{} <strong>{}</strong></p>",
            strings::PROPOSED,
            esc(p)
        );
    }

    if let Some(approval) = &q.state.approval {
        // An approval takes votes, not answers (see `votes`).
        let voters = page.voters.get(&q.id);
        let approvals = voters.map_or(0, |v| approval.approvals_among(v));
        let standing = standing(page.person, approval, voters);
        return self::approval(out, q, approval, approvals, &shown, history, standing);
    }
    // Nothing is chosen or typed for the person: the proposal is taken only through its
    // own button, and recorded as such.
    let _ = write!(
        out,
        "<form class=\"answer\" method=\"post\" action=\"/q/{id}/answer\">{shown}"
    );
    if !q.options.is_empty() {
        let kind = if q.multi_select { "checkbox" } else { "radio" };
        let _ = write!(
            out,
            "<fieldset class=\"options\"><legend>{}</legend>",
            if q.multi_select {
                strings::CHOOSE_ANY
            } else {
                strings::CHOOSE_ONE
            }
        );
        for (n, o) in q.options.iter().enumerate() {
            let _ = write!(
                out,
                "<label class=\"option\" for=\"q{id}o{n}\"><input type=\"{kind}\" id=\"q{id}o{n}\" \
                 name=\"select\" value=\"{value}\"><span class=\"key\">{key}</span>\
                 <span class=\"label\">{label}</span>",
                value = esc(&o.label),
                key = n + 1,
                label = esc(&o.label),
            );
            if o.recommended {
                let _ = write!(out, "<span class=\"rec\">{}</span>", strings::RECOMMENDED);
            }
            if let Some(d) = o.description.as_deref().filter(|d| !d.trim().is_empty()) {
                let _ = write!(out, "<span class=\"desc\">{}</span>", esc(d));
            }
            out.push_str("</label>");
        }
        out.push_str("</fieldset>");
    }
    if q.allow_freeform || q.options.is_empty() {
        let label = if q.options.is_empty() {
            strings::YOUR_ANSWER
        } else {
            strings::OWN_WORDS
        };
        let _ = write!(
            out,
            "<label class=\"free\" for=\"q{id}t\">{label}</label>\
             <textarea id=\"q{id}t\" name=\"answer\" rows=\"2\"></textarea>"
        );
    }
    let _ = write!(
        out,
        "<div class=\"actions\"><button type=\"submit\" class=\"primary\">{}</button>",
        strings::ANSWER
    );
    if proposed.is_some() {
        let _ = write!(
            out,
            "<button type=\"submit\" class=\"accept\" formaction=\"/q/{id}/accept\">{}</button>",
            strings::ACCEPT_PROPOSED
        );
    }
    out.push_str("</div></form>");

    // A form of its own for each, with its own reason field: Enter in a field presses its
    // form's first button, so a decline's reason can never be sent as a skip's.
    let _ = write!(
        out,
        "<details class=\"other\"><summary>{skip_or_decline}</summary>\
         <form method=\"post\" action=\"/q/{id}/skip\">{shown}\
         <label for=\"q{id}r\">{skip_reason}</label>\
         <div class=\"reason\"><input id=\"q{id}r\" name=\"reason\" type=\"text\">\
         <button type=\"submit\">{skip}</button></div></form>\
         <form method=\"post\" action=\"/q/{id}/decline\">{shown}\
         <label for=\"q{id}d\">{decline_reason}</label>\
         <div class=\"reason\"><input id=\"q{id}d\" name=\"reason\" type=\"text\">\
         <button type=\"submit\">{decline}</button></div></form></details>",
        skip_or_decline = strings::SKIP_OR_DECLINE,
        skip_reason = strings::SKIP_REASON,
        decline_reason = strings::DECLINE_REASON,
        skip = strings::SKIP,
        decline = strings::DECLINE,
    );

    let _ = write!(
        out,
        "<details class=\"history\"><summary>{}</summary><ol>",
        strings::history(history.len())
    );
    for e in history {
        event(out, e);
    }
    out.push_str("</ol></details></div></details>");
}

pub(super) fn event(out: &mut String, e: &Event) {
    let _ = write!(
        out,
        "<li><time datetime=\"{at}\">{shown}</time> {kind}",
        at = esc(&e.at),
        shown = esc(&e.at.replace('T', " ").replace('Z', " UTC")),
        kind = strings::event_kind(e.event.as_str()),
    );
    if let Some(by) = &e.answered_by {
        let for_whom = e.detail.as_ref().and_then(|d| d["on_behalf_of"].as_str());
        let who = match for_whom {
            Some(person) => strings::standing_in(&esc(by), &esc(person)),
            None => esc(by),
        };
        let _ = write!(out, " {}", strings::by(&who));
    }
    if let Some(ch) = &e.channel {
        let _ = write!(out, " {}", strings::via(ch.as_str()));
    }
    let after = e.after.as_ref();
    let detail = match e.event {
        EventKind::Answered
        | EventKind::Reanswered
        | EventKind::Imported
        | EventKind::Defaulted => after.and_then(|q| q.state.answer.clone()),
        EventKind::Skipped => after.and_then(|q| q.state.skip_reason.clone()),
        EventKind::Declined => after.and_then(|q| q.state.decline_reason.clone()),
        _ => None,
    };
    if let Some(d) = detail {
        let _ = write!(out, ": <q>{}</q>", esc(&d));
    }
    out.push_str("</li>");
}

/// Whether the person who opened the page may vote on an approval; when not, why
/// (shown in place of the buttons, so nobody is offered a vote that would be refused).
fn standing(
    person: Option<&str>,
    approval: &questions_core::model::Approval,
    voters: Option<&std::collections::BTreeSet<String>>,
) -> std::result::Result<(), String> {
    match person {
        None => Err(strings::VOTE_NEEDS_TOKEN.to_string()),
        Some(p) if approval.asked_by(p) => Err(strings::requester_may_not_vote(p)),
        Some(p) if voters.is_some_and(|v| v.contains(p)) => Ok(()),
        Some(p) => Err(strings::not_an_approver(p, &approval.approvers.join(", "))),
    }
}

/// An approval on the page: its votes, and for those who may vote (`standing`), a form
/// to approve (with a comment) or reject (with a reason). A vote counts as the person
/// whose token opened the page.
fn approval(
    out: &mut String,
    q: &questions_core::model::Question,
    approval: &questions_core::model::Approval,
    approvals: usize,
    shown: &str,
    history: &[questions_core::model::Event],
    standing: std::result::Result<(), String>,
) {
    use std::fmt::Write;
    let id = q.id;
    let _ = write!(
        out,
        "<div class=\"approval\"><p>Approval: {} of {} (requested by {})</p><ul>",
        approvals,
        approval.min,
        esc(&approval.requester)
    );
    for v in &approval.votes {
        let _ = write!(
            out,
            "<li>{} — {}{}</li>",
            match &v.on_behalf_of {
                Some(person) => strings::standing_in(&esc(&v.by), &esc(person)),
                None => esc(&v.by),
            },
            v.vote.as_str(),
            v.comment
                .as_deref()
                .map(|c| format!(": {}", esc(c)))
                .unwrap_or_default()
        );
    }
    out.push_str("</ul>");
    match standing {
        // Approve and reject each have a form and a field of their own: Enter in the
        // reason to reject rejects, and never approves.
        Ok(()) => {
            let _ = write!(
                out,
                "<form method=\"post\" action=\"/q/{id}/approve\">{shown}\
                 <label for=\"q{id}c\">Comment (optional)</label>\
                 <div class=\"reason\"><input id=\"q{id}c\" name=\"comment\" type=\"text\">\
                 <button type=\"submit\" class=\"primary\">Approve</button></div></form>\
                 <form method=\"post\" action=\"/q/{id}/reject\">{shown}\
                 <label for=\"q{id}j\">Reason to reject</label>\
                 <div class=\"reason\"><input id=\"q{id}j\" name=\"reason\" type=\"text\">\
                 <button type=\"submit\">Reject</button></div></form>"
            );
        }
        Err(why) => {
            let _ = write!(out, "<p class=\"no-vote\">{}</p>", esc(&why));
        }
    }
    let _ = write!(
        out,
        "</div><details class=\"history\"><summary>History ({})</summary><ol>",
        history.len()
    );
    for e in history {
        event(out, e);
    }
    out.push_str("</ol></details></div></details>");
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn every_markup_character_is_escaped() {
        assert_eq!(
            esc("<script>alert(\"x\" & 'y')</script>"),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;"
        );
    }
}
