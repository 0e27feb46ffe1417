//! `serve` as a person uses it: the real page in a real (headless) Chromium, driven
//! through chromedriver. Chromium and chromedriver must be installed (`.ci/run` installs
//! them): these tests fail, never pass, without them.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use crate::common::{Ledger, BIN, NOW};
use crate::serve::Served;

/// One browser at a time: two cores are shared with the rest of the suite.
static ONE_BROWSER: Mutex<()> = Mutex::new(());

fn find(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

/// chromedriver on a free port, stopped when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    fn start() -> Driver {
        let chromedriver = find("chromedriver").expect("the test checked chromium_here()");
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        // Ready when its /status says so, not merely when it listens.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ready(port) {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not become ready"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

fn ready(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let asked = stream
        .write_all(format!("GET /status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes());
    if asked.is_err() {
        return false;
    }
    // chromedriver may keep the connection open: read until the answer is in.
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n @ 1..) = stream.read(&mut chunk) {
        reply.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&reply).replace(' ', "");
        if text.contains("\"ready\":true") {
            return true;
        }
        if text.contains("\"ready\":false") {
            return false;
        }
    }
    false
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Whether Chromium and chromedriver are installed; where not, the test is skipped, and says
/// so (`common::skip`; under CI they are required). Every browser test begins with it.
pub(crate) fn chromium_here() -> bool {
    let here = find("chromium").is_some() && find("chromedriver").is_some();
    if !here {
        crate::common::skip(
            "chromium or chromedriver is not installed: apt-get install -y chromium \
             chromium-driver (.ci/run does)",
        );
    }
    here
}

/// Runs `test` with a fresh headless Chromium (JavaScript on or off).
pub(crate) fn with_browser<F, Fut>(javascript: bool, test: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    with_browser_args(javascript, &[], test);
}

/// As `with_browser`, with more of Chromium's flags.
pub(crate) fn with_browser_args<F, Fut>(javascript: bool, extra: &[&str], test: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let _one = ONE_BROWSER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let chromium = find("chromium").expect("the test checked chromium_here()");
    let driver = Driver::start();
    let mut args = vec![
        "--headless=new",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--hide-scrollbars",
    ];
    if is_root() {
        args.push("--no-sandbox");
    }
    args.extend_from_slice(extra);
    let mut options = json!({ "args": args, "binary": chromium });
    if !javascript {
        options["prefs"] = json!({ "profile.managed_default_content_settings.javascript": 2 });
    }
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), options);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        // A loaded machine may fail to start Chromium once: try again before failing.
        let mut tries = 0;
        let client = loop {
            tries += 1;
            match ClientBuilder::new(connector.clone())
                .capabilities(caps.clone())
                .connect(&driver.url)
                .await
            {
                Ok(client) => break client,
                Err(e) if tries < 3 => {
                    eprintln!("starting Chromium failed ({e}); trying again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => panic!("no Chromium session after {tries} tries: {e}"),
            }
        };
        test(client.clone()).await;
        let _ = client.close().await;
    });
}

/// Waits up to `within` for `check` to hold, polling; how long it took.
pub(crate) async fn eventually<F, Fut>(within: Duration, what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if check().await {
            return start.elapsed();
        }
        assert!(start.elapsed() < within, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) async fn present(c: &Client, css: &str) -> bool {
    c.find_all(Locator::Css(css))
        .await
        .is_ok_and(|found| !found.is_empty())
}

pub(crate) async fn text(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .text()
        .await
        .unwrap()
}

fn questions(l: &Ledger, args: &[&str]) -> serde_json::Value {
    l.ok(args)
}

#[test]
fn a_person_answers_in_chromium_and_another_process_s_gate_opens() {
    if !chromium_here() {
        return;
    }
    let l = Ledger::new();
    let id = l.log_with(
        "release",
        "Which database should we use?",
        &[
            "--option",
            "PostgreSQL (Recommended)",
            "--option",
            "SQLite",
            "--context",
            "<script>document.title='pwned'</script> 10k users",
        ],
    );
    let served = Served::start(&l, &["--user", "carol"]);
    let mut gate = Command::new(BIN)
        .current_dir(l.dir.path())
        .env("QUESTIONS_NOW", NOW)
        .env_remove("QUESTIONS_DB")
        .arg("--db")
        .arg(l.db())
        .args(["check", "--stage", "release", "--wait", "--timeout", "120"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert!(gate.try_wait().unwrap().is_none(), "the gate waits");

    with_browser(true, |c| async move {
        c.goto(&served.url).await.unwrap();
        // The token left the address bar for a cookie.
        let url = c.current_url().await.unwrap();
        assert_eq!(url.as_str(), format!("{}/", served.base()));
        let card = format!("#q-{id}");
        // The ledger's text is shown as text, never run.
        let context = text(&c, &format!("{card} .context")).await;
        assert!(context.starts_with("<script>"), "{context}");
        assert!(!c.title().await.unwrap().contains("pwned"));
        assert!(text(&c, &format!("{card} .rec"))
            .await
            .contains("Recommended"));

        c.find(Locator::Css(&format!("label[for=q{id}o1]")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        c.find(Locator::Css(&format!("{card} button.primary")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        eventually(
            Duration::from_secs(10),
            "the answer is confirmed",
            || async { present(&c, "#flash.done").await },
        )
        .await;
        assert_eq!(text(&c, "#flash").await, format!("Question {id} answered."));
        assert!(
            !present(&c, &card).await,
            "the answered question left the inbox"
        );
    });

    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = gate.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "check --wait did not pass");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(0), "the gate passes");
    let q = l.question(id);
    assert_eq!(q["answer"], "SQLite");
    assert_eq!(q["channel"], "web");
    assert_eq!(q["answered_by"], "carol");
}

#[test]
fn the_page_follows_the_ledger_live_without_a_reload() {
    if !chromium_here() {
        return;
    }
    let l = Ledger::new();
    let first = l.log("intake", "What is the goal?");
    let served = Served::start(&l, &[]);
    with_browser(true, |c| async move {
        c.goto(&served.url).await.unwrap();
        assert!(present(&c, &format!("#q-{first}")).await);
        // Let the page start following.
        eventually(Duration::from_secs(10), "the script runs", || async {
            present(&c, "body[data-live]").await
        })
        .await;
        // Marks the document: a reload would lose the mark.
        c.execute("document.body.dataset.mark = 'same-page'", vec![])
            .await
            .unwrap();

        let logged = questions(
            &l,
            &["log", "--stage", "design", "--question", "Which cloud?"],
        );
        let new = logged["question_id"].as_i64().unwrap();
        let took = eventually(
            Duration::from_secs(5),
            "the logged question appears",
            || async { present(&c, &format!("#q-{new}")).await },
        )
        .await;
        assert!(
            took < Duration::from_millis(1500),
            "appeared after {took:?}"
        );

        questions(
            &l,
            &["answer", "--id", &first.to_string(), "--answer", "A blog"],
        );
        let took = eventually(
            Duration::from_secs(5),
            "the answered question leaves",
            || async { !present(&c, &format!("#q-{first}")).await },
        )
        .await;
        assert!(took < Duration::from_millis(1500), "left after {took:?}");
        assert!(text(&c, "#summary").await.starts_with("1 pending question"));
        assert!(
            present(&c, "body[data-mark='same-page']").await,
            "no reload"
        );
    });
}

#[test]
fn without_javascript_the_second_answer_is_told_what_is_on_record() {
    if !chromium_here() {
        return;
    }
    let l = Ledger::new();
    let id = l.log_with(
        "design",
        "Which database should we use?",
        &["--option", "PostgreSQL (Recommended)", "--option", "SQLite"],
    );
    let served = Served::start(&l, &[]);
    with_browser(false, |c| async move {
        c.goto(&served.url).await.unwrap();
        assert!(!present(&c, "body[data-live]").await, "JavaScript is off");
        // Someone else answers while this page is open.
        questions(
            &l,
            &[
                "--by",
                "dave",
                "answer",
                "--id",
                &id.to_string(),
                "--answer",
                "PostgreSQL",
            ],
        );
        c.find(Locator::Css(&format!("label[for=q{id}o1]")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        c.find(Locator::Css(&format!("#q-{id} button.primary")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        eventually(Duration::from_secs(10), "the refusal is shown", || async {
            present(&c, "#flash.failed").await
        })
        .await;
        let said = text(&c, "#flash").await;
        assert!(
            said.contains("already answered: \"PostgreSQL\" (by dave, via cli)"),
            "{said}"
        );
        assert_eq!(l.question(id)["answer"], "PostgreSQL");
    });
}

/// Types `keys` into whatever has the focus, as a person at the keyboard would.
async fn press(c: &Client, keys: &str) {
    c.active_element()
        .await
        .unwrap()
        .send_keys(keys)
        .await
        .unwrap();
}

/// The id of the question holding the focus ("" for none).
async fn focused(c: &Client) -> String {
    let id = c
        .execute(
            "const q = document.activeElement && document.activeElement.closest('details.question'); \
             return q ? q.id : '';",
            vec![],
        )
        .await
        .unwrap();
    id.as_str().unwrap_or("").to_string()
}

async fn js(c: &Client, script: &str) -> serde_json::Value {
    c.execute(script, vec![]).await.unwrap()
}

/// Returns once every transition and animation running on the page has finished and the
/// page has been drawn twice since: what a click or a change of layout did is on screen.
async fn settled(c: &Client) {
    c.execute_async(
        "const done = arguments[arguments.length - 1]; \
         Promise.all(document.getAnimations().map(a => a.finished.catch(() => {}))).then(() => \
         requestAnimationFrame(() => requestAnimationFrame(() => done(true))));",
        vec![],
    )
    .await
    .unwrap();
}

fn events(l: &Ledger, id: i64) -> Vec<serde_json::Value> {
    l.ok(["history", "--id", &id.to_string()])["events"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn nothing_is_chosen_for_the_person_and_accepting_the_proposal_is_recorded_as_such() {
    if !chromium_here() {
        return;
    }
    let l = Ledger::new();
    let db = l.log_with(
        "design",
        "Which database should we use?",
        &[
            "--option",
            "PostgreSQL (Recommended)",
            "--option",
            "SQLite",
            "--proposed",
            "SQLite",
        ],
    );
    let name = l.log_with(
        "design",
        "What should we call the service?",
        &["--proposed", "orders"],
    );
    let regions = l.log_with(
        "design",
        "Which regions?",
        &[
            "--multi-select",
            "--option",
            "Europe (Recommended)",
            "--option",
            "Asia",
            "--proposed",
            "Europe",
        ],
    );
    let served = Served::start(&l, &["--user", "carol"]);
    // Without JavaScript: the plain forms.
    with_browser(false, |c| async move {
        c.goto(&served.url).await.unwrap();
        // Open every question: nothing is chosen or typed in any of them.
        js(
            &c,
            "document.querySelectorAll('details').forEach(d => d.open = true)",
        )
        .await;
        assert_eq!(
            js(
                &c,
                "return document.querySelectorAll('input:checked').length"
            )
            .await,
            json!(0),
            "an option is chosen on load"
        );
        assert_eq!(
            js(
                &c,
                "return Array.from(document.querySelectorAll('textarea, input[type=text]')).map(t => t.value).join('')"
            )
            .await,
            json!(""),
            "text is filled in on load"
        );
        // The proposal and the recommendation are shown for what they are.
        assert_eq!(
            text(&c, &format!("#q-{db} .proposed")).await,
            "Proposed: SQLite"
        );
        assert!(text(&c, &format!("#q-{db} .rec"))
            .await
            .contains("Recommended"));
        // "Answer" with nothing chosen records nothing.
        c.find(Locator::Css(&format!("#q-{db} button.primary")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        eventually(Duration::from_secs(10), "the refusal is shown", || async {
            present(&c, "#flash.failed").await
        })
        .await;
        // Taking the proposal is an action of its own.
        js(
            &c,
            "document.querySelectorAll('details').forEach(d => d.open = true)",
        )
        .await;
        c.find(Locator::Css(&format!("#q-{name} button.accept")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        eventually(
            Duration::from_secs(10),
            "the answer is confirmed",
            || async { present(&c, "#flash.done").await },
        )
        .await;
        assert_eq!(
            text(&c, "#flash").await,
            format!("Question {name} answered with its proposal.")
        );
        assert!(!present(&c, &format!("#q-{name}")).await);
    });
    assert_eq!(l.question(db)["status"], "pending");
    assert_eq!(l.question(regions)["status"], "pending");
    let q = l.question(name);
    assert_eq!(q["answer"], "orders");
    assert_eq!(q["channel"], "web");
    assert_eq!(q["answered_by"], "carol");
    // The history says the person accepted the proposal, not that they typed it.
    let last = events(&l, name).pop().unwrap();
    assert_eq!(last["event"], "defaulted");
    assert_eq!(last["channel"], "web");
    assert_eq!(last["answered_by"], "carol");
}

#[test]
fn a_deadline_is_shown_with_what_happens_then_and_counted_down() {
    if !chromium_here() {
        return;
    }
    let l = Ledger::new();
    let calm = l.log("release", "Who writes the release notes?");
    let urgent = l.log_with(
        "release",
        "Ship the beta on Friday?",
        &[
            "--option",
            "Yes",
            "--option",
            "No",
            "--proposed",
            "No",
            "--expires-in",
            "5m",
            "--on-expiry",
            "default",
        ],
    );
    let served = Served::start(&l, &[]);
    with_browser(true, |c| async move {
        c.goto(&served.url).await.unwrap();
        // The question about to answer itself comes first among the required.
        let order = js(
            &c,
            "return Array.from(document.querySelectorAll('details.question')).map(q => q.id)",
        )
        .await;
        assert_eq!(order, json!([format!("q-{urgent}"), format!("q-{calm}")]));
        let line = text(&c, &format!("#q-{urgent} .deadline")).await;
        assert!(
            line.ends_with(": answered “No” unless you answer"),
            "{line}"
        );
        let due = format!("#q-{urgent} .deadline .due");
        let first = text(&c, &due).await;
        assert!(
            first.starts_with("in 4 min") || first == "in 5 min 0 s",
            "{first}"
        );
        // The countdown goes on without a reload.
        eventually(Duration::from_secs(5), "the time left goes down", || {
            let c = c.clone();
            let due = due.clone();
            let first = first.clone();
            async move {
                let now = text(&c, &due).await;
                now.starts_with("in 4 min") && now != first
            }
        })
        .await;
        assert!(!present(&c, &format!("#q-{calm} .due")).await);
    });
}

#[test]
fn context_markdown_is_rendered_and_nothing_in_it_loads_or_runs() {
    if !chromium_here() {
        return;
    }
    let l = Ledger::new();
    let context = "We expect **10k users**; ops knows `PostgreSQL`.\n\n\
                   - backups nightly\n- one region\n\n\
                   ```\nmax_connections = 200\n```\n\n\
                   <script>document.title='script-ran'</script>\n\n\
                   See <img src=\"/img-loaded\" onerror=\"document.title='img-ran'\"> and \
                   ![logo](/logo-loaded.png) and [the runbook](javascript:document.title='link-ran').";
    let id = l.log_with(
        "design",
        "Which database should we use?",
        &["--context", context],
    );
    let served = Served::start(&l, &[]);
    with_browser(true, |c| async move {
        c.goto(&served.url).await.unwrap();
        let card = format!("#q-{id} .context");
        assert_eq!(text(&c, &format!("{card} strong")).await, "10k users");
        assert_eq!(
            js(
                &c,
                &format!("return document.querySelectorAll('{card} li').length")
            )
            .await,
            json!(2)
        );
        let mono = js(
            &c,
            &format!(
                "return getComputedStyle(document.querySelector('{card} pre code')).fontFamily"
            ),
        )
        .await;
        assert!(mono.as_str().unwrap().contains("monospace"), "{mono}");
        // The script, the image and the link are there as text only.
        assert!(text(&c, &card)
            .await
            .contains("<script>document.title='script-ran'</script>"));
        for tag in ["script", "img", "a", "iframe"] {
            assert!(!present(&c, &format!("{card} {tag}")).await, "a <{tag}>");
        }
        js(&c, "window.beforeTheClick = true").await;
        c.find(Locator::Css(&format!("{card} .link")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        // The click's work is done once the page has settled; a navigation it started
        // (which chromedriver's click waits for) would have left this document, and the
        // mark with it.
        settled(&c).await;
        assert_eq!(
            js(&c, "return window.beforeTheClick === true").await,
            json!(true),
            "the click left the page"
        );
        let title = c.title().await.unwrap();
        assert!(title.starts_with("Questions"), "something ran: {title}");
        let fetched = js(
            &c,
            "return performance.getEntriesByType('resource').map(r => r.name).join(' ')",
        )
        .await;
        let fetched = fetched.as_str().unwrap();
        assert!(
            !fetched.contains("loaded"),
            "an image was fetched: {fetched}"
        );
    });
}

#[test]
fn three_questions_answered_from_the_keyboard_in_the_compact_view() {
    if !chromium_here() {
        return;
    }
    let l = Ledger::new();
    let first = l.log_with(
        "design",
        "Which database should we use?",
        &["--option", "PostgreSQL", "--option", "SQLite"],
    );
    let optional = l.log_with(
        "design",
        "Any naming preferences?",
        &["--required", "false"],
    );
    let second = l.log_with(
        "release",
        "How many replicas?",
        &["--option", "1", "--option", "3", "--proposed", "3"],
    );
    let third = l.log("release", "What goes in the release notes?");
    let served = Served::start(&l, &["--user", "erin"]);
    let lr = &l;
    with_browser(true, |c| async move {
        c.goto(&served.url).await.unwrap();
        eventually(Duration::from_secs(10), "the script runs", || async {
            present(&c, "body[data-live]").await
        })
        .await;
        // Compact: one line a question, grouped by stage with counts, only the first
        // required one open.
        assert_eq!(
            js(&c, "return Array.from(document.querySelectorAll('.stage-head')).map(h => h.textContent)").await,
            json!(["design 2 questions · 1 required", "release 2 questions · 2 required"])
        );
        let open = js(
            &c,
            "return Array.from(document.querySelectorAll('details.question[open]')).map(q => q.id)",
        )
        .await;
        assert_eq!(open, json!([format!("q-{first}")]));
        let tall = js(
            &c,
            "return Math.max(...Array.from(document.querySelectorAll('details.question:not([open])')).map(q => q.getBoundingClientRect().height))",
        )
        .await;
        assert!(
            tall.as_f64().unwrap() < 60.0,
            "a closed question is {tall} px"
        );
        // The focus is on the first required question, and a question logged meanwhile
        // does not take it away.
        assert_eq!(focused(&c).await, format!("q-{first}"));
        let late = lr.log_with(
            "release",
            "Logged while answering?",
            &["--required", "false"],
        );
        eventually(
            Duration::from_secs(5),
            "the logged question appears",
            || async { present(&c, &format!("#q-{late}")).await },
        )
        .await;
        assert_eq!(focused(&c).await, format!("q-{first}"));

        // "o" closes it; an option's number opens it again and chooses.
        press(&c, "o").await;
        assert!(present(&c, &format!("#q-{first}:not([open])")).await);
        // 1: the second option by its number, Enter to answer.
        press(&c, "2").await;
        assert!(present(&c, &format!("#q-{first}[open]")).await);
        assert!(present(&c, &format!("#q{first}o1:checked")).await);
        press(&c, &Key::Enter.to_string()).await;
        eventually(Duration::from_secs(10), "the first is answered", || async {
            !present(&c, &format!("#q-{first}")).await
        })
        .await;
        // The next required question has the focus, open: not the optional one between.
        eventually(
            Duration::from_secs(5),
            "the next required has the focus",
            || async { focused(&c).await == format!("q-{second}") },
        )
        .await;
        assert!(present(&c, &format!("#q-{second}[open]")).await);
        assert!(present(&c, &format!("#q-{optional}:not([open])")).await);

        // 2: "a" takes the proposal.
        press(&c, "a").await;
        eventually(
            Duration::from_secs(10),
            "the second is answered",
            || async { !present(&c, &format!("#q-{second}")).await },
        )
        .await;
        eventually(
            Duration::from_secs(5),
            "the third has the focus",
            || async { focused(&c).await == format!("q-{third}") },
        )
        .await;

        // 3: Tab into the text, type, Ctrl+Enter.
        press(&c, &Key::Tab.to_string()).await;
        press(&c, "Keyboard only").await;
        press(&c, &format!("{}{}", Key::Control, Key::Enter)).await;
        eventually(Duration::from_secs(10), "the third is answered", || async {
            !present(&c, &format!("#q-{third}")).await
        })
        .await;
        // No required question left: the next one in the page has the focus.
        eventually(
            Duration::from_secs(5),
            "the next question has the focus",
            || async { focused(&c).await == format!("q-{late}") },
        )
        .await;
        assert!(text(&c, "#summary")
            .await
            .starts_with("2 pending questions, 0 required"));
    });
    assert_eq!(l.question(first)["answer"], "SQLite");
    assert_eq!(l.question(second)["answer"], "3");
    assert_eq!(events(&l, second).pop().unwrap()["event"], "defaulted");
    assert_eq!(l.question(third)["answer"], "Keyboard only");
    for id in [first, second, third] {
        assert_eq!(l.question(id)["channel"], "web");
        assert_eq!(l.question(id)["answered_by"], "erin");
    }
    assert_eq!(l.question(optional)["status"], "pending");
}

/// Eight questions as a person meets them: two required, one about to answer itself.
fn eight_questions(l: &Ledger) {
    l.log_with(
        "design",
        "Which database should we use?",
        &[
            "--header",
            "Database",
            "--group",
            "Storage",
            "--context",
            "We expect **10k users**; ops has run `PostgreSQL` before.\n\n- backups nightly\n- one region",
            "--options-json",
            r#"[{"label":"PostgreSQL","description":"Shared by several machines","recommended":true},{"label":"SQLite","description":"One file, no server"},{"label":"MongoDB"}]"#,
        ],
    );
    l.log_with(
        "design",
        "Ship the beta to external testers on Friday?",
        &[
            "--option",
            "Yes",
            "--option",
            "No",
            "--proposed",
            "No",
            "--expires-in",
            "2h",
            "--on-expiry",
            "default",
            "--context",
            "The release checklist has **2 open items**.",
        ],
    );
    l.log_with(
        "design",
        "What should we call the service?",
        &[
            "--header",
            "Naming",
            "--proposed",
            "orders",
            "--required",
            "false",
        ],
    );
    l.log_with(
        "intake",
        "Keep the old API for a deprecation period?",
        &[
            "--required",
            "false",
            "--proposed",
            "6 months",
            "--expires-in",
            "30m",
            "--on-expiry",
            "skip",
        ],
    );
    l.log_with(
        "intake",
        "Who is the primary user?",
        &["--required", "false", "--proposed", "Support agents"],
    );
    l.log_with(
        "release",
        "Which license for the public SDK?",
        &[
            "--required",
            "false",
            "--option",
            "Apache-2.0 with the patent grant the legal team asked for",
            "--option",
            "MIT",
        ],
    );
    l.log_with(
        "release",
        "Which regions must we serve at launch?",
        &[
            "--required",
            "false",
            "--multi-select",
            "--option",
            "Europe",
            "--option",
            "North America",
            "--option",
            "Asia",
        ],
    );
    l.log_with(
        "release",
        "Publish the changelog on the blog?",
        &["--required", "false", "--option", "Yes", "--option", "No"],
    );
}

#[test]
fn screenshots_of_the_inbox_on_a_desktop_and_a_phone() {
    if !chromium_here() {
        return;
    }
    let l = Ledger::new();
    eight_questions(&l);
    let served = Served::start(&l, &[]);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let dir2 = dir.clone();
    with_browser(true, |c| async move {
        c.goto(&served.url).await.unwrap();
        for (name, width, height) in [("desktop", 1280, 1000), ("phone", 390, 844)] {
            c.set_window_size(width, height).await.unwrap();
            for view in ["compact", "open"] {
                // Compact: every question closed; open: the first required one, as the
                // page opens.
                js(
                    &c,
                    "document.querySelectorAll('details').forEach(d => d.open = false); \
                     const f = document.activeElement; if (f) f.blur(); window.scrollTo(0, 0);",
                )
                .await;
                if view == "open" {
                    js(
                        &c,
                        "document.querySelector('details.question.required').open = true",
                    )
                    .await;
                }
                settled(&c).await;
                // Nothing wider than the window: no sideways scrolling on a phone.
                let wide = js(
                    &c,
                    "return document.documentElement.scrollWidth <= window.innerWidth",
                )
                .await;
                assert_eq!(
                    wide,
                    json!(true),
                    "{name}: the page is wider than {width} px"
                );
                let png = c.screenshot().await.unwrap();
                assert!(png.starts_with(b"\x89PNG"), "{name}");
                std::fs::write(dir2.join(format!("inbox-{name}-{view}.png")), png).unwrap();
            }
        }
        // On a phone, a long option label wraps beside its button, never below it.
        js(
            &c,
            "document.querySelectorAll('details').forEach(d => d.open = true)",
        )
        .await;
        let beside = js(
            &c,
            "const l = Array.from(document.querySelectorAll('label.option')).find(l => l.querySelector('.label').textContent.startsWith('Apache')); \
             const input = l.querySelector('input').getBoundingClientRect(); \
             const text = l.querySelector('.label').getBoundingClientRect(); \
             return [text.left >= input.right, text.height > 30];",
        )
        .await;
        assert_eq!(
            beside,
            json!([true, true]),
            "the long label wraps below its button"
        );
    });
    for name in ["desktop", "phone"] {
        for view in ["compact", "open"] {
            assert!(dir.join(format!("inbox-{name}-{view}.png")).is_file());
        }
    }
}

#[test]
fn on_a_phone_the_two_required_questions_are_answered_without_scrolling_past_the_others() {
    if !chromium_here() {
        return;
    }
    let l = Ledger::new();
    eight_questions(&l);
    let served = Served::start(&l, &["--user", "dana"]);
    let lr = &l;
    with_browser(true, |c| async move {
        c.set_window_size(390, 844).await.unwrap();
        c.goto(&served.url).await.unwrap();
        eventually(Duration::from_secs(10), "the script runs", || async {
            present(&c, "body[data-live]").await
        })
        .await;
        let required: Vec<i64> = lr
            .all()
            .iter()
            .filter(|q| q["required"] == true)
            .map(|q| q["id"].as_i64().unwrap())
            .collect();
        assert_eq!(required.len(), 2);
        // The one about to answer itself is open first; the other follows it.
        let (beta, db) = (required[1], required[0]);
        for (id, option) in [(beta, 0), (db, 1)] {
            let card = format!("#q-{id}");
            eventually(
                Duration::from_secs(5),
                "the required question is open",
                || {
                    let c = c.clone();
                    let card = card.clone();
                    async move { present(&c, &format!("{card}[open]")).await }
                },
            )
            .await;
            // It starts on the screen, below the page's header, without the person
            // scrolling past anything else (what is below is its own).
            let on_screen = js(
                &c,
                &format!(
                    "const h = document.querySelector('header.top').getBoundingClientRect().bottom; \
                     const s = document.querySelector('{card} > summary').getBoundingClientRect(); \
                     return [s.top >= h - 1, s.bottom <= window.innerHeight, h, s.top, window.scrollY];"
                ),
            )
            .await;
            let on_screen = json!([on_screen[0], on_screen[1]]);
            assert_eq!(on_screen, json!([true, true]), "{card} needs scrolling");
            c.find(Locator::Css(&format!("label[for=q{id}o{option}]")))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            c.find(Locator::Css(&format!("{card} button.primary")))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            eventually(Duration::from_secs(10), "the answer is recorded", || {
                let c = c.clone();
                let card = card.clone();
                async move { !present(&c, &card).await }
            })
            .await;
        }
        assert!(text(&c, "#summary")
            .await
            .starts_with("6 pending questions, 0 required"));
    });
    assert_eq!(l.ok(["check", "--stage", "design"])["gate"], "pass");
    // Only what the person chose was recorded.
    let answered: Vec<(String, String)> = l
        .all()
        .iter()
        .filter(|q| q["status"] != "pending")
        .map(|q| {
            (
                q["question"].as_str().unwrap().to_string(),
                q["answer"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        answered,
        vec![
            (
                "Which database should we use?".to_string(),
                "SQLite".to_string()
            ),
            (
                "Ship the beta to external testers on Friday?".to_string(),
                "Yes".to_string()
            ),
        ]
    );
}

/// Enter in a reason field does what the field's own button does, with JavaScript on or
/// off: a decline's reason declines (never skips), a rejection's reason rejects (never
/// approves). Ctrl+Enter there does the same, even when an answer was typed above.
#[test]
fn enter_in_a_reason_field_does_what_its_own_button_does() {
    if !chromium_here() {
        return;
    }
    const ALICE: &str = "alice-token-0123456789";
    for javascript in [false, true] {
        let l = Ledger::new();
        let approval = |question: &str| {
            l.ok([
                "log",
                "--stage",
                "deploy",
                "--question",
                question,
                "--approval",
                "--approvers",
                "alice",
                "--min",
                "1",
                "--requester",
                "carol",
            ])["question_id"]
                .as_i64()
                .unwrap()
        };
        let skipped = l.log("design", "Which cache?");
        let declined = l.log("design", "Which region, us-east or eu-west?");
        let approved = approval("Ship build 41?");
        let rejected = approval("Ship build 42?");
        let typed = l.log("design", "Which queue?");
        let users = crate::approvals::users_file(&l, &format!("alice {ALICE}\n"), 0o600);
        let served = Served::start(&l, &["--users", &users, "--user", "operator"]);
        let url = format!("{}/?token={ALICE}", served.base());
        let enter = Key::Enter.to_string();
        let ctrl_enter = format!("{}{}", Key::Control, Key::Enter);
        // The question, the form whose field is typed in, what is typed, and the keys.
        let mut cases = vec![
            (skipped, "skip", "after the launch", enter.clone()),
            (declined, "decline", "both: we serve both", enter.clone()),
            (approved, "approve", "diff read", enter.clone()),
            (rejected, "reject", "not during the freeze", enter.clone()),
        ];
        if javascript {
            cases.push((typed, "decline", "two in one", ctrl_enter));
        }
        let lr = &l;
        with_browser(javascript, |c| async move {
            for (id, action, reason, keys) in &cases {
                c.goto(&url).await.unwrap();
                if javascript {
                    eventually(Duration::from_secs(10), "the script runs", || async {
                        present(&c, "body[data-live]").await
                    })
                    .await;
                }
                js(
                    &c,
                    "document.querySelectorAll('details').forEach(d => d.open = true)",
                )
                .await;
                if *id == typed {
                    // An answer typed, then left for a decline.
                    let answer = c.find(Locator::Id(&format!("q{id}t"))).await.unwrap();
                    answer.send_keys("Kafka").await.unwrap();
                }
                let field = format!("form[action='/q/{id}/{action}'] input[type=text]");
                let input = c.find(Locator::Css(&field)).await.unwrap();
                input.click().await.unwrap();
                input.send_keys(&format!("{reason}{keys}")).await.unwrap();
                eventually(Duration::from_secs(10), "the change is recorded", || {
                    let id = *id;
                    async move { lr.question(id)["status"] != "pending" }
                })
                .await;
            }
        });
        let q = |id: i64| l.question(id);
        let (s, d) = (q(skipped), q(declined));
        assert_eq!(
            (&s["status"], &s["skip_reason"], &s["answered_by"]),
            (
                &json!("skipped"),
                &json!("after the launch"),
                &json!("alice")
            ),
            "JavaScript {javascript}: {s}"
        );
        assert_eq!(
            (&d["status"], &d["decline_reason"], &d["answered_by"]),
            (
                &json!("declined"),
                &json!("both: we serve both"),
                &json!("alice")
            ),
            "JavaScript {javascript}: {d}"
        );
        for (id, status, vote, comment) in [
            (approved, "answered", "approve", "diff read"),
            (rejected, "declined", "reject", "not during the freeze"),
        ] {
            let a = q(id);
            let votes = &a["approval"]["votes"];
            assert_eq!(
                (
                    &a["status"],
                    &votes[0]["by"],
                    &votes[0]["vote"],
                    &votes[0]["comment"]
                ),
                (
                    &json!(status),
                    &json!("alice"),
                    &json!(vote),
                    &json!(comment)
                ),
                "JavaScript {javascript}: {a}"
            );
            assert_eq!(votes.as_array().unwrap().len(), 1, "{a}");
        }
        let t = q(typed);
        if javascript {
            assert_eq!(
                (&t["status"], &t["decline_reason"], &t["answer"]),
                (&json!("declined"), &json!("two in one"), &Value::Null),
                "{t}"
            );
        } else {
            assert_eq!(t["status"], "pending", "{t}");
        }
    }
}

/// Three things a person saw on day two: an empty answer keeps them on the card and says
/// what to do in the page's own words (no command line); a link to one question
/// (`URL#q-ID`, as `questions mcp` gives) opens that card; on a phone a closed question
/// shows its whole text, wrapped. Screenshots of each, at 1280 and 390 px, go to
/// `screenshots/inbox-day-two-*.png` in the test's target folder.
#[test]
fn an_empty_answer_a_link_to_one_question_and_whole_titles_on_a_phone() {
    if !chromium_here() {
        return;
    }
    let l = Ledger::new();
    eight_questions(&l);
    let long = "What should the release notes say about moving from the old ledger format, \
                and who signs them off before Friday's release?";
    let id = l.log_with("release", long, &[]);
    let served = Served::start(&l, &[]);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let shots = dir.clone();
    with_browser(true, |c| async move {
        let shot = |name: String| {
            let c = c.clone();
            let path = shots.join(format!("inbox-day-two-{name}.png"));
            async move {
                settled(&c).await;
                std::fs::write(path, c.screenshot().await.unwrap()).unwrap();
            }
        };
        for width in [1280, 390] {
            c.set_window_size(width, if width > 500 { 1000 } else { 844 })
                .await
                .unwrap();
            // A link to the question: its card is open, and the focus is on it.
            c.goto(&format!("{}#q-{id}", served.url)).await.unwrap();
            c.refresh().await.unwrap();
            eventually(Duration::from_secs(10), "the linked card opens", || async {
                js(
                    &c,
                    &format!("return document.getElementById('q-{id}').open"),
                )
                .await
                    == json!(true)
            })
            .await;
            let first_open = js(
                &c,
                "return document.querySelector('details.question[open]').id",
            )
            .await;
            assert_eq!(first_open, json!(format!("q-{id}")), "only the linked one");
            settled(&c).await;
            // The page scrolls the linked card into sight once it has opened it: on a
            // loaded machine that lands a frame or more after the card opens.
            let in_sight = format!(
                "const h = document.querySelector('header.top').getBoundingClientRect().bottom; \
                 return document.querySelector('#q-{id} summary').getBoundingClientRect().top >= h;"
            );
            eventually(
                Duration::from_secs(5),
                "the linked card's line is under the header",
                || async { js(&c, &in_sight).await == json!(true) },
            )
            .await;
            shot(format!("link-{width}")).await;

            // An empty answer: the card stays open, the message speaks of the page.
            c.find(Locator::Css(&format!("#q-{id} form.answer button.primary")))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            eventually(Duration::from_secs(10), "the refusal shows", || async {
                present(&c, "#flash").await
            })
            .await;
            let flash = text(&c, "#flash").await;
            assert!(flash.contains("empty"), "{flash}");
            assert!(
                !flash.contains("questions ") && !flash.contains("--"),
                "command-line advice in the browser: {flash}"
            );
            let still = js(
                &c,
                &format!("return document.getElementById('q-{id}').open"),
            )
            .await;
            assert_eq!(still, json!(true), "the card the person was on stays open");
            // Said on the card, in sight, not under the sticky header.
            let seen = js(
                &c,
                &format!(
                    "const f = document.getElementById('flash'); \
                     const h = document.querySelector('header.top').getBoundingClientRect().bottom; \
                     const r = f.getBoundingClientRect(); \
                     return [f.closest('details') === document.getElementById('q-{id}'), r.top >= h, r.bottom <= window.innerHeight];"
                ),
            )
            .await;
            assert_eq!(
                seen,
                json!([true, true, true]),
                "the refusal is not in sight"
            );
            shot(format!("empty-answer-{width}")).await;
        }

        // On a phone, closed: the whole question, wrapped.
        js(
            &c,
            "document.querySelectorAll('details').forEach(d => d.open = false); \
             const f = document.activeElement; if (f) f.blur(); window.scrollTo(0, 0);",
        )
        .await;
        settled(&c).await;
        let whole = js(
            &c,
            &format!(
                "const t = document.querySelector('#q-{id} summary .text'); \
                 const s = getComputedStyle(t); \
                 return [t.scrollWidth <= t.clientWidth, s.textOverflow, t.getBoundingClientRect().height > 30];"
            ),
        )
        .await;
        assert_eq!(
            whole,
            json!([true, "clip", true]),
            "the title is cut on a phone"
        );
        js(
            &c,
            &format!("document.getElementById('q-{id}').scrollIntoView({{block: 'center'}})"),
        )
        .await;
        shot("closed-390".into()).await;
        c.set_window_size(1280, 1000).await.unwrap();
        shot("closed-1280".into()).await;
    });
    for name in [
        "link-1280",
        "link-390",
        "empty-answer-1280",
        "empty-answer-390",
        "closed-390",
    ] {
        assert!(
            dir.join(format!("inbox-day-two-{name}.png")).is_file(),
            "{name}"
        );
    }
}
