//! IMAP in: a session logged in with the INBOX selected, new messages fetched by UID, IDLE
//! between them.

use std::time::{Duration, Instant};

use super::conn::Conn;
use super::{Email, IO_TIMEOUT};
use crate::output;
use crate::relay::kit::{clip, Res};

/// What an IMAP command answered: its untagged lines, each with its literals.
pub(super) struct Untagged {
    pub(super) line: String,
    pub(super) literals: Vec<Vec<u8>>,
}

/// An IMAP session: logged in, the INBOX selected.
pub(super) struct Imap {
    pub(super) conn: Conn,
    pub(super) tag: u32,
    pub(super) validity: u64,
    pub(super) next_uid: u64,
    pub(super) idle: bool,
}

/// A string as an IMAP quoted string.
pub(super) fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

impl Imap {
    pub(super) fn open(email: &Email) -> Res<Imap> {
        let tls = email.tls.implicit(email.imap.port);
        let conn = Conn::connect(&email.imap, tls == Some(true), &email.tls_config)?;
        let mut imap = Imap {
            conn,
            tag: 0,
            validity: 0,
            next_uid: 1,
            idle: false,
        };
        let greeting = String::from_utf8_lossy(&imap.conn.must_line()?).to_string();
        if !greeting.starts_with("* OK") && !greeting.starts_with("* PREAUTH") {
            return Err("the IMAP server did not greet with OK".into());
        }
        if tls == Some(false) {
            // Refused or not offered: no LOGIN (never the password in plain text).
            imap.command("STARTTLS")?;
            imap.conn.start_tls(&email.tls_config)?;
        }
        imap.command(&format!(
            "LOGIN {} {}",
            quoted(&email.username),
            quoted(&email.password)
        ))
        .map_err(|_| "the IMAP login was refused (username_env, password_env)".to_string())?;
        let capabilities = imap.command("CAPABILITY")?;
        imap.idle = capabilities.iter().any(|u| {
            u.line
                .to_uppercase()
                .split_whitespace()
                .any(|w| w == "IDLE")
        });
        for u in imap.command("SELECT INBOX")? {
            let upper = u.line.to_uppercase();
            if let Some(n) = number_after(&upper, "[UIDVALIDITY ") {
                imap.validity = n;
            }
            if let Some(n) = number_after(&upper, "[UIDNEXT ") {
                imap.next_uid = n;
            }
        }
        if imap.validity == 0 {
            return Err("SELECT INBOX answered no UIDVALIDITY".into());
        }
        Ok(imap)
    }

    pub(super) fn next_tag(&mut self) -> String {
        self.tag += 1;
        format!("R{}", self.tag)
    }

    /// A line with its literals (`{n}` at a line's end announces n bytes).
    pub(super) fn response(&mut self, first: Vec<u8>) -> Res<Untagged> {
        let mut line = first;
        let mut literals = Vec::new();
        loop {
            let announced = (line.last() == Some(&b'}'))
                .then(|| {
                    let open = line.iter().rposition(|b| *b == b'{')?;
                    std::str::from_utf8(&line[open + 1..line.len() - 1])
                        .ok()?
                        .trim_end_matches('+')
                        .parse::<usize>()
                        .ok()
                })
                .flatten();
            let Some(n) = announced else {
                break;
            };
            literals.push(self.conn.bytes(n)?);
            line.extend_from_slice(b" <literal> ");
            let rest = self.conn.must_line()?;
            line.extend_from_slice(&rest);
        }
        Ok(Untagged {
            line: String::from_utf8_lossy(&line).to_string(),
            literals,
        })
    }

    /// Sends a command; its untagged responses, once it is answered OK.
    pub(super) fn command(&mut self, command: &str) -> Res<Vec<Untagged>> {
        let tag = self.next_tag();
        self.conn
            .write_all(format!("{tag} {command}\r\n").as_bytes())?;
        self.until_tagged(&tag, command)
    }

    pub(super) fn until_tagged(&mut self, tag: &str, command: &str) -> Res<Vec<Untagged>> {
        let mut untagged = Vec::new();
        loop {
            let first = self.conn.must_line()?;
            let u = self.response(first)?;
            if let Some(rest) = u.line.strip_prefix(&format!("{tag} ")) {
                if rest.to_uppercase().starts_with("OK") {
                    return Ok(untagged);
                }
                let verb = command.split_whitespace().next().unwrap_or("");
                return Err(format!(
                    "IMAP {verb} answered {}",
                    output::sanitize(&clip(rest, 200), false)
                ));
            }
            untagged.push(u);
        }
    }

    /// The messages with a UID above `last`, in UID order, read without marking them
    /// seen.
    pub(super) fn fetch_after(&mut self, last: u64) -> Res<Vec<(u64, Vec<u8>)>> {
        let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
        for u in self.command(&format!("UID FETCH {}:* (UID BODY.PEEK[])", last + 1))? {
            let upper = u.line.to_uppercase();
            if !upper.contains(" FETCH ") {
                continue;
            }
            let (Some(uid), Some(raw)) =
                (number_after(&upper, "UID "), u.literals.into_iter().next())
            else {
                continue;
            };
            // `n:*` names the last message even when its UID is below n.
            if uid > last {
                out.push((uid, raw));
            }
        }
        out.sort_by_key(|(uid, _)| *uid);
        Ok(out)
    }

    /// Waits for new mail: IDLE until the server says a message exists or `most` has
    /// passed; without IDLE, a NOOP every 3 seconds.
    pub(super) fn wait(&mut self, most: Duration) -> Res<()> {
        if !self.idle {
            std::thread::sleep(Duration::from_secs(3).min(most));
            self.command("NOOP")?;
            return Ok(());
        }
        let tag = self.next_tag();
        self.conn.write_all(format!("{tag} IDLE\r\n").as_bytes())?;
        let go = self.conn.must_line()?;
        if !go.starts_with(b"+") {
            return Err("IDLE was not accepted".into());
        }
        if let Some(t) = self.conn.tcp() {
            t.set_read_timeout(Some(Duration::from_secs(1)))
                .map_err(|e| e.to_string())?;
        }
        let end = Instant::now() + most;
        let mut heard = Ok(());
        while Instant::now() < end {
            match self.conn.line() {
                Ok(Some(line)) => {
                    let line = String::from_utf8_lossy(&line).to_uppercase();
                    if line.starts_with("* ")
                        && (line.ends_with(" EXISTS") || line.ends_with(" RECENT"))
                    {
                        break;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    heard = Err(e);
                    break;
                }
            }
        }
        heard?;
        if let Some(t) = self.conn.tcp() {
            t.set_read_timeout(Some(IO_TIMEOUT))
                .map_err(|e| e.to_string())?;
        }
        self.conn.write_all(b"DONE\r\n")?;
        self.until_tagged(&tag, "IDLE")?;
        Ok(())
    }
}

/// The number after `label` in `text`.
pub(super) fn number_after(text: &str, label: &str) -> Option<u64> {
    let at = text.find(label)? + label.len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}
