//! The `openQuestions` envelope: a fenced ```json block whose top-level object holds an
//! `openQuestions` array of AskUserQuestion-shaped items. The first such block wins; other
//! JSON blocks (a summary, say) are ignored.
//!
//! We write and read a few keys beyond the protocol's (`group`, `proposed`, `required`,
//! `context`, `allowFreeformInput`) so that what `render` prints ingests back to the same
//! questions; readers that do not know them ignore them.

use serde_json::{json, Value};

use super::{fail, json_candidate, parse_json, question_list, Parsed, Source};
use crate::model::{NewQuestion, Question};

const KEY: &str = "openQuestions";

pub fn parse(text: &str) -> Parsed<Vec<NewQuestion>> {
    let Some(block) = json_candidate(text, KEY) else {
        return fail(format!("there is no JSON block with an \"{KEY}\" array"));
    };
    let value = parse_json(&block)?;
    question_list(
        &value,
        KEY,
        Source::OpenQuestions,
        "when there is nothing to ask, leave the envelope out",
    )
}

/// The envelope as a subagent would emit it, in a fenced block. A question whose text
/// would not read back as itself (`ingest` trims what it reads) is left out with a warning.
pub fn render(questions: &[Question], warnings: &mut Vec<String>) -> String {
    let carried: Vec<&Question> = questions
        .iter()
        .filter(|q| {
            let ok = reads_back(q);
            if !ok {
                warnings.push(format!(
                    "question {}: left out: its text or group would not read back as written (surrounding spaces); render it in another format",
                    q.id
                ));
            }
            ok
        })
        .collect();
    envelope(&carried)
}

fn reads_back(q: &Question) -> bool {
    match super::parse_envelope(&envelope(&[q]), Some(Source::OpenQuestions)) {
        Ok(Some(env)) => {
            env.questions.len() == 1
                && env.questions[0].question == q.question
                && env.questions[0].group_name == q.group_name
        }
        _ => false,
    }
}

fn envelope(questions: &[&Question]) -> String {
    if questions.is_empty() {
        return String::new();
    }
    let items: Vec<Value> = questions
        .iter()
        .map(|q| {
            let mut item = json!({
                "question": q.question,
                "header": q.header.as_deref().or(q.group_name.as_deref()),
                "options": q.options.iter().map(|o| json!({
                    "label": o.label,
                    "description": o.description.as_deref().unwrap_or(""),
                    "recommended": o.recommended,
                })).collect::<Vec<_>>(),
                "multiSelect": q.multi_select,
                "allowFreeformInput": q.allow_freeform,
                "required": q.required,
            });
            for (key, value) in [
                ("group", &q.group_name),
                ("proposed", &q.proposed),
                ("context", &q.context),
            ] {
                if let Some(v) = value {
                    item[key] = json!(v);
                }
            }
            item
        })
        .collect();
    let body = serde_json::to_string_pretty(&json!({ KEY: items })).unwrap_or_default();
    format!("```json\n{body}\n```\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protocol_example_parses_with_the_recommended_option() {
        let text = r#"I need a decision first.

```json
{
  "openQuestions": [
    {
      "question": "How should rate limiting be enforced for unauthenticated requests?",
      "header": "Rate limit",
      "options": [
        { "label": "Token bucket per IP (Recommended)", "description": "Simple." },
        { "label": "Sliding window per IP" }
      ],
      "extra": "ignored"
    }
  ]
}
```
"#;
        let qs = parse(text).unwrap();
        assert_eq!(qs.len(), 1);
        let q = &qs[0];
        assert_eq!(q.header.as_deref(), Some("Rate limit"));
        assert_eq!(q.options[0].label, "Token bucket per IP");
        assert!(q.options[0].recommended);
        assert_eq!(q.options[1].description.as_deref(), Some(""));
        assert_eq!(q.proposed.as_deref(), Some("Token bucket per IP"));
        assert!(q.required);
    }

    #[test]
    fn the_first_block_with_the_key_wins() {
        let text = "```json\n{\"summary\": \"x\"}\n```\n```json\n{\"openQuestions\": [{\"question\": \"A?\"}]}\n```\n```json\n{\"openQuestions\": [{\"question\": \"B?\"}]}\n```";
        assert_eq!(parse(text).unwrap()[0].question, "A?");
    }

    #[test]
    fn errors_name_the_json_path_or_line() {
        let cases = [
            (
                r#"{"openQuestions": [{"question": "A?", "options": [{"label": "x"}]}, {"question": "B?", "options": [{"description": "no label"}]}]}"#,
                "openQuestions[1].options[0].label is missing",
            ),
            (r#"{"openQuestions": []}"#, "empty array"),
            (
                r#"{"openQuestions": {"question": "A?"}}"#,
                "must be an array",
            ),
            (
                r#"{"openQuestions": [{"header": "x"}]}"#,
                "openQuestions[0].question is missing",
            ),
            (
                r#"{"openQuestions": [{"question": 5}]}"#,
                "openQuestions[0].question must be a string",
            ),
            (
                "text\n```json\n{\"openQuestions\": [\n  {\"question\": \"A?\",}\n]}\n```",
                "line 4",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(text).unwrap_err();
            assert!(err.0.contains(expected), "{text}: {}", err.0);
        }
    }
}
