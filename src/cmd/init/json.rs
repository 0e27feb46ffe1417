//! A format-preserving editor of JSON with comments (JSONC), for the configs `init` writes
//! into: every edit is a splice at the byte ranges the parser reports, so every byte `init`
//! does not own stays as written (comments, number forms such as big integers, key order,
//! duplicate keys, trailing commas, line endings). Where an object's key is written twice,
//! the last one is the one edited, as `JSON.parse` and the clients read it.
//!
//! What goes in is laid out as its surroundings are: on its own lines at the indentation of
//! its neighbours in a container written over several lines, inline (`, "key": value`) in
//! one written on a single line. Taking out an item takes the separator and the indentation
//! that came with it, so putting an entry in and taking it out again gives back the bytes
//! that were there.

use jsonc_parser::ast::Value as Ast;
use jsonc_parser::common::Ranged;
use jsonc_parser::tokens::Token;
use jsonc_parser::{CollectOptions, CommentCollectionStrategy, ParseOptions};
use serde_json::{Map, Value};

/// One step into a document: an object's key (its last occurrence) or an array's index.
#[derive(Debug, Clone, Copy)]
pub(super) enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// A JSONC document whose top level is an object.
#[derive(Debug)]
pub(super) struct Jsonc {
    text: String,
    newline: &'static str,
}

/// What a value at a path is, for refusing what `init` cannot edit.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Shape {
    Missing,
    Object,
    Array,
    /// Anything else, named as JSON names it.
    Other(&'static str),
}

/// JSON with comments and trailing commas, as VS Code and the agents' clients read it;
/// nothing looser (no single quotes, no bare keys), which a client would not read either.
fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

fn collect() -> CollectOptions {
    CollectOptions {
        comments: CommentCollectionStrategy::Off,
        tokens: true,
    }
}

/// A change of the text: the bytes in `start..end` become `with`.
struct Splice {
    start: usize,
    end: usize,
    with: String,
}

impl Jsonc {
    /// Reads `text`; an empty text (or one of comments alone) is an empty object. The error
    /// says what is wrong and where, in words for the file's owner.
    pub(super) fn parse(text: &str) -> Result<Jsonc, String> {
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let parsed = jsonc_parser::parse_to_ast(text, &collect(), &options())
            .map_err(|e| format!("it is not JSON (comments allowed) that can be read: {e}"))?;
        let text = match parsed.value {
            Some(Ast::Object(_)) => text.to_string(),
            Some(other) => {
                return Err(format!(
                    "it holds {} at the top, not a JSON object",
                    name_of(&other)
                ))
            }
            None if text.trim().is_empty() => format!("{{}}{newline}"),
            None => format!(
                "{text}{}{{}}{newline}",
                if text.ends_with('\n') { "" } else { newline }
            ),
        };
        Ok(Jsonc { text, newline })
    }

    pub(super) fn text(&self) -> &str {
        &self.text
    }

    /// True when nothing but an empty object (and white space) is left.
    pub(super) fn is_empty_object(&self) -> bool {
        let rest: String = self.text.split_whitespace().collect();
        rest == "{}"
    }

    /// The value at `path`, read as serde_json reads it (a number it cannot hold is kept as
    /// its text): for comparing, never for writing back.
    pub(super) fn get(&self, path: &[Step]) -> Option<Value> {
        let parsed = self.parsed();
        let root = parsed.value.as_ref()?;
        at(root, path).map(to_value)
    }

    pub(super) fn shape(&self, path: &[Step]) -> Shape {
        let parsed = self.parsed();
        match parsed.value.as_ref().and_then(|root| at(root, path)) {
            None => Shape::Missing,
            Some(Ast::Object(_)) => Shape::Object,
            Some(Ast::Array(_)) => Shape::Array,
            Some(other) => Shape::Other(name_of(other)),
        }
    }

    /// Sets `key` in the object at `obj` to `value`: in place when it is there (its last
    /// occurrence), else as the object's last member. No change when it already holds it.
    pub(super) fn set(&mut self, obj: &[Step], key: &str, value: &Value) {
        if self.get(&[obj, &[Step::Key(key)]].concat()).as_ref() == Some(value) {
            return;
        }
        let splice = {
            let parsed = self.parsed();
            let Some(Ast::Object(object)) = parsed.value.as_ref().and_then(|r| at(r, obj)) else {
                return;
            };
            let existing = object
                .properties
                .iter()
                .rev()
                .find(|p| p.name.as_str() == key);
            if let Some(prop) = existing {
                self.replace_splice(&prop.value, value)
            } else {
                let items: Vec<(usize, usize)> = object
                    .properties
                    .iter()
                    .map(|p| (p.range.start, p.range.end))
                    .collect();
                self.insert_splice(
                    object.range.start,
                    object.range.end,
                    &items,
                    |me, indent, pretty| {
                        format!("{}: {}", quoted(key), me.render(value, indent, pretty))
                    },
                )
            }
        };
        self.apply(vec![splice]);
    }

    /// Appends `value` to the array at `arr`.
    pub(super) fn push(&mut self, arr: &[Step], value: &Value) {
        let splice = {
            let parsed = self.parsed();
            let Some(Ast::Array(array)) = parsed.value.as_ref().and_then(|r| at(r, arr)) else {
                return;
            };
            let items: Vec<(usize, usize)> = array
                .elements
                .iter()
                .map(|e| (e.start(), e.end()))
                .collect();
            self.insert_splice(
                array.range.start,
                array.range.end,
                &items,
                |me, indent, pretty| me.render(value, indent, pretty),
            )
        };
        self.apply(vec![splice]);
    }

    /// Takes `key` (its last occurrence) out of the object at `obj`, with its separator.
    pub(super) fn remove(&mut self, obj: &[Step], key: &str) {
        let splices = {
            let parsed = self.parsed();
            let tokens = parsed.tokens.as_deref().unwrap_or_default();
            let Some(Ast::Object(object)) = parsed.value.as_ref().and_then(|r| at(r, obj)) else {
                return;
            };
            let Some(index) = object
                .properties
                .iter()
                .rposition(|p| p.name.as_str() == key)
            else {
                return;
            };
            let items: Vec<(usize, usize)> = object
                .properties
                .iter()
                .map(|p| (p.range.start, p.range.end))
                .collect();
            self.remove_splices(object.range.start, object.range.end, &items, index, tokens)
        };
        self.apply(splices);
    }

    /// Takes the element at `index` out of the array at `arr`, with its separator.
    pub(super) fn remove_at(&mut self, arr: &[Step], index: usize) {
        let splices = {
            let parsed = self.parsed();
            let tokens = parsed.tokens.as_deref().unwrap_or_default();
            let Some(Ast::Array(array)) = parsed.value.as_ref().and_then(|r| at(r, arr)) else {
                return;
            };
            if index >= array.elements.len() {
                return;
            }
            let items: Vec<(usize, usize)> = array
                .elements
                .iter()
                .map(|e| (e.start(), e.end()))
                .collect();
            self.remove_splices(array.range.start, array.range.end, &items, index, tokens)
        };
        self.apply(splices);
    }

    fn parsed(&self) -> jsonc_parser::ParseResult<'_> {
        // Every text held here parsed once, and every splice keeps it JSON.
        jsonc_parser::parse_to_ast(&self.text, &collect(), &options())
            .expect("an edited config stays readable JSON")
    }

    fn apply(&mut self, mut splices: Vec<Splice>) {
        splices.sort_by_key(|s| std::cmp::Reverse(s.start));
        for s in splices {
            self.text.replace_range(s.start..s.end, &s.with);
        }
    }

    /// The value's bytes replaced by `value`, laid out as the old one was: over several
    /// lines if it was, else on one.
    fn replace_splice(&self, old: &Ast, value: &Value) -> Splice {
        let old_text = &self.text[old.start()..old.end()];
        let indent = line_indent(&self.text, old.start()).to_string();
        Splice {
            start: old.start(),
            end: old.end(),
            with: self.render(value, &indent, old_text.contains('\n')),
        }
    }

    /// An item put last into the container at `start..end` (its brackets included), whose
    /// items span `items`; `item` renders it at an indentation, over lines or not.
    fn insert_splice(
        &self,
        start: usize,
        end: usize,
        items: &[(usize, usize)],
        item: impl Fn(&Jsonc, &str, bool) -> String,
    ) -> Splice {
        let text = &self.text;
        let nl = self.newline;
        let outer = line_indent(text, start).to_string();
        let close = end - 1;
        if let Some(&(last_start, last_end)) = items.last() {
            if text[start..end].contains('\n') {
                let indent = if starts_its_line(text, last_start) {
                    line_indent(text, last_start).to_string()
                } else {
                    format!("{outer}{}", self.unit())
                };
                let with = format!(",{nl}{indent}{}", item(self, &indent, true));
                return Splice {
                    start: last_end,
                    end: last_end,
                    with,
                };
            }
            let with = format!(", {}", item(self, "", false));
            return Splice {
                start: last_end,
                end: last_end,
                with,
            };
        }
        // Empty, where the text around it is on one line (`{"servers": {}}`): inline.
        let inside = &text[start + 1..close];
        if inside.trim().is_empty() && !self.stands_alone(start) {
            let with = item(self, "", false);
            return Splice {
                start: start + 1,
                end: close,
                with,
            };
        }
        // Empty: its inside becomes the item on a line of its own. White space there goes;
        // a comment there stays, before the item.
        let from = if inside.trim().is_empty() {
            start + 1
        } else {
            start + 1 + inside.trim_end().len()
        };
        let indent = format!("{outer}{}", self.unit());
        let with = format!("{nl}{indent}{}{nl}{outer}", item(self, &indent, true));
        Splice {
            start: from,
            end: close,
            with,
        }
    }

    /// What takes item `index` (of `items`, in the container at `start..end`) out: the
    /// separator before it (or after it, for the first) and the white space that led to it.
    fn remove_splices(
        &self,
        start: usize,
        end: usize,
        items: &[(usize, usize)],
        index: usize,
        tokens: &[jsonc_parser::tokens::TokenAndRange],
    ) -> Vec<Splice> {
        let text = &self.text;
        let (item_start, item_end) = items[index];
        let comma_between = |from: usize, to: usize| {
            tokens
                .iter()
                .find(|t| t.range.start >= from && t.range.end <= to && t.token == Token::Comma)
                .map(|t| t.range.start)
        };
        let close = end - 1;
        if index > 0 {
            let (_, prev_end) = items[index - 1];
            let comma = comma_between(prev_end, item_start).unwrap_or(prev_end);
            let lead =
                item_start - (text[..item_start].len() - text[..item_start].trim_end().len());
            let lead = lead.max(comma + 1);
            if lead == comma + 1 {
                return vec![Splice {
                    start: comma,
                    end: item_end,
                    with: String::new(),
                }];
            }
            // A comment between the separator and the item stays.
            return vec![
                Splice {
                    start: lead,
                    end: item_end,
                    with: String::new(),
                },
                Splice {
                    start: comma,
                    end: comma + 1,
                    with: String::new(),
                },
            ];
        }
        if let Some(&(next_start, _)) = items.get(1) {
            // The first of several: it, its comma and the white space after, so that the
            // next one stands where it stood.
            let comma = comma_between(item_end, next_start).unwrap_or(item_end);
            let after = &text[comma + 1..next_start];
            let to = comma + 1 + (after.len() - after.trim_start().len());
            return vec![Splice {
                start: item_start,
                end: to,
                with: String::new(),
            }];
        }
        // The only one: with a trailing comma; and the inside emptied if nothing but white
        // space is left.
        let to = comma_between(item_end, close).map_or(item_end, |c| c + 1);
        let before = &text[start + 1..item_start];
        let after = &text[to..close];
        if before.trim().is_empty() && after.trim().is_empty() {
            return vec![Splice {
                start: start + 1,
                end: close,
                with: String::new(),
            }];
        }
        vec![Splice {
            start: item_start,
            end: to,
            with: String::new(),
        }]
    }

    /// The container at `start` begins its line, or follows only its key there: the
    /// document is laid out over lines around it.
    fn stands_alone(&self, start: usize) -> bool {
        let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
        let before = self.text[line_start..start].trim();
        let key = before.strip_suffix(':').map(str::trim_end);
        before.is_empty()
            || key.is_some_and(|k| {
                k.len() >= 2 && k.starts_with('"') && k.ends_with('"') && !k.contains(['{', '['])
            })
    }

    /// The document's indentation step: that of its first indented line, else two spaces.
    fn unit(&self) -> String {
        for line in self.text.lines() {
            let indent = &line[..line.len() - line.trim_start().len()];
            if !indent.is_empty() && !line.trim().is_empty() {
                return if indent.starts_with('\t') {
                    "\t".into()
                } else {
                    indent.to_string()
                };
            }
        }
        "  ".into()
    }

    /// `value` as JSON text: over several lines (each further one starting at `indent`),
    /// or on one, as `{"a": 1, "b": [2]}`.
    fn render(&self, value: &Value, indent: &str, pretty: bool) -> String {
        if !pretty {
            return compact(value);
        }
        let unit = self.unit();
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
        serde::Serialize::serialize(value, &mut ser).expect("a JSON value serializes");
        let text = String::from_utf8(out).expect("serde_json writes UTF-8");
        text.replace('\n', &format!("{}{indent}", self.newline))
    }
}

/// The node at `path` under `node`.
fn at<'b, 'a>(node: &'b Ast<'a>, path: &[Step]) -> Option<&'b Ast<'a>> {
    let Some((step, rest)) = path.split_first() else {
        return Some(node);
    };
    let next = match (step, node) {
        (Step::Key(key), Ast::Object(o)) => {
            &o.properties
                .iter()
                .rev()
                .find(|p| p.name.as_str() == *key)?
                .value
        }
        (Step::Index(i), Ast::Array(a)) => a.elements.get(*i)?,
        _ => return None,
    };
    at(next, rest)
}

fn to_value(node: &Ast) -> Value {
    match node {
        Ast::StringLit(s) => Value::String(s.value.to_string()),
        Ast::NumberLit(n) => {
            serde_json::from_str(n.value).unwrap_or_else(|_| Value::String(n.value.to_string()))
        }
        Ast::BooleanLit(b) => Value::Bool(b.value),
        Ast::NullKeyword(_) => Value::Null,
        Ast::Array(a) => Value::Array(a.elements.iter().map(to_value).collect()),
        Ast::Object(o) => {
            let mut map = Map::new();
            for p in &o.properties {
                map.insert(p.name.as_str().to_string(), to_value(&p.value));
            }
            Value::Object(map)
        }
    }
}

fn name_of(node: &Ast) -> &'static str {
    match node {
        Ast::StringLit(_) => "a string",
        Ast::NumberLit(_) => "a number",
        Ast::BooleanLit(_) => "a boolean",
        Ast::NullKeyword(_) => "null",
        Ast::Array(_) => "a list",
        Ast::Object(_) => "an object",
    }
}

/// The white space that starts the line `pos` is on.
fn line_indent(text: &str, pos: usize) -> &str {
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// Nothing but white space stands before `pos` on its line.
fn starts_its_line(text: &str, pos: usize) -> bool {
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..pos].trim().is_empty()
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

/// One line, with a space after each colon and comma, as people write JSON by hand.
fn compact(value: &Value) -> String {
    match value {
        Value::Object(map) if !map.is_empty() => {
            let members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", quoted(k), compact(v)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        Value::Array(items) if !items.is_empty() => {
            let items: Vec<String> = items.iter().map(compact).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(text: &str) -> Jsonc {
        Jsonc::parse(text).unwrap()
    }

    #[test]
    fn in_and_out_again_gives_back_the_bytes() {
        for text in [
            "{}\n",
            "{\n  \"a\": 1\n}\n",
            "{\"a\": 1}",
            "{\n  // c\n  \"a\": 1, // after\n  \"b\": 2,\n}\n",
            "{\r\n\t\"a\": [1,\r\n\t\t2]\r\n}\r\n",
            "{\n  \"big\": 123456789012345678901234567890,\n  \"d\": 1,\n  \"d\": 2\n}\n",
        ] {
            let mut d = doc(text);
            d.set(
                &[],
                "questions",
                &json!({"command": "questions", "args": ["mcp"]}),
            );
            assert_ne!(d.text(), text);
            assert!(d
                .get(&[Step::Key("questions"), Step::Key("args")])
                .is_some());
            d.remove(&[], "questions");
            assert_eq!(d.text(), text, "{text:?}");
        }
    }

    #[test]
    fn arrays_take_and_give_back_elements() {
        for text in ["[]", "[1]", "[\n    1\n  ]", "[1, 2,]"] {
            let whole = format!("{{\"l\": {text}}}");
            let mut d = doc(&whole);
            let n = d.get(&[Step::Key("l")]).unwrap().as_array().unwrap().len();
            d.push(&[Step::Key("l")], &json!({"x": [1]}));
            d.remove_at(&[Step::Key("l")], n);
            assert_eq!(d.text(), whole);
        }
    }

    #[test]
    fn the_last_of_a_duplicated_key_is_edited() {
        let mut d = doc("{\"a\": 1, \"a\": 2}");
        d.set(&[], "a", &json!(3));
        assert_eq!(d.text(), "{\"a\": 1, \"a\": 3}");
    }

    #[test]
    fn what_is_not_an_object_is_refused() {
        assert!(Jsonc::parse("[1]").unwrap_err().contains("a list"));
        assert!(Jsonc::parse("{'a': 1}").is_err());
        assert!(doc("  \n").is_empty_object());
    }
}
