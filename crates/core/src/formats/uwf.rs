//! The uwf question protocol's `QUESTIONS_NEEDED` block:
//!
//! ```text
//! QUESTIONS_NEEDED
//! [Goal]
//! Q: What is the primary goal of this project?
//! Proposed: Build a blog platform
//! Required: true
//! ```
//!
//! Read as subagents really write it: text before the marker, CRLF, indentation, list
//! bullets, a surrounding code fence, missing `Proposed:`/`Required:` lines, several `Q:`
//! under one group, question text running on over several lines, and prose after the block.

use super::{built, fail, Parsed, Source};
use crate::model::{parse_bool, Draft, NewQuestion, Question};

const MARKER: &str = "QUESTIONS_NEEDED";

/// The 0-based line holding the marker: alone on its line, however dressed (a heading,
/// bold, a quote, a list item, a colon or other trailing punctuation).
pub fn marker_line(text: &str) -> Option<usize> {
    text.split('\n')
        .position(|line| undress(line).eq_ignore_ascii_case(MARKER))
}

/// A line without its Markdown dressing: quote markers, list bullets and numbers,
/// heading hashes, emphasis, and punctuation at its end.
fn undress(line: &str) -> &str {
    let mut s = line.trim();
    loop {
        let before = s;
        s = s.trim_start_matches(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '>' | '#' | '*' | '_' | '`' | '-' | '+' | '•' | '·' | '‣' | '–'
                )
        });
        s = strip_number(s);
        if s.len() == before.len() {
            break;
        }
    }
    s.trim_end_matches(|c: char| !c.is_alphanumeric())
}

/// `2. ` or `2) ` at the start of a list item.
fn strip_number(line: &str) -> &str {
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return line;
    }
    match line[digits..].strip_prefix(['.', ')']) {
        Some(rest) if rest.is_empty() || rest.starts_with(char::is_whitespace) => rest.trim_start(),
        _ => line,
    }
}

/// Where no block could be found: the first line that shows one was meant (a line that
/// mentions the marker, or a `Q:` line), as the message to hand back.
pub fn stray(text: &str) -> Option<String> {
    for (i, line) in text.split('\n').enumerate() {
        if line.contains(MARKER) {
            return Some(format!(
                "line {}: {MARKER} must be alone on its line, followed by '[Group]' and 'Q:' lines",
                i + 1
            ));
        }
        if matches!(field(line.trim()), Some(Field::Question(_))) {
            return Some(format!(
                "line {}: a 'Q:' question with no {MARKER} line before it; put {MARKER} alone on the line above the questions",
                i + 1
            ));
        }
    }
    None
}

enum Field {
    Group(String),
    Question(String),
    Proposed(String),
    Required(String),
}

/// `Q:`, `Q1:`, `Proposed:`, `Required:` (any case) and `[Group]`, after bullets.
fn field(line: &str) -> Option<Field> {
    // Markdown's bullets, and the typographic ones agents also write.
    let line = ["- ", "* ", "+ ", "• ", "· ", "‣ ", "– "]
        .iter()
        .find_map(|b| line.strip_prefix(b))
        .unwrap_or(line)
        .trim_start();
    let line = strip_number(line);
    if line.starts_with('[') && line.ends_with(']') && line.len() >= 2 {
        return Some(Field::Group(line[1..line.len() - 1].trim().to_string()));
    }
    let (key, value) = line.split_once(':')?;
    let bold = key.trim().starts_with('*');
    let key = key.trim().trim_matches('*').to_ascii_lowercase();
    let value = value.trim();
    // `**Q:** text`: the bold's closing stars are not part of the text.
    let value = if bold {
        value.trim_start_matches('*').trim_start()
    } else {
        value
    }
    .to_string();
    let is_q = key == "q"
        || (key.starts_with('q') && key[1..].chars().all(|c| c.is_ascii_digit()) && key.len() > 1);
    if is_q {
        Some(Field::Question(value))
    } else if key == "proposed" {
        Some(Field::Proposed(value))
    } else if key == "required" {
        Some(Field::Required(value))
    } else {
        None
    }
}

struct Open {
    group: Option<String>,
    question: String,
    proposed: Option<String>,
    required: Option<bool>,
    line: usize,
    /// What a line without a key continues: the question or the proposed value.
    continues: Continues,
}

#[derive(Clone, Copy, PartialEq)]
enum Continues {
    Question,
    Proposed,
    Nothing,
}

pub fn parse(text: &str) -> Parsed<Vec<NewQuestion>> {
    let Some(start) = marker_line(text) else {
        return fail(format!("there is no {MARKER} line"));
    };
    let mut done: Vec<NewQuestion> = Vec::new();
    let mut group: Option<String> = None;
    let mut open: Option<Open> = None;
    let mut after_blank = false;

    let finish = |open: Option<Open>, done: &mut Vec<NewQuestion>| -> Parsed<()> {
        if let Some(q) = open {
            if q.question.trim().is_empty() {
                return fail(format!("line {}: the question after 'Q:' is empty", q.line));
            }
            done.push(built(
                &format!("line {}", q.line),
                Draft {
                    stage: String::new(),
                    group: q.group,
                    question: q.question,
                    proposed: q.proposed,
                    required: q.required.unwrap_or(true),
                    header: None,
                    context: None,
                    options: Vec::new(),
                    multi_select: false,
                    allow_freeform: true,
                    source: Source::Uwf.into(),
                    approval: None,
                    urgent: false,
                },
            )?);
        }
        Ok(())
    };

    // A block in a quote (`> QUESTIONS_NEEDED`) is quoted throughout.
    let quoted = text
        .split('\n')
        .nth(start)
        .is_some_and(|l| l.trim_start().starts_with('>'));
    let mut ended: Option<usize> = None;
    for (i, raw) in text.split('\n').enumerate().skip(start + 1) {
        let number = i + 1;
        let line = if quoted {
            raw.trim().trim_start_matches(['>', ' ', '\t'])
        } else {
            raw.trim()
        };
        if line.is_empty() {
            after_blank = true;
            continue;
        }
        if super::fence(line).is_some() {
            if done.is_empty() && open.is_none() {
                continue; // a fence opening right after the marker
            }
            ended = Some(i);
            break;
        }
        match field(line) {
            Some(Field::Group(name)) => {
                finish(open.take(), &mut done)?;
                group = Some(name).filter(|g| !g.is_empty());
            }
            Some(Field::Question(text)) => {
                finish(open.take(), &mut done)?;
                open = Some(Open {
                    group: group.clone(),
                    question: text,
                    proposed: None,
                    required: None,
                    line: number,
                    continues: Continues::Question,
                });
            }
            Some(Field::Proposed(value)) => {
                let Some(q) = open.as_mut() else {
                    return fail(format!(
                        "line {number}: 'Proposed:' comes before any 'Q:' line"
                    ));
                };
                q.proposed = Some(value);
                q.continues = Continues::Proposed;
            }
            Some(Field::Required(value)) => {
                let Some(q) = open.as_mut() else {
                    return fail(format!(
                        "line {number}: 'Required:' comes before any 'Q:' line"
                    ));
                };
                match parse_bool(&value) {
                    Some(b) => q.required = Some(b),
                    None => {
                        return fail(format!(
                            "line {number}: 'Required:' must be true or false, not \"{value}\""
                        ))
                    }
                }
                q.continues = Continues::Nothing;
            }
            None => {
                // A line without a key continues the text above it; after a blank line,
                // it is prose after the block, which ends here.
                let nothing_yet = done.is_empty() && open.is_none() && group.is_none();
                match open.as_mut() {
                    Some(q) if !after_blank && q.continues == Continues::Question => {
                        q.question.push('\n');
                        q.question.push_str(line);
                    }
                    Some(q) if !after_blank && q.continues == Continues::Proposed => {
                        let p = q.proposed.get_or_insert_with(String::new);
                        p.push('\n');
                        p.push_str(line);
                    }
                    _ if nothing_yet => {
                        return fail(format!(
                        "line {number}: expected '[Group]' or 'Q:' after {MARKER}, found \"{}\"",
                        shorten(line)
                    ))
                    }
                    _ => {
                        ended = Some(i);
                        break;
                    }
                }
            }
        }
        after_blank = false;
    }
    finish(open.take(), &mut done)?;
    // Nothing after the block is dropped silently: a question there is an error.
    if let Some(end) = ended {
        for (i, raw) in text.split('\n').enumerate().skip(end + 1) {
            if matches!(
                field(raw.trim().trim_start_matches(['>', ' ', '\t'])),
                Some(Field::Question(_))
            ) {
                return fail(format!(
                    "line {}: a 'Q:' question after the {MARKER} block ended at line {}; keep every question inside the block, with no prose or fence between them",
                    i + 1,
                    end + 1
                ));
            }
        }
    }
    if done.is_empty() {
        return fail(format!(
            "the {MARKER} block on line {} has no 'Q:' lines",
            start + 1
        ));
    }
    Ok(done)
}

fn shorten(text: &str) -> String {
    let mut out: String = text.chars().take(60).collect();
    if text.chars().count() > 60 {
        out.push('…');
    }
    out
}

/// The block, ready to paste: ungrouped questions first, then each group in order. The
/// block format has no escapes, so each question is written only when its lines read back
/// as that same question: otherwise without its proposed value, or not at all, with a
/// warning. Never a line that would read as another question.
pub fn render(questions: &[Question], warnings: &mut Vec<String>) -> String {
    let mut carried: Vec<(&Question, bool)> = Vec::new();
    for q in questions {
        if reads_back(q, true) {
            carried.push((q, true));
        } else if q.proposed.is_some() && reads_back(q, false) {
            warnings.push(format!(
                "question {}: its proposed value is left out: a {MARKER} block cannot carry it as written",
                q.id
            ));
            carried.push((q, false));
        } else {
            warnings.push(format!(
                "question {}: left out: a {MARKER} block cannot carry its text as written (blank lines, a line that reads as a key or a fence, surrounding spaces, CR); render it in another format",
                q.id
            ));
        }
    }
    if carried.is_empty() {
        return String::new();
    }
    let mut ordered: Vec<(&Question, bool)> = carried
        .iter()
        .copied()
        .filter(|(q, _)| q.group_name.is_none())
        .collect();
    let mut groups: Vec<&str> = Vec::new();
    for (q, _) in &carried {
        if let Some(g) = q.group_name.as_deref() {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    for g in &groups {
        ordered.extend(
            carried
                .iter()
                .copied()
                .filter(|(q, _)| q.group_name.as_deref() == Some(g)),
        );
    }
    let mut out = format!("{MARKER}\n");
    let mut current: Option<&str> = None;
    for (q, with_proposed) in ordered {
        if q.group_name.as_deref() != current {
            current = q.group_name.as_deref();
            if let Some(g) = current {
                out.push_str(&format!("[{}]\n", one_line(g)));
            }
        }
        out.push_str(&lines(q, with_proposed));
    }
    out
}

/// One question's `Q:`, `Proposed:` and `Required:` lines.
fn lines(q: &Question, with_proposed: bool) -> String {
    let mut out = format!("Q: {}\n", q.question.trim());
    if let Some(p) = q.proposed.as_ref().filter(|_| with_proposed) {
        out.push_str(&format!("Proposed: {}\n", p.trim()));
    }
    out.push_str(&format!("Required: {}\n", q.required));
    out
}

/// Whether the question, written on its own, is read back by `ingest` as itself.
fn reads_back(q: &Question, with_proposed: bool) -> bool {
    let group = q
        .group_name
        .as_deref()
        .map(|g| format!("[{}]\n", one_line(g)))
        .unwrap_or_default();
    let text = format!("{MARKER}\n{group}{}", lines(q, with_proposed));
    match super::parse_envelope(&text, Some(Source::Uwf)) {
        Ok(Some(env)) => {
            env.questions.len() == 1 && {
                let back = &env.questions[0];
                back.question == q.question
                    && back.group_name == q.group_name
                    && back.required == q.required
                    && (!with_proposed || back.proposed == q.proposed)
            }
        }
        _ => false,
    }
}

fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skill_example_parses() {
        let text = "Here is my analysis.\n\nQUESTIONS_NEEDED\n[Goal]\nQ: What is the primary goal of this project?\nProposed: Build a blog platform\nRequired: true\n[Constraints]\nQ: Are there any technical constraints?\nProposed: None specified\nRequired: false\n";
        let qs = parse(text).unwrap();
        assert_eq!(qs.len(), 2);
        assert_eq!(qs[0].group_name.as_deref(), Some("Goal"));
        assert_eq!(qs[0].proposed.as_deref(), Some("Build a blog platform"));
        assert!(qs[0].required);
        assert!(!qs[1].required);
        assert_eq!(qs[1].source, crate::model::Source::Uwf);
    }

    #[test]
    fn messy_output_parses() {
        let text = "Some text\r\n```\r\n  **QUESTIONS_NEEDED**\r\n\r\n  [Goal]\r\n  - Q: What is the goal\r\n    of this project?\r\n  Q: And the deadline?\r\n  required: FALSE\r\n\r\n  [Risk]\r\n  Q2: Risk level?\r\n```\r\nThanks! Let me know.\r\n";
        let qs = parse(&crate::formats::normalize_newlines(text)).unwrap();
        assert_eq!(qs.len(), 3);
        assert_eq!(qs[0].question, "What is the goal\nof this project?");
        assert_eq!(qs[0].group_name.as_deref(), Some("Goal"));
        assert!(qs[0].required, "a missing Required: is true");
        assert_eq!(qs[0].proposed, None);
        assert_eq!(qs[1].group_name.as_deref(), Some("Goal"));
        assert!(!qs[1].required);
        assert_eq!(qs[2].group_name.as_deref(), Some("Risk"));
    }

    #[test]
    fn prose_after_a_blank_line_ends_the_block() {
        let text = "QUESTIONS_NEEDED\n[Goal]\nQ: Why?\nProposed: Because\n\nI will continue once you answer.\n";
        let qs = parse(text).unwrap();
        assert_eq!(qs.len(), 1);
        assert_eq!(qs[0].proposed.as_deref(), Some("Because"));
        // A question after the prose is not dropped: it is an error naming its line.
        let err = parse(&format!("{text}Q: And this?\n")).unwrap_err();
        assert!(err.0.contains("line 7"), "{}", err.0);
    }

    #[test]
    fn numbered_and_bold_questions_each_start_a_question() {
        let text =
            "QUESTIONS_NEEDED\n[Goal]\n1. Q: Why?\n2. Q: How?\n3) **Q:** When?\nRequired: no\n";
        let qs = parse(text).unwrap();
        let texts: Vec<&str> = qs.iter().map(|q| q.question.as_str()).collect();
        assert_eq!(texts, ["Why?", "How?", "When?"]);
        assert!(!qs[2].required);
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            (
                "QUESTIONS_NEEDED\n[Goal]\nQ: Why?\nRequired: perhaps\n",
                "line 4",
            ),
            ("QUESTIONS_NEEDED\nProposed: x\n", "line 2"),
            ("QUESTIONS_NEEDED\n[Goal]\nQ:\nRequired: true\n", "line 3"),
            ("QUESTIONS_NEEDED\n\n", "no 'Q:'"),
            ("QUESTIONS_NEEDED\nWhat is this?\n", "line 2"),
        ];
        for (text, place) in cases {
            let err = parse(text).unwrap_err();
            assert!(err.0.contains(place), "{text:?}: {}", err.0);
        }
    }
}
