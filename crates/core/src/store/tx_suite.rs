//! The `Tx` suite: what the one writer and its reads promise, run on each engine: a SQLite
//! file, and a new database on the PostgreSQL server that `QUESTIONS_TEST_PG` names
//! (`scripts/with-postgres` sets it), so that the one SQL text both engines share is held
//! to one behaviour. The PostgreSQL half of each test is named `postgres_only`: a run
//! without a server skips it by that name.

use super::{EventFilter, Filter, Ledger, Location, Tx};
use crate::model::{EventKind, Mode, NewQuestion, QuestionOption, Source, Status};

/// Runs `test` in one write transaction of a new, empty ledger at `location`.
fn on(location: Location, test: impl Fn(&Tx)) {
    let mut ledger = Ledger::new(location);
    ledger
        .write(|tx| {
            test(tx);
            Ok(())
        })
        .unwrap();
}

fn on_sqlite(test: impl Fn(&Tx)) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    on(
        Location::File {
            path,
            make_folder: false,
        },
        test,
    );
}

/// Without a server (`QUESTIONS_TEST_PG`) it fails, saying which skip the pass needs: a
/// run without one skips the PostgreSQL half by name, so that it is reported filtered
/// out, never passed.
#[cfg(feature = "postgres")]
fn on_postgres(test: impl Fn(&Tx)) {
    let Some(url) = new_postgres_database() else {
        let thread = std::thread::current();
        panic!(
            "{} runs on the PostgreSQL server QUESTIONS_TEST_PG names (scripts/with-postgres \
             sets it); without one, the pass must skip it by name (`cargo test -- --skip \
             postgres_only`)",
            thread.name().unwrap_or("this test")
        );
    };
    on(Location::Postgres { url }, test);
}

/// A test of the suite, once on each engine, in one write transaction of a new, empty
/// ledger: `<name>::sqlite` on a file, and `<name>::postgres_only` on a new database of
/// the test server, which the passes without one skip by name (as the CLI suite's
/// engine-bound tests are skipped).
macro_rules! on_every_engine {
    ($name:ident, $test:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn sqlite() {
                on_sqlite($test);
            }

            #[cfg(feature = "postgres")]
            #[test]
            fn postgres_only() {
                on_postgres($test);
            }
        }
    };
}

/// A database of its own on the test server, if the run has one.
#[cfg(feature = "postgres")]
pub(crate) fn new_postgres_database() -> Option<String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let admin = std::env::var("QUESTIONS_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty())?;
    let name = format!(
        "core_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    );
    let mut client = postgres::Client::connect(&admin, postgres::NoTls).expect("the test server");
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("a test database");
    let base = admin.rsplit_once('/').expect("a database in the URL").0;
    Some(format!("{base}/{name}"))
}

fn new(stage: &str, group: Option<&str>, text: &str) -> NewQuestion {
    NewQuestion {
        stage: stage.into(),
        group_name: group.map(Into::into),
        question: text.into(),
        proposed: Some("guess".into()),
        required: true,
        header: None,
        context: None,
        options: vec![QuestionOption {
            label: "A".into(),
            description: Some("first".into()),
            recommended: true,
        }],
        multi_select: false,
        allow_freeform: true,
        source: Source::Cli,
        expires_at: None,
        on_expiry: crate::model::OnExpiry::Keep,
        approval: None,
        harness_call: None,
        urgent: false,
        logged_by: None,
    }
}

const T: &str = "2026-11-21T23:47:04.692Z";
const LATER: &str = "2026-11-22T00:00:00.000Z";

fn actor(at: &str) -> crate::model::Actor {
    crate::model::Actor {
        by: Some("ann".into()),
        channel: crate::model::Channel::Cli,
        at: at.into(),
    }
}

fn log(tx: &Tx, stage: &str, group: Option<&str>, text: &str) -> crate::model::Question {
    tx.apply(&new(stage, group, text).log(T)).unwrap().unwrap()
}

on_every_engine!(insert_and_read_back_every_field, |tx: &Tx| {
    let q = log(tx, "s", Some("G"), "Q?");
    assert_eq!(q.id, 1);
    assert_eq!(q.stage, "s");
    assert_eq!(q.group_name.as_deref(), Some("G"));
    assert_eq!(q.options[0].description.as_deref(), Some("first"));
    assert!(q.options[0].recommended);
    assert_eq!((q.created_at.as_str(), q.state.updated_at.as_str()), (T, T));
    assert_eq!(tx.question(1).unwrap(), Some(q));
    assert_eq!(tx.question(2).unwrap(), None);
});

on_every_engine!(find_same_tells_no_group_from_a_group, |tx: &Tx| {
    log(tx, "s", None, "Q?");
    log(tx, "s", Some("G"), "Q?");
    assert_eq!(tx.find_same("s", None, "Q?").unwrap().unwrap().id, 1);
    assert_eq!(tx.find_same("s", Some("G"), "Q?").unwrap().unwrap().id, 2);
    assert!(tx.find_same("s", Some("H"), "Q?").unwrap().is_none());
    assert!(tx.find_same("t", None, "Q?").unwrap().is_none());
});

on_every_engine!(a_change_writes_the_row_and_its_event_together, |tx: &Tx| {
    let q = log(tx, "s", None, "Q?");
    let input = crate::model::AnswerInput {
        text: Some("a".into()),
        select: vec![],
    };
    let change = q
        .answer(&input, Mode::Direct { force: false }, &actor(LATER))
        .unwrap()
        .unwrap();
    let after = tx.apply(&change).unwrap().unwrap();
    assert_eq!(after.state.status, Status::Answered);
    assert_eq!(after.state.selected, vec!["A"]);
    assert_eq!(tx.question(q.id).unwrap(), Some(after.clone()));
    let events = tx.events(&EventFilter::Question(q.id)).unwrap();
    let kinds: Vec<EventKind> = events.iter().map(|e| e.event).collect();
    assert_eq!(kinds, vec![EventKind::Logged, EventKind::Answered]);
    assert_eq!(events[1].before.as_ref(), Some(&q));
    assert_eq!(events[1].after.as_ref(), Some(&after));
    assert_eq!(events[1].at, LATER);
});

on_every_engine!(filters_narrow_together, |tx: &Tx| {
    for (stage, group) in [("a", Some("x")), ("a", None), ("b", Some("x"))] {
        log(tx, stage, group, "Q?");
    }
    let ids = |f: Filter| -> Vec<i64> {
        tx.questions(&f)
            .unwrap()
            .into_iter()
            .map(|q| q.id)
            .collect()
    };
    assert_eq!(ids(Filter::default()), vec![1, 2, 3]);
    assert_eq!(
        ids(Filter {
            stage: Some("a".into()),
            ..Filter::default()
        }),
        vec![1, 2]
    );
    assert_eq!(
        ids(Filter {
            group: Some("x".into()),
            ..Filter::default()
        }),
        vec![1, 3]
    );
    assert_eq!(
        ids(Filter {
            ids: Some(vec![3, 1, 9]),
            stage: Some("b".into()),
            ..Filter::default()
        }),
        vec![3]
    );
    assert_eq!(
        ids(Filter {
            status: Some(Status::Answered),
            ..Filter::default()
        }),
        Vec::<i64>::new()
    );
});

on_every_engine!(
    more_ids_than_sqlite_takes_placeholders_still_filter,
    |tx: &Tx| {
        log(tx, "s", None, "Q?");
        let ids: Vec<i64> = (1..=40_000).collect();
        let found = tx
            .questions(&Filter {
                ids: Some(ids),
                ..Filter::default()
            })
            .unwrap();
        assert_eq!(found.len(), 1);
    }
);

on_every_engine!(
    clearing_removes_the_row_and_the_history_keeps_it,
    |tx: &Tx| {
        let q = log(tx, "s", None, "Q?");
        log(tx, "t", None, "Q?");
        assert_eq!(tx.apply(&q.clear(&actor(LATER)).unwrap()).unwrap(), None);
        let events = tx.events(&EventFilter::Stage("s".into())).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].event, EventKind::Cleared);
        assert_eq!(events[1].before.as_ref().unwrap().question, "Q?");
        assert_eq!(events[1].after, None);
        assert_eq!(tx.questions(&Filter::default()).unwrap().len(), 1);
    }
);
