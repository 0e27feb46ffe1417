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
    let on_record = refused.on_record.expect("the refusal carries the question");
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
