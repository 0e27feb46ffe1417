//! The inbox's HTML. Every text from the ledger goes through `esc`: a question holding
//! `<script>` is shown as those characters, never run. No inline script or style: the
//! Content-Security-Policy allows only the files under /assets/.

use std::fmt::Write;

use crate::model::{Event, EventKind, Question};

/// Escapes text for HTML content and for double-quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A message at the top of the page: what was just recorded, or why it was not.
pub enum Flash {
    Done(String),
    Failed(String),
}

pub struct Page<'a> {
    pub seq: i64,
    /// The ledger's id: every form sends it back with the question's fingerprint, so an
    /// answer never lands on another question that took its id (see `ops::Shown`).
    pub ledger: Option<&'a str>,
    pub stage: Option<&'a str>,
    pub questions: &'a [(Question, Vec<Event>)],
    pub flash: Option<Flash>,
}

pub fn inbox(page: &Page) -> String {
    let count = page.questions.len();
    let required = page.questions.iter().filter(|(q, _)| q.required).count();
    let mut out = String::with_capacity(4096 + count * 2048);
    let title = match page.stage {
        Some(stage) => format!("Questions · {}", esc(stage)),
        None => "Questions".to_string(),
    };
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} ({count} pending)</title>\
         <link rel=\"stylesheet\" href=\"/assets/inbox.css\">\
         <script src=\"/assets/inbox.js\" defer></script></head>\
         <body data-seq=\"{seq}\" data-ledger=\"{ledger}\"><header class=\"top\"><h1>{title}</h1>\
         <p id=\"summary\" aria-live=\"polite\">{summary}</p></header><main>",
        seq = page.seq,
        ledger = esc(page.ledger.unwrap_or("")),
        summary = summary(count, required),
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
    for (q, history) in page.questions {
        question(&mut out, q, history, page.ledger);
    }
    out.push_str("</section><p id=\"empty\" class=\"empty\"");
    if count > 0 {
        out.push_str(" hidden");
    }
    out.push_str(
        ">Nothing is waiting for an answer. New questions appear here as agents log them.</p>",
    );
    out.push_str("</main></body></html>\n");
    out
}

fn summary(count: usize, required: usize) -> String {
    match count {
        0 => "No pending questions".to_string(),
        1 => format!("1 pending question, {required} required"),
        n => format!("{n} pending questions, {required} required"),
    }
}

fn question(out: &mut String, q: &Question, history: &[Event], ledger: Option<&str>) {
    let id = q.id;
    // What this page showed, sent back with every change (see `Page::ledger`).
    let shown = format!(
        "<input type=\"hidden\" name=\"ledger\" value=\"{}\">\
         <input type=\"hidden\" name=\"fingerprint\" value=\"{}\">",
        esc(ledger.unwrap_or("")),
        q.fingerprint()
    );
    let _ = write!(
        out,
        "<article id=\"q-{id}\" class=\"question{req}\" data-id=\"{id}\">\
         <p class=\"meta\"><span class=\"stage\">{stage}</span>",
        req = if q.required { " required" } else { "" },
        stage = esc(&q.stage),
    );
    if let Some(group) = q.group_name.as_deref().filter(|g| !g.trim().is_empty()) {
        let _ = write!(out, "<span class=\"group\">{}</span>", esc(group));
    }
    out.push_str(if q.required {
        "<span class=\"badge req\">Required</span>"
    } else {
        "<span class=\"badge opt\">Optional</span>"
    });
    let _ = write!(out, "<span class=\"id\">#{id}</span></p>");
    if let Some(header) = q.header.as_deref().filter(|h| !h.trim().is_empty()) {
        let _ = write!(out, "<p class=\"header\">{}</p>", esc(header));
    }
    let _ = write!(out, "<h2>{}</h2>", esc(&q.question));
    if let Some(context) = q.context.as_deref().filter(|c| !c.trim().is_empty()) {
        let _ = write!(out, "<p class=\"context\">{}</p>", esc(context));
    }
    let proposed = crate::model::proposed_or_recommended(q.proposed.clone(), &q.options);
    if let Some(p) = q.proposed.as_deref().filter(|p| !p.trim().is_empty()) {
        let _ = write!(
            out,
            "<p class=\"proposed\">Proposed: <strong>{}</strong></p>",
            esc(p)
        );
    }

    if let Some(approval) = &q.approval {
        // An approval takes votes, not answers (see `votes`).
        return super::votes::html(out, q, approval, &shown, history);
    }
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
                "Choose any"
            } else {
                "Choose one"
            }
        );
        for (n, o) in q.options.iter().enumerate() {
            let checked = !q.multi_select
                && proposed
                    .as_deref()
                    .is_some_and(|p| p.trim().eq_ignore_ascii_case(o.label.trim()));
            let _ = write!(
                out,
                "<label class=\"option\" for=\"q{id}o{n}\"><input type=\"{kind}\" id=\"q{id}o{n}\" \
                 name=\"select\" value=\"{value}\"{checked}><span class=\"label\">{label}</span>",
                value = esc(&o.label),
                label = esc(&o.label),
                checked = if checked { " checked" } else { "" },
            );
            if o.recommended {
                out.push_str("<span class=\"rec\">Recommended</span>");
            }
            if let Some(d) = o.description.as_deref().filter(|d| !d.trim().is_empty()) {
                let _ = write!(out, "<span class=\"desc\">{}</span>", esc(d));
            }
            out.push_str("</label>");
        }
        out.push_str("</fieldset>");
    }
    if q.allow_freeform || q.options.is_empty() {
        let (label, value) = if q.options.is_empty() {
            ("Your answer", proposed.as_deref().unwrap_or(""))
        } else {
            ("Or in your own words", "")
        };
        let _ = write!(
            out,
            "<label class=\"free\" for=\"q{id}t\">{label}</label>\
             <textarea id=\"q{id}t\" name=\"answer\" rows=\"2\">{}</textarea>",
            esc(value)
        );
    }
    out.push_str("<div class=\"actions\"><button type=\"submit\" class=\"primary\">Answer</button></div></form>");

    let _ = write!(
        out,
        "<details class=\"other\"><summary>Skip or decline</summary>\
         <form method=\"post\" action=\"/q/{id}/skip\">{shown}\
         <label for=\"q{id}r\">Reason</label>\
         <input id=\"q{id}r\" name=\"reason\" type=\"text\" placeholder=\"Why (needed to decline)\">\
         <div class=\"actions\"><button type=\"submit\">Skip</button>\
         <button type=\"submit\" formaction=\"/q/{id}/decline\">Decline</button></div>\
         </form></details>"
    );

    let _ = write!(
        out,
        "<details class=\"history\"><summary>History ({})</summary><ol>",
        history.len()
    );
    for e in history {
        event(out, e);
    }
    out.push_str("</ol></details></article>");
}

pub(super) fn event(out: &mut String, e: &Event) {
    let _ = write!(
        out,
        "<li><time datetime=\"{at}\">{shown}</time> {kind}",
        at = esc(&e.at),
        shown = esc(&e.at.replace('T', " ").replace('Z', " UTC")),
        kind = e.event.as_str(),
    );
    if let Some(by) = &e.answered_by {
        let _ = write!(out, " by {}", esc(by));
    }
    if let Some(ch) = &e.channel {
        let _ = write!(out, " via {}", ch.as_str());
    }
    let after = e.after.as_ref();
    let detail = match e.event {
        EventKind::Answered
        | EventKind::Reanswered
        | EventKind::Imported
        | EventKind::Defaulted => after.and_then(|q| q.answer.clone()),
        EventKind::Skipped => after.and_then(|q| q.skip_reason.clone()),
        EventKind::Declined => after.and_then(|q| q.decline_reason.clone()),
        _ => None,
    };
    if let Some(d) = detail {
        let _ = write!(out, ": <q>{}</q>", esc(&d));
    }
    out.push_str("</li>");
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
