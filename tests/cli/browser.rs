//! `serve` as a person uses it: the real page in a real (headless) Chromium, driven
//! through chromedriver. Chromium and chromedriver must be installed (`.ci/run` installs
//! them): these tests fail, never pass, without them.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use crate::common::{Ledger, BIN, NOW};
use crate::serve::Served;

/// One browser at a time: two cores are shared with the rest of the suite.
static ONE_BROWSER: Mutex<()> = Mutex::new(());

fn find(program: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(program))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "{program} is not installed, and the browser tests need it: \
                 apt-get install -y chromium chromium-driver (.ci/run does)"
            )
        })
}

/// chromedriver on a free port, stopped when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    fn start() -> Driver {
        let chromedriver = find("chromedriver");
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

/// Runs `test` with a fresh headless Chromium (JavaScript on or off).
fn with_browser<F, Fut>(javascript: bool, test: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let _one = ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let chromium = find("chromium");
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
async fn eventually<F, Fut>(within: Duration, what: &str, mut check: F) -> Duration
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

async fn present(c: &Client, css: &str) -> bool {
    c.find_all(Locator::Css(css))
        .await
        .is_ok_and(|found| !found.is_empty())
}

async fn text(c: &Client, css: &str) -> String {
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

#[test]
fn screenshots_of_the_inbox_on_a_desktop_and_a_phone() {
    let l = Ledger::new();
    l.log_with(
        "design",
        "Which database should we use?",
        &[
            "--header",
            "Database",
            "--group",
            "Storage",
            "--context",
            "We expect 10k users; ops has run PostgreSQL before.",
            "--options-json",
            r#"[{"label":"PostgreSQL","description":"Shared by several machines","recommended":true},{"label":"SQLite","description":"One file, no server"},{"label":"MongoDB"}]"#,
        ],
    );
    l.log_with(
        "design",
        "What should we call the service?",
        &["--header", "Naming", "--proposed", "orders"],
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
    let served = Served::start(&l, &[]);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let dir2 = dir.clone();
    with_browser(true, |c| async move {
        c.goto(&served.url).await.unwrap();
        for (name, width, height) in [("inbox-desktop", 1280, 1000), ("inbox-phone", 390, 1100)] {
            c.set_window_size(width, height).await.unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            // Nothing wider than the window: no sideways scrolling on a phone.
            let wide = c
                .execute(
                    "return document.documentElement.scrollWidth <= window.innerWidth",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(
                wide,
                json!(true),
                "{name}: the page is wider than {width} px"
            );
            let png = c.screenshot().await.unwrap();
            assert!(png.starts_with(b"\x89PNG"), "{name}");
            std::fs::write(dir2.join(format!("{name}.png")), png).unwrap();
        }
    });
    assert!(dir.join("inbox-phone.png").is_file());
}
