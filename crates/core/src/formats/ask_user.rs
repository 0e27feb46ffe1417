//! The ask-user family: the `ask_user` tool's input, Claude Code's AskUserQuestion and
//! VS Code's askQuestions. Parsing reads any of their question lists; rendering writes
//! exactly what each tool accepts.

use serde_json::{json, Value};

use super::{fail, json_candidate, parse_json, question_list, Parsed, Source};
use crate::model::{split_recommended, NewQuestion, Question, QuestionOption};

/// AskUserQuestion's limits: questions a call, characters a header.
pub const BATCH: usize = 4;
pub const HEADER_CHARS: usize = 12;

/// `{"questions": [...], "metadata"?}`, or one question object on its own.
pub fn parse(text: &str) -> Parsed<Vec<NewQuestion>> {
    let value = match json_candidate(text, "questions") {
        Some(block) => parse_json(&block)?,
        None => match serde_json::from_str::<Value>(text.trim()) {
            Ok(v @ Value::Object(_)) if v.get("question").is_some() => json!({ "questions": [v] }),
            _ => return fail("there is no JSON object with a \"questions\" array"),
        },
    };
    question_list(
        &value,
        "questions",
        Source::AskUser,
        "there must be at least one question",
    )
}

/// One call's worth of questions for the asking tool, with the ledger ids they stand for.
#[derive(Debug, Clone)]
pub struct Batch {
    pub question_ids: Vec<i64>,
    pub payload: Value,
}

/// The label a question goes by where no header was given: its group, else its text.
pub fn base_header(q: &Question) -> String {
    let raw = q
        .header
        .as_deref()
        .or(q.group_name.as_deref())
        .unwrap_or(&q.question);
    raw.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The recommended option first, the rest in their order.
fn recommended_first(q: &Question) -> Vec<&QuestionOption> {
    let mut options: Vec<&QuestionOption> = q.options.iter().filter(|o| o.recommended).collect();
    options.extend(q.options.iter().filter(|o| !o.recommended));
    options
}

/// The option AskUserQuestion shows for questions without enough options of their own:
/// `import` records a skip for it.
pub const SKIP: &str = "Skip this question";
/// The other made-up option: `import` leaves the question pending.
pub const LATER: &str = "Decide later";

/// What an option shown in AskUserQuestion stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meaning {
    /// One of the question's own options, by its label in the ledger.
    Own(String),
    /// The question's proposed value, offered where it has no options.
    Proposed(String),
    Skip,
    Later,
}

/// One option as AskUserQuestion shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub label: String,
    pub description: String,
    pub meaning: Meaning,
}

/// Labels compare as the answer rules compare them: trimmed, case-folded, without a
/// trailing " (Recommended)".
fn label_key(label: &str) -> String {
    split_recommended(label).0.to_lowercase()
}

/// The 2–4 options AskUserQuestion shows for `q`, recommended first and marked, with
/// made-up ones where it has fewer than two; or why it cannot be shown faithfully.
pub fn shown_options(q: &Question) -> Result<Vec<Shown>, String> {
    if q.options.len() > BATCH {
        return Err(format!(
            "{} options; AskUserQuestion shows at most {BATCH}",
            q.options.len()
        ));
    }
    let mut shown: Vec<Shown> = recommended_first(q)
        .into_iter()
        .map(|o| Shown {
            label: if o.recommended {
                format!("{} (Recommended)", one_line(&o.label))
            } else {
                one_line(&o.label)
            },
            description: o.description.clone().unwrap_or_default(),
            meaning: Meaning::Own(o.label.clone()),
        })
        .collect();
    if shown.is_empty() {
        if let Some(p) = q.proposed.as_deref().filter(|p| !p.trim().is_empty()) {
            shown.push(Shown {
                label: format!("{} (Recommended)", one_line(p)),
                description: "The proposed answer".to_string(),
                meaning: Meaning::Proposed(p.to_string()),
            });
        }
    }
    let made_up = [
        (SKIP, "Record this question as skipped", Meaning::Skip),
        (LATER, "Leave this question open for now", Meaning::Later),
    ];
    let free_text = q.options.is_empty();
    for (label, description, meaning) in made_up {
        // A free-text question gets both; a one-option question just enough to reach two.
        if !free_text && shown.len() >= 2 {
            break;
        }
        if shown
            .iter()
            .any(|s| label_key(&s.label) == label_key(label))
        {
            continue; // the question has an option of that name: it means what it says
        }
        shown.push(Shown {
            label: label.to_string(),
            description: description.to_string(),
            meaning,
        });
    }
    for (i, s) in shown.iter().enumerate() {
        if s.label.trim().is_empty() {
            return Err("an option has an empty label".to_string());
        }
        if shown[..i]
            .iter()
            .any(|o| label_key(&o.label) == label_key(&s.label))
        {
            return Err(format!("two options read as \"{}\"", s.label));
        }
    }
    if shown.len() < 2 {
        return Err("fewer than two options to show".to_string());
    }
    Ok(shown)
}

/// What an answer given in AskUserQuestion means for `q`: one of the options `render`
/// showed, by its label (with or without " (Recommended)"), or `None` for typed text.
pub fn shown_meaning(q: &Question, answer: &str) -> Option<Meaning> {
    let key = label_key(answer);
    shown_options(q)
        .ok()?
        .into_iter()
        .find(|s| label_key(&s.label) == key)
        .map(|s| s.meaning)
}

/// The header AskUserQuestion shows for `q`: 1–12 characters.
pub fn ask_user_header(q: &Question) -> String {
    let base = base_header(q);
    let base = if base.is_empty() {
        one_line(&q.question)
    } else {
        base
    };
    shorten(&base, HEADER_CHARS)
}

/// A question `render` could not put in any batch, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    pub question_id: i64,
    pub reason: String,
}

/// AskUserQuestion: calls of 1–4 questions whose texts and headers are unique within the
/// call, each with 2–4 options. A question that repeats a text or header already in a
/// batch goes to a later one; one that cannot be shown faithfully is left out.
pub fn render_ask_user(
    questions: &[Question],
    warnings: &mut Vec<String>,
) -> (Vec<Batch>, Vec<LeftOut>) {
    struct Open {
        ids: Vec<i64>,
        texts: Vec<String>,
        headers: Vec<String>,
        items: Vec<Value>,
    }
    let mut open: Vec<Open> = Vec::new();
    let mut left_out = Vec::new();
    for q in questions {
        let shown = match shown_options(q) {
            Ok(shown) => shown,
            Err(reason) => {
                warnings.push(format!(
                    "question {}: left out of every batch: {reason}",
                    q.id
                ));
                left_out.push(LeftOut {
                    question_id: q.id,
                    reason,
                });
                continue;
            }
        };
        let full = base_header(q);
        let mut header = ask_user_header(q);
        if header != full {
            warnings.push(format!(
                "question {}: header \"{full}\" shortened to \"{header}\" (AskUserQuestion allows {HEADER_CHARS} characters)",
                q.id
            ));
        }
        let text = q.question.trim().to_string();
        let made_up = shown.iter().any(|s| !matches!(s.meaning, Meaning::Own(_)));
        let fits = |b: &Open| b.ids.len() < BATCH && !b.texts.contains(&text);
        let at = if let Some(at) = open.iter().position(fits) {
            at
        } else {
            open.push(Open {
                ids: Vec::new(),
                texts: Vec::new(),
                headers: Vec::new(),
                items: Vec::new(),
            });
            open.len() - 1
        };
        let batch = &mut open[at];
        if batch.headers.contains(&header) {
            // Headers must be unique in a call: a short suffix keeps the batch full (one
            // batch of four, not four of one). Answers come back keyed by question text.
            let base = if full.is_empty() {
                one_line(&q.question)
            } else {
                full.clone()
            };
            #[allow(
                clippy::maybe_infinite_iter,
                reason = "a suffix not yet taken is found among the call's few headers"
            )]
            let unique = (2..)
                .map(|n| {
                    let suffix = format!(" {n}");
                    format!(
                        "{}{suffix}",
                        shorten(&base, HEADER_CHARS - suffix.chars().count())
                    )
                })
                .find(|h| !batch.headers.contains(h))
                .expect("a free suffix");
            warnings.push(format!(
                "question {}: header \"{header}\" is shared in its batch, so it is sent as \"{unique}\"",
                q.id
            ));
            header = unique;
        }
        let item = json!({
            "question": q.question,
            "header": header,
            "options": shown
                .iter()
                .map(|s| json!({ "label": s.label, "description": s.description }))
                .collect::<Vec<_>>(),
            // Made-up options are alternatives to each other, never picked together.
            "multiSelect": q.multi_select && !made_up,
        });
        batch.ids.push(q.id);
        batch.texts.push(text);
        batch.headers.push(header);
        batch.items.push(item);
    }
    let batches = open
        .into_iter()
        .map(|b| Batch {
            question_ids: b.ids,
            payload: json!({ "questions": b.items }),
        })
        .collect();
    (batches, left_out)
}

/// The header a question has in an askQuestions call, where answers come back keyed by
/// header: its own, made unique with its id when another question shares it.
pub fn vscode_header(q: &Question, all: &[Question]) -> String {
    let base = base_header(q);
    let shared = all.iter().filter(|o| base_header(o) == base).count() > 1;
    if shared {
        format!("{base} #{}", q.id)
    } else {
        base
    }
}

/// VS Code's askQuestions: every question in one call. Answers come back keyed by
/// header, so headers are unique in the call: a question whose header would still repeat
/// one already there is left out.
pub fn render_vscode(
    questions: &[Question],
    warnings: &mut Vec<String>,
) -> (Vec<Batch>, Vec<LeftOut>) {
    let mut ids = Vec::new();
    let mut headers: Vec<String> = Vec::new();
    let mut items = Vec::new();
    let mut left_out = Vec::new();
    for q in questions {
        let header = vscode_header(q, questions);
        let base = base_header(q);
        // A person's header that reads like our "Header #id" form keeps it: import reads
        // a header as itself before it reads it as that form.
        let taken = header != base && questions.iter().any(|o| base_header(o) == header);
        if header.is_empty() || taken || headers.contains(&header) {
            let reason = format!("its header \"{header}\" is not unique in the call");
            warnings.push(format!("question {}: left out: {reason}", q.id));
            left_out.push(LeftOut {
                question_id: q.id,
                reason,
            });
            continue;
        }
        if header != base {
            warnings.push(format!(
                "question {}: header \"{base}\" is shared, so it is sent as \"{header}\"",
                q.id
            ));
        }
        let options: Vec<Value> = recommended_first(q)
            .into_iter()
            .map(|o| {
                json!({
                    "label": o.label,
                    "description": o.description.as_deref().unwrap_or(""),
                    "recommended": o.recommended,
                })
            })
            .collect();
        let mut item = json!({
            "header": header,
            "question": q.question,
            "options": options,
            "multiSelect": q.multi_select,
            "allowFreeformInput": q.allow_freeform,
        });
        if let Some(c) = &q.context {
            item["context"] = json!(c);
        }
        ids.push(q.id);
        headers.push(header);
        items.push(item);
    }
    if ids.is_empty() {
        return (Vec::new(), left_out);
    }
    let batch = Batch {
        question_ids: ids,
        payload: json!({ "questions": items }),
    };
    (vec![batch], left_out)
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text
        .chars()
        .take(max - 1)
        .collect::<String>()
        .trim_end()
        .to_string();
    out.push('…');
    out
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tool_example_and_the_skill_templates_parse() {
        let tool = r#"{"questions": [
            {"question": "Which database should we use?", "header": "Database Selection",
             "options": [{"label": "PostgreSQL (Recommended)", "description": "Battle-tested"}, {"label": "SQLite"}]},
            {"question": "What should we name this service?", "header": "Service Setup"}],
            "metadata": {"source": "project-setup"}}"#;
        let qs = parse(tool).unwrap();
        assert_eq!(qs.len(), 2);
        assert!(qs[0].options[0].recommended);
        assert!(qs[1].options.is_empty() && qs[1].allow_freeform);

        let skill = r#"{"question": "Which path for v1?", "context": "A is faster.",
            "options": [{"title": "Path A", "description": "fast"}, "Path B"],
            "allowMultiple": true, "allowFreeform": false}"#;
        let qs = parse(skill).unwrap();
        assert_eq!(qs[0].options[1].label, "Path B");
        assert_eq!(qs[0].context.as_deref(), Some("A is faster."));
        assert!(qs[0].multi_select && !qs[0].allow_freeform);
    }

    #[test]
    fn errors_name_the_path() {
        for (text, expected) in [
            (r#"{"questions": []}"#, "empty array"),
            (
                r#"{"questions": [{"question": "A?", "options": [{"description": "x"}]}]}"#,
                "questions[0].options[0].label is missing",
            ),
            (
                r#"{"questions": [{"question": "A?", "multiSelect": "often"}]}"#,
                "questions[0].multiSelect",
            ),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.0.contains(expected), "{text}: {}", err.0);
        }
    }

    #[test]
    fn headers_are_shortened_to_twelve_characters() {
        assert_eq!(shorten("Success metrics", 12), "Success met…");
        assert_eq!(shorten("Rate limit", 12), "Rate limit");
        assert_eq!(shorten("Success metrics", 12).chars().count(), 12);
    }
}
