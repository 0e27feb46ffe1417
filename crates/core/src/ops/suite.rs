//! The operations' suite: what each operation promises a front end, run on each engine
//! through the `Ledger` a front end holds (the `Tx` suite holds the SQL below it to one
//! behaviour). Each test runs twice: `<name>::sqlite` on a file, and
//! `<name>::postgres_only` on a new database of the server `QUESTIONS_TEST_PG` names,
//! which a pass without one skips by name.

use std::time::Duration;

use super::*;
use crate::error::{ErrorCode, Refusal};
use crate::model::{AnswerInput, Approval, Ballot, Draft, Gate, Source, Verdict};

/// A new, empty ledger at a location of its own on each engine; the folder (SQLite) lives
/// as long as the test.
fn sqlite() -> (Ledger, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let ledger = Ledger::new(Location::File {
        path,
        make_folder: false,
    });
    (ledger, dir)
}

#[cfg(feature = "postgres")]
fn postgres() -> (Ledger, tempfile::TempDir) {
    let url = crate::store::tx_suite::new_postgres_database().unwrap_or_else(|| {
        panic!(
            "{} runs on the PostgreSQL server QUESTIONS_TEST_PG names (scripts/with-postgres \
             sets it); without one, the pass must skip it by name (`cargo test -- --skip \
             postgres_only`)",
            std::thread::current().name().unwrap_or("this test")
        )
    });
    (
        Ledger::new(Location::Postgres { url }),
        tempfile::tempdir().unwrap(),
    )
}

macro_rules! on_every_engine {
    ($name:ident, $test:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn sqlite() {
                let (mut ledger, _dir) = super::sqlite();
                ($test)(&mut ledger);
            }

            #[cfg(feature = "postgres")]
            #[test]
            fn postgres_only() {
                let (mut ledger, _dir) = super::postgres();
                ($test)(&mut ledger);
            }
        }
    };
}

fn person(name: &str) -> Caller {
    Caller {
        by: Some(name.to_string()),
        channel: crate::model::Channel::Web,
    }
}

fn new(stage: &str, text: &str, proposed: Option<&str>) -> NewQuestion {
    NewQuestion::build(Draft {
        stage: stage.into(),
        group: None,
        question: text.into(),
        proposed: proposed.map(str::to_string),
        required: true,
        header: None,
        context: None,
        options: Vec::new(),
        multi_select: false,
        allow_freeform: true,
        source: Source::Cli,
        approval: None,
        urgent: false,
    })
    .unwrap()
}

fn logged(ledger: &mut Ledger, stage: &str, text: &str) -> i64 {
    log(ledger, &new(stage, text, None), false)
        .unwrap()
        .question_id
}

fn answer(text: &str) -> Act {
    Act::Answer(AnswerInput {
        text: Some(text.into()),
        select: Vec::new(),
    })
}

fn gate(ledger: &mut Ledger, stage: &str) -> Gate {
    check(
        ledger,
        &CheckRequest {
            stage: Some(stage.into()),
            ids: None,
            strict: false,
            wait: Wait::No,
            allow_unknown_stage: false,
            ledger: None,
        },
    )
    .unwrap()
    .gate
}

on_every_engine!(the_same_question_logged_twice_is_one, |l: &mut Ledger| {
    let first = log(l, &new("s", "Which DB?", None), false).unwrap();
    let again = log(l, &new("s", "Which DB?", None), false).unwrap();
    assert_eq!(first.question_id, again.question_id);
    let inputs = [
        new("s", "Which DB?", None),
        new("s", "Port?", None),
        new("s", "Which DB?", None),
    ];
    let all = log_all(l, &inputs).unwrap();
    assert_eq!(all.question_ids.len(), 2);
    assert_eq!(all.created_ids.len(), 1, "only the new one is created");
    let port = all.created_ids[0];
    assert_eq!(
        all.per_input,
        vec![first.question_id, port, first.question_id],
        "one id per input, in its order"
    );
});

on_every_engine!(a_persons_answer_opens_the_gate_once, |l: &mut Ledger| {
    let id = logged(l, "g", "Ship it?");
    assert_eq!(gate(l, "g"), Gate::Fail);
    let done = change(l, &person("dana"), &PersonsChange::of(id, answer("yes"))).unwrap();
    assert_eq!(done.question.state.answered_by.as_deref(), Some("dana"));
    assert_eq!(gate(l, "g"), Gate::Pass);
    // Answering again without force is refused, with the question as it stands.
    let refused = change(l, &person("eve"), &PersonsChange::of(id, answer("no"))).unwrap_err();
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert_eq!(refused.refusal, Some(Refusal::AlreadyAnswered { id }));
    let on_record = refused
        .question_on_record()
        .expect("the refusal carries the question");
    assert_eq!(on_record.state.answer.as_deref(), Some("yes"));
    assert_eq!(
        l_answer(l, id),
        Some("yes".into()),
        "nothing was overwritten"
    );
});

fn l_answer(l: &mut Ledger, id: i64) -> Option<String> {
    named(l, None, Some(&[id])).unwrap().remove(0).state.answer
}

on_every_engine!(
    a_change_outside_the_stage_served_is_not_found,
    |l: &mut Ledger| {
        let id = logged(l, "other", "Elsewhere?");
        let req = PersonsChange {
            within: Some("mine".into()),
            ..PersonsChange::of(id, answer("x"))
        };
        let err = change(l, &person("dana"), &req).unwrap_err();
        assert_eq!(err.code, ErrorCode::NotFound);
        assert!(err.message.contains("stage 'mine'"), "{}", err.message);
        assert_eq!(l_answer(l, id), None);
    }
);

on_every_engine!(
    a_change_of_a_question_not_as_shown_is_refused,
    |l: &mut Ledger| {
        let id = logged(l, "s", "Which region?");
        let req = PersonsChange {
            shown: Shown::one(None, id, Some("not-its-fingerprint".into())),
            ..PersonsChange::of(id, answer("eu"))
        };
        let err = change(l, &person("dana"), &req).unwrap_err();
        assert_eq!(err.refusal, Some(Refusal::NotAsShown { id }));
        assert!(err.on_record.is_some());
        assert_eq!(l_answer(l, id), None);
    }
);

on_every_engine!(
    a_decline_needs_a_reason_and_holds_the_gate,
    |l: &mut Ledger| {
        let id = logged(l, "s", "Which one?");
        let err = change(
            l,
            &person("dana"),
            &PersonsChange::of(id, Act::Decline("  ".into())),
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidAnswer);
        assert_eq!(err.refusal, Some(Refusal::NeedsReason { id }));
        change(
            l,
            &person("dana"),
            &PersonsChange::of(id, Act::Decline("which one of what?".into())),
        )
        .unwrap();
        assert_eq!(gate(l, "s"), Gate::Fail, "a decline holds the gate");
    }
);

on_every_engine!(
    accepting_the_proposal_records_it_as_the_persons,
    |l: &mut Ledger| {
        let id = log(l, &new("s", "Port?", Some("5432")), false)
            .unwrap()
            .question_id;
        let done = change(
            l,
            &person("dana"),
            &PersonsChange::of(id, Act::AcceptProposed),
        )
        .unwrap();
        assert_eq!(done.question.state.answer.as_deref(), Some("5432"));
        assert_eq!(done.question.state.answered_by.as_deref(), Some("dana"));
        let bare = logged(l, "s", "No proposal?");
        let err = change(
            l,
            &person("dana"),
            &PersonsChange::of(bare, Act::AcceptProposed),
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidAnswer);
    }
);

on_every_engine!(an_empty_answer_names_no_flag, |l: &mut Ledger| {
    let id = logged(l, "s", "Why?");
    let err = change(l, &person("dana"), &PersonsChange::of(id, answer("  "))).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidAnswer);
    assert!(!err.message.contains("--"), "{}", err.message);
    assert!(!err.message.contains("questions skip"), "{}", err.message);
    assert!(err.cli_message().contains("questions skip --id"));
});

on_every_engine!(
    a_vote_by_the_requester_is_refused_and_recorded,
    |l: &mut Ledger| {
        let approval = Approval::new(&["ann".into(), "bob".into()], 1, Some("rex"), "rex").unwrap();
        let mut q = new("deploy", "Deploy build 42?", None);
        q.approval = Some(approval);
        let id = log(l, &q, false).unwrap().question_id;
        let vote = |who: &str| {
            PersonsChange::of(
                id,
                Act::Vote(
                    Identity::Person(who.into()),
                    Ballot {
                        verdict: Verdict::Approve,
                        comment: None,
                    },
                ),
            )
        };
        let err = change(l, &person("x"), &vote("rex")).unwrap_err();
        assert_eq!(err.code, ErrorCode::Forbidden);
        assert_eq!(gate(l, "deploy"), Gate::Fail);
        let refused = history(l, &EventFilter::Question(id)).unwrap();
        assert!(
            refused
                .events
                .iter()
                .any(|e| e.event == crate::model::EventKind::Refused),
            "the refusal is in the history"
        );
        change(l, &person("x"), &vote("ann")).unwrap();
        assert_eq!(gate(l, "deploy"), Gate::Pass);
    }
);

on_every_engine!(a_wait_for_questions_ends_at_a_decline, |l: &mut Ledger| {
    let id = logged(l, "s", "Which?");
    change(
        l,
        &person("dana"),
        &PersonsChange::of(id, Act::Decline("unclear".into())),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let now = wait_settled(l, &[id], Duration::from_secs(30)).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(now[0].state.status, crate::model::Status::Declined);
});

on_every_engine!(a_task_ends_once_with_its_result, |l: &mut Ledger| {
    let id = logged(l, "s", "Task?");
    let started = start_task(
        l,
        NewTask {
            id: "t1".into(),
            procedure: Procedure::WaitForAnswers,
            stage: Some("s".into()),
            question_ids: vec![id],
            template: serde_json::json!({"settled": false}),
            deadline: None,
        },
    )
    .unwrap();
    assert_eq!(started.status, TaskState::Working);
    let finish = |end: TaskEnd<'_>| match end {
        TaskEnd::Settled { questions, .. } => Ok(format!("settled {}", questions.len())),
        TaskEnd::Gone { .. } => Ok("gone".to_string()),
    };
    let still = look_task(l, "t1", finish).unwrap().unwrap();
    assert_eq!(still.status, TaskState::Working);
    change(l, &person("dana"), &PersonsChange::of(id, answer("done"))).unwrap();
    let done = look_task(l, "t1", finish).unwrap().unwrap();
    assert_eq!(done.status, TaskState::Completed);
    assert_eq!(done.result.as_deref(), Some("settled 1"));
    // Cancelling a finished task leaves it as it ended; an unknown one is none.
    let after = cancel_task(l, "t1").unwrap().unwrap();
    assert_eq!(after.status, TaskState::Completed);
    assert!(cancel_task(l, "nope").unwrap().is_none());
});

// The relay (§14): links, cards and the one operation that records a channel's answer.
mod relay_ops {
    use super::*;
    use crate::model::{Channel, EventKind, QuestionOption, Status};
    use crate::ops::relay::{self, Binding, FromChannel, Given, Outcome};

    fn me(name: &str) -> Identity {
        Identity::Person(name.into())
    }

    fn link(l: &mut Ledger, name: &str, id: &str) {
        relay::people_link(l, &me(name), Channel::Cli, name, id, true).unwrap();
    }

    fn with_options(stage: &str, text: &str, labels: &[&str]) -> NewQuestion {
        let mut q = new(stage, text, None);
        q.options = labels
            .iter()
            .map(|l| QuestionOption {
                label: (*l).into(),
                description: None,
                recommended: false,
            })
            .collect();
        q
    }

    /// The cards due on Telegram, each marked sent; by person.
    fn send_all(l: &mut Ledger) -> Vec<relay::Card> {
        let cards = relay::cards_to_send(l, Channel::Telegram, None).unwrap();
        for c in &cards {
            relay::card_sent(l, c.delivery.id, &format!("chat:{}", c.delivery.id)).unwrap();
        }
        cards
    }

    fn card_for<'c>(cards: &'c [relay::Card], person: &str, id: i64) -> &'c relay::Card {
        cards
            .iter()
            .find(|c| c.delivery.person == person && c.question.id == id)
            .expect("a card for that person")
    }

    fn click(l: &mut Ledger, from: &str, event: &str, button: String) -> relay::Heard {
        relay::hear(
            l,
            &FromChannel {
                channel: Channel::Telegram,
                identity: from.into(),
                event_id: event.into(),
                binding: Binding::Button(button),
                given: Given::Text(String::new()),
                position: Some(format!("{event}+1")),
            },
        )
        .unwrap()
    }

    fn button(l: &mut Ledger, delivery: i64, value: &str) -> String {
        let key = relay::button_key(l).unwrap();
        format!("{delivery}:{value}:{}", key.sign(delivery, value))
    }

    fn press(l: &mut Ledger, from: &str, event: &str, delivery: i64, value: &str) -> relay::Heard {
        let b = button(l, delivery, value);
        click(l, from, event, b)
    }

    on_every_engine!(links_are_guarded_like_a_group_change, |l: &mut Ledger| {
        let err = relay::people_link(l, &me("eve"), Channel::Cli, "ann", "telegram:42", true)
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::Forbidden, "{}", err.message);
        let done =
            relay::people_link(l, &me("ann"), Channel::Cli, "ann", "telegram:42", true).unwrap();
        assert!(done.changed);
        // One identity is one person.
        let err = relay::people_link(l, &me("bob"), Channel::Cli, "bob", "telegram:42", true)
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::Conflict);
        // Only the ledger's owner names the people admins: never a person a channel
        // vouches for, whoever comes first.
        let mut people = |who: &Identity| {
            group(
                l,
                who,
                Channel::Cli,
                relay::PEOPLE_ADMINS,
                &GroupChange::Create {
                    admins: vec!["root".into()],
                },
                &[],
            )
        };
        let err = people(&me("mallory")).unwrap_err();
        assert_eq!(err.code, ErrorCode::Forbidden, "{}", err.message);
        // The owner (this process, which made the file; the role that made the tables)
        // does; a people admin links anyone.
        people(&Identity::Local("root".into())).unwrap();
        relay::people_link(
            l,
            &me("root"),
            Channel::Cli,
            "bob",
            "EMAIL:Bob@Example.COM",
            true,
        )
        .unwrap();
        let listed = relay::people_list(l).unwrap();
        assert_eq!(
            listed
                .links
                .iter()
                .map(|k| (k.person.as_str(), k.identity.as_str()))
                .collect::<Vec<_>>(),
            vec![("ann", "telegram:42"), ("bob", "email:bob@example.com")]
        );
        assert!(relay::channel_identity("telegram:ann").is_err());
        assert!(relay::channel_identity("slack:T1").is_err());
        relay::people_link(l, &me("ann"), Channel::Cli, "ann", "telegram:42", false).unwrap();
        let people: Vec<_> = history(l, &EventFilter::Question(0))
            .map(|h| h.events)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e.event == EventKind::People)
            .collect();
        assert_eq!(
            people.len(),
            3,
            "two links and an unlink, each in the history"
        );
        assert_eq!(people[2].answered_by.as_deref(), Some("ann"));
        assert_eq!(people[1].answered_by.as_deref(), Some("root"));
    });

    on_every_engine!(
        a_click_is_recorded_once_by_the_linked_person,
        |l: &mut Ledger| {
            link(l, "ann", "telegram:1");
            let id = log(
                l,
                &with_options("s", "Which DB?", &["PostgreSQL", "SQLite"]),
                false,
            )
            .unwrap()
            .question_id;
            let cards = send_all(l);
            assert_eq!(cards.len(), 1);
            assert!(
                send_all(l).is_empty(),
                "a card is made once per person and question"
            );
            let d = card_for(&cards, "ann", id).delivery.id;
            let b = button(l, d, "o2");
            let heard = click(l, "telegram:1", "update:7", b.clone());
            assert_eq!(heard.outcome, Outcome::Recorded, "{}", heard.reply);
            let q = heard.question.unwrap();
            assert_eq!(q.state.answer.as_deref(), Some("SQLite"));
            assert_eq!(q.state.answered_by.as_deref(), Some("ann"));
            assert_eq!(q.state.channel, Some(Channel::Telegram));
            let answered = history(l, &EventFilter::Question(id)).unwrap().events;
            let last = answered.last().unwrap();
            assert_eq!(last.event, EventKind::Answered);
            let detail = last.detail.as_ref().unwrap();
            assert_eq!(detail["identity"], "telegram:1");
            assert_eq!(detail["event"], "update:7");
            let count = answered.len();
            // The same update again (a redelivery), then a second click.
            let again = click(l, "telegram:1", "update:7", b.clone());
            assert_eq!(again.outcome, Outcome::Repeated);
            assert_eq!(again.reply, "already answered by ann");
            let second = press(l, "telegram:1", "update:8", d, "o1");
            assert_eq!(second.outcome, Outcome::Settled);
            assert!(second
                .reply
                .starts_with("already answered by ann via telegram"));
            assert_eq!(
                history(l, &EventFilter::Question(id)).unwrap().events.len(),
                count
            );
            assert_eq!(l_answer(l, id).as_deref(), Some("SQLite"));
            assert_eq!(
                relay::position(l, Channel::Telegram).unwrap().as_deref(),
                Some("update:8+1")
            );
            // Answered: the card closes, saying by whom and through what.
            let closing = relay::cards_to_close(l, Channel::Telegram).unwrap();
            assert_eq!(closing.len(), 1);
            assert!(closing[0].words.contains("answered by ann via telegram"));
            relay::card_closed(l, d).unwrap();
            assert!(relay::cards_to_close(l, Channel::Telegram)
                .unwrap()
                .is_empty());
        }
    );

    on_every_engine!(
        strangers_and_forged_buttons_record_nothing,
        |l: &mut Ledger| {
            link(l, "ann", "telegram:1");
            link(l, "bob", "telegram:2");
            let id = log(l, &with_options("s", "Ship?", &["yes", "no"]), false)
                .unwrap()
                .question_id;
            let cards = send_all(l);
            assert_eq!(cards.len(), 2);
            let d = card_for(&cards, "ann", id).delivery.id;
            let good = button(l, d, "o1");
            let (_, _, signature) = relay::split_button(&good).unwrap();
            let tries = [
                ("telegram:99", good.clone(), "not linked"),
                ("telegram:2", good.clone(), "sent to ann"),
                (
                    "telegram:1",
                    format!("{d}:o2:{signature}"),
                    "not one this relay signed",
                ),
                (
                    "telegram:1",
                    format!("{d}:o1:{}", "0".repeat(20)),
                    "not one this relay signed",
                ),
                (
                    "telegram:1",
                    format!("{}:o1:{signature}", d + 1),
                    "not one this relay signed",
                ),
                (
                    "telegram:1",
                    "garbage".to_string(),
                    "not one of this ledger's cards",
                ),
            ];
            for (n, (from, value, why)) in tries.iter().enumerate() {
                let heard = click(l, from, &format!("update:{n}"), value.clone());
                assert_eq!(heard.outcome, Outcome::Refused, "{from} {value}");
                assert!(heard.reply.contains(why), "{}", heard.reply);
            }
            assert_eq!(gate(l, "s"), Gate::Fail, "nothing was recorded");
            let refused = history(l, &EventFilter::Question(0))
                .map(|h| h.events)
                .unwrap_or_default()
                .into_iter()
                .chain(history(l, &EventFilter::Question(id)).unwrap().events)
                .filter(|e| e.event == EventKind::Refused)
                .count();
            assert_eq!(refused, tries.len(), "each refusal is in the history");
        }
    );

    on_every_engine!(
        a_card_of_a_question_cleared_and_logged_again_answers_nothing,
        |l: &mut Ledger| {
            link(l, "ann", "telegram:1");
            let id = log(l, &with_options("s", "Ship?", &["yes", "no"]), false)
                .unwrap()
                .question_id;
            let d = send_all(l)[0].delivery.id;
            clear(l, &person("ops"), "s", None).unwrap();
            let again = log(l, &with_options("s", "Ship?", &["yes", "no"]), false)
                .unwrap()
                .question_id;
            assert_ne!(id, again);
            let heard = press(l, "telegram:1", "update:1", d, "o1");
            assert_eq!(heard.outcome, Outcome::Refused);
            assert!(
                heard.reply.contains("no longer in the ledger"),
                "{}",
                heard.reply
            );
            assert_eq!(gate(l, "s"), Gate::Fail);
            // The cleared card closes; the new question gets a card of its own.
            let closing = relay::cards_to_close(l, Channel::Telegram).unwrap();
            assert_eq!(closing.len(), 1);
            assert!(closing[0].words.contains("cleared"));
            let cards = send_all(l);
            assert_eq!(cards.len(), 1);
            assert_eq!(cards[0].question.id, again);
        }
    );

    on_every_engine!(
        votes_from_a_channel_follow_the_approval_rules,
        |l: &mut Ledger| {
            link(l, "ann", "telegram:1");
            link(l, "rex", "telegram:9");
            group(
                l,
                &me("root"),
                Channel::Cli,
                "release",
                &GroupChange::Create {
                    admins: vec!["root".into()],
                },
                &["ann".into()],
            )
            .unwrap();
            let approval = Approval::new(
                &["group:release".into(), "rex".into()],
                1,
                Some("rex"),
                "rex",
            )
            .unwrap();
            let mut q = new("deploy", "Deploy build 42?", None);
            q.approval = Some(approval);
            let id = log(l, &q, false).unwrap().question_id;
            let cards = send_all(l);
            assert_eq!(cards.len(), 1, "the requester gets no card");
            let d = card_for(&cards, "ann", id).delivery.id;
            // The requester clicking Approve on ann's card: refused, and recorded.
            let heard = press(l, "telegram:9", "update:1", d, "a");
            assert_eq!(heard.outcome, Outcome::Refused);
            // ann leaves the group: her card no longer carries a vote.
            group(
                l,
                &me("root"),
                Channel::Cli,
                "release",
                &GroupChange::Remove,
                &["ann".into()],
            )
            .unwrap();
            let heard = press(l, "telegram:1", "update:2", d, "a");
            assert_eq!(heard.outcome, Outcome::Refused, "{}", heard.reply);
            assert_eq!(gate(l, "deploy"), Gate::Fail);
            let refused: Vec<_> = history(l, &EventFilter::Question(id))
                .unwrap()
                .events
                .into_iter()
                .filter(|e| e.event == EventKind::Refused)
                .collect();
            assert_eq!(refused.len(), 2);
            assert_eq!(refused[1].answered_by.as_deref(), Some("ann"));
            assert_eq!(refused[1].detail.as_ref().unwrap()["event"], "update:2");
            // Back in the group, her Approve settles it, through Telegram.
            group(
                l,
                &me("root"),
                Channel::Cli,
                "release",
                &GroupChange::Add,
                &["ann".into()],
            )
            .unwrap();
            let heard = press(l, "telegram:1", "update:3", d, "a");
            assert_eq!(heard.outcome, Outcome::Recorded, "{}", heard.reply);
            assert_eq!(gate(l, "deploy"), Gate::Pass);
            assert_eq!(heard.question.unwrap().state.status, Status::Answered);
        }
    );

    on_every_engine!(
        typed_text_is_verbatim_unless_exactly_an_option,
        |l: &mut Ledger| {
            link(l, "ann", "telegram:1");
            let a = log(
                l,
                &with_options("s", "Which DB?", &["PostgreSQL", "SQLite"]),
                false,
            )
            .unwrap()
            .question_id;
            let b = log(l, &with_options("s", "Port?", &["80", "8080"]), false)
                .unwrap()
                .question_id;
            let cards = send_all(l);
            let reply = |l: &mut Ledger, id: i64, event: &str, text: &str| {
                let d = card_for(&cards, "ann", id).delivery.clone();
                relay::hear(
                    l,
                    &FromChannel {
                        channel: Channel::Telegram,
                        identity: "telegram:1".into(),
                        event_id: event.into(),
                        binding: Binding::Reply(d.message_ref.unwrap_or(format!("chat:{}", d.id))),
                        given: Given::Text(text.into()),
                        position: None,
                    },
                )
                .unwrap()
            };
            let heard = reply(l, a, "update:1", "sqlite, I think");
            assert_eq!(heard.outcome, Outcome::Recorded, "{}", heard.reply);
            assert_eq!(l_answer(l, a).as_deref(), Some("sqlite, I think"));
            let heard = reply(l, b, "update:2", "2");
            assert_eq!(heard.outcome, Outcome::Recorded, "{}", heard.reply);
            assert_eq!(
                l_answer(l, b).as_deref(),
                Some("8080"),
                "2 is option 2's number"
            );
            // A message that is no reply to a card records nothing.
            let loose = relay::hear(
                l,
                &FromChannel {
                    channel: Channel::Telegram,
                    identity: "telegram:1".into(),
                    event_id: "update:3".into(),
                    binding: Binding::None,
                    given: Given::Text("yes".into()),
                    position: None,
                },
            )
            .unwrap();
            assert_eq!(loose.outcome, Outcome::Refused);
        }
    );

    on_every_engine!(a_pairing_code_links_once, |l: &mut Ledger| {
        let err = relay::pairing_code(l, &me("eve"), Channel::Cli, "telegram", "ann").unwrap_err();
        assert_eq!(err.code, ErrorCode::Forbidden);
        let code = relay::pairing_code(l, &me("ann"), Channel::Cli, "telegram", "ann").unwrap();
        assert_eq!(code.send, format!("/start {}", code.code));
        let start = |l: &mut Ledger, from: &str, event: &str, code: &str| {
            relay::redeem(
                l,
                &FromChannel {
                    channel: Channel::Telegram,
                    identity: from.into(),
                    event_id: event.into(),
                    binding: Binding::None,
                    given: Given::Text(String::new()),
                    position: None,
                },
                code,
            )
            .unwrap()
        };
        assert_eq!(
            start(l, "telegram:5", "update:1", "WRONG").outcome,
            Outcome::Refused
        );
        assert_eq!(
            start(l, "telegram:5", "update:2", &code.code).outcome,
            Outcome::Recorded
        );
        assert_eq!(
            start(l, "telegram:5", "update:2", &code.code).outcome,
            Outcome::Repeated
        );
        assert_eq!(
            start(l, "telegram:6", "update:3", &code.code).outcome,
            Outcome::Refused,
            "a code is used once"
        );
        let links = relay::people_list(l).unwrap().links;
        assert_eq!(links.len(), 1);
        assert_eq!(links[0].identity, "telegram:5");
        assert_eq!(links[0].person, "ann");
    });

    on_every_engine!(
        a_pairing_code_is_spent_only_by_the_link_it_makes,
        |l: &mut Ledger| {
            let code = relay::pairing_code(l, &me("ann"), Channel::Cli, "telegram", "ann").unwrap();
            let bob = relay::people_link(l, &me("bob"), Channel::Cli, "bob", "telegram:0007", true)
                .unwrap();
            assert_eq!(
                bob.identity, "telegram:7",
                "numeric ids as Telegram writes them"
            );
            let start = |l: &mut Ledger, from: &str, event: &str| {
                relay::redeem(
                    l,
                    &FromChannel {
                        channel: Channel::Telegram,
                        identity: from.into(),
                        event_id: event.into(),
                        binding: Binding::None,
                        given: Given::Text(String::new()),
                        position: None,
                    },
                    &code.code,
                )
                .unwrap()
            };
            // Tried from bob's account: refused, and the code still ann's.
            assert_eq!(start(l, "telegram:7", "update:1").outcome, Outcome::Refused);
            assert_eq!(
                start(l, "telegram:5", "update:2").outcome,
                Outcome::Recorded
            );
            assert_eq!(
                start(l, "telegram:6", "update:3").outcome,
                Outcome::Refused,
                "spent by the link it made"
            );
        }
    );

    on_every_engine!(one_relay_holds_a_channel, |l: &mut Ledger| {
        let minute = Duration::from_mins(1);
        let take = |l: &mut Ledger, who: &str, gone: Option<&str>| {
            relay::lease(l, Channel::Telegram, who, minute, gone).unwrap()
        };
        assert!(take(l, "a", None).is_none());
        assert!(take(l, "a", None).is_none(), "the holder renews it");
        let held = take(l, "b", None);
        assert_eq!(held.map(|(who, _)| who).as_deref(), Some("a"));
        assert!(
            take(l, "b", Some("x")).is_some(),
            "only the holder named gone"
        );
        relay::release(l, Channel::Telegram, "a").unwrap();
        assert!(take(l, "b", None).is_none());
        assert!(
            take(l, "c", Some("b")).is_none(),
            "a holder known gone is taken over"
        );
    });
}

// Routing policy (§14a): set, replaced, listed and unset, each change an event.
mod routing_ops {
    use super::*;
    use crate::model::{Channel, EventKind};
    use crate::ops::routing;

    fn root() -> Principal {
        Principal::Direct(Caller {
            by: Some("root".into()),
            channel: Channel::Cli,
        })
    }

    fn policy(l: &mut Ledger, req: PolicyRequest) -> Result<PolicyReply> {
        match call(l, &root(), Request::Policy(req))? {
            Reply::Policy(reply) => Ok(reply),
            other => panic!("a policy request replies Policy, not {other:?}"),
        }
    }

    fn set(l: &mut Ledger, set: PolicySet) -> Result<PolicyChanged> {
        match policy(l, PolicyRequest::Set(set))? {
            PolicyReply::Set(changed) => Ok(*changed),
            other => panic!("set replies Set, not {other:?}"),
        }
    }

    fn listed(l: &mut Ledger) -> Vec<Policy> {
        match policy(l, PolicyRequest::List).unwrap() {
            PolicyReply::Listed(all) => all.policies,
            other => panic!("list replies Listed, not {other:?}"),
        }
    }

    fn policy_events(l: &mut Ledger) -> Vec<serde_json::Value> {
        history(l, &EventFilter::Since { seq: 0, limit: 100 })
            .unwrap()
            .events
            .into_iter()
            .filter(|e| e.event == EventKind::Policy)
            .map(|e| {
                assert_eq!(e.question_id, 0);
                assert_eq!(e.answered_by.as_deref(), Some("root"));
                e.detail.unwrap()
            })
            .collect()
    }

    on_every_engine!(
        a_policy_is_set_replaced_and_unset_in_the_history,
        |l: &mut Ledger| {
            assert!(listed(l).is_empty(), "a new ledger routes nothing");
            let deploy = PolicySet {
                stage: " deploy-* ".into(),
                to: vec!["alice".into(), " bob".into(), "alice".into()],
                remind_after: Some(Duration::from_mins(90)),
                ..PolicySet::default()
            };
            let made = set(l, deploy.clone()).unwrap();
            assert!(made.changed && made.replaced.is_none());
            assert_eq!(made.policy.stage, "deploy-*");
            assert_eq!(made.policy.to, ["alice", "bob"], "trimmed, each once");
            assert_eq!(made.policy.remind_after.as_deref(), Some("1h30m"));
            assert_eq!(
                made.policy.remind_max,
                Some(3),
                "three reminders unless told"
            );
            assert_eq!(made.policy.escalate_after, None);
            // The same again changes nothing and records nothing.
            let again = set(l, deploy.clone()).unwrap();
            assert!(!again.changed);
            assert_eq!(policy_events(l).len(), 1);
            // Another replaces it whole.
            group(
                l,
                &Identity::Person("root".into()),
                Channel::Cli,
                "oncall",
                &GroupChange::Create {
                    admins: vec!["root".into()],
                },
                &["carol".into()],
            )
            .unwrap();
            let replaced = set(
                l,
                PolicySet {
                    stage: "deploy-*".into(),
                    escalate_after: Some(Duration::from_hours(2)),
                    escalate_to: vec!["group:oncall".into()],
                    ..PolicySet::default()
                },
            )
            .unwrap();
            assert!(replaced.changed);
            assert_eq!(replaced.replaced.unwrap().to, ["alice", "bob"]);
            assert!(replaced.policy.to.is_empty() && replaced.policy.remind_after.is_none());
            set(
                l,
                PolicySet {
                    stage: "*".into(),
                    to: vec!["dana".into()],
                    ..PolicySet::default()
                },
            )
            .unwrap();
            let all = listed(l);
            let stages: Vec<&str> = all.iter().map(|p| p.stage.as_str()).collect();
            assert_eq!(stages, ["*", "deploy-*"]);
            assert_eq!(policy_for(&all, "deploy-prod").unwrap().stage, "deploy-*");
            assert_eq!(policy_for(&all, "docs").unwrap().stage, "*");
            let PolicyReply::Unset(gone) = policy(
                l,
                PolicyRequest::Unset {
                    stage: "deploy-*".into(),
                },
            )
            .unwrap() else {
                panic!("unset replies Unset")
            };
            assert!(gone.unset);
            let err = policy(
                l,
                PolicyRequest::Unset {
                    stage: "deploy-*".into(),
                },
            )
            .unwrap_err();
            assert_eq!(err.code, ErrorCode::NotFound);
            assert_eq!(policy_for(&listed(l), "deploy-prod").unwrap().stage, "*");
            let events = policy_events(l);
            assert_eq!(events.len(), 4, "{events:?}");
            assert_eq!(
                events[1]["escalate_to"],
                serde_json::json!(["group:oncall"])
            );
            assert_eq!(
                events[3],
                serde_json::json!({"policy": "deploy-*", "unset": true})
            );
        }
    );

    on_every_engine!(
        reminders_and_escalations_are_recorded_once_however_many_look,
        |l: &mut Ledger| {
            set(
                l,
                PolicySet {
                    stage: "s".into(),
                    remind_after: Some(Duration::from_mins(30)),
                    remind_max: Some(3),
                    escalate_after: Some(Duration::from_hours(1)),
                    escalate_to: vec!["carol".into()],
                    ..PolicySet::default()
                },
            )
            .unwrap();
            let id = logged(l, "s", "Deploy?");
            let other = logged(l, "t", "Not routed?");
            let created = l.read(|tx| tx.question(id)).unwrap().unwrap().created_at;
            let at = |mins: u64| clock::after(&created, Duration::from_mins(mins));
            assert_eq!(routing::route_at(l, &at(29)).unwrap(), 0);
            // Eight handles at once, as relays of several machines would: each slot once.
            let location = l.location().clone();
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
            let when = at(61);
            let recorded: usize = (0..8)
                .map(|_| {
                    let (location, barrier, when) =
                        (location.clone(), barrier.clone(), when.clone());
                    std::thread::spawn(move || {
                        let mut mine = Ledger::new(location);
                        barrier.wait();
                        routing::route_at(&mut mine, &when).unwrap()
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|h| h.join().unwrap())
                .sum();
            assert_eq!(recorded, 2, "the first reminder and the escalation");
            let kinds = |l: &mut Ledger, id: i64| -> Vec<(EventKind, serde_json::Value)> {
                history(l, &EventFilter::Question(id))
                    .unwrap()
                    .events
                    .into_iter()
                    .filter(|e| matches!(e.event, EventKind::Reminded | EventKind::Escalated))
                    .map(|e| (e.event, e.detail.unwrap()))
                    .collect()
            };
            let done = kinds(l, id);
            assert_eq!(done.len(), 2, "{done:?}");
            assert!(done
                .iter()
                .any(|(k, d)| *k == EventKind::Reminded && d["reminder"] == 1));
            assert!(
                kinds(l, other).is_empty(),
                "a stage without policy is left alone"
            );
            // Much later: the last reminder only, then nothing more.
            assert_eq!(routing::route_at(l, &at(6000)).unwrap(), 1);
            assert_eq!(routing::route_at(l, &at(9000)).unwrap(), 0);
            let last = kinds(l, id);
            assert_eq!(last.last().unwrap().1["reminder"], 3, "{last:?}");
            // An answered question is reminded of nothing.
            change(l, &person("dana"), &PersonsChange::of(id, answer("no"))).unwrap();
            let id2 = logged(l, "s", "Roll back?");
            change(l, &person("dana"), &PersonsChange::of(id2, answer("no"))).unwrap();
            assert_eq!(routing::route_at(l, &at(9000)).unwrap(), 0);
        }
    );

    on_every_engine!(an_urgent_question_is_kept_urgent, |l: &mut Ledger| {
        let urgent = NewQuestion {
            urgent: true,
            ..new("s", "Prod is down: roll back?", None)
        };
        let id = log(l, &urgent, false).unwrap().question_id;
        let plain = logged(l, "s", "Which changelog wording?");
        let read = |l: &mut Ledger, id| l.read(|tx| tx.question(id)).unwrap().unwrap();
        assert!(read(l, id).urgent);
        assert!(!read(l, plain).urgent);
        let printed = serde_json::to_value(read(l, id)).unwrap();
        assert_eq!(printed["urgent"], true);
        let printed = serde_json::to_value(read(l, plain)).unwrap();
        assert!(printed.get("urgent").is_none(), "printed only when set");
        // Answering keeps it as it was logged.
        change(l, &person("dana"), &PersonsChange::of(id, answer("yes"))).unwrap();
        assert!(read(l, id).urgent);
    });

    on_every_engine!(
        quiet_hours_are_set_by_the_person_shown_and_recorded,
        |l: &mut Ledger| {
            let bob = Identity::Person("bob".into());
            let set = |l: &mut Ledger, who: &Identity, hours| {
                crate::ops::set_quiet(l, who, Channel::Cli, "bob", hours)
            };
            let err = set(
                l,
                &Identity::Person("mallory".into()),
                Some(("22:00-07:00", "UTC")),
            )
            .unwrap_err();
            assert_eq!(err.code, ErrorCode::Forbidden, "{}", err.message);
            for (window, tz) in [("22:00", "UTC"), ("22:00-07:00", "Nowhere/Else")] {
                let err = set(l, &bob, Some((window, tz))).unwrap_err();
                assert_eq!(err.code, ErrorCode::Usage, "{window} {tz}");
            }
            let made = set(l, &bob, Some((" 22:00-7:00 ", "Europe/Berlin"))).unwrap();
            assert!(made.changed);
            let hours = made.quiet.unwrap();
            assert_eq!((hours.from.as_str(), hours.to.as_str()), ("22:00", "07:00"));
            assert!(
                !set(l, &bob, Some(("22:00-07:00", "Europe/Berlin")))
                    .unwrap()
                    .changed
            );
            let listed = crate::ops::relay::people_list(l).unwrap();
            assert_eq!(listed.quiet.len(), 1);
            assert_eq!(listed.quiet[0].tz, "Europe/Berlin");
            assert!(set(l, &bob, None).unwrap().changed);
            assert!(
                !set(l, &bob, None).unwrap().changed,
                "off twice changes nothing"
            );
            assert!(crate::ops::relay::people_list(l).unwrap().quiet.is_empty());
            let people: Vec<serde_json::Value> =
                history(l, &EventFilter::Since { seq: 0, limit: 100 })
                    .unwrap()
                    .events
                    .into_iter()
                    .filter(|e| e.event == EventKind::People)
                    .map(|e| {
                        assert_eq!(e.answered_by.as_deref(), Some("bob"));
                        e.detail.unwrap()
                    })
                    .collect();
            assert_eq!(
                people,
                [
                    serde_json::json!({"person": "bob", "quiet": "22:00-07:00", "tz": "Europe/Berlin"}),
                    serde_json::json!({"person": "bob", "quiet": "off"}),
                ]
            );
        }
    );

    on_every_engine!(
        a_delegate_votes_once_for_one_approver_and_never_on_their_own_request,
        |l: &mut Ledger| {
            let until = "2099-01-01T00:00:00Z";
            let delegate = |l: &mut Ledger, who: &str, to: &str| {
                crate::ops::delegate(
                    l,
                    &Identity::Person(who.into()),
                    Channel::Cli,
                    who,
                    Some((to, until)),
                )
            };
            delegate(l, "ann", "dot").unwrap();
            delegate(l, "bob", "dot").unwrap();
            delegate(l, "cy", "rex").unwrap();
            // ann → dot already: dot → ann would go round.
            let err = delegate(l, "dot", "ann").unwrap_err();
            assert_eq!(err.code, ErrorCode::Conflict, "{}", err.message);
            let approval = Approval::new(
                &["ann".into(), "bob".into(), "cy".into()],
                2,
                Some("rex"),
                "rex",
            )
            .unwrap();
            let mut q = new("deploy", "Deploy build 42?", None);
            q.approval = Some(approval);
            let id = log(l, &q, false).unwrap().question_id;
            let vote = |l: &mut Ledger, who: &str| {
                change(
                    l,
                    &person(who),
                    &PersonsChange::of(
                        id,
                        Act::Vote(
                            Identity::Person(who.into()),
                            Ballot {
                                verdict: Verdict::Approve,
                                comment: None,
                            },
                        ),
                    ),
                )
            };
            let votes = |l: &mut Ledger| -> Vec<(String, Option<String>)> {
                let q = l.read(|tx| tx.question(id)).unwrap().unwrap();
                q.state
                    .approval
                    .unwrap()
                    .votes
                    .into_iter()
                    .map(|v| (v.by, v.on_behalf_of))
                    .collect()
            };
            // The requester stands in for cy, and still may not vote on their request.
            let err = vote(l, "rex").unwrap_err();
            assert_eq!(err.code, ErrorCode::Forbidden, "{}", err.message);
            // dot stands in for ann and bob: one vote, for ann (first by name).
            vote(l, "dot").unwrap();
            assert_eq!(votes(l), [("dot".into(), Some("ann".into()))]);
            vote(l, "dot").unwrap();
            assert_eq!(votes(l).len(), 1, "a second vote replaces the first");
            assert_eq!(gate(l, "deploy"), Gate::Fail, "one approver of two");
            // ann's own vote replaces her delegate's: still one approver counted.
            vote(l, "ann").unwrap();
            assert_eq!(votes(l), [("ann".into(), None)]);
            assert_eq!(gate(l, "deploy"), Gate::Fail);
            // Now dot's vote counts for bob, whom nobody voted for: the quorum.
            vote(l, "dot").unwrap();
            assert_eq!(
                votes(l),
                [("ann".into(), None), ("dot".into(), Some("bob".into()))]
            );
            assert_eq!(gate(l, "deploy"), Gate::Pass);
            let voted = history(l, &EventFilter::Question(id))
                .unwrap()
                .events
                .into_iter()
                .rfind(|e| e.event == EventKind::Voted)
                .unwrap();
            assert_eq!(voted.answered_by.as_deref(), Some("dot"));
            assert_eq!(voted.detail.unwrap()["on_behalf_of"], "bob");
        }
    );

    on_every_engine!(
        a_bad_policy_is_refused_and_changes_nothing,
        |l: &mut Ledger| {
            let minute = Some(Duration::from_mins(1));
            let bad = [
                PolicySet {
                    stage: "a*b".into(),
                    to: vec!["x".into()],
                    ..PolicySet::default()
                },
                PolicySet {
                    stage: "s".into(),
                    ..PolicySet::default()
                },
                PolicySet {
                    stage: "s".into(),
                    remind_max: Some(2),
                    ..PolicySet::default()
                },
                PolicySet {
                    stage: "s".into(),
                    remind_after: minute,
                    remind_max: Some(0),
                    ..PolicySet::default()
                },
                PolicySet {
                    stage: "s".into(),
                    remind_after: minute,
                    remind_max: Some(REMIND_MAX_LIMIT + 1),
                    ..PolicySet::default()
                },
                PolicySet {
                    stage: "s".into(),
                    remind_after: Some(Duration::from_hours(31 * 24)),
                    ..PolicySet::default()
                },
                PolicySet {
                    stage: "s".into(),
                    escalate_after: minute,
                    ..PolicySet::default()
                },
                PolicySet {
                    stage: "s".into(),
                    escalate_to: vec!["carol".into()],
                    ..PolicySet::default()
                },
                PolicySet {
                    stage: "s".into(),
                    to: vec!["two words".into()],
                    ..PolicySet::default()
                },
                PolicySet {
                    stage: "s".into(),
                    to: vec!["group:nobody-made-it".into()],
                    ..PolicySet::default()
                },
            ];
            for req in bad {
                let what = format!("{req:?}");
                let err = set(l, req).expect_err(&what);
                assert_eq!(err.code, ErrorCode::Usage, "{what}: {}", err.message);
            }
            assert!(listed(l).is_empty());
            assert!(policy_events(l).is_empty());
        }
    );
}

// The door (§15): every role against every request.
mod roles;
