//! What asking tools give back: answers keyed by question text, header, or id.

use serde_json::Value;

use super::ask_user::{self, Meaning};
use super::{fail, kind, Obj, ParseError, Parsed};
use crate::model::{Question, Status};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    strum::IntoStaticStr,
    strum::VariantArray,
    strum::EnumMessage,
    serde::Serialize,
    serde::Deserialize,
)]
#[strum(serialize_all = "kebab-case")]
#[serde(rename_all = "kebab-case")]
pub enum ImportFormat {
    /// {"answers": {"<question text>": "<answer>"}}
    AskUser,
    /// {"answers": {"<header>": {"selected": [...], "freeText": ..., "skipped": bool}}}
    Vscode,
    /// {"answered": true, "answers": [{"question", "answer", ...}]}
    PiResult,
    /// The pending-questions file with answers filled in
    PiPending,
    /// {"<id>": "<answer>" | ["label", ...] | {"skip": true, "reason": "..."} | {"decline": "..."}}
    Map,
}

/// Which question an answer is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Id(i64),
    Text(String),
    Header(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Answer {
        text: Option<String>,
        select: Vec<String>,
    },
    Skip {
        reason: Option<String>,
    },
    /// The person will not answer it as asked, for this reason.
    Decline {
        reason: String,
    },
    /// Left unanswered: nothing to record.
    Pending,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub key: Key,
    pub reply: Reply,
    /// Where in the input it was, for messages.
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answers {
    Replies(ImportFormat, Vec<Imported>),
    /// The person cancelled: nothing is to be recorded.
    Cancelled,
}

/// Reads JSON text whose objects must not repeat a key: with one, two answers for the same
/// question would be read as one, the other dropped without a word.
struct Unique(Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Unique, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Unique;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Unique, E> {
                Ok(Unique(Value::Bool(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Unique, E> {
                Ok(Unique(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Unique, E> {
                Ok(Unique(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Unique, E> {
                Ok(Unique(
                    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
                ))
            }
            fn visit_str<E>(self, v: &str) -> Result<Unique, E> {
                Ok(Unique(Value::String(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Unique, E> {
                Ok(Unique(Value::String(v)))
            }
            fn visit_unit<E>(self) -> Result<Unique, E> {
                Ok(Unique(Value::Null))
            }
            fn visit_none<E>(self) -> Result<Unique, E> {
                Ok(Unique(Value::Null))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Unique, A::Error> {
                let mut items = Vec::new();
                while let Some(Unique(v)) = seq.next_element()? {
                    items.push(v);
                }
                Ok(Unique(Value::Array(items)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Unique, A::Error> {
                let mut object = serde_json::Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    let Unique(value) = map.next_value()?;
                    if object.insert(key.clone(), value).is_some() {
                        return Err(serde::de::Error::custom(format!(
                            "the key \"{key}\" appears twice in one object; give each answer once"
                        )));
                    }
                }
                Ok(Unique(Value::Object(object)))
            }
        }
        d.deserialize_any(Visit)
    }
}

pub fn parse(text: &str, format: Option<ImportFormat>) -> Parsed<Answers> {
    let text = text.trim_start_matches('\u{feff}');
    let value: Value = serde_json::from_str::<Unique>(text)
        .map(|u| u.0)
        .map_err(|e| {
            ParseError(format!(
                "the answers are not {} (line {}, column {}): {}",
                if e.is_data() {
                    "readable"
                } else {
                    "valid JSON"
                },
                e.line(),
                e.column(),
                e.to_string().split(" at line ").next().unwrap_or_default()
            ))
        })?;
    let top = Obj::new(&value, "")?;
    let format = match format {
        Some(f) => f,
        None => detect(&top)?,
    };
    let replies = match format {
        ImportFormat::AskUser => keyed(&top, Key::Text, ask_user_reply)?,
        ImportFormat::Vscode => keyed(&top, Key::Header, vscode_reply)?,
        ImportFormat::PiResult => {
            let answered = top.opt_bool("answered")?;
            if answered == Some(false) || top.opt_bool("cancelled")? == Some(true) {
                return Ok(Answers::Cancelled);
            }
            listed(&top, "answers")?
        }
        ImportFormat::PiPending => listed(&top, "questions")?,
        ImportFormat::Map => map(&top)?,
    };
    Ok(Answers::Replies(format, replies))
}

fn detect(top: &Obj) -> Parsed<ImportFormat> {
    if top.map.contains_key("answered") || top.map.contains_key("cancelled") {
        return Ok(ImportFormat::PiResult);
    }
    match top.map.get("answers") {
        Some(Value::Object(answers)) => {
            return Ok(if answers.values().any(Value::is_object) {
                ImportFormat::Vscode
            } else {
                ImportFormat::AskUser
            })
        }
        Some(Value::Array(_)) => return Ok(ImportFormat::PiResult),
        _ => {}
    }
    if matches!(top.map.get("questions"), Some(Value::Array(_))) {
        return Ok(ImportFormat::PiPending);
    }
    if !top.map.is_empty() && top.map.keys().all(|k| k.trim().parse::<i64>().is_ok()) {
        return Ok(ImportFormat::Map);
    }
    fail("cannot tell which tool these answers come from: expected {\"answers\": …}, pi's result or pending file, or an {\"<id>\": answer} map; name it with --format")
}

fn text_or_labels(value: &Value, path: &str) -> Parsed<Reply> {
    match value {
        Value::String(s) => Ok(Reply::Answer {
            text: Some(s.clone()),
            select: Vec::new(),
        }),
        Value::Array(items) => {
            let mut select = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => select.push(s.clone()),
                    other => {
                        return fail(format!(
                            "{path}[{i}] must be a string label, not {}",
                            kind(other)
                        ))
                    }
                }
            }
            Ok(Reply::Answer { text: None, select })
        }
        Value::Null => Ok(Reply::Pending),
        other => fail(format!(
            "{path} must be a string or a list of labels, not {}",
            kind(other)
        )),
    }
}

fn keyed(
    top: &Obj,
    key: fn(String) -> Key,
    reply: fn(&Value, &str) -> Parsed<Reply>,
) -> Parsed<Vec<Imported>> {
    let Some(Value::Object(answers)) = top.map.get("answers") else {
        return fail("answers must be an object keyed by question");
    };
    answers
        .iter()
        .map(|(k, v)| {
            let path = format!("answers[{}]", serde_json::to_string(k).unwrap_or_default());
            Ok(Imported {
                key: key(k.clone()),
                reply: reply(v, &path)?,
                path,
            })
        })
        .collect()
}

fn ask_user_reply(value: &Value, path: &str) -> Parsed<Reply> {
    text_or_labels(value, path)
}

fn vscode_reply(value: &Value, path: &str) -> Parsed<Reply> {
    if !value.is_object() {
        return text_or_labels(value, path);
    }
    let o = Obj::new(value, path)?;
    if o.opt_bool("skipped")? == Some(true) {
        return Ok(Reply::Skip { reason: None });
    }
    let select = match o.opt_array("selected")? {
        Some(items) => match text_or_labels(&Value::Array(items.clone()), &o.at("selected"))? {
            Reply::Answer { select, .. } => select,
            _ => Vec::new(),
        },
        None => Vec::new(),
    };
    let text = o.opt_str("freeText")?.filter(|t| !t.trim().is_empty());
    if select.is_empty() && text.is_none() {
        return Ok(Reply::Pending);
    }
    Ok(Reply::Answer { text, select })
}

/// pi's lists: `[{question, answer, id?}]` under `answers` or `questions`.
fn listed(top: &Obj, list: &str) -> Parsed<Vec<Imported>> {
    let Some(items) = top.opt_array(list)? else {
        return fail(format!("{list} is missing"));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let here = format!("{list}[{i}]");
        let o = Obj::new(item, &here)?;
        let key = match o.map.get("id") {
            Some(Value::Number(n)) => match n.as_i64() {
                Some(id) if id > 0 => Key::Id(id),
                _ => return fail(format!("{} must be a positive question id", o.at("id"))),
            },
            _ => Key::Text(o.req_str("question")?),
        };
        // pi marks a question the person would not answer as `cancelled` (with an
        // optional `reason`): a decline of that question alone.
        let reply = match (o.opt_bool("cancelled")?, o.map.get("answer")) {
            (Some(true), _) => Reply::Decline {
                reason: o
                    .opt_str("reason")?
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or_else(|| "cancelled in pi".to_string()),
            },
            (_, None) => Reply::Pending,
            (_, Some(v)) => text_or_labels(v, &o.at("answer"))?,
        };
        out.push(Imported {
            key,
            reply,
            path: here,
        });
    }
    Ok(out)
}

fn map(top: &Obj) -> Parsed<Vec<Imported>> {
    let mut out = Vec::with_capacity(top.map.len());
    for (k, v) in top.map {
        let path = format!("[{}]", serde_json::to_string(k).unwrap_or_default());
        let id = match k.trim().parse::<i64>() {
            Ok(id) if id > 0 => id,
            _ => return fail(format!("{path}: a key must be a positive question id")),
        };
        let reply = match v {
            Value::Object(_) => {
                let o = Obj::new(v, &path)?;
                if o.opt_bool("skip")? == Some(true) {
                    Reply::Skip {
                        reason: o.opt_str("reason")?,
                    }
                } else if let Some(reason) = o.opt_str("decline")? {
                    Reply::Decline { reason }
                } else if let Some(answer) = o.map.get("answer") {
                    text_or_labels(answer, &o.at("answer"))?
                } else if let Some(select) = o.map.get("select") {
                    text_or_labels(select, &o.at("select"))?
                } else {
                    return fail(format!(
                        "{path} must be an answer, a list of labels, {{\"skip\": true, \"reason\": \"…\"}} or {{\"decline\": \"reason\"}}"
                    ));
                }
            }
            other => text_or_labels(other, &path)?,
        };
        out.push(Imported {
            key: Key::Id(id),
            reply,
            path,
        });
    }
    Ok(out)
}

/// A reply placed on its question, meaning what it means there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub id: i64,
    pub reply: Reply,
    /// Where in the input it was, for messages.
    pub path: String,
}

/// Why a reply could not be placed: no question matches it, or several do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unplaced {
    NotFound(String),
    Ambiguous(String),
}

/// Places each reply on the question of `stage` it is for (`in_stage` holds the stage's
/// questions), and reads the options `render` made up for AskUserQuestion back as what
/// they stand for: the proposed value, a skip, or nothing yet.
pub fn place(
    in_stage: &[Question],
    stage: &str,
    format: ImportFormat,
    replies: &[Imported],
) -> Result<Vec<Placed>, Unplaced> {
    let index = Index::new(in_stage);
    replies
        .iter()
        .map(|imported| {
            let q = find(&index, stage, imported)?;
            let reply = match (&imported.reply, format) {
                (
                    Reply::Answer {
                        text: Some(text),
                        select,
                    },
                    ImportFormat::AskUser,
                ) if select.is_empty() => match ask_user::shown_meaning(q, text) {
                    Some(Meaning::Proposed(value)) => Reply::Answer {
                        text: Some(value),
                        select: Vec::new(),
                    },
                    Some(Meaning::Skip) => Reply::Skip { reason: None },
                    Some(Meaning::Later) => Reply::Pending,
                    Some(Meaning::Own(_)) | None => imported.reply.clone(),
                },
                _ => imported.reply.clone(),
            };
            Ok(Placed {
                id: q.id,
                reply,
                path: imported.path.clone(),
            })
        })
        .collect()
}

/// A stage's questions by id and by their text, so that placing a reply per question
/// of a large import is a lookup, not a pass over the stage.
struct Index<'a> {
    in_stage: &'a [Question],
    by_id: std::collections::HashMap<i64, &'a Question>,
    by_text: std::collections::HashMap<&'a str, Vec<&'a Question>>,
}

impl<'a> Index<'a> {
    fn new(in_stage: &'a [Question]) -> Index<'a> {
        let mut by_text: std::collections::HashMap<&str, Vec<&Question>> =
            std::collections::HashMap::new();
        for q in in_stage {
            by_text.entry(q.question.trim()).or_default().push(q);
        }
        Index {
            in_stage,
            by_id: in_stage.iter().map(|q| (q.id, q)).collect(),
            by_text,
        }
    }
}

/// The question of the stage a reply is for. A header of the form `X #N` names question
/// N only when that is the form `render` wrote for it (question N's header is `X`);
/// otherwise it is a header like any other.
fn find<'a>(index: &Index<'a>, stage: &str, imported: &Imported) -> Result<&'a Question, Unplaced> {
    let in_stage = index.in_stage;
    let matches: Vec<&Question> = match &imported.key {
        Key::Id(id) => index.by_id.get(id).into_iter().copied().collect(),
        Key::Text(text) => index.by_text.get(text.trim()).cloned().unwrap_or_default(),
        Key::Header(header) => {
            let header = header.trim();
            let tagged = header
                .rsplit_once(" #")
                .and_then(|(base, id)| Some((base, id.parse::<i64>().ok()?)));
            let literal: Vec<&Question> = in_stage
                .iter()
                .filter(|q| ask_user::base_header(q) == header || q.question.trim() == header)
                .collect();
            if literal.is_empty() {
                in_stage
                    .iter()
                    .filter(|q| {
                        tagged.is_some_and(|(b, id)| q.id == id && ask_user::base_header(q) == b)
                    })
                    .collect()
            } else {
                literal
            }
        }
    };
    // Where a key matches several questions, the pending one is meant.
    let pending: Vec<&Question> = matches
        .iter()
        .copied()
        .filter(|q| q.state.status == Status::Pending)
        .collect();
    match (matches.len(), pending.len()) {
        (1, _) => Ok(matches[0]),
        (0, _) => Err(Unplaced::NotFound(format!(
            "{}: no question of stage '{stage}' matches it (was the stage cleared?); nothing was recorded",
            imported.path
        ))),
        (_, 1) => Ok(pending[0]),
        _ => Err(Unplaced::Ambiguous(format!(
            "{}: matches {} questions of stage '{stage}'; import by id with --format map; nothing was recorded",
            imported.path,
            matches.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replies(text: &str) -> (ImportFormat, Vec<Imported>) {
        match parse(text, None).unwrap() {
            Answers::Replies(f, r) => (f, r),
            Answers::Cancelled => panic!("cancelled"),
        }
    }

    #[test]
    fn each_tool_is_recognised() {
        assert_eq!(
            replies(r#"{"answers": {"Which DB?": "SQLite"}}"#).0,
            ImportFormat::AskUser
        );
        assert_eq!(
            replies(r#"{"answers": {"DB": {"selected": ["SQLite"], "freeText": null, "skipped": false}}}"#).0,
            ImportFormat::Vscode
        );
        assert_eq!(
            replies(r#"{"answered": true, "answers": [{"question": "Q?", "answer": "A", "wasCustom": true}]}"#).0,
            ImportFormat::PiResult
        );
        assert_eq!(
            replies(r#"{"questions": [{"id": 3, "question": "Q?", "answer": null}]}"#).0,
            ImportFormat::PiPending
        );
        let (f, r) =
            replies(r#"{"7": "yes", "8": ["A", "B"], "9": {"skip": true, "reason": "later"}}"#);
        assert_eq!(f, ImportFormat::Map);
        assert_eq!(
            r[2].reply,
            Reply::Skip {
                reason: Some("later".into())
            }
        );
    }

    #[test]
    fn a_cancelled_result_records_nothing() {
        assert_eq!(
            parse(
                r#"{"answered": false, "answers": [], "cancelled": true}"#,
                None
            ),
            Ok(Answers::Cancelled)
        );
    }

    #[test]
    fn bad_answers_name_their_place() {
        for (text, expected) in [
            ("{", "not valid JSON"),
            (r#"{"7": 5}"#, "[\"7\"] must be a string"),
            (r#"{"x": "y"}"#, "cannot tell"),
            (
                r#"{"questions": [{"answer": "x"}]}"#,
                "questions[0].question is missing",
            ),
        ] {
            let err = parse(text, None).unwrap_err();
            assert!(err.0.contains(expected), "{text}: {}", err.0);
        }
    }
}
