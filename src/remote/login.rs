//! `questions login https://HOST` and `questions logout` (§17): the person signs in with
//! the server's OpenID provider through the device authorization grant (RFC 8628), as
//! `gh auth login` does: the server gives a code, the person approves it in a browser
//! (signed in as themself), and the command line gets a token that expires (12 h) and a
//! refresh token. Both are kept in `$XDG_CONFIG_HOME/questions/credentials.json` (else
//! `~/.config/…`), mode 0600, by server; every `--db https://HOST` call without
//! `QUESTIONS_TOKEN` uses them, refreshing the token when its time is up.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use questions_core::clock;
use questions_core::error::{Error, ErrorCode, Result};

/// A token this close to its end is refreshed before it is sent.
const REFRESH_BEFORE: Duration = Duration::from_mins(1);

/// Where the credentials are kept.
fn path() -> Result<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|d| !d.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })
        .ok_or_else(|| {
            Error::usage("neither XDG_CONFIG_HOME nor HOME is set: nowhere to keep a login")
        })?;
    Ok(base.join("questions").join("credentials.json"))
}

/// Every server's credentials, as kept; none when there is no file.
fn load() -> Result<Map<String, Value>> {
    let file = path()?;
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => return Err(Error::io(format!("cannot read {}: {e}", file.display()))),
    };
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).map_or(0, |m| m.permissions().mode());
        if mode & 0o077 != 0 {
            return Err(Error::usage(format!(
                "{} may be read by others: it holds your login; chmod 600 it, or \
                 'questions logout' and log in again",
                file.display()
            )));
        }
    }
    let doc: Value = serde_json::from_str(&text).map_err(|e| {
        Error::usage(format!(
            "{} is not the credentials file questions writes ({e}): remove it and \
             'questions login' again",
            file.display()
        ))
    })?;
    Ok(doc["servers"].as_object().cloned().unwrap_or_default())
}

/// Writes every server's credentials: a new file, mode 0600, in place of the old.
fn save(servers: Map<String, Value>) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let file = path()?;
    let dir = file.parent().unwrap_or(std::path::Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::io(format!("cannot make {}: {e}", dir.display())))?;
    let fresh = dir.join(format!(".credentials.{}.json", std::process::id()));
    let text = crate::output::pretty(&json!({ "servers": servers }));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&fresh)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&fresh, &file));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&fresh);
        Error::io(format!("cannot write {}: {e}", file.display()))
    })
}

/// A form POSTed to the server; its status and JSON body.
fn post(agent: &ureq::Agent, url: &str, form: &[(&str, &str)]) -> Result<(u16, Value)> {
    let reply = agent
        .post(url)
        .config()
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .send_form(form.iter().copied())
        .map_err(|e| Error::new(ErrorCode::Unavailable, format!("cannot reach {url}: {e}")))?;
    let status = reply.status().as_u16();
    let body = reply
        .into_body()
        .with_config()
        .limit(1 << 20)
        .read_to_string()
        .unwrap_or_default();
    Ok((status, serde_json::from_str(&body).unwrap_or(Value::Null)))
}

/// What a token reply holds worth keeping, and until when its token works.
fn kept(reply: &Value) -> Result<Value> {
    let (Some(access), Some(refresh)) = (
        reply["access_token"].as_str(),
        reply["refresh_token"].as_str(),
    ) else {
        return Err(Error::new(
            ErrorCode::Unavailable,
            "the server's answer holds no token: is it a questions server?",
        ));
    };
    let lifetime = reply["expires_in"].as_u64().unwrap_or(0);
    Ok(json!({
        "access_token": access,
        "refresh_token": refresh,
        "expires_at": clock::after(&real_now(), Duration::from_secs(lifetime)),
        "person": reply["person"],
    }))
}

/// The real time: a login's end is the server's real clock's, never a pinned one.
fn real_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// `questions login URL`: the device grant, the code shown on stderr (and the page
/// opened, where a browser can), polled until the person approves or the code ends.
pub(crate) fn login(base: &str, open_browser: bool) -> Result<Value> {
    let agent = crate::client::agent()?;
    let (status, started) = post(&agent, &format!("{base}/oauth/device"), &[])?;
    if status != 200 {
        let said = started["error_description"].as_str().unwrap_or("");
        return Err(Error::usage(format!(
            "{base} signs nobody in ({status}{}): it needs serve --oidc-issuer; a token \
             from 'questions token create' goes in QUESTIONS_TOKEN instead",
            if said.is_empty() {
                String::new()
            } else {
                format!(": {said}")
            }
        )));
    }
    let (Some(device), Some(code), Some(page)) = (
        started["device_code"].as_str(),
        started["user_code"].as_str(),
        started["verification_uri_complete"]
            .as_str()
            .or_else(|| started["verification_uri"].as_str()),
    ) else {
        return Err(Error::new(
            ErrorCode::Unavailable,
            format!("{base}'s answer to a sign-in is not one questions knows"),
        ));
    };
    crate::output::note(&format!(
        "To sign in, open {page}\nand check that it shows the code {code}; then approve."
    ));
    if open_browser {
        open(page);
    }
    let mut interval = Duration::from_secs(started["interval"].as_u64().unwrap_or(5).max(1));
    let ends = Instant::now() + Duration::from_secs(started["expires_in"].as_u64().unwrap_or(600));
    loop {
        std::thread::sleep(interval);
        if Instant::now() >= ends {
            return Err(Error::new(
                ErrorCode::Timeout,
                "nobody approved the code in time: questions login again",
            ));
        }
        let (status, reply) = post(
            &agent,
            &format!("{base}/oauth/token"),
            &[
                ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                ("device_code", device),
            ],
        )?;
        if status == 200 {
            let entry = kept(&reply)?;
            let mut servers = load()?;
            servers.insert(base.to_string(), entry.clone());
            save(servers)?;
            return Ok(json!({
                "server": base,
                "person": entry["person"],
                "expires_at": entry["expires_at"],
                "credentials": path()?.display().to_string(),
            }));
        }
        match reply["error"].as_str() {
            Some("authorization_pending") => {}
            Some("slow_down") => interval += Duration::from_secs(5),
            Some("access_denied") => {
                return Err(Error::new(
                    ErrorCode::Forbidden,
                    "the sign-in was denied in the browser",
                ))
            }
            Some("expired_token") => {
                return Err(Error::new(
                    ErrorCode::Timeout,
                    "the code ran out before it was approved: questions login again",
                ))
            }
            _ => {
                return Err(Error::new(
                    ErrorCode::Unavailable,
                    format!("{base} answered the sign-in with {status}"),
                ))
            }
        }
    }
}

/// Opens `page` in the person's browser, where there is one to open (`$BROWSER`, else
/// `xdg-open` on a desktop); else the address on stderr is the way.
fn open(page: &str) {
    let desktop =
        std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
    let program = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())
        .or_else(|| desktop.then(|| "xdg-open".to_string()));
    if let Some(program) = program {
        let _ = std::process::Command::new(program)
            .arg(page)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

/// `questions logout [URL]`: the server revokes the login, and the file forgets it.
pub(crate) fn logout(base: &str) -> Result<Value> {
    let mut servers = load()?;
    let Some(entry) = servers.remove(base) else {
        return Ok(json!({"server": base, "logged_out": false}));
    };
    let agent = crate::client::agent()?;
    let mut revoked = true;
    for key in ["refresh_token", "access_token"] {
        if let Some(token) = entry[key].as_str() {
            revoked &= post(&agent, &format!("{base}/oauth/revoke"), &[("token", token)])
                .is_ok_and(|(status, _)| status == 200);
        }
    }
    save(servers)?;
    Ok(json!({"server": base, "logged_out": true, "revoked": revoked}))
}

/// The login's token for `base`, refreshed first when its time is (nearly) up; none when
/// this user has not logged in there.
pub(crate) fn token_for(base: &str) -> Result<Option<String>> {
    let mut servers = load()?;
    let Some(entry) = servers.get(base).cloned() else {
        return Ok(None);
    };
    let ends = entry["expires_at"].as_str().unwrap_or("");
    if clock::after(&real_now(), REFRESH_BEFORE).as_str() < ends {
        return Ok(entry["access_token"].as_str().map(str::to_string));
    }
    let Some(refresh) = entry["refresh_token"].as_str() else {
        return Ok(None);
    };
    let agent = crate::client::agent()?;
    let (status, reply) = post(
        &agent,
        &format!("{base}/oauth/token"),
        &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
    )?;
    if status != 200 {
        servers.remove(base);
        save(servers)?;
        return Err(Error::new(
            ErrorCode::Unauthorized,
            format!(
                "your login to {base} has ended (it was revoked, or not used for 30 days): \
                 questions login {base}"
            ),
        ));
    }
    let fresh = kept(&reply)?;
    let token = fresh["access_token"].as_str().map(str::to_string);
    servers.insert(base.to_string(), fresh);
    save(servers)?;
    Ok(token)
}
