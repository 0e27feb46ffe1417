//! A real Matrix homeserver for the Matrix relay's tests: Synapse, installed by
//! scripts/synapse into target/test-clients/synapse, started on a free loopback port
//! with a throw-away SQLite database, and its users registered with the shared-secret
//! admin API. The tests act as people with plain client-server API calls.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Whether scripts/synapse has installed Synapse.
pub(crate) fn installed() -> bool {
    python().is_some()
}

/// The Synapse's Python, when scripts/synapse has installed it.
fn python() -> Option<PathBuf> {
    let python =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-clients/synapse/bin/python");
    python.exists().then_some(python)
}

/// A running homeserver, killed on drop.
pub(crate) struct Synapse {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub(crate) url: String,
    dir: tempfile::TempDir,
    python: PathBuf,
    agent: ureq::Agent,
}

/// A registered user: their id and access token.
#[derive(Clone)]
pub(crate) struct User {
    pub(crate) id: String,
    pub(crate) token: String,
}

const SECRET: &str = "the-registration-shared-secret";

impl Synapse {
    /// Starts one, waiting until it answers; None (the test skipped, a failure under
    /// CI) when Synapse is not installed.
    pub(crate) fn start() -> Option<Synapse> {
        Synapse::start_with("{per_second: 10000, burst_count: 10000}")
    }

    /// As `start`, with `rc_message` (each user's rate of sending) as given: a test that
    /// wants Synapse's 429s.
    pub(crate) fn start_with(rc_message: &str) -> Option<Synapse> {
        let Some(python) = python() else {
            crate::common::skip("Synapse is not installed (scripts/synapse installs it)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let d = dir.path().display();
        // Rate limits far above what a test sends, but for `rc_message` when asked; a
        // password hashed with bcrypt's fewest rounds (its default, 12, spends a quarter of
        // a second of a core on each user registered).
        let high = "{per_second: 10000, burst_count: 10000}";
        let config = format!(
            "server_name: \"localhost\"\n\
             pid_file: {d}/homeserver.pid\n\
             listeners:\n  - port: {port}\n    bind_addresses: ['127.0.0.1']\n    type: http\n    \
             tls: false\n    x_forwarded: false\n    resources:\n      - names: [client]\n        \
             compress: false\n\
             database:\n  name: sqlite3\n  args:\n    database: {d}/homeserver.db\n\
             log_config: {d}/log.yaml\n\
             media_store_path: {d}/media\n\
             signing_key_path: {d}/signing.key\n\
             registration_shared_secret: \"{SECRET}\"\n\
             bcrypt_rounds: 4\n\
             report_stats: false\n\
             suppress_key_server_warning: true\n\
             trusted_key_servers: []\n\
             federation_domain_whitelist: []\n\
             url_preview_enabled: false\n\
             enable_metrics: false\n\
             presence:\n  enabled: false\n\
             rc_message: {rc_message}\n\
             rc_login:\n  address: {high}\n  account: {high}\n  failed_attempts: {high}\n\
             rc_registration: {high}\n\
             rc_joins:\n  local: {high}\n  remote: {high}\n\
             rc_invites:\n  per_room: {high}\n  per_user: {high}\n  per_issuer: {high}\n\
             rc_admin_redaction: {high}\n"
        );
        std::fs::write(dir.path().join("homeserver.yaml"), config).unwrap();
        std::fs::write(
            dir.path().join("log.yaml"),
            format!(
                "version: 1\nformatters:\n  precise:\n    format: '%(asctime)s %(name)s \
                 %(levelname)s %(message)s'\nhandlers:\n  file:\n    class: \
                 logging.FileHandler\n    filename: {d}/homeserver.log\n    formatter: \
                 precise\nroot:\n  level: WARNING\n  handlers: [file]\n\
                 disable_existing_loggers: false\n"
            ),
        )
        .unwrap();
        // The server's signing key, written as `--generate-keys` would (a second start of
        // Synapse's Python, seconds of a busy machine, for 32 random bytes): the
        // algorithm, a key id and the unpadded base64 of an Ed25519 seed.
        std::fs::write(dir.path().join("signing.key"), signing_key()).unwrap();
        let child = Command::new(&python)
            .args(["-m", "synapse.app.homeserver", "-c"])
            .arg(dir.path().join("homeserver.yaml"))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.path().join("stdout")).unwrap())
            .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap())
            .spawn()
            .unwrap();
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(30)))
            .http_status_as_error(false)
            .build()
            .new_agent();
        let mut synapse = Synapse {
            child,
            url: format!("http://127.0.0.1:{port}"),
            dir,
            python,
            agent,
        };
        let end = Instant::now() + Duration::from_mins(1);
        loop {
            let up = synapse
                .agent
                .get(&format!("{}/_matrix/client/versions", synapse.url))
                .call()
                .is_ok_and(|r| r.status() == 200);
            if up {
                break;
            }
            if let Ok(Some(status)) = synapse.child.try_wait() {
                panic!("Synapse ended ({status}): {}", synapse.log());
            }
            assert!(
                Instant::now() < end,
                "Synapse did not start: {}",
                synapse.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(synapse)
    }

    /// What it logged (warnings and errors).
    pub(crate) fn log(&self) -> String {
        let read = |f: &str| std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default();
        format!("{}{}", read("stderr"), read("homeserver.log"))
    }

    /// Registers `name` with the shared-secret admin API (nonce, then HMAC-SHA1 of
    /// nonce, name, password and admin flag, computed with Synapse's own Python).
    pub(crate) fn register(&self, name: &str) -> User {
        let base = format!("{}/_synapse/admin/v1/register", self.url);
        let nonce = Synapse::json(self.agent.get(&base).call())["nonce"]
            .as_str()
            .unwrap()
            .to_string();
        let password = format!("{name}-password");
        let mac = Command::new(&self.python)
            .args([
                "-c",
                "import hmac, hashlib, sys; print(hmac.new(sys.argv[1].encode(), \
                 '\\x00'.join(sys.argv[2:]).encode(), hashlib.sha1).hexdigest())",
                SECRET,
                &nonce,
                name,
                &password,
                "notadmin",
            ])
            .output()
            .unwrap();
        let mac = String::from_utf8(mac.stdout).unwrap().trim().to_string();
        let body = json!({"nonce": nonce, "username": name, "password": password,
                          "admin": false, "mac": mac});
        let reply = Synapse::json(
            self.agent
                .post(&base)
                .header("Content-Type", "application/json")
                .send(body.to_string().as_bytes()),
        );
        User {
            id: reply["user_id"].as_str().unwrap().to_string(),
            token: reply["access_token"]
                .as_str()
                .unwrap_or_else(|| panic!("{reply}"))
                .to_string(),
        }
    }

    fn json(sent: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Value {
        let mut response = sent.unwrap();
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap();
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert!((200..300).contains(&status), "{status}: {text}");
        value
    }

    /// A client-server API call as `user`: `method` on `path` (from `/_matrix/…`).
    pub(crate) fn call(&self, user: &User, method: &str, path: &str, body: &Value) -> Value {
        let url = format!("{}{path}", self.url);
        let auth = format!("Bearer {}", user.token);
        let sent = match method {
            "GET" => self.agent.get(&url).header("Authorization", &auth).call(),
            "PUT" => self
                .agent
                .put(&url)
                .header("Authorization", &auth)
                .header("Content-Type", "application/json")
                .send(body.to_string().as_bytes()),
            _ => self
                .agent
                .post(&url)
                .header("Authorization", &auth)
                .header("Content-Type", "application/json")
                .send(body.to_string().as_bytes()),
        };
        Synapse::json(sent)
    }

    /// Sends `content` into `room` as `user`; the event's id.
    pub(crate) fn send(&self, user: &User, room: &str, kind: &str, content: &Value) -> String {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static TXN: AtomicUsize = AtomicUsize::new(0);
        let path = format!(
            "/_matrix/client/v3/rooms/{}/send/{kind}/t{}",
            enc(room),
            TXN.fetch_add(1, Ordering::SeqCst)
        );
        self.call(user, "PUT", &path, content)["event_id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// `user`'s message `text` in `room`, a reply to `to` when given.
    pub(crate) fn say(&self, user: &User, room: &str, text: &str, to: Option<&str>) -> String {
        let mut content = json!({"msgtype": "m.text", "body": text});
        if let Some(to) = to {
            content["m.relates_to"] = json!({"m.in_reply_to": {"event_id": to}});
        }
        self.send(user, room, "m.room.message", &content)
    }

    /// The latest events of `room` as `user` sees them, oldest first.
    pub(crate) fn events(&self, user: &User, room: &str) -> Vec<Value> {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/messages?dir=b&limit=200",
            enc(room)
        );
        let mut chunk = self.call(user, "GET", &path, &Value::Null)["chunk"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        chunk.reverse();
        chunk
    }

    /// Joins `room` as `user`.
    pub(crate) fn join(&self, user: &User, room: &str) {
        let path = format!("/_matrix/client/v3/join/{}", enc(room));
        self.call(user, "POST", &path, &json!({}));
    }

    /// Invites `other` into `room`, as `user`.
    pub(crate) fn invite(&self, user: &User, room: &str, other: &User) {
        let path = format!("/_matrix/client/v3/rooms/{}/invite", enc(room));
        self.call(user, "POST", &path, &json!({"user_id": other.id}));
    }

    /// The homeserver's stream position now, as a sync of `user` starting afresh names
    /// it (`next_batch`).
    pub(crate) fn now(&self, user: &User) -> String {
        let sync = self.call(user, "GET", &Synapse::fresh_sync(), &Value::Null);
        sync["next_batch"].as_str().unwrap().to_string()
    }

    /// A sync path with no position and a filter of its own each time: Synapse answers
    /// a sync it was asked before (the same user, position and filter) from its cache
    /// for two minutes.
    fn fresh_sync() -> String {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static ASKED: AtomicUsize = AtomicUsize::new(0);
        let filter = json!({
            "room": {"timeline": {"limit": 1}},
            "presence": {"not_types": [format!("x.{}", ASKED.fetch_add(1, Ordering::SeqCst))]},
        });
        format!(
            "/_matrix/client/v3/sync?timeout=0&filter={}",
            enc(&filter.to_string())
        )
    }

    /// The rooms `user` is invited to now.
    pub(crate) fn invites(&self, user: &User) -> Vec<String> {
        let sync = self.call(user, "GET", &Synapse::fresh_sync(), &Value::Null);
        sync["rooms"]["invite"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }
}

impl Drop for Synapse {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits up to 30 s for `f` to give something, looking every 50 ms.
pub(crate) fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(t) = f() {
            return t;
        }
        assert!(Instant::now() < end, "waited 30 s for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `text` percent-encoded for a path segment.
pub(crate) fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A new Synapse signing key file's line: `ed25519 a_<id> <seed>`, the seed 32 bytes from
/// the system's random source in unpadded standard base64.
fn signing_key() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 36];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut bytes)
        .unwrap();
    let (seed, id) = bytes.split_at(32);
    let id: String = id
        .iter()
        .map(|b| {
            char::from(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[usize::from(b % 52)])
        })
        .collect();
    format!("ed25519 a_{id} {}\n", base64_unpadded(seed))
}

/// Standard base64 without padding, as Synapse writes its keys.
fn base64_unpadded(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}
