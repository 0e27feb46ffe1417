//! A reply as the relay reads it: the part above the quote, the message ids it answers,
//! and whether the receiving server vouches for its sender (DKIM, aligned with `From`).

use super::MARKER;

/// The reply above the quote: lines quoted with `>` dropped, and everything from an
/// "On … wrote:" line, the card's marker line, a forwarded or original-message line, an
/// Outlook header block (From/Sent/To/Subject, in a few languages) or its rule of
/// underscores, a phone's "Sent from my …" line, or a signature separator down.
pub(super) fn above_quote(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept: Vec<&str> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        let attribution = t.ends_with("wrote:")
            && (t.starts_with("On ")
                || kept
                    .last()
                    .is_some_and(|prev| prev.trim_start().starts_with("On ")));
        if attribution && !t.starts_with("On ") {
            kept.pop();
        }
        if attribution
            || t.contains(MARKER)
            || line.trim_end_matches(' ') == "--"
            || (t.starts_with("-----") && t.to_lowercase().contains("original message"))
            || (t.len() >= 10 && t.chars().all(|c| c == '_'))
            || header_block(&lines[i..])
            || sent_from(t)
        {
            break;
        }
        if t.starts_with('>') {
            continue;
        }
        kept.push(line);
    }
    kept.join("\n").trim().to_string()
}

/// The labels of a quoted message's header block as Outlook writes it above the quote:
/// who it was from, then when it was sent, to whom, about what (English, German, French,
/// Spanish, Portuguese, Italian, Dutch, Swedish).
pub(super) const FROM_LABELS: &[&str] = &["from", "von", "de", "da", "van", "från", "fra"];
pub(super) const HEADER_LABELS: &[&str] = &[
    "sent",
    "date",
    "to",
    "cc",
    "subject",
    "gesendet",
    "datum",
    "an",
    "betreff",
    "envoyé",
    "à",
    "objet",
    "enviado",
    "fecha",
    "para",
    "asunto",
    "inviato",
    "data",
    "a",
    "oggetto",
    "verzonden",
    "aan",
    "onderwerp",
    "skickat",
    "till",
    "ämne",
];

/// The label of a header-like line (`From: …`, `*Sent:* …`, `De : …`), lower case.
pub(super) fn header_label(line: &str) -> Option<String> {
    let t = line.trim().trim_start_matches('*');
    let (label, _) = t.split_once(':')?;
    let label = label.trim().trim_end_matches('*').trim().to_lowercase();
    (!label.is_empty() && label.chars().count() <= 12).then_some(label)
}

/// Whether `lines` start with a header block: a From line, and a Sent, Date, To or
/// Subject line among the next three.
pub(super) fn header_block(lines: &[&str]) -> bool {
    let Some(first) = lines.first().and_then(|l| header_label(l)) else {
        return false;
    };
    FROM_LABELS.contains(&first.as_str())
        && lines
            .iter()
            .skip(1)
            .take(3)
            .any(|l| header_label(l).is_some_and(|label| HEADER_LABELS.contains(&label.as_str())))
}

/// A mail app's line under what was written ("Sent from my iPhone", "Get Outlook for
/// Android", and their translations).
pub(super) fn sent_from(line: &str) -> bool {
    let t = line.to_lowercase();
    t.chars().count() <= 80
        && ([
            "sent from my ",
            "sent from outlook",
            "sent from mail for",
            "sent from yahoo",
            "sent with ",
            "sent via ",
            "get outlook for ",
            "envoyé de mon ",
            "envoyé depuis ",
            "enviado desde mi ",
            "enviado do meu ",
            "inviato da ",
            "verzonden vanaf mijn ",
            "skickat från min ",
        ]
        .iter()
        .any(|p| t.starts_with(p))
            || (t.starts_with("von meinem ") && t.trim_end_matches('.').ends_with("gesendet")))
}

/// Message ids named in an `In-Reply-To` or `References` value, without their brackets.
pub(super) fn message_ids(value: &str) -> Vec<String> {
    value
        .split('<')
        .skip(1)
        .filter_map(|part| part.split_once('>').map(|(id, _)| id.trim().to_string()))
        .filter(|id| !id.is_empty())
        .collect()
}

/// A header's value on one line.
pub(super) fn unfold(value: &str) -> String {
    value
        .replace("\r\n", "")
        .replace('\n', "")
        .replace('\t', " ")
        .trim()
        .to_string()
}

/// Text without its comments (RFC 5322 parenthesised, possibly nested).
pub(super) fn uncommented(text: &str) -> String {
    let mut depth = 0usize;
    let mut quoted = false;
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '"' if depth == 0 => {
                quoted = !quoted;
                out.push(c);
            }
            '(' if !quoted => depth += 1,
            ')' if !quoted && depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Whether `from` is vouched for: the topmost `Authentication-Results` header whose
/// authserv-id is `authserv_id` has `dkim=pass` with a `header.d` (or `header.i`'s
/// domain) equal to `from`'s domain or a parent of it (relaxed alignment). Headers of
/// any other authserv-id, and any of ours below the topmost, are not read: a sender
/// writes what they like there. A message with more than one `From` header is never
/// vouched for. Else why not.
pub(super) fn vouched_for(
    headers: &[(String, String)],
    authserv_id: &str,
    from: &str,
) -> Result<(), String> {
    let Some((_, domain)) = from.rsplit_once('@') else {
        return Err("the From address has no domain".into());
    };
    // A second From (one DKIM did not sign, above the one it did) would let a sender of a
    // shared domain speak as another of its users.
    let froms = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("From"))
        .count();
    if froms != 1 {
        return Err(format!(
            "the sender is not vouched for: the message has {froms} From headers"
        ));
    }
    let domain = domain.to_lowercase();
    let trusted = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("Authentication-Results"))
        .map(|(_, v)| uncommented(v))
        .find(|v| {
            v.split(';')
                .next()
                .and_then(|id| id.split_whitespace().next())
                .is_some_and(|id| id.eq_ignore_ascii_case(authserv_id))
        });
    let Some(results) = trusted else {
        return Err(format!(
            "the sender is not vouched for: no Authentication-Results from {authserv_id}"
        ));
    };
    let mut said = Vec::new();
    for resinfo in results.split(';').skip(1) {
        let mut words = resinfo.split_whitespace();
        let Some((method, result)) = words.next().and_then(|w| w.split_once('=')) else {
            continue;
        };
        if !method.eq_ignore_ascii_case("dkim") {
            continue;
        }
        said.push(result.to_lowercase());
        if !result.eq_ignore_ascii_case("pass") {
            continue;
        }
        let signer = words.find_map(|w| {
            let (prop, value) = w.split_once('=')?;
            let value = value.trim_matches('"').to_lowercase();
            if prop.eq_ignore_ascii_case("header.d") {
                Some(value)
            } else if prop.eq_ignore_ascii_case("header.i") {
                value.rsplit_once('@').map(|(_, d)| d.to_string())
            } else {
                None
            }
        });
        if let Some(d) = signer {
            if !d.is_empty() && (domain == d || domain.ends_with(&format!(".{d}"))) {
                return Ok(());
            }
        }
    }
    Err(format!(
        "the sender is not vouched for: {authserv_id} found no passing DKIM signature of \
         the From domain {domain} (dkim={})",
        if said.is_empty() {
            "none".to_string()
        } else {
            said.join(",")
        }
    ))
}
