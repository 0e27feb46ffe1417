//! SMTP out: a card or a reply composed as a plain-text message and sent (EHLO, STARTTLS,
//! AUTH PLAIN where offered, MAIL, RCPT, DATA).

use super::conn::Conn;
use super::Email;
use crate::output;
use crate::relay::kit::Res;
use crate::strings::base64;

pub(super) struct Compose<'a> {
    pub(super) from: &'a str,
    pub(super) to: &'a str,
    pub(super) subject: &'a str,
    /// Without its brackets.
    pub(super) message_id: &'a str,
    pub(super) reply_to: Option<&'a str>,
    pub(super) in_reply_to: Option<&'a str>,
    pub(super) body: &'a str,
}

/// A plain-text message in UTF-8 (its body in base64, its subject an encoded word when
/// it is not ASCII), marked as sent by a program (RFC 3834).
pub(super) fn compose(m: &Compose) -> String {
    let mut out = String::new();
    out.push_str(&format!("From: {}\r\n", m.from));
    out.push_str(&format!("To: {}\r\n", m.to));
    out.push_str(&format!("Subject: {}\r\n", encoded_word(m.subject)));
    out.push_str(&format!("Date: {}\r\n", chrono::Utc::now().to_rfc2822()));
    out.push_str(&format!("Message-ID: <{}>\r\n", m.message_id));
    if let Some(r) = m.reply_to {
        out.push_str(&format!("Reply-To: {r}\r\n"));
    }
    if let Some(r) = m.in_reply_to {
        out.push_str(&format!("In-Reply-To: <{r}>\r\nReferences: <{r}>\r\n"));
    }
    out.push_str("Auto-Submitted: auto-generated\r\n");
    out.push_str("MIME-Version: 1.0\r\n");
    out.push_str("Content-Type: text/plain; charset=utf-8\r\n");
    out.push_str("Content-Transfer-Encoding: base64\r\n\r\n");
    let body = base64(
        m.body
            .replace("\r\n", "\n")
            .replace('\n', "\r\n")
            .as_bytes(),
    );
    for chunk in body.as_bytes().chunks(76) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push_str("\r\n");
    }
    out
}

pub(super) fn encoded_word(text: &str) -> String {
    let text: String = text.chars().filter(|c| !c.is_control()).collect();
    if text.is_ascii() {
        return text;
    }
    // Encoded words of at most 75 characters: 45 bytes of UTF-8 each, cut on a char.
    let mut words = Vec::new();
    let mut chunk = String::new();
    for c in text.chars() {
        if chunk.len() + c.len_utf8() > 45 {
            words.push(format!("=?UTF-8?B?{}?=", base64(chunk.as_bytes())));
            chunk.clear();
        }
        chunk.push(c);
    }
    if !chunk.is_empty() {
        words.push(format!("=?UTF-8?B?{}?=", base64(chunk.as_bytes())));
    }
    words.join("\r\n ")
}

/// An SMTP reply: its code and its lines' text.
pub(super) fn smtp_reply(conn: &mut Conn) -> Res<(u16, String)> {
    let mut text = String::new();
    loop {
        let line = String::from_utf8_lossy(&conn.must_line()?).to_string();
        let code: u16 = line.get(..3).and_then(|c| c.parse().ok()).unwrap_or(0);
        text.push_str(line.get(4..).unwrap_or(""));
        text.push('\n');
        if line.as_bytes().get(3) != Some(&b'-') {
            return Ok((code, text));
        }
    }
}

pub(super) fn smtp_step(conn: &mut Conn, command: &str, want: &[u16], what: &str) -> Res<String> {
    conn.write_all(format!("{command}\r\n").as_bytes())?;
    let (code, text) = smtp_reply(conn)?;
    if !want.contains(&code) {
        return Err(format!(
            "{what} answered {code} {}",
            output::sanitize(text.trim(), false)
        ));
    }
    Ok(text)
}

/// Sends one message: EHLO, STARTTLS (unless implicit TLS, or `tls = "none"`), AUTH
/// PLAIN where the server offers it, MAIL, RCPT, DATA.
pub(super) fn smtp_send(email: &Email, to: &str, message: &str) -> Res<()> {
    if to.contains(['<', '>', '\r', '\n']) || email.address.contains(['<', '>', '\r', '\n']) {
        return Err("an address with brackets or line breaks".into());
    }
    let tls = email.tls.implicit(email.smtp.port);
    let mut conn = Conn::connect(&email.smtp, tls == Some(true), &email.tls_config)?;
    let (code, _) = smtp_reply(&mut conn)?;
    if code != 220 {
        return Err(format!("the server greeted with {code}"));
    }
    let helo = format!("EHLO {}", email.domain);
    let mut offered = smtp_step(&mut conn, &helo, &[250], "EHLO")?;
    if tls == Some(false) {
        // Refused or not offered: the message is not sent (never in plain text).
        smtp_step(&mut conn, "STARTTLS", &[220], "STARTTLS")?;
        conn.start_tls(&email.tls_config)?;
        offered = smtp_step(&mut conn, &helo, &[250], "EHLO")?;
    }
    let auth = offered
        .lines()
        .any(|l| l.to_uppercase().starts_with("AUTH") && l.to_uppercase().contains("PLAIN"));
    if auth {
        let plain = base64(format!("\0{}\0{}", email.username, email.password).as_bytes());
        smtp_step(&mut conn, &format!("AUTH PLAIN {plain}"), &[235], "AUTH")?;
    }
    smtp_step(
        &mut conn,
        &format!("MAIL FROM:<{}>", email.address),
        &[250],
        "MAIL FROM",
    )?;
    smtp_step(
        &mut conn,
        &format!("RCPT TO:<{to}>"),
        &[250, 251],
        "RCPT TO",
    )?;
    smtp_step(&mut conn, "DATA", &[354], "DATA")?;
    let mut data = String::with_capacity(message.len() + 8);
    for line in message.split("\r\n") {
        if line.starts_with('.') {
            data.push('.');
        }
        data.push_str(line);
        data.push_str("\r\n");
    }
    // `message` ends with CRLF: its last split is empty.
    let data = data.trim_end_matches("\r\n").to_string() + "\r\n.";
    smtp_step(&mut conn, &data, &[250], "the message")?;
    let _ = smtp_step(&mut conn, "QUIT", &[221], "QUIT");
    Ok(())
}
