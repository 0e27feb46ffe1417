//! The door's attack suite (§15 "Roles"): every role against every request. A refusal is
//! `forbidden`, recorded as one `refused` event, and changes nothing else in the ledger.

use super::*;
use crate::model::{Channel, EventKind, HarnessCall, Status};

const TOKEN: &str = "ci-bot";

fn draft(stage: &str, text: &str) -> Draft {
    Draft {
        stage: stage.into(),
        group: None,
        question: text.into(),
        proposed: None,
        required: true,
        header: None,
        context: None,
        options: Vec::new(),
        multi_select: false,
        allow_freeform: true,
        source: Source::Cli,
        approval: None,
        urgent: false,
    }
}

fn agent() -> Principal {
    Principal::Agent(AgentToken {
        name: TOKEN.into(),
        stages: vec!["ci-*".into(), "docs".into()],
    })
}

fn dana() -> Principal {
    Principal::Person(PersonToken {
        name: "dana-phone".into(),
        person: "dana".into(),
        answers: true,
    })
}

fn direct() -> Principal {
    Principal::Direct(person("root"))
}

/// What a refusal must leave as it was: every question, every token and every policy.
fn state(
    l: &mut Ledger,
) -> (
    Vec<Question>,
    Vec<crate::store::StoredToken>,
    Vec<crate::store::Policy>,
    crate::model::Groups,
) {
    let questions = list(l, &Filter::default()).unwrap();
    let tokens = l.read(|tx| tx.tokens()).unwrap();
    let policies = l.read(|tx| tx.policies()).unwrap();
    let groups = l.read(|tx| tx.groups(["release", "mine"])).unwrap();
    (questions, tokens, policies, groups)
}

/// A routing policy to set (and one there is, to unset).
fn policy_requests() -> Vec<Request> {
    vec![
        Request::Policy(PolicyRequest::Set(PolicySet {
            stage: "ci-*".into(),
            to: vec![TOKEN.into()],
            remind_after: Some(Duration::from_mins(1)),
            ..PolicySet::default()
        })),
        Request::Policy(PolicyRequest::List),
        Request::Policy(PolicyRequest::Unset {
            stage: "docs".into(),
        }),
    ]
}

/// A ledger with a question in the agent's stages, one outside them, an approval, a
/// group, a token and a routing policy, and the ids of the first three.
fn ledger_for_attacks(l: &mut Ledger) -> (i64, i64, i64) {
    let inside = logged(l, "ci-build", "Deploy to staging?");
    let outside = logged(l, "prod", "Deploy to production?");
    group(
        l,
        &Identity::Person("root".into()),
        Channel::Cli,
        "release",
        &GroupChange::Create {
            admins: vec!["root".into()],
        },
        &["dana".into()],
    )
    .unwrap();
    let mut q = new("ci-build", "Ship 1.2?", None);
    q.approval = Some(Approval::new(&["dana".into()], 1, Some("rex"), "rex").unwrap());
    let approval = log(l, &q, false).unwrap().question_id;
    call(
        l,
        &direct(),
        Request::Token(TokenRequest::Create {
            name: "other".into(),
            grant: Grant::Agent { stages: vec![] },
            expires_in: None,
        }),
    )
    .unwrap();
    // A harness call's question outside the agent's stages, under a key it may guess.
    let guessed = HarnessCall {
        key: GUESSED.into(),
        by_input: false,
    };
    let news = [NewQuestion::build(draft("prod", HOOKED)).unwrap()];
    change::log_call(l, &guessed, CallStep::Asking, &news).unwrap();
    call(
        l,
        &direct(),
        Request::Policy(PolicyRequest::Set(PolicySet {
            stage: "docs".into(),
            to: vec!["group:release".into()],
            escalate_after: Some(Duration::from_hours(1)),
            escalate_to: vec!["rex".into()],
            ..PolicySet::default()
        })),
    )
    .unwrap();
    (inside, outside, approval)
}

/// The key and text of the harness call's question above.
const GUESSED: &str = "claude-code:session:toolu_prod";
const HOOKED: &str = "Roll back production?";

/// Every request an agent token may never make, given the ledger above.
fn forbidden_to_agents(inside: i64, outside: i64, approval: i64) -> Vec<Request> {
    let change = |id, act| Request::Change(PersonsChange::of(id, act));
    let call = |key: &str| CallKey {
        key: key.into(),
        by_input: false,
    };
    let vote = |verdict| {
        Act::Vote(
            Identity::Person("dana".into()),
            Ballot {
                verdict,
                comment: Some("ok".into()),
            },
        )
    };
    vec![
        change(inside, answer("yes")),
        change(inside, Act::AcceptProposed),
        change(inside, Act::Skip(Some("no need".into()))),
        change(inside, Act::Decline("unclear".into())),
        change(approval, vote(Verdict::Approve)),
        change(approval, vote(Verdict::Reject)),
        Request::AcceptDefaults {
            stage: "ci-build".into(),
            include_required: true,
        },
        // What `ask` records: a person's answers in a terminal dialog.
        Request::Asked {
            stage: "ci-build".into(),
            chosen: vec![(inside, Choice::Answer(text_input("yes")))],
            shown: Shown::default(),
        },
        Request::Import {
            stage: "ci-build".into(),
            text: format!("{{\"{inside}\": \"yes\"}}"),
            format: None,
            force: true,
        },
        // A harness call outside its stages; another stage's call found by its key; a
        // delivery of another stage's question.
        Request::HarnessCall {
            call: call("claude-code:session:toolu_new"),
            step: CallStep::Asking,
            questions: vec![draft("prod", "Which region?")],
            wait: None,
        },
        Request::HarnessCall {
            call: call(GUESSED),
            step: CallStep::Looking,
            questions: vec![draft("ci-build", HOOKED)],
            wait: Some(Duration::from_secs(1)),
        },
        Request::Delivered {
            call: call(GUESSED),
            ids: vec![outside],
            detail: serde_json::json!({ "harness": "claude-code" }),
            key: None,
        },
        // A stage whose gate a required question still holds.
        Request::Clear {
            stage: "ci-build".into(),
            key: None,
        },
        Request::Group {
            identity: Identity::Person("root".into()),
            name: "release".into(),
            change: GroupChange::Add,
            people: vec![TOKEN.into()],
        },
        Request::Group {
            identity: Identity::Person(TOKEN.into()),
            name: "mine".into(),
            change: GroupChange::Create {
                admins: vec![TOKEN.into()],
            },
            people: vec![],
        },
        Request::People {
            identity: Identity::Person("dana".into()),
            name: "dana".into(),
            channel_id: "telegram:1".into(),
            link: true,
        },
        Request::Token(TokenRequest::Create {
            name: "mine".into(),
            grant: Grant::Person("dana".into()),
            expires_in: None,
        }),
        Request::Token(TokenRequest::List),
        Request::Token(TokenRequest::Revoke {
            name: "other".into(),
        }),
        Request::Reset { confirmed: true },
    ]
    .into_iter()
    .chain(policy_requests())
    .chain([
        // Outside its stages.
        Request::Log {
            draft: draft("prod", "Skip the canary?"),
            expiry: Expiry::default(),
            allow_duplicate: false,
            key: None,
        },
        Request::Ingest {
            stage: "prod".into(),
            text: r#"{"questions": [{"question": "Which region?"}]}"#.into(),
            only: None,
            expiry: Expiry {
                expires_in: None,
                on_expiry: crate::model::OnExpiry::Keep,
            },
            approval: None,
            key: None,
        },
        Request::List(Filter {
            stage: Some("prod".into()),
            ..Filter::default()
        }),
        Request::Check(CheckRequest {
            stage: Some("prod".into()),
            ids: None,
            strict: false,
            wait: Wait::No,
            allow_unknown_stage: false,
            ledger: None,
        }),
        // Every stage at once, from a token of some.
        Request::Check(CheckRequest {
            stage: None,
            ids: Some(vec![outside]),
            strict: false,
            wait: Wait::No,
            allow_unknown_stage: false,
            ledger: None,
        }),
        Request::Pending {
            stage: "prod".into(),
            ids: None,
        },
        Request::Answers {
            stage: "prod".into(),
        },
        Request::History(EventFilter::Stage("prod".into())),
        Request::History(EventFilter::Question(outside)),
        Request::Events {
            since: 0,
            stage: Some("prod".into()),
            limit: 100,
            wait: None,
        },
        // A pattern is a prefix only where it ends in *.
        Request::Answers {
            stage: "docs-internal".into(),
        },
        // MCP's batch, its reads of named questions and its forms, outside its stages.
        Request::LogAll {
            drafts: vec![
                draft("ci-build", "Which runner?"),
                draft("prod", "Rotate the keys?"),
            ],
        },
        Request::Named {
            stage: None,
            ids: Some(vec![inside, outside]),
        },
        Request::Named {
            stage: Some("prod".into()),
            ids: None,
        },
        Request::Elicited {
            stage: "prod".into(),
            chosen: vec![(outside, Choice::Answer(text_input("yes")))],
            shown: Shown::default(),
        },
    ])
    .collect()
}

fn text_input(text: &str) -> AnswerInput {
    AnswerInput {
        text: Some(text.into()),
        select: Vec::new(),
    }
}

on_every_engine!(
    a_form_through_an_agent_token_is_its_host_s_and_settles_no_approval,
    |l: &mut Ledger| {
        let (inside, _, approval) = ledger_for_attacks(l);
        let Reply::Elicited(asked) = call(
            l,
            &agent(),
            Request::Elicited {
                stage: "ci-build".into(),
                chosen: vec![
                    (inside, Choice::Answer(text_input("yes"))),
                    (approval, Choice::Answer(text_input("approve"))),
                ],
                shown: Shown::default(),
            },
        )
        .unwrap() else {
            panic!("a form's reply")
        };
        assert_eq!(asked.answered_ids, vec![inside]);
        assert_eq!(
            asked
                .not_recorded
                .iter()
                .map(|n| n.question_id)
                .collect::<Vec<_>>(),
            vec![approval],
            "a form never settles an approval"
        );
        let q = named(l, None, Some(&[inside])).unwrap().remove(0);
        assert_eq!(q.state.answered_by.as_deref(), Some("host:ci-bot"));
        assert_eq!(q.state.channel, Some(Channel::Elicitation));
        let a = named(l, None, Some(&[approval])).unwrap().remove(0);
        assert_eq!(a.state.status, Status::Pending);
        // Through a person's token, the form is the person's.
        let other = logged(l, "ci-build", "Which runner?");
        call(
            l,
            &dana(),
            Request::Elicited {
                stage: "ci-build".into(),
                chosen: vec![(other, Choice::Answer(text_input("arm")))],
                shown: Shown::default(),
            },
        )
        .unwrap();
        let q = named(l, None, Some(&[other])).unwrap().remove(0);
        assert_eq!(q.state.answered_by.as_deref(), Some("dana"));
        assert_eq!(q.state.channel, Some(Channel::Elicitation));
    }
);

on_every_engine!(
    an_agent_token_s_batch_names_it_as_the_requester_of_its_approvals,
    |l: &mut Ledger| {
        // What a client sends: the requester its user named, or none.
        let blank = Approval::new(&["dana".into(), "rex".into()], 2, Some("client"), "client");
        let mut blank = blank.unwrap();
        blank.requester = String::new();
        let mut gated = draft("ci-release", "Ship 2.0?");
        gated.approval = Some(blank.clone());
        let Reply::LoggedAll(done) = call(
            l,
            &agent(),
            Request::LogAll {
                drafts: vec![draft("ci-release", "Which tag?"), gated],
            },
        )
        .unwrap() else {
            panic!("a batch's reply")
        };
        assert_eq!(done.created_ids.len(), 2);
        let approval = done.questions[1].state.approval.clone().unwrap();
        assert_eq!(approval.requester, TOKEN);
        assert_eq!(approval.logged_by, None);
        assert_eq!(
            approval.approvers,
            ["dana", "rex"],
            "nobody's vote is taken away"
        );
        // Naming itself is naming no one else.
        let mut own = draft("ci-release", "Ship 2.1?");
        own.approval = Some(Approval {
            requester: TOKEN.into(),
            ..blank.clone()
        });
        call(
            l,
            &agent(),
            Request::Log {
                draft: own,
                expiry: Expiry::default(),
                allow_duplicate: false,
                key: None,
            },
        )
        .unwrap();
        let Reply::Named(found) = call(
            l,
            &agent(),
            Request::Named {
                stage: Some("ci-release".into()),
                ids: None,
            },
        )
        .unwrap() else {
            panic!("the questions named")
        };
        assert_eq!(found.count, 3, "the batch's two and its own");
    }
);

on_every_engine!(
    an_agent_token_is_refused_everything_but_its_own,
    |l: &mut Ledger| {
        let (inside, outside, approval) = ledger_for_attacks(l);
        for req in forbidden_to_agents(inside, outside, approval) {
            let what = format!("{req:?}");
            let name = req.name();
            let before = state(l);
            let seq = last_seq(l).unwrap();
            let err = call(l, &agent(), req).expect_err(&what);
            assert_eq!(err.code, ErrorCode::Forbidden, "{what}: {}", err.message);
            assert_eq!(state(l), before, "{what} changed the ledger");
            let recorded = history(l, &EventFilter::Since { seq, limit: 10 }).unwrap();
            let [event] = &recorded.events[..] else {
                panic!("{what}: one refused event, not {:?}", recorded.events)
            };
            assert_eq!(event.event, EventKind::Refused, "{what}");
            assert_eq!(event.answered_by.as_deref(), Some(TOKEN), "{what}");
            assert_eq!(event.channel, Some(Channel::Api), "{what}");
            let detail = event.detail.as_ref().expect("a refusal says what");
            assert_eq!(detail["refused"], name, "{what}");
            assert_eq!(detail["token"], TOKEN, "{what}");
        }
        // Nothing it tried moved the gate or the approval.
        assert_eq!(gate(l, "ci-build"), Gate::Fail);
        assert_eq!(l_answer(l, inside), None);
    }
);

on_every_engine!(
    an_agent_token_logs_reads_and_waits_within_its_stages,
    |l: &mut Ledger| {
        let (inside, outside, _) = ledger_for_attacks(l);
        let Reply::Logged(done) = call(
            l,
            &agent(),
            Request::Log {
                draft: draft("ci-test", "Run the slow suite?"),
                expiry: Expiry::default(),
                allow_duplicate: false,
                key: None,
            },
        )
        .unwrap() else {
            panic!("log replies Logged")
        };
        assert!(done.created);
        let Reply::Listed(seen) = call(l, &agent(), Request::List(Filter::default())).unwrap()
        else {
            panic!("list replies Listed")
        };
        let ids: Vec<i64> = seen.questions.iter().map(|q| q.id).collect();
        assert!(ids.contains(&inside) && ids.contains(&done.question_id));
        assert!(
            !ids.contains(&outside),
            "a list of every stage shows only its own"
        );
        let Reply::Events(page) = call(
            l,
            &agent(),
            Request::Events {
                since: 0,
                stage: None,
                limit: 1000,
                wait: None,
            },
        )
        .unwrap() else {
            panic!("events replies Events")
        };
        assert!(!page.events.is_empty());
        assert!(
            page.events
                .iter()
                .all(|e| e.stage.starts_with("ci-") && e.question_id != outside),
            "{:?}",
            page.events
        );
        // A stage never heard of is not told apart by names of stages outside its own.
        logged(l, "doc", "Outside its stages, two edits from one of them?");
        for strict in [false, true] {
            let asked = call(
                l,
                &agent(),
                Request::Check(CheckRequest {
                    stage: Some("docs".into()),
                    ids: None,
                    strict,
                    wait: Wait::No,
                    allow_unknown_stage: false,
                    ledger: None,
                }),
            );
            let said = match asked {
                Ok(Reply::Gate(report)) => format!("{:?}", report.nearest),
                Ok(other) => panic!("check replies Gate, not {other:?}"),
                Err(e) => {
                    assert_eq!(e.code, ErrorCode::NotFound);
                    e.message
                }
            };
            assert!(
                !said.contains("doc'") && !said.contains("\"doc\""),
                "{said}"
            );
        }
        // The history after a seq, as events: its stages only.
        let Reply::History(read) = call(
            l,
            &agent(),
            Request::History(EventFilter::Since {
                seq: 0,
                limit: 1000,
            }),
        )
        .unwrap() else {
            panic!("history replies History")
        };
        assert_eq!(read.count, read.events.len());
        assert!(!read.events.is_empty());
        assert!(
            read.events
                .iter()
                .all(|e| e.stage.starts_with("ci-") && e.question_id != outside),
            "{:?}",
            read.events
        );
        let Reply::Info(info) = call(
            l,
            &agent(),
            Request::Info {
                found_by: FoundBy::Flag,
                also_found: Vec::new(),
            },
        )
        .unwrap() else {
            panic!("info replies Info")
        };
        assert!(info.stages.iter().all(|s| s.stage.starts_with("ci-")));
        let Reply::Gate(report) = call(
            l,
            &agent(),
            Request::Check(CheckRequest {
                stage: Some("ci-build".into()),
                ids: None,
                strict: false,
                wait: Wait::No,
                allow_unknown_stage: false,
                ledger: None,
            }),
        )
        .unwrap() else {
            panic!("check replies Gate")
        };
        assert_eq!(report.gate, Gate::Fail);
        for req in [
            Request::Answers {
                stage: "ci-build".into(),
            },
            Request::Pending {
                stage: "ci-build".into(),
                ids: None,
            },
            Request::History(EventFilter::Question(inside)),
            Request::History(EventFilter::Stage("docs".into())),
        ] {
            let what = format!("{req:?}");
            call(l, &agent(), req).expect(&what);
        }
    }
);

on_every_engine!(
    an_agent_clears_only_a_stage_whose_gate_passes,
    |l: &mut Ledger| {
        let id = logged(l, "ci-done", "Tag it?");
        let optional = log(
            l,
            &NewQuestion {
                required: false,
                ..new("ci-done", "Changelog wording?", None)
            },
            false,
        )
        .unwrap()
        .question_id;
        let clear = || Request::Clear {
            stage: "ci-done".into(),
            key: None,
        };
        let err = call(l, &agent(), clear()).unwrap_err();
        assert_eq!(err.code, ErrorCode::Forbidden);
        assert!(err.message.contains(&id.to_string()), "{}", err.message);
        // Declined holds the gate too.
        change(
            l,
            &person("dana"),
            &PersonsChange::of(id, Act::Decline("why?".into())),
        )
        .unwrap();
        assert_eq!(
            call(l, &agent(), clear()).unwrap_err().code,
            ErrorCode::Forbidden
        );
        change(
            l,
            &person("dana"),
            &PersonsChange {
                force: true,
                ..PersonsChange::of(id, answer("yes"))
            },
        )
        .unwrap();
        let Reply::Cleared(cleared) = call(l, &agent(), clear()).unwrap() else {
            panic!("clear replies Cleared")
        };
        assert_eq!(cleared.deleted, 2, "the optional one {optional} goes too");
        let events = history(l, &EventFilter::Question(id)).unwrap().events;
        let last = events.last().unwrap();
        assert_eq!(last.event, EventKind::Cleared);
        assert_eq!(last.answered_by.as_deref(), Some(TOKEN));
    }
);

on_every_engine!(
    what_an_agent_logs_names_it_so_it_never_votes_on_it,
    |l: &mut Ledger| {
        // The request names a requester and a logger of its own choosing: the token logs it.
        let mut q = draft("ci-deploy", "Deploy 1.3?");
        q.approval = Some(Approval::new(&["dana".into(), TOKEN.into()], 1, None, "dana").unwrap());
        let err = call(
            l,
            &agent(),
            Request::Log {
                draft: q.clone(),
                expiry: Expiry::default(),
                allow_duplicate: false,
                key: None,
            },
        )
        .unwrap_err();
        // dana stays the requester the request named; the token is the logger: neither
        // votes, so no approver is left.
        assert_eq!(err.code, ErrorCode::Usage, "{}", err.message);
        q.approval = Some(Approval {
            requester: String::new(),
            logged_by: Some("dana".into()),
            ..q.approval.clone().unwrap()
        });
        let Reply::Logged(done) = call(
            l,
            &agent(),
            Request::Log {
                draft: q,
                expiry: Expiry::default(),
                allow_duplicate: false,
                key: None,
            },
        )
        .unwrap() else {
            panic!("log replies Logged")
        };
        let approval = done.question.state.approval.clone().unwrap();
        assert_eq!(approval.requester, TOKEN, "none named: the token asks");
        assert_eq!(approval.logged_by, None);
        // Should someone be named as the token, they are its requester and may not vote.
        let refused = change(
            l,
            &person(TOKEN),
            &PersonsChange::of(
                done.question_id,
                Act::Vote(
                    Identity::Person(TOKEN.into()),
                    Ballot {
                        verdict: Verdict::Approve,
                        comment: None,
                    },
                ),
            ),
        )
        .unwrap_err();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        let voted = change(
            l,
            &person("dana"),
            &PersonsChange::of(
                done.question_id,
                Act::Vote(
                    Identity::Person("dana".into()),
                    Ballot {
                        verdict: Verdict::Approve,
                        comment: None,
                    },
                ),
            ),
        )
        .unwrap();
        assert_eq!(voted.question.state.status, Status::Answered);
    }
);

on_every_engine!(a_person_token_acts_as_its_person, |l: &mut Ledger| {
    let (inside, outside, approval) = ledger_for_attacks(l);
    let Reply::Recorded(done) = call(
        l,
        &dana(),
        Request::Change(PersonsChange::of(outside, answer("not today"))),
    )
    .unwrap() else {
        panic!("a change replies Recorded")
    };
    assert_eq!(done.question.state.answered_by.as_deref(), Some("dana"));
    assert_eq!(done.question.state.channel, Some(Channel::Api));
    // A vote counts as the token's person, whoever the request names.
    let Reply::Recorded(voted) = call(
        l,
        &dana(),
        Request::Change(PersonsChange::of(
            approval,
            Act::Vote(
                Identity::Local("rex".into()),
                Ballot {
                    verdict: Verdict::Approve,
                    comment: None,
                },
            ),
        )),
    )
    .unwrap() else {
        panic!("a vote replies Recorded")
    };
    let votes = voted.question.state.approval.unwrap().votes;
    assert_eq!(votes[0].by, "dana");
    for req in [
        Request::Reset { confirmed: true },
        Request::Token(TokenRequest::List),
        // A group decides whose votes count: made and changed where the ledger is.
        Request::Group {
            identity: Identity::Person("dana".into()),
            name: "mine".into(),
            change: GroupChange::Create {
                admins: vec!["dana".into()],
            },
            people: vec![],
        },
        Request::Group {
            identity: Identity::Person("dana".into()),
            name: "release".into(),
            change: GroupChange::Add,
            people: vec!["dana".into()],
        },
        Request::People {
            identity: Identity::Person("dana".into()),
            name: "dana".into(),
            channel_id: "telegram:7".into(),
            link: true,
        },
    ]
    .into_iter()
    .chain(policy_requests())
    {
        let what = format!("{req:?}");
        let before = state(l);
        let err = call(l, &dana(), req).expect_err(&what);
        assert_eq!(err.code, ErrorCode::Forbidden, "{what}");
        assert_eq!(state(l), before, "{what}");
        let events = history(
            l,
            &EventFilter::Since {
                seq: 0,
                limit: 1000,
            },
        )
        .unwrap()
        .events;
        let last = events.last().unwrap();
        assert_eq!(last.event, EventKind::Refused);
        assert_eq!(last.answered_by.as_deref(), Some("dana"));
    }
    assert_eq!(l_answer(l, inside), None);
});

on_every_engine!(
    tokens_are_kept_as_hashes_and_refused_alike,
    |l: &mut Ledger| {
        let make = |l: &mut Ledger, name: &str, expires_in| {
            let Reply::Token(TokenReply::Made(made)) = call(
                l,
                &direct(),
                Request::Token(TokenRequest::Create {
                    name: name.into(),
                    grant: Grant::Agent {
                        stages: vec!["ci-*".into()],
                    },
                    expires_in,
                }),
            )
            .unwrap() else {
                panic!("create replies Made")
            };
            made.token
        };
        let secret = make(l, "runner", None);
        assert!(secret.starts_with(SECRET_PREFIX));
        let who = authenticate(l, Some(&secret)).unwrap();
        assert_eq!(
            who,
            Principal::Agent(AgentToken {
                name: "runner".into(),
                stages: vec!["ci-*".into()],
            })
        );
        let listed = l.read(|tx| tx.tokens()).unwrap();
        assert!(listed[0].last_used_at.is_some(), "a use is noted");
        // The same name again is a conflict; a token never holds a second secret.
        let again = call(
            l,
            &direct(),
            Request::Token(TokenRequest::Create {
                name: "runner".into(),
                grant: Grant::Person("dana".into()),
                expires_in: None,
            }),
        )
        .unwrap_err();
        assert_eq!(again.code, ErrorCode::Conflict);
        let expired = make(l, "old", Some(Duration::ZERO));
        let refusals = [
            authenticate(l, None),
            authenticate(l, Some("  ")),
            authenticate(l, Some("qtok_0000")),
            authenticate(l, Some(&secret[..secret.len() - 1])),
            authenticate(l, Some(&expired)),
        ];
        call(
            l,
            &direct(),
            Request::Token(TokenRequest::Revoke {
                name: "runner".into(),
            }),
        )
        .unwrap();
        let revoked = authenticate(l, Some(&secret));
        for refused in refusals.into_iter().chain([revoked]) {
            let err = refused.unwrap_err();
            assert_eq!(err.code, ErrorCode::Unauthorized);
            assert_eq!(err.message, UNAUTHORIZED, "one message for all");
            assert!(!err.message.contains(&secret));
        }
        // The history says who made and revoked which token, and never holds a secret.
        let events = history(
            l,
            &EventFilter::Since {
                seq: 0,
                limit: 1000,
            },
        )
        .unwrap()
        .events;
        let tokens: Vec<&Event> = events
            .iter()
            .filter(|e| e.event == EventKind::Token)
            .collect();
        assert_eq!(tokens.len(), 3, "two made, one revoked");
        assert_eq!(tokens[2].detail.as_ref().unwrap()["revoked"], true);
        let all = serde_json::to_string(&events).unwrap();
        assert!(!all.contains(&secret) && !all.contains(&expired));
    }
);

on_every_engine!(
    a_question_logged_with_a_key_is_still_the_same_question_as_its_text,
    |l: &mut Ledger| {
        let log = |l: &mut Ledger, key: Option<&str>| {
            let Reply::Logged(done) = call(
                l,
                &dana(),
                Request::Log {
                    draft: draft("ci-build", "Deploy to staging?"),
                    expiry: Expiry::default(),
                    allow_duplicate: false,
                    key: key.map(str::to_string),
                },
            )
            .unwrap() else {
                panic!("log replies Logged")
            };
            (done.question_id, done.created)
        };
        // Each invocation over https:// sends a key of its own: two calls logging the
        // same question are one question, as two calls on a file are.
        let first = log(l, Some("call-1"));
        assert!(first.1, "the first call logs it");
        assert_eq!(
            log(l, Some("call-2")),
            (first.0, false),
            "another key, the same question"
        );
        assert_eq!(log(l, None), (first.0, false), "no key, the same question");
        // The first call's key sent again (its reply lost) gets the first reply.
        assert_eq!(log(l, Some("call-1")), (first.0, true));
        let questions = list(l, &Filter::default()).unwrap();
        assert_eq!(questions.len(), 1);
        // The key finds the call again; it is not part of the question as printed.
        let printed = serde_json::to_value(&questions[0]).unwrap();
        assert!(printed.get("harness_call").is_none(), "{printed}");
    }
);

on_every_engine!(
    an_ingest_sent_again_with_its_key_gets_the_first_reply,
    |l: &mut Ledger| {
        let text = r#"{"questions": [{"question": "Which region?"}, {"question": "Which tier?"}]}"#;
        let ingest = |l: &mut Ledger, key: Option<&str>| {
            let Reply::Ingested(done) = call(
                l,
                &agent(),
                Request::Ingest {
                    stage: "ci-build".into(),
                    text: text.into(),
                    only: None,
                    expiry: Expiry::default(),
                    approval: None,
                    key: key.map(str::to_string),
                },
            )
            .unwrap() else {
                panic!("ingest replies Ingested")
            };
            (done.question_ids, done.created_ids)
        };
        // One of the two was asked before, by someone else.
        call(
            l,
            &direct(),
            Request::Log {
                draft: draft("ci-build", "Which tier?"),
                expiry: Expiry::default(),
                allow_duplicate: false,
                key: None,
            },
        )
        .unwrap();
        let first = ingest(l, Some("run-1"));
        assert_eq!((first.0.len(), first.1.len()), (2, 1), "{first:?}");
        // Its reply lost, the same call again: the first reply, nothing new.
        assert_eq!(ingest(l, Some("run-1")), first);
        // Another call: the same questions, none made by it.
        assert_eq!(ingest(l, Some("run-2")), (first.0.clone(), vec![]));
        assert_eq!(ingest(l, None), (first.0, vec![]));
        assert_eq!(list(l, &Filter::default()).unwrap().len(), 2);
    }
);

on_every_engine!(
    a_clear_sent_again_with_its_key_gets_the_first_reply_and_clears_nothing_more,
    |l: &mut Ledger| {
        let log = |l: &mut Ledger, text: &str| {
            call(
                l,
                &direct(),
                Request::Log {
                    draft: Draft {
                        required: false,
                        ..draft("ci-done", text)
                    },
                    expiry: Expiry::default(),
                    allow_duplicate: false,
                    key: None,
                },
            )
            .unwrap();
        };
        let clear = |l: &mut Ledger, key: Option<&str>| {
            let Reply::Cleared(done) = call(
                l,
                &agent(),
                Request::Clear {
                    stage: "ci-done".into(),
                    key: key.map(str::to_string),
                },
            )
            .unwrap() else {
                panic!("clear replies Cleared")
            };
            done.deleted
        };
        log(l, "Which region?");
        log(l, "Which tier?");
        assert_eq!(clear(l, Some("run-1")), 2);
        // Asked again meanwhile: the first call's clear sent again neither clears it nor
        // says it cleared nothing.
        log(l, "Which zone?");
        assert_eq!(clear(l, Some("run-1")), 2);
        assert_eq!(list(l, &Filter::default()).unwrap().len(), 1);
        // Another call clears it.
        assert_eq!(clear(l, Some("run-2")), 1);
        assert_eq!(clear(l, None), 0);
    }
);

on_every_engine!(
    a_delivery_sent_again_with_its_key_is_recorded_once,
    |l: &mut Ledger| {
        let Reply::Logged(logged) = call(
            l,
            &agent(),
            Request::Log {
                draft: draft("ci-build", "Which region?"),
                expiry: Expiry::default(),
                allow_duplicate: false,
                key: None,
            },
        )
        .unwrap() else {
            panic!("log replies Logged")
        };
        let deliver = |l: &mut Ledger, key: Option<&str>| {
            call(
                l,
                &agent(),
                Request::Delivered {
                    call: CallKey {
                        key: "codex:session:call_1".into(),
                        by_input: false,
                    },
                    ids: vec![logged.question_id],
                    detail: serde_json::json!({ "harness": "codex" }),
                    key: key.map(str::to_string),
                },
            )
            .unwrap();
        };
        let delivered = |l: &mut Ledger| {
            history(l, &EventFilter::Question(logged.question_id))
                .unwrap()
                .events
                .iter()
                .filter(|e| e.event == EventKind::Delivered)
                .count()
        };
        deliver(l, Some("hook-1"));
        deliver(l, Some("hook-1"));
        assert_eq!(delivered(l), 1, "sent again with its key: recorded once");
        deliver(l, Some("hook-2"));
        assert_eq!(delivered(l), 2, "another call's delivery is its own");
    }
);

/// Every request crosses a wire as it is: what is sent reads back as the same request,
/// named the same, and an unknown or malformed one is refused by the reader.
#[test]
fn every_request_reads_back_as_it_was_written() {
    let mut all = forbidden_to_agents(1, 2, 3);
    all.extend([
        Request::Log {
            draft: Draft {
                options: vec![crate::model::QuestionOption {
                    label: "A".into(),
                    description: Some("first".into()),
                    recommended: true,
                }],
                approval: None,
                ..draft("ci-x", "Which?")
            },
            expiry: Expiry {
                expires_in: Some(Duration::from_secs(90)),
                on_expiry: crate::model::OnExpiry::Default,
            },
            allow_duplicate: true,
            key: None,
        },
        Request::Check(CheckRequest {
            stage: Some("ci-x".into()),
            ids: Some(vec![4, 5]),
            strict: true,
            wait: Wait::Until(Some(Duration::from_millis(1500))),
            allow_unknown_stage: true,
            ledger: None,
        }),
        Request::History(EventFilter::Since { seq: 7, limit: 20 }),
        Request::Info {
            found_by: FoundBy::WalkUp,
            also_found: vec!["/a/ledger.db".into()],
        },
        Request::Change(PersonsChange {
            shown: Shown::one(Some("ledger-id".into()), 9, Some("fp".into())),
            within: Some("ci-x".into()),
            force: true,
            ..PersonsChange::of(9, answer("x"))
        }),
    ]);
    // A form's answers cross the wire too (a harness's card, from its hook): the door
    // decides whose they are.
    assert!(all.iter().any(|r| matches!(r, Request::Elicited { .. })));
    for req in all {
        let text = serde_json::to_string(&req).unwrap();
        let back: Request = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        assert_eq!(back.name(), req.name());
        assert_eq!(back.procedure(), req.procedure());
    }
    let answers = serde_json::to_value(Request::Answers { stage: "s".into() }).unwrap();
    assert_eq!(
        answers,
        serde_json::json!({"op": "answers", "args": {"stage": "s"}})
    );
    for bad in [
        r#"{"op": "drop_tables", "args": {}}"#,
        r#"{"op": "answers"}"#,
        r#"{"op": "answers", "args": {"stage": 5}}"#,
        r#"{"op": "log", "args": {"draft": {"stage": "s"}}}"#,
        r#"{"op": "elicited", "args": {"stage": "s", "chosen": [], "shown": {}}}"#,
    ] {
        assert!(serde_json::from_str::<Request>(bad).is_err(), "{bad}");
    }
}

on_every_engine!(
    a_read_only_grant_reads_and_never_answers_or_votes,
    |l: &mut Ledger| {
        // An MCP host's OAuth grant without `questions:answer` (§17).
        let reader = Principal::Person(PersonToken {
            name: "signin-oauth-0".into(),
            person: "dana".into(),
            answers: false,
        });
        assert!(!reader.answers());
        let (inside, outside, approval) = ledger_for_attacks(l);
        assert!(call(l, &reader, Request::List(Filter::default())).is_ok());
        // What an agent may not do that a person may: the person's answering acts.
        let acts: Vec<Request> = forbidden_to_agents(inside, outside, approval)
            .into_iter()
            .filter(|r| {
                matches!(
                    r,
                    Request::Change(_)
                        | Request::AcceptDefaults { .. }
                        | Request::Import { .. }
                        | Request::Elicited { .. }
                        | Request::Asked { .. }
                )
            })
            .collect();
        assert!(acts.len() >= 5, "{acts:?}");
        for req in acts {
            let what = format!("{req:?}");
            let before = state(l);
            let err = call(l, &reader, req).expect_err(&what);
            assert_eq!(err.code, ErrorCode::Forbidden, "{what}");
            assert_eq!(state(l), before, "{what}");
        }
        // The same acts by a person token that answers are the person's.
        let Reply::Recorded(done) = call(
            l,
            &dana(),
            Request::Change(PersonsChange::of(inside, answer("yes"))),
        )
        .unwrap() else {
            panic!("a change replies Recorded")
        };
        assert_eq!(done.question.state.answered_by.as_deref(), Some("dana"));
    }
);
