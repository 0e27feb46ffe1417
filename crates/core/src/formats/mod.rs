//! The formats agents and asking tools speak: parsers from text to questions or answers,
//! and renderers from questions to text. Pure: no database, no printing.
//!
//! Every parse error is one sentence fit to hand back to the subagent that wrote the input:
//! what is wrong and where (a line number, or a JSON path such as
//! `openQuestions[1].options[0].label`).

pub mod answers;
pub mod ask_user;
pub mod markdown;
pub mod open_questions;
pub mod pi;
pub mod uwf;

use serde_json::{Map, Value};

use crate::model::{split_recommended, Draft, NewQuestion, QuestionOption};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

pub type Parsed<T> = Result<T, ParseError>;

fn fail<T>(message: impl Into<String>) -> Parsed<T> {
    Err(ParseError(message.into()))
}

/// Text from the ledger as it may be shown to a person: terminal escape sequences (CSI,
/// OSC and the rest) removed whole and other control characters made spaces, so that a
/// question written by an agent cannot drive the person's terminal. Newlines are kept
/// when `keep_newlines`.
pub fn sanitize(text: &str, keep_newlines: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' | '\u{9b}' | '\u{9d}' => {
                // ESC [ … final, ESC ] … BEL/ST, ESC P/X/^/_ … ST, or ESC and one char.
                let kind = if c == '\u{9b}' {
                    '['
                } else if c == '\u{9d}' {
                    ']'
                } else {
                    chars.next().unwrap_or(' ')
                };
                match kind {
                    '[' => {
                        for n in chars.by_ref() {
                            if ('@'..='~').contains(&n) {
                                break;
                            }
                        }
                    }
                    ']' | 'P' | 'X' | '^' | '_' => {
                        while let Some(n) = chars.next() {
                            if n == '\u{7}' || n == '\u{9c}' {
                                break;
                            }
                            if n == '\u{1b}' && chars.peek() == Some(&'\\') {
                                chars.next();
                                break;
                            }
                        }
                    }
                    _ => {}
                }
            }
            '\n' if keep_newlines => out.push('\n'),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The formats `ingest` reads.
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
pub enum Source {
    /// The uwf QUESTIONS_NEEDED block
    Uwf,
    /// A fenced JSON block with an openQuestions array
    OpenQuestions,
    /// ask_user / AskUserQuestion / askQuestions input: {"questions": [...]}
    AskUser,
}

crate::model::vocabulary!(Source, "format", documented);
crate::model::vocabulary!(RenderFormat, "format", documented);
crate::model::vocabulary!(answers::ImportFormat, "format", documented);

/// The ledger records which format a question came in.
impl From<Source> for crate::model::Source {
    fn from(format: Source) -> crate::model::Source {
        match format {
            Source::Uwf => crate::model::Source::Uwf,
            Source::OpenQuestions => crate::model::Source::OpenQuestions,
            Source::AskUser => crate::model::Source::AskUser,
        }
    }
}

/// The formats `render` writes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray, strum::EnumMessage,
)]
#[strum(serialize_all = "kebab-case")]
pub enum RenderFormat {
    /// AskUserQuestion: batches of at most 4, headers of at most 12 characters
    AskUser,
    /// VS Code askQuestions: one call with every question
    Vscode,
    /// pi's pending-questions file (with --out: written 0600)
    PiPending,
    /// A fenced openQuestions JSON block
    OpenQuestions,
    /// A QUESTIONS_NEEDED block
    Uwf,
    /// An "Open questions" Markdown section
    Markdown,
}

/// Questions read from a subagent's output, before they have a stage.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub source: Source,
    pub questions: Vec<NewQuestion>,
}

/// Finds and parses the envelope in `text`. `Ok(None)`: there is none (nothing to ask).
/// With `only`, just that format is looked for.
pub fn parse_envelope(text: &str, only: Option<Source>) -> Parsed<Option<Envelope>> {
    let text = &normalize_newlines(text.strip_prefix('\u{feff}').unwrap_or(text));
    let found = match only {
        Some(source) => locate(text, source).map(|at| (at, source)),
        None => [Source::Uwf, Source::OpenQuestions, Source::AskUser]
            .into_iter()
            .filter_map(|s| locate(text, s).map(|at| (at, s)))
            // The envelope that comes first in the output is the one meant.
            .min_by_key(|(at, _)| *at),
    };
    let Some((_, source)) = found else {
        // Nothing readable: but input that visibly tries to ask is an error, never "none".
        return match attempted(text, only) {
            Some(message) => fail(message),
            None => Ok(None),
        };
    };
    // Refused before anything is built for it: an envelope far beyond any real one.
    let rough = match source {
        Source::Uwf => text.split('\n').filter(|l| l.contains("Q:")).count(),
        Source::OpenQuestions | Source::AskUser => text.matches("\"question\"").count(),
    };
    if rough > MAX_QUESTIONS {
        return fail(too_many(rough));
    }
    let questions = match source {
        Source::Uwf => uwf::parse(text)?,
        Source::OpenQuestions => open_questions::parse(text)?,
        Source::AskUser => ask_user::parse(text)?,
    };
    if questions.len() > MAX_QUESTIONS {
        return fail(too_many(questions.len()));
    }
    Ok(Some(Envelope { source, questions }))
}

/// The most questions one call reads: far beyond any subagent's output, and few enough
/// that a call's memory stays small whatever the input.
pub const MAX_QUESTIONS: usize = 100_000;

fn too_many(n: usize) -> String {
    format!(
        "the input holds about {n} questions; one call reads at most {MAX_QUESTIONS}: split it into several calls"
    )
}

/// What in `text`, where no envelope could be read, shows that one was meant: a line
/// that mentions the marker, a `Q:` line, an `openQuestions` key outside any JSON fence.
fn attempted(text: &str, only: Option<Source>) -> Option<String> {
    let wants = |s: Source| only.is_none_or(|o| o == s);
    if wants(Source::Uwf) {
        if let Some(message) = uwf::stray(text) {
            return Some(message);
        }
    }
    if wants(Source::OpenQuestions) {
        if let Some(line) = text
            .split('\n')
            .position(|l| l.contains("\"openQuestions\""))
        {
            return Some(format!(
                "line {}: there is an \"openQuestions\" key, but not in a JSON object that can be read; put the envelope alone in a ```json fenced block",
                line + 1
            ));
        }
    }
    None
}

/// Where in `text` an envelope of this format starts, if there is one.
fn locate(text: &str, source: Source) -> Option<usize> {
    match source {
        Source::Uwf => uwf::marker_line(text).map(|line| line_offset(text, line)),
        Source::OpenQuestions => json_candidate(text, "openQuestions").map(|b| b.offset),
        Source::AskUser => json_candidate(text, "questions").map(|b| b.offset),
    }
}

pub(crate) fn normalize_newlines(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

fn line_offset(text: &str, line: usize) -> usize {
    text.split('\n').take(line).map(|l| l.len() + 1).sum()
}

/// A JSON text found in the input: a fenced block or the whole input.
#[derive(Debug, Clone)]
pub(crate) struct JsonBlock<'a> {
    pub text: &'a str,
    /// 1-based line of the block's first JSON line in the whole input.
    pub first_line: usize,
    pub offset: usize,
    /// Fenced as JSON (or with no language), so a syntax error in it is reported.
    pub jsonish: bool,
}

/// A fence line: three or more backticks or tildes, then an info string (a language,
/// perhaps attributes). Returns the fence character, its length and the info string.
pub(crate) fn fence(line: &str) -> Option<(char, usize, &str)> {
    let line = line.trim();
    let ch = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = line.len() - line.trim_start_matches(ch).len();
    let info = &line[len..];
    (len >= 3 && !(ch == '`' && info.contains('`'))).then_some((ch, len, info))
}

/// Fenced blocks in order: ``` or ~~~ fences of any length, closed by a fence of the same
/// character at least as long with nothing after it, or by the end of the input.
pub(crate) fn fenced_blocks(text: &str) -> Vec<JsonBlock<'_>> {
    struct Open {
        ch: char,
        len: usize,
        start: usize,
        first_line: usize,
        jsonish: bool,
    }
    let mut blocks = Vec::new();
    let mut open: Option<Open> = None;
    let mut offset = 0;
    for (i, line) in text.split('\n').enumerate() {
        let next = offset + line.len() + 1;
        match (&open, fence(line)) {
            (None, Some((ch, len, info))) => {
                // The language is the info string's first word: `json title="x"`, `{.json}`.
                let lang = info
                    .trim()
                    .trim_start_matches(['{', '.'])
                    .split(|c: char| c.is_whitespace() || c == '}' || c == ',')
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase();
                open = Some(Open {
                    ch,
                    len,
                    start: next.min(text.len()),
                    first_line: i + 2,
                    jsonish: lang.is_empty() || matches!(lang.as_str(), "json" | "jsonc" | "json5"),
                });
            }
            (Some(o), Some((ch, len, info)))
                if ch == o.ch && len >= o.len && info.trim().is_empty() =>
            {
                blocks.push(JsonBlock {
                    text: &text[o.start..offset.max(o.start)],
                    first_line: o.first_line,
                    offset: o.start,
                    jsonish: o.jsonish,
                });
                open = None;
            }
            _ => {}
        }
        offset = next;
    }
    if let Some(o) = open {
        blocks.push(JsonBlock {
            text: &text[o.start..],
            first_line: o.first_line,
            offset: o.start,
            jsonish: o.jsonish,
        });
    }
    blocks
}

/// The first JSON text in the input whose top-level object has `key`: a fenced block, or
/// the whole input when it is JSON itself. A block that mentions the key but is not valid
/// JSON counts too, so that its syntax error can be reported.
pub(crate) fn json_candidate<'a>(text: &'a str, key: &str) -> Option<JsonBlock<'a>> {
    let quoted = format!("\"{key}\"");
    let whole = JsonBlock {
        text,
        first_line: 1,
        offset: 0,
        jsonish: true,
    };
    let trimmed = text.trim_start();
    let mut candidates = Vec::new();
    if trimmed.starts_with('{') {
        candidates.push(whole);
    }
    candidates.extend(fenced_blocks(text));
    candidates
        .into_iter()
        .find(|block| match serde_json::from_str::<Value>(block.text) {
            Ok(Value::Object(map)) => map.contains_key(key),
            Ok(_) => false,
            Err(_) => block.jsonish && block.text.contains(&quoted),
        })
}

/// Parses a block's JSON, reporting a syntax error at its line in the whole input.
pub(crate) fn parse_json(block: &JsonBlock) -> Parsed<Value> {
    serde_json::from_str(block.text).or_else(|e| {
        fail(format!(
            "the JSON is not valid at line {}, column {}: {}",
            block.first_line + e.line().saturating_sub(1),
            e.column(),
            describe_json_error(&e)
        ))
    })
}

fn describe_json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    // serde_json appends " at line L column C"; the place is already said.
    match text.find(" at line ") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

/// Reading a JSON object's fields with their path, for precise messages.
pub(crate) struct Obj<'a> {
    pub map: &'a Map<String, Value>,
    pub path: String,
}

impl<'a> Obj<'a> {
    pub(crate) fn new(value: &'a Value, path: &str) -> Parsed<Obj<'a>> {
        match value {
            Value::Object(map) => Ok(Obj {
                map,
                path: path.to_string(),
            }),
            other => fail(format!(
                "{} must be a JSON object, not {}",
                path_name(path),
                kind(other)
            )),
        }
    }

    pub(crate) fn at(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// A string field that may be missing or null.
    pub(crate) fn opt_str(&self, key: &str) -> Parsed<Option<String>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => fail(format!(
                "{} must be a string, not {}",
                self.at(key),
                kind(other)
            )),
        }
    }

    /// A string field that must be there and not blank.
    pub(crate) fn req_str(&self, key: &str) -> Parsed<String> {
        match self.opt_str(key)? {
            Some(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            Some(_) => fail(format!("{} is empty", self.at(key))),
            None => fail(format!("{} is missing", self.at(key))),
        }
    }

    pub(crate) fn opt_bool(&self, key: &str) -> Parsed<Option<bool>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) => match crate::model::parse_bool(s) {
                Some(b) => Ok(Some(b)),
                None => fail(format!(
                    "{} must be true or false, not \"{s}\"",
                    self.at(key)
                )),
            },
            Some(other) => fail(format!(
                "{} must be true or false, not {}",
                self.at(key),
                kind(other)
            )),
        }
    }

    pub(crate) fn opt_array(&self, key: &str) -> Parsed<Option<&'a Vec<Value>>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => fail(format!(
                "{} must be an array, not {}",
                self.at(key),
                kind(other)
            )),
        }
    }
}

fn path_name(path: &str) -> String {
    if path.is_empty() {
        "the top level".to_string()
    } else {
        path.to_string()
    }
}

pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Options as agents write them: `{"label"|"title", "description"?, "recommended"?}` or a
/// bare string. A label ending in " (Recommended)" marks it.
pub(crate) fn parse_options(items: &[Value], path: &str) -> Parsed<Vec<QuestionOption>> {
    let mut options: Vec<QuestionOption> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let here = format!("{path}[{i}]");
        let (label, description, recommended) = match item {
            Value::String(s) => (s.clone(), None, false),
            other => {
                let o = Obj::new(other, &here)?;
                let ((Some(label), _) | (None, Some(label))) =
                    (o.opt_str("label")?, o.opt_str("title")?)
                else {
                    return fail(format!("{here}.label is missing"));
                };
                (
                    label,
                    Some(o.opt_str("description")?.unwrap_or_default()),
                    o.opt_bool("recommended")?.unwrap_or(false),
                )
            }
        };
        let (clean, marked) = split_recommended(&label);
        if clean.is_empty() {
            return fail(format!("{here}.label is empty"));
        }
        if options
            .iter()
            .any(|o| o.label.to_lowercase() == clean.to_lowercase())
        {
            return fail(format!(
                "{here}.label \"{clean}\" repeats an earlier option"
            ));
        }
        options.push(QuestionOption {
            label: clean.to_string(),
            description,
            recommended: recommended || marked,
        });
    }
    Ok(options)
}

/// The question list under `key` of an envelope: an array of at least one question.
pub fn question_list(
    value: &Value,
    key: &str,
    source: Source,
    when_empty: &str,
) -> Parsed<Vec<NewQuestion>> {
    let top = Obj::new(value, "")?;
    let Some(items) = top.opt_array(key)? else {
        return fail(format!("{key} must be an array"));
    };
    if items.is_empty() {
        return fail(format!("{key} is an empty array; {when_empty}"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| question_item(item, &format!("{key}[{i}]"), source))
        .collect()
}

/// One question object as the ask-user family writes it, with the aliases its members use
/// (`multiSelect`/`allowMultiple`, `allowFreeformInput`/`allowFreeform`) and our own keys.
fn question_item(item: &Value, path: &str, source: Source) -> Parsed<NewQuestion> {
    let o = Obj::new(item, path)?;
    let options = match o.opt_array("options")? {
        Some(items) => parse_options(items, &o.at("options"))?,
        None => Vec::new(),
    };
    let multi = o.opt_bool("multiSelect")?.or(o.opt_bool("allowMultiple")?);
    let freeform = o
        .opt_bool("allowFreeformInput")?
        .or(o.opt_bool("allowFreeform")?);
    built(
        path,
        Draft {
            stage: String::new(),
            group: o.opt_str("group")?,
            question: o.req_str("question")?,
            proposed: o.opt_str("proposed")?,
            required: o.opt_bool("required")?.unwrap_or(true),
            header: o.opt_str("header")?,
            context: o.opt_str("context")?,
            options,
            multi_select: multi.unwrap_or(false),
            allow_freeform: freeform.unwrap_or(true),
            source: source.into(),
            approval: None,
            urgent: false,
        },
    )
}

/// A question as parsed, made one to log by the same rules as every other (see
/// `NewQuestion::build`), before `ingest` gives it a stage; a question they refuse is a
/// parse error at `path` (a line, or a JSON path), not silently changed.
pub(crate) fn built(path: &str, draft: Draft) -> Parsed<NewQuestion> {
    NewQuestion::build(draft).map_err(|e| ParseError(format!("{path}: {}", e.message)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_removed_whole() {
        assert_eq!(sanitize("red \u{1b}[31mtext\u{1b}[0m!", false), "red text!");
        assert_eq!(
            sanitize("title\u{1b}]0;pwned\u{7} here", false),
            "title here"
        );
        assert_eq!(sanitize("clear\u{1b}[2J\u{1b}c now", false), "clear now");
        assert_eq!(
            sanitize("osc\u{1b}]8;;http://x\u{1b}\\link", false),
            "osclink"
        );
        assert_eq!(sanitize("tab\there\r\nline", false), "tab here  line");
        assert_eq!(sanitize("a\nb\u{7}", true), "a\nb ");
        assert_eq!(sanitize("c1 \u{9b}31m csi", false), "c1  csi");
    }

    #[test]
    fn fenced_blocks_are_found_with_their_lines() {
        let text =
            "intro\n```json\n{\"a\": 1}\n```\ntext\n```python\nprint()\n```\n```\n[1]\n```\n";
        let blocks = fenced_blocks(text);
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[0].text, "{\"a\": 1}\n");
        assert_eq!(blocks[0].first_line, 3);
        assert!(blocks[0].jsonish && !blocks[1].jsonish && blocks[2].jsonish);
        assert_eq!(blocks[2].text, "[1]\n");
    }

    #[test]
    fn every_kind_of_fence_holds_an_envelope() {
        let body = "{\"openQuestions\": [{\"question\": \"A?\"}]}";
        for (open, close) in [
            ("~~~json", "~~~"),
            ("````", "````"),
            ("````json", "`````"),
            ("```json title=\"x\"", "```"),
            ("```JSON", "```"),
            ("```{.json}", "```"),
            ("```json", ""),
        ] {
            let text = format!("Here:\n{open}\n{body}\n{close}\nDone.\n");
            let text = if close.is_empty() {
                format!("Here:\n{open}\n{body}\n")
            } else {
                text
            };
            let env = parse_envelope(&text, None)
                .unwrap()
                .unwrap_or_else(|| panic!("{text}"));
            assert_eq!(env.questions[0].question, "A?", "{text}");
        }
        // A four-backtick fence holds three-backtick lines.
        let text = format!("````json\n```\n{body}\n````\n");
        assert!(parse_envelope(&text, None).is_err());
    }

    #[test]
    fn input_that_tries_to_ask_is_never_none() {
        for (text, place) in [
            ("## **QUESTIONS_NEEDED**\nQ: A?\n", None),
            ("QUESTIONS_NEEDED.\nQ: A?\n", None),
            ("> QUESTIONS_NEEDED\n> [Goal]\n> Q: A?\n", None),
            ("- QUESTIONS_NEEDED:\n  Q: A?\n", None),
            ("\u{feff}QUESTIONS_NEEDED\nQ: A?\n", None),
            ("\u{feff}{\"questions\": [{\"question\": \"A?\"}]}", None),
            ("Notes.\nQUESTIONS_NEEDED below: Q: A?\n", Some("line 2")),
            ("Notes.\n\nQ: A?\n", Some("line 3")),
            (
                "Here {\"openQuestions\": [{\"question\": \"A?\"}]}\n",
                Some("line 1"),
            ),
        ] {
            match (parse_envelope(text, None), place) {
                (Ok(Some(env)), None) => assert_eq!(env.questions[0].question, "A?"),
                (Err(e), Some(place)) => assert!(e.0.contains(place), "{text:?}: {}", e.0),
                (other, _) => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_envelope_that_comes_first_wins() {
        let text = "QUESTIONS_NEEDED\n[Goal]\nQ: Why?\n\n```json\n{\"openQuestions\": [{\"question\": \"How?\"}]}\n```\n";
        let env = parse_envelope(text, None).unwrap().unwrap();
        assert_eq!(env.source, Source::Uwf);
        let only = parse_envelope(text, Some(Source::OpenQuestions))
            .unwrap()
            .unwrap();
        assert_eq!(only.questions[0].question, "How?");
    }

    #[test]
    fn no_envelope_is_none() {
        assert_eq!(parse_envelope("All done, nothing to ask.", None), Ok(None));
        assert_eq!(
            parse_envelope("```json\n{\"summary\": 1}\n```", None),
            Ok(None)
        );
    }
}
