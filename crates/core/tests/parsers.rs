//! Property tests: every parser, on arbitrary input, either parses or gives a clean error.
//! None may panic, hang, or accept what it then cannot hold.

use proptest::prelude::*;
use questions_core::formats::{self, answers, Source};
use questions_core::model::parse_ids;

/// Text built from the pieces the parsers look for, so that the search reaches their
/// deeper branches instead of stopping at "no envelope".
fn agent_output() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("QUESTIONS_NEEDED\n".to_string()),
        Just("**QUESTIONS_NEEDED**\r\n".to_string()),
        "\\[[a-zA-Z ]{0,8}\\]\n",
        "Q[0-9]?: [^\n]{0,20}\n",
        "Proposed: [^\n]{0,12}\n",
        "Required: (true|false|yes|no|maybe|)\n",
        Just("```json\n".to_string()),
        Just("```\n".to_string()),
        Just("{\"openQuestions\": [".to_string()),
        Just("{\"questions\": [".to_string()),
        "\\{\"question\": \"[a-z?]{0,6}\"(, \"options\": \\[\\{\"label\": \"[a-z]{0,3}\"\\}\\])?\\}",
        Just("]}".to_string()),
        Just(",".to_string()),
        "[^\n]{0,30}\n",
        Just("\n".to_string()),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

/// Arbitrary JSON values, nested a few levels.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[a-zA-Z0-9 ?]{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::from),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("question".to_string()),
                    Just("label".to_string()),
                    Just("options".to_string()),
                    Just("openQuestions".to_string()),
                    Just("questions".to_string()),
                    Just("answers".to_string()),
                    Just("answer".to_string()),
                    Just("answered".to_string()),
                    Just("multiSelect".to_string()),
                    Just("skip".to_string()),
                    "[0-9]{1,3}",
                    "[a-z]{1,6}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn check_envelope(text: &str) {
    for only in [
        None,
        Some(Source::Uwf),
        Some(Source::OpenQuestions),
        Some(Source::AskUser),
    ] {
        match formats::parse_envelope(text, only) {
            Ok(Some(env)) => {
                assert!(!env.questions.is_empty());
                for q in env.questions {
                    assert!(
                        !q.question.trim().is_empty(),
                        "an empty question was accepted from {text:?}"
                    );
                }
            }
            Ok(None) => {}
            Err(e) => assert!(!e.0.is_empty()),
        }
    }
}

/// Every string of a JSON value, its keys included, as given and trimmed.
fn strings_in(value: &serde_json::Value, out: &mut std::collections::HashSet<String>) {
    fn add(s: &str, out: &mut std::collections::HashSet<String>) {
        out.insert(s.to_string());
        out.insert(s.trim().to_string());
    }
    match value {
        serde_json::Value::String(s) => add(s, out),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings_in(v, out)),
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                add(k, out);
                strings_in(v, out);
            }
        }
        _ => {}
    }
}

/// Every whole number of a JSON value, and every key that reads as one.
fn numbers_in(value: &serde_json::Value, out: &mut Vec<i64>) {
    match value {
        serde_json::Value::Number(n) => out.extend(n.as_i64()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| numbers_in(v, out)),
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                out.extend(k.trim().parse::<i64>().ok());
                numbers_in(v, out);
            }
        }
        _ => {}
    }
}

/// `answers::parse` either fails with a message, or returns replies made only of what the
/// input holds: each question's key (its id, text or header), each answer's text and
/// labels and each reason are the input's own, an id is positive, and the format is the
/// one asked for. A cancellation comes only from pi's result.
fn check_answers(text: &str, format: Option<answers::ImportFormat>) {
    use answers::{Answers, Key, Reply};
    let parsed = match answers::parse(text, format) {
        Err(e) => {
            assert!(
                !e.0.trim().is_empty(),
                "an error without a message for {text:?}"
            );
            return;
        }
        Ok(parsed) => parsed,
    };
    // What parsed is JSON without a repeated key: serde_json reads it the same.
    let value: serde_json::Value =
        serde_json::from_str(text.trim_start_matches('\u{feff}')).expect("it parsed as JSON");
    let mut strings = std::collections::HashSet::new();
    strings_in(&value, &mut strings);
    let mut numbers = Vec::new();
    numbers_in(&value, &mut numbers);
    let from_input = |s: &str, what: &str| {
        assert!(strings.contains(s), "{what} {s:?} is not in {text:?}");
    };
    let replies = match parsed {
        Answers::Cancelled => {
            assert!(
                matches!(format, None | Some(answers::ImportFormat::PiResult)),
                "{format:?} cancelled {text:?}"
            );
            return;
        }
        Answers::Replies(got, replies) => {
            if let Some(asked) = format {
                assert_eq!(got, asked, "{text:?}");
            }
            replies
        }
    };
    for imported in replies {
        assert!(
            !imported.path.is_empty(),
            "a reply without a place in {text:?}"
        );
        match &imported.key {
            Key::Id(id) => {
                assert!(*id > 0, "id {id} from {text:?}");
                assert!(numbers.contains(id), "id {id} is not in {text:?}");
            }
            Key::Text(key) | Key::Header(key) => from_input(key, "the key"),
        }
        match &imported.reply {
            Reply::Answer {
                text: answer,
                select,
            } => {
                if let Some(answer) = answer {
                    from_input(answer, "the answer");
                }
                for label in select {
                    from_input(label, "the label");
                }
            }
            Reply::Skip { reason } => {
                if let Some(reason) = reason {
                    from_input(reason, "the reason");
                }
            }
            Reply::Decline { reason } if reason == "cancelled in pi" => {}
            Reply::Decline { reason } => from_input(reason, "the reason"),
            Reply::Pending => {}
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn envelopes_from_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        check_envelope(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn envelopes_from_agent_like_text(text in agent_output()) {
        check_envelope(&text);
    }

    #[test]
    fn envelopes_from_arbitrary_json(value in json_value()) {
        let text = value.to_string();
        check_envelope(&text);
        check_envelope(&format!("Here you go:\n```json\n{text}\n```\n"));
        check_envelope(&format!("{{\"openQuestions\": {text}}}"));
        check_envelope(&format!("{{\"questions\": {text}}}"));
    }

    #[test]
    fn answer_shapes_from_arbitrary_json(value in json_value()) {
        let text = value.to_string();
        for format in [None, Some(answers::ImportFormat::AskUser), Some(answers::ImportFormat::Vscode),
                       Some(answers::ImportFormat::PiResult), Some(answers::ImportFormat::PiPending),
                       Some(answers::ImportFormat::Map)] {
            check_answers(&text, format);
            check_answers(&format!("{{\"answers\": {text}}}"), format);
        }
    }

    #[test]
    fn answer_shapes_from_arbitrary_text(text in "\\PC{0,200}") {
        check_answers(&text, None);
    }

    #[test]
    fn id_lists(text in "[0-9, a-z-]{0,30}") {
        if let Ok(ids) = parse_ids(&text) {
            prop_assert!(!ids.is_empty());
            prop_assert!(ids.iter().all(|id| *id > 0));
        }
    }
}
