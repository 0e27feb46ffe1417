//! The ask-user family: the `ask_user` tool's input, Claude Code's AskUserQuestion and
//! VS Code's askQuestions. Parsing reads any of their question lists; rendering writes
//! exactly what each tool accepts.

use serde_json::{json, Value};

use super::{fail, json_candidate, parse_json, question_list, Parsed, Source};
use crate::model::{NewQuestion, Question, QuestionOption};

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

/// AskUserQuestion: batches of at most four, headers of at most twelve characters, the
/// recommended option first and marked. A question without options offers its proposed
/// value as the recommended option; "Other" is always there for free text.
pub fn render_ask_user(questions: &[Question], warnings: &mut Vec<String>) -> Vec<Batch> {
    questions
        .chunks(BATCH)
        .map(|chunk| {
            let items: Vec<Value> = chunk
                .iter()
                .map(|q| {
                    let full = base_header(q);
                    let header = shorten(&full, HEADER_CHARS);
                    if header != full {
                        warnings.push(format!(
                            "question {}: header \"{full}\" shortened to \"{header}\" (AskUserQuestion allows {HEADER_CHARS} characters)",
                            q.id
                        ));
                    }
                    let mut options: Vec<Value> = recommended_first(q)
                        .into_iter()
                        .map(|o| {
                            let label = if o.recommended {
                                format!("{} (Recommended)", o.label)
                            } else {
                                o.label.clone()
                            };
                            json!({ "label": label, "description": o.description.as_deref().unwrap_or("") })
                        })
                        .collect();
                    if options.is_empty() {
                        if let Some(p) = &q.proposed {
                            options.push(json!({
                                "label": format!("{} (Recommended)", one_line(p)),
                                "description": "The proposed answer",
                            }));
                        }
                    }
                    if options.len() > BATCH {
                        warnings.push(format!(
                            "question {}: {} options, AskUserQuestion shows at most {BATCH}",
                            q.id,
                            options.len()
                        ));
                    }
                    json!({
                        "question": q.question,
                        "header": header,
                        "options": options,
                        "multiSelect": q.multi_select,
                    })
                })
                .collect();
            Batch {
                question_ids: chunk.iter().map(|q| q.id).collect(),
                payload: json!({ "questions": items }),
            }
        })
        .collect()
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

/// VS Code's askQuestions: every question in one call.
pub fn render_vscode(questions: &[Question], warnings: &mut Vec<String>) -> Vec<Batch> {
    if questions.is_empty() {
        return Vec::new();
    }
    let items: Vec<Value> = questions
        .iter()
        .map(|q| {
            let header = vscode_header(q, questions);
            if header != base_header(q) {
                warnings.push(format!(
                    "question {}: header \"{}\" is shared, so it is sent as \"{header}\"",
                    q.id,
                    base_header(q)
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
            item
        })
        .collect();
    vec![Batch {
        question_ids: questions.iter().map(|q| q.id).collect(),
        payload: json!({ "questions": items }),
    }]
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
