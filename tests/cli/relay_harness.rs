//! What the relay's tests (channel_suite.rs, relay.rs, relay_slack.rs, relay_email.rs)
//! share: `questions relay` run as a process on a config, the runner's name on the
//! ledger, and the two people each test links.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::common::*;
use serde_json::Value;

/// Who this process is on the ledger (see channels.rs): the PostgreSQL role, or the
/// operating-system user by uid, as the command line names it.
pub(crate) fn me(l: &Ledger) -> String {
    if let Some(url) = &l.url {
        let user = url.split("://").nth(1).unwrap();
        return user.split([':', '@']).next().unwrap().to_string();
    }
    let id = |flag: &str| {
        let out = Command::new("id").arg(flag).output().unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    id("-un").unwrap_or_else(|| format!("uid:{}", id("-u").unwrap()))
}

/// Links the runner (`me`) as `mine` and bob as `bobs`, the runner being an admin of the
/// group `people`; the runner's name.
pub(crate) fn people(l: &Ledger, mine: &str, bobs: &str) -> String {
    let me = me(l);
    l.ok(["people", "link", &me, mine]);
    l.ok(["group", "create", "people", "--admins", &me]);
    l.ok(["people", "link", "bob", bobs]);
    me
}

/// A relay process on one channel.
pub(crate) struct Relay {
    pub(crate) child: Child,
    stderr: PathBuf,
    /// Everything it printed on stdout after its first line, read until it ends.
    stdout: Option<std::thread::JoinHandle<String>>,
    /// The secrets it was given, which it must never print.
    secrets: Vec<String>,
}

impl Relay {
    /// The clock ticks of CPU (user and system, 10 ms each) the relay used so far: its
    /// idle cost, for the benches.
    pub(crate) fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    }

    /// Starts `questions relay` on `config` (the TOML of `channel`), with `secrets` and
    /// `env` in its environment; its first line must name `channel` alone.
    pub(crate) fn run(
        l: &Ledger,
        channel: &str,
        config: &str,
        secrets: &[(&str, &str)],
        env: &[(&str, &str)],
    ) -> Relay {
        Relay::run_in(l, channel, config, secrets, env, &[])
    }

    /// As `run`, the command run by `wrapper` (`unshare …`) when given.
    pub(crate) fn run_in(
        l: &Ledger,
        channel: &str,
        config: &str,
        secrets: &[(&str, &str)],
        env: &[(&str, &str)],
        wrapper: &[&str],
    ) -> Relay {
        let path = l.dir.path().join(format!("relay-{channel}.toml"));
        std::fs::write(&path, config).unwrap();
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let stderr = l.dir.path().join(format!(
            "relay-{channel}-{}.err",
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        let mut cmd = match wrapper {
            [program, args @ ..] => {
                let mut cmd = Command::new(program);
                cmd.args(args).arg(BIN);
                cmd
            }
            [] => Command::new(BIN),
        };
        cmd.current_dir(l.dir.path())
            .arg("--db")
            .arg(l.db())
            .args(["relay", "--config"])
            .arg(&path)
            .env_remove("QUESTIONS_DB")
            .env("QUESTIONS_NOW", NOW)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap());
        for (k, v) in secrets.iter().chain(env) {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let mut first = String::new();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut first).unwrap();
        let start: Value = serde_json::from_str(&first).unwrap_or(Value::Null);
        assert_eq!(
            start,
            serde_json::json!({"ok": true, "procedure": "relay", "channels": [channel]}),
            "{first}"
        );
        let stdout = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = std::io::Read::read_to_string(&mut out, &mut rest);
            rest
        });
        Relay {
            child,
            stderr,
            stdout: Some(stdout),
            secrets: secrets.iter().map(|(_, v)| (*v).to_string()).collect(),
        }
    }

    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Whether it ended by itself, and then its exit status and what it printed on stdout
    /// after its first line (once it printed no secret).
    pub(crate) fn ended(&mut self) -> Option<(std::process::ExitStatus, String)> {
        let status = self.child.try_wait().unwrap()?;
        let stdout = self
            .stdout
            .take()
            .map(|t| t.join().unwrap())
            .unwrap_or_default();
        let said = self.stderr();
        for secret in &self.secrets {
            assert!(
                !said.contains(secret.as_str()) && !stdout.contains(secret.as_str()),
                "a secret was printed"
            );
        }
        Some((status, stdout))
    }

    /// SIGTERM, as an operator stops it; its exit status, once it printed no secret.
    pub(crate) fn stop(mut self) -> std::process::ExitStatus {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        let status = self.child.wait().unwrap();
        let said = self.stderr();
        let stdout = self
            .stdout
            .take()
            .map(|t| t.join().unwrap())
            .unwrap_or_default();
        for secret in &self.secrets {
            assert!(
                !said.contains(secret.as_str()) && !stdout.contains(secret.as_str()),
                "a secret was printed"
            );
        }
        status
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `questions relay` on `config`, which it must refuse as a usage error (exit 2)
/// naming `names`, with `env` in its environment: none of the `secrets` among its values
/// printed, on stdout or stderr.
pub(crate) fn refuses(
    l: &Ledger,
    config: &str,
    env: &[(&str, &str)],
    secrets: &[&str],
    names: &str,
) {
    let path = l.dir.path().join("bad.toml");
    std::fs::write(&path, config).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.current_dir(l.dir.path())
        .arg("--db")
        .arg(l.db())
        .args(["relay", "--config"])
        .arg(&path)
        .env_remove("QUESTIONS_DB")
        .env_remove("NOT_SET_ANYWHERE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{config}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&doc["ok"], &doc["error_code"]),
        (&Value::Bool(false), &Value::from("usage"))
    );
    let message = doc["error"].as_str().unwrap_or_default();
    assert!(message.contains(names), "{config}: {doc}");
    let all = format!("{doc}{}", String::from_utf8_lossy(&out.stderr));
    for secret in secrets {
        assert!(!all.contains(secret), "a secret was printed: {config}");
    }
}

/// Runs `args` on `l` for a guide's transcript (it must succeed): the command as typed,
/// and what it printed when `print`, go into `out`; its JSON.
pub(crate) fn show(l: &Ledger, out: &mut String, args: &[&str], print: bool) -> Value {
    let run = l.run(args);
    assert_eq!(run.code, 0, "{args:?}: {run:?}");
    out.push_str(&crate::docs::typed(args));
    out.push('\n');
    if print {
        out.push_str(run.stdout.trim_end());
        out.push('\n');
    }
    run.json
}
