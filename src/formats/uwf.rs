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

use super::{draft, fail, Parsed, Source};
use crate::model::{parse_bool, NewQuestion, Question};

const MARKER: &str = "QUESTIONS_NEEDED";

/// The 0-based line holding the marker: alone on its line, perhaps dressed as a heading,
/// in bold or with a colon.
pub fn marker_line(text: &str) -> Option<usize> {
    text.split('\n').position(|line| {
        let bare = line
            .trim()
            .trim_matches(|c: char| c == '#' || c == '*' || c == '_' || c == '`' || c == ':')
            .trim();
        bare == MARKER
    })
}

enum Field {
    Group(String),
    Question(String),
    Proposed(String),
    Required(String),
}

/// `Q:`, `Q1:`, `Proposed:`, `Required:` (any case) and `[Group]`, after bullets.
fn field(line: &str) -> Option<Field> {
    let line = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .unwrap_or(line)
        .trim_start();
    if line.starts_with('[') && line.ends_with(']') && line.len() >= 2 {
        return Some(Field::Group(line[1..line.len() - 1].trim().to_string()));
    }
    let (key, value) = line.split_once(':')?;
    let key = key.trim().trim_matches('*').to_ascii_lowercase();
    let value = value.trim().to_string();
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
            done.push(draft(
                Source::Uwf,
                q.group,
                q.question.trim().to_string(),
                q.proposed,
                q.required.unwrap_or(true),
                None,
                None,
                Vec::new(),
                false,
                true,
            ));
        }
        Ok(())
    };

    for (i, raw) in text.split('\n').enumerate().skip(start + 1) {
        let number = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            after_blank = true;
            continue;
        }
        if line.starts_with("```") {
            if done.is_empty() && open.is_none() {
                continue; // a fence opening right after the marker
            }
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
                    _ => break,
                }
            }
        }
        after_blank = false;
    }
    finish(open.take(), &mut done)?;
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

/// The block, ready to paste: ungrouped questions first, then each group in order.
pub fn render(questions: &[Question]) -> String {
    if questions.is_empty() {
        return String::new();
    }
    let mut out = format!("{MARKER}\n");
    let mut ordered: Vec<&Question> = questions
        .iter()
        .filter(|q| q.group_name.is_none())
        .collect();
    let mut groups: Vec<&str> = Vec::new();
    for q in questions {
        if let Some(g) = q.group_name.as_deref() {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    for g in &groups {
        ordered.extend(
            questions
                .iter()
                .filter(|q| q.group_name.as_deref() == Some(g)),
        );
    }
    let mut current: Option<&str> = None;
    for q in ordered {
        if q.group_name.as_deref() != current {
            current = q.group_name.as_deref();
            if let Some(g) = current {
                out.push_str(&format!("[{}]\n", one_line(g)));
            }
        }
        out.push_str(&format!("Q: {}\n", q.question.trim()));
        if let Some(p) = &q.proposed {
            out.push_str(&format!("Proposed: {}\n", p.trim()));
        }
        out.push_str(&format!("Required: {}\n", q.required));
    }
    out
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
        let text = "QUESTIONS_NEEDED\n[Goal]\nQ: Why?\nProposed: Because\n\nI will continue once you answer.\nQ: not a question\n";
        let qs = parse(text).unwrap();
        assert_eq!(qs.len(), 1);
        assert_eq!(qs[0].proposed.as_deref(), Some("Because"));
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
