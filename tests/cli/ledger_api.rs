//! The ledger's own API on `serve` (§15): `POST /v1/call` with a token the ledger issued,
//! through real HTTP.

use serde_json::{json, Value};

use crate::common::Ledger;
use crate::serve::Served;

pub(crate) fn token(l: &Ledger, args: &[&str]) -> String {
    let mut all = vec!["token", "create"];
    all.extend_from_slice(args);
    l.ok(all)["token"].as_str().unwrap().to_string()
}

/// One call: its HTTP status and its document.
pub(crate) fn call(s: &Served, token: Option<&str>, body: &Value) -> (u16, Value) {
    let bearer = token.map(|t| format!("Authorization: Bearer {t}"));
    let mut headers = vec!["Content-Type: application/json"];
    if let Some(b) = &bearer {
        headers.push(b);
    }
    let reply = s.request("POST", "/v1/call", &headers, &body.to_string());
    (reply.status, reply.json())
}

fn log(stage: &str, text: &str) -> Value {
    json!({"op": "log", "args": {"draft": {
        "stage": stage, "group": null, "question": text, "proposed": null,
        "required": true, "header": null, "context": null, "options": [],
        "multi_select": false, "allow_freeform": true, "source": "cli", "approval": null
    }}})
}

fn answer(id: i64, text: &str) -> Value {
    json!({"op": "change", "args": {
        "id": id, "act": {"answer": {"text": text, "select": []}},
        "shown": {"ledger": null, "questions": {}}, "within": null, "force": false
    }})
}

#[test]
fn an_agent_token_asks_and_a_person_token_answers_over_http() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent", "--stages", "ci-*"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let s = Served::start(&l, &[]);

    let (status, logged) = call(&s, Some(&agent), &log("ci-deploy", "Ship it?"));
    assert_eq!(status, 200, "{logged}");
    assert_eq!(logged["procedure"], "log");
    let id = logged["question_id"].as_i64().unwrap();
    let check = json!({"op": "check", "args": {"stage": "ci-deploy", "ids": null,
        "strict": false, "wait": "no", "allow_unknown_stage": false}});
    let (status, gate) = call(&s, Some(&agent), &check);
    assert_eq!(
        (status, gate["ok"].clone(), gate["gate"].clone()),
        (200, json!(false), json!("fail"))
    );

    // The agent's token never answers: refused, recorded, nothing changed.
    let (status, refused) = call(&s, Some(&agent), &answer(id, "yes"));
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error_code"], "forbidden");
    assert_eq!(l.question(id)["status"], "pending");
    let history = l.ok(["history", "--id", &id.to_string()]);
    let last = history["events"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["event"], "refused");
    assert_eq!(last["answered_by"], "ci-runner");

    // Nor reads outside its stages.
    let (status, _) = call(
        &s,
        Some(&agent),
        &json!({"op": "answers", "args": {"stage": "prod"}}),
    );
    assert_eq!(status, 403);

    let (status, answered) = call(&s, Some(&dana), &answer(id, "yes"));
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["question"]["answered_by"], "dana");
    assert_eq!(answered["question"]["channel"], "api");
    let (_, gate) = call(&s, Some(&agent), &check);
    assert_eq!(gate["gate"], "pass");
    assert_eq!(l.ok(["check", "--stage", "ci-deploy"])["gate"], "pass");
}

#[test]
fn missing_wrong_and_revoked_tokens_are_refused_alike() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let s = Served::start(&l, &[]);
    let list =
        json!({"op": "list", "args": {"stage": null, "status": null, "group": null, "ids": null}});
    assert_eq!(call(&s, Some(&agent), &list).0, 200);
    l.ok(["token", "revoke", "ci-runner"]);
    let mut messages = Vec::new();
    for given in [
        None,
        Some("qtok_nope"),
        Some(crate::serve::TOKEN),
        Some(agent.as_str()),
    ] {
        let (status, doc) = call(&s, given, &list);
        assert_eq!(status, 401, "{given:?}: {doc}");
        assert_eq!(doc["error_code"], "unauthorized");
        assert!(!doc.to_string().contains(&agent));
        messages.push(doc["error"].clone());
    }
    messages.dedup();
    assert_eq!(messages.len(), 1, "one message for all: {messages:?}");
}

#[test]
fn a_body_that_is_not_a_request_is_a_usage_error() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let s = Served::start(&l, &[]);
    for body in [
        json!({"op": "drop_tables"}),
        json!([1, 2]),
        json!({"op": "log", "args": {}}),
    ] {
        let (status, doc) = call(&s, Some(&agent), &body);
        assert_eq!(status, 400, "{body}: {doc}");
        assert_eq!(doc["error_code"], "usage");
    }
    assert_eq!(l.ok(["list"])["count"], 0);
}

#[test]
fn refused_tokens_from_one_address_slow_the_guesser_and_never_the_holders() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let s = Served::start(&l, &[]);
    let list =
        json!({"op": "list", "args": {"stage": null, "status": null, "group": null, "ids": null}});
    // dana's token is honoured before the guessing starts; the agent's is not yet used.
    assert_eq!(call(&s, Some(&dana), &list).0, 200);
    for n in 0..20 {
        let (status, doc) = call(&s, Some(&format!("qtok_guess{n}")), &list);
        assert_eq!(status, 401, "{doc}");
    }
    // The address is past its share: a guess now is `unavailable` (exit 1: not yet),
    // with the time to wait in its words and in Retry-After.
    let bearer = "Authorization: Bearer qtok_guess20";
    let reply = s.request(
        "POST",
        "/v1/call",
        &["Content-Type: application/json", bearer],
        &list.to_string(),
    );
    assert_eq!(reply.status, 429, "{reply:?}");
    assert_eq!(reply.json()["error_code"], "unavailable", "{reply:?}");
    let after: u64 = reply.header("retry-after").unwrap().trim().parse().unwrap();
    assert!((1..=60).contains(&after), "{reply:?}");
    // A valid token from the same address is never refused for what another did.
    for holder in [&dana, &agent] {
        let (status, doc) = call(&s, Some(holder), &list);
        assert_eq!(status, 200, "{doc}");
        assert!(!doc.to_string().contains(holder.as_str()));
    }
}

#[test]
fn a_call_from_another_site_or_too_large_is_refused() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let s = Served::start(&l, &[]);
    let bearer = format!("Authorization: Bearer {agent}");
    let body = log("ci", "From a page elsewhere?").to_string();
    let reply = s.request(
        "POST",
        "/v1/call",
        &[
            "Content-Type: application/json",
            &bearer,
            "Sec-Fetch-Site: cross-site",
        ],
        &body,
    );
    assert_eq!(reply.status, 403);
    assert_eq!(l.ok(["list"])["count"], 0);

    // A body beyond 64 KiB (a subagent's long output to ingest) is read only for a token
    // the ledger issued, looked up before the body is read.
    let mut long = log("ci", "Which database?");
    long["args"]["draft"]["context"] = json!("x".repeat(300 * 1024));
    let long = long.to_string();
    for refused in [None, Some("qtok_0000000000000000000000000000000000000000")] {
        let mut headers = vec!["Content-Type: application/json".to_string()];
        headers.extend(refused.map(|t| format!("Authorization: Bearer {t}")));
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        let reply = s.request("POST", "/v1/call", &headers, &long);
        assert_eq!(reply.status, 401, "{reply:?}");
        assert_eq!(reply.json()["error_code"], "unauthorized");
    }
    assert_eq!(l.ok(["list"])["count"], 0);
    let reply = s.request(
        "POST",
        "/v1/call",
        &["Content-Type: application/json", &bearer],
        &long,
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(l.ok(["list"])["count"], 1);
    // Beyond 16 MiB nobody's is read.
    let reply = s.raw(&format!(
        "POST /v1/call HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\
         Content-Type: application/json\r\n{bearer}\r\nContent-Length: {}\r\n\r\n{{}}",
        s.port,
        16 * 1024 * 1024 + 1
    ));
    assert_eq!(reply.status, 413, "{reply:?}");
}

#[test]
fn a_token_refused_twenty_times_a_minute_waits_and_the_history_stops_growing() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let id = l.log("ci", "Ship?");
    let s = Served::start(&l, &[]);
    for _ in 0..20 {
        let (status, doc) = call(&s, Some(&agent), &answer(id, "yes"));
        assert_eq!(status, 403, "{doc}");
    }
    let before = l.ok(["history", "--id", &id.to_string()])["events"]
        .as_array()
        .unwrap()
        .len();
    let (status, doc) = call(&s, Some(&agent), &answer(id, "yes"));
    assert_eq!(status, 429, "{doc}");
    let after = l.ok(["history", "--id", &id.to_string()])["events"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(before, after, "a refusal past the limit is not recorded");
    assert_eq!(l.question(id)["status"], "pending");
}

#[test]
fn a_person_token_opens_the_inbox_as_its_person_and_an_agent_token_never() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent", "--stages", "ci-*"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let gone = token(&l, &["old-phone", "--person", "dana"]);
    l.ok(["token", "revoke", "old-phone"]);
    let id = l.log("ci-deploy", "Ship it?");
    let s = Served::start(&l, &[]);
    // The link a person opens on a phone: the token becomes the inbox's cookie.
    let first = s.request("GET", &format!("/?token={dana}"), &[], "");
    assert_eq!(first.status, 303, "{first:?}");
    let set = first.header("set-cookie").unwrap();
    assert!(set.contains(&dana) && set.contains("HttpOnly"), "{set}");
    let cookie = format!("Cookie: {}", set.split(';').next().unwrap());
    let page = s.request("GET", "/", &[&cookie, "Accept: text/html"], "");
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.body.contains("Ship it?"));
    // An answer from the inbox's API with the person's token is the person's.
    let path = format!("/api/questions/{id}/answer");
    let body = json!({"answer": "yes"}).to_string();
    let json = "Content-Type: application/json";
    let unknown = format!("qtok_{}", "0".repeat(64));
    for refused in [&agent, &gone, &unknown] {
        let bearer = format!("Authorization: Bearer {refused}");
        let reply = s.request("POST", &path, &[&bearer, json], &body);
        assert_eq!(reply.status, 401, "{reply:?}");
        assert!(!reply.body.contains(refused.as_str()));
        let link = s.request("GET", &format!("/?token={refused}"), &[], "");
        assert_eq!(link.status, 401, "{link:?}");
    }
    assert_eq!(l.question(id)["status"], "pending");
    let bearer = format!("Authorization: Bearer {dana}");
    let reply = s.request("POST", &path, &[&bearer, json], &body);
    assert_eq!(reply.status, 200, "{reply:?}");
    let q = l.question(id);
    assert_eq!(q["answered_by"], "dana");
    assert_eq!(q["channel"], "web");
    // Revoked, it opens nothing from the next request on.
    l.ok(["token", "revoke", "dana-phone"]);
    let page = s.request("GET", "/", &[&cookie, "Accept: text/html"], "");
    assert_eq!(page.status, 401, "{page:?}");
}

#[test]
fn a_gate_on_ids_of_a_ledger_reset_since_is_a_conflict_never_another_questions_pass() {
    let l = Ledger::new();
    let id = l.log("ci-deploy", "Ship build 41?");
    // The id of the ledger the waiter read its ids from, as a held wait notes it.
    let events = l.command().arg("events").output().unwrap();
    let first: Value = serde_json::from_str(
        String::from_utf8_lossy(&events.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let gone = first["ledger"].as_str().unwrap().to_string();
    l.ok(["reset", "--yes"]);
    let agent = token(&l, &["ci-runner", "--agent", "--stages", "ci-*"]);
    let same = l.log("ci-deploy", "Ship build 42?");
    assert_eq!(same, id, "the new ledger's question has the old one's id");
    l.ok(["answer", "--id", &same.to_string(), "--answer", "yes"]);
    let s = Served::start(&l, &[]);
    let check = |ledger: &str| {
        json!({"op": "check", "args": {"stage": "ci-deploy", "ids": [id], "strict": false,
            "wait": "no", "allow_unknown_stage": false, "ledger": ledger}})
    };
    let (status, doc) = call(&s, Some(&agent), &check(&gone));
    assert_eq!(
        (status, &doc["error_code"]),
        (409, &json!("conflict")),
        "{doc}"
    );
    // The ledger there now passes its own question.
    let now = l.command().arg("events").output().unwrap();
    let line: Value =
        serde_json::from_str(String::from_utf8_lossy(&now.stdout).lines().next().unwrap()).unwrap();
    let (status, doc) = call(&s, Some(&agent), &check(line["ledger"].as_str().unwrap()));
    assert_eq!((status, &doc["gate"]), (200, &json!("pass")), "{doc}");
}

#[test]
fn tokens_guessed_at_the_inbox_count_against_the_address_as_on_the_api() {
    let l = Ledger::new();
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    l.log("ci-deploy", "Ship it?");
    let s = Served::start(&l, &[]);
    for n in 0..20 {
        let guess = format!("qtok_{n:064x}");
        let reply = s.request("GET", &format!("/?token={guess}"), &[], "");
        assert_eq!(reply.status, 401, "{reply:?}");
    }
    // Past the limit the address is slowed: the next guess on the ledger's API is told
    // to wait, while dana's own link still opens her inbox from here.
    let list =
        json!({"op": "list", "args": {"stage": null, "status": null, "group": null, "ids": null}});
    let guess = format!("qtok_{:064x}", 99);
    let (status, doc) = call(&s, Some(&guess), &list);
    assert_eq!(
        (status, &doc["error_code"]),
        (429, &json!("unavailable")),
        "{doc}"
    );
    let reply = s.request("GET", &format!("/?token={dana}"), &[], "");
    assert_eq!(reply.status, 303, "{reply:?}");
    let (status, doc) = call(&s, Some(&dana), &list);
    assert_eq!(status, 200, "{doc}");
}

/// Every request the command line sends only with direct access (groups, people's links,
/// tokens, routing policy, reset), sent by hand to `/v1/call` with each kind of token:
/// refused as `forbidden`, recorded, and the ledger as it was.
#[test]
fn what_takes_direct_access_is_forbidden_over_the_wire_to_every_token() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    l.ok(["group", "create", "release", "--admins", "dana"]);
    let s = Served::start(&l, &[]);
    let as_dana = json!({"person": "dana"});
    let requests = [
        json!({"op": "group", "args": {"identity": as_dana, "name": "mine",
               "change": {"create": {"admins": ["dana"]}}, "people": ["dana"]}}),
        json!({"op": "group", "args": {"identity": as_dana, "name": "release",
               "change": "add", "people": ["mallory"]}}),
        json!({"op": "people", "args": {"identity": as_dana, "name": "dana",
               "channel_id": "telegram:7", "link": true}}),
        json!({"op": "token", "args": {"action": "create", "name": "more",
               "grant": {"person": "dana"}, "expires_in": null}}),
        json!({"op": "token", "args": {"action": "list"}}),
        json!({"op": "token", "args": {"action": "revoke", "name": "ci-runner"}}),
        json!({"op": "policy", "args": {"action": "set", "stage": "*", "to": ["dana"]}}),
        json!({"op": "policy", "args": {"action": "list"}}),
        json!({"op": "reset", "args": {"confirmed": true}}),
    ];
    let before = |l: &Ledger| {
        let tokens = l.ok(["token", "list"])["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["name"].clone(), t["role"].clone(), t["person"].clone()))
            .collect::<Vec<_>>();
        (tokens, l.ok(["people", "list"]))
    };
    let was = before(&l);
    let refusals = crate::mcp_http::refusals;
    for (holder, name) in [(&agent, "ci-runner"), (&dana, "dana")] {
        for body in &requests {
            let (status, doc) = call(&s, Some(holder), body);
            assert_eq!(status, 403, "{name}: {body}: {doc}");
            assert_eq!(doc["error_code"], "forbidden", "{name}: {body}: {doc}");
            let last = refusals(&l).last().cloned().unwrap();
            assert_eq!(last["answered_by"], name, "{name}: {body}: {last}");
        }
    }
    assert_eq!(refusals(&l).len(), 2 * requests.len());
    assert_eq!(before(&l), was, "nothing changed");
    assert_eq!(l.ok(["policy", "list"])["count"], 0, "no policy set");
    // No group "mine" was made: it can be made now, by whoever has the ledger.
    l.ok(["group", "create", "mine", "--admins", "root"]);
}

#[test]
fn every_question_names_who_logged_it_on_the_question_and_its_logged_event() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let s = Served::start(&l, &[]);
    let logged = |token: &str, text: &str| {
        let (status, doc) = call(&s, Some(token), &log("ci", text));
        assert_eq!(status, 200, "{doc}");
        doc["question_id"].as_i64().unwrap()
    };
    let by_agent = logged(&agent, "Deploy build 42?");
    let by_dana = logged(&dana, "Tag the release?");
    // A name the request gives for it is not the caller's: the door sets it.
    let mut claimed = log("ci", "Who asked?");
    claimed["args"]["draft"]["logged_by"] = json!("dana");
    let (status, doc) = call(&s, Some(&agent), &claimed);
    assert_eq!(status, 200, "{doc}");
    let claimed = doc["question_id"].as_i64().unwrap();
    let direct = l.ok([
        "--by",
        "ana",
        "log",
        "--stage",
        "ci",
        "--question",
        "Which database?",
    ])["question_id"]
        .as_i64()
        .unwrap();
    for (id, who) in [
        (by_agent, "ci-runner"),
        (by_dana, "dana"),
        (claimed, "ci-runner"),
        (direct, "ana"),
    ] {
        assert_eq!(l.question(id)["logged_by"], who, "question {id}");
        let events = l.ok(["history", "--id", &id.to_string()])["events"].clone();
        assert_eq!(events[0]["event"], "logged");
        assert_eq!(events[0]["after"]["logged_by"], who, "{events}");
    }
    // Over the wire the agent sees it too, as the command line prints it.
    let (_, listed) = call(&s, Some(&agent), &list_all());
    let names: Vec<&str> = listed["questions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|q| q["logged_by"].as_str())
        .collect();
    assert_eq!(names, ["ci-runner", "dana", "ci-runner", "ana"]);
}

fn list_all() -> Value {
    json!({"op": "list", "args": {"stage": null, "status": null, "group": null, "ids": null}})
}

#[test]
fn a_refusal_is_recorded_in_the_stage_it_was_about() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let id = l.log("ci-1", "Deploy build 42?");
    let s = Served::start(&l, &[]);
    for request in [
        json!({"op": "clear", "args": {"stage": "ci-1"}}),
        json!({"op": "accept_defaults", "args": {"stage": "ci-1", "include_required": true}}),
        json!({"op": "import", "args": {"stage": "ci-1", "text": "{}", "format": null,
               "force": false}}),
    ] {
        let (status, doc) = call(&s, Some(&agent), &request);
        assert_eq!(status, 403, "{request}: {doc}");
    }
    let events = l.ok(["history", "--stage", "ci-1"])["events"].clone();
    let refused: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "refused")
        .map(|e| e["detail"]["refused"].as_str().unwrap())
        .collect();
    assert_eq!(refused, ["clear", "accept-defaults", "import"], "{events}");
    assert!(l.question(id)["status"] == "pending");
}
