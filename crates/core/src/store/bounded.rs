//! Every network step to PostgreSQL has a bound. The client's own connect timeout covers
//! the TCP connection alone, and a query waits for its reply for ever: a server that
//! accepts a connection and then says nothing (a stopped process, a half-open link, a
//! port that is not PostgreSQL's) would hang every command, a gate included.
//!
//! The client hands the socket to a TLS connector right after connecting when TLS is
//! negotiated "directly"; `Bounded` is that connector for every `sslmode`. It does the
//! usual negotiation itself (the SSLRequest, then rustls, or plain text where the mode
//! allows it) and returns a stream, `Guarded`, through which every later byte passes:
//!
//! - until the server says it is ready (start-up and authentication done), the whole
//!   connection must be made within `connect_timeout` (10 s unless the location says);
//! - then, while the server owes a reply (the client sent a query or a Sync, and has not
//!   read the ReadyForQuery that ends its answer), it may stay silent for at most the
//!   query bound; each byte it sends starts that time again, so a long answer that keeps
//!   coming is not cut;
//! - while it owes nothing, no bound applies: a reader waiting for a notification
//!   (`check --wait`, `events --follow`) waits as long as it chooses.
//!
//! A bound that runs out fails the read or write with `TimedOut` carrying `Silent`, which
//! the engine words as a `db_error` naming the server and what it did not answer.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use postgres::Socket;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::time::Sleep;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::tls::SslMode;

type RustlsStream = <MakeRustlsConnect as MakeTlsConnect<Socket>>::Stream;
type RustlsConnect = <MakeRustlsConnect as MakeTlsConnect<Socket>>::TlsConnect;

thread_local! {
    /// This thread's reader's deadline, set by `BoundUntil` (see `Guarded::rearm`): the
    /// thread that sends a statement is the one that polls its connection.
    pub(super) static DEADLINE: std::cell::Cell<Option<Instant>> =
        const { std::cell::Cell::new(None) };
}

/// How long the server may take.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// To make a connection: TCP, TLS, start-up and authentication.
    pub connect: Duration,
    /// To go on answering a statement under way.
    pub query: Duration,
    /// Whether `query` was cut to a waiting reader's deadline (see `BoundUntil`).
    pub by_deadline: bool,
}

/// A bound that ran out: what the server did not do, in words for the person.
#[derive(Debug)]
pub(super) struct Silent(String);

impl std::fmt::Display for Silent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Silent {}

/// The words of a `Silent` anywhere in `e`'s chain of causes.
pub(super) fn silent(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        // An I/O error's `source` skips the error it wraps: look inside it too.
        let inner = err
            .downcast_ref::<io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<Silent>());
        if let Some(found) = err.downcast_ref::<Silent>().or(inner) {
            return Some(found.0.clone());
        }
        source = err.source();
    }
    None
}

fn timed_out(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, Silent(message))
}

/// The connector of every connection to a TCP host (see the module's comment).
pub(super) struct Bounded {
    rustls: Option<MakeRustlsConnect>,
    mode: SslMode,
    limits: Limits,
    /// The server as messages name it (its location without the password).
    server: Arc<str>,
    /// When the first attempt began: its TCP connection counts against the bound too.
    began: Option<Instant>,
}

impl Bounded {
    pub(super) fn new(
        rustls: Option<MakeRustlsConnect>,
        mode: SslMode,
        limits: Limits,
        server: &str,
    ) -> Bounded {
        Bounded {
            rustls,
            mode,
            limits,
            server: server.into(),
            began: Some(Instant::now()),
        }
    }
}

impl MakeTlsConnect<Socket> for Bounded {
    type Stream = Guarded;
    type TlsConnect = Negotiate;
    type Error = io::Error;

    /// Called once per attempt (a host, an address), right after its TCP connection.
    fn make_tls_connect(&mut self, domain: &str) -> io::Result<Negotiate> {
        let rustls = match &mut self.rustls {
            Some(make) => Some(
                MakeTlsConnect::<Socket>::make_tls_connect(make, domain)
                    .map_err(io::Error::other)?,
            ),
            None => None,
        };
        // A later attempt's TCP connection was bounded on its own: it starts afresh.
        let began = self.began.take().unwrap_or_else(Instant::now);
        Ok(Negotiate {
            rustls,
            mode: self.mode,
            limits: self.limits,
            server: self.server.clone(),
            deadline: began + self.limits.connect,
        })
    }
}

/// One attempt's negotiation: TLS as the mode says, then the guarded stream.
pub(super) struct Negotiate {
    rustls: Option<RustlsConnect>,
    mode: SslMode,
    limits: Limits,
    server: Arc<str>,
    deadline: Instant,
}

/// PostgreSQL's SSLRequest: length 8, code 1234.5679.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

impl TlsConnect<Socket> for Negotiate {
    type Stream = Guarded;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Guarded>> + Send>>;

    fn connect(self, mut stream: Socket) -> Self::Future {
        Box::pin(async move {
            let Negotiate {
                rustls,
                mode,
                limits,
                server,
                deadline,
            } = self;
            let negotiate = async {
                let rustls = match (mode, rustls) {
                    (SslMode::Disable, _) | (_, None) => return Ok(Inner::Plain(stream)),
                    (_, Some(rustls)) => rustls,
                };
                stream.write_all(&SSL_REQUEST).await?;
                let mut answer = [0u8; 1];
                stream.read_exact(&mut answer).await?;
                match (answer[0], mode) {
                    (b'S', _) => Ok(Inner::Tls(Box::new(rustls.connect(stream).await?))),
                    (_, SslMode::Prefer) => Ok(Inner::Plain(stream)),
                    // The words `tls::explain` knows.
                    _ => Err(io::Error::other("server does not support TLS")),
                }
            };
            let inner = tokio::time::timeout_at(deadline.into(), negotiate)
                .await
                .map_err(|_| {
                    timed_out(format!(
                        "PostgreSQL at {server} did not answer the TLS negotiation within {} \
                         (connect_timeout in the location sets this bound); is the server up, \
                         and is it PostgreSQL at that port?",
                        seconds(limits.connect)
                    ))
                })??;
            Ok(Guarded {
                inner,
                ready: false,
                deadline,
                limits,
                bound: limits,
                server,
                timer: None,
                owed: 0,
                closing: false,
                blocked: false,
                backend: Framer::default(),
                frontend: Framer::default(),
            })
        })
    }
}

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

enum Inner {
    Plain(Socket),
    Tls(Box<RustlsStream>),
}

/// The stream every byte of a connection passes through, with the bounds of the module's
/// comment.
pub(super) struct Guarded {
    inner: Inner,
    /// The server has said it is ready once: start-up and authentication are done.
    ready: bool,
    /// Until then: when the connection must be made.
    deadline: Instant,
    limits: Limits,
    /// The bound of the statement under way: `limits`, cut to the deadline of the reader
    /// that sent it when it has one (see `rearm`).
    bound: Limits,
    server: Arc<str>,
    /// Armed while the server owes something.
    timer: Option<Pin<Box<Sleep>>>,
    /// Replies (ReadyForQuery) owed: one for each Query and each Sync sent.
    owed: u32,
    /// A Terminate was sent: the server owes the end of the connection.
    closing: bool,
    /// A write waits for the server to take what is sent: that is owed too.
    blocked: bool,
    backend: Framer,
    frontend: Framer,
}

impl Guarded {
    fn owes(&self) -> bool {
        !self.ready || self.owed > 0 || self.closing || self.blocked
    }

    /// Arms the timer (or moves it) to the bound that applies now; disarms it when the
    /// server owes nothing.
    fn rearm(&mut self) {
        if !self.owes() {
            self.timer = None;
            return;
        }
        let at = if self.ready {
            // The reader's deadline now: a connection kept open between a held wait's
            // looks began under another one, or none.
            self.bound = self.limits;
            if let Some(by) = DEADLINE.with(std::cell::Cell::get) {
                let by = by.saturating_duration_since(Instant::now()) + Duration::from_secs(1);
                if by < self.limits.query {
                    self.bound.query = by;
                    self.bound.by_deadline = true;
                }
            }
            Instant::now() + self.bound.query
        } else {
            self.deadline
        };
        match &mut self.timer {
            Some(timer) => timer.as_mut().reset(at.into()),
            None => self.timer = Some(Box::pin(tokio::time::sleep_until(at.into()))),
        }
    }

    /// Has the task woken when the timer runs out. A read that waits for a reply may be
    /// waiting on the socket alone already, armed before this write (or read) armed the
    /// timer: the timer must wake the same task, whose next read then fails.
    fn watch(&mut self, cx: &mut Context<'_>) {
        if let Some(timer) = &mut self.timer {
            let _ = timer.as_mut().poll(cx);
        }
    }

    /// For a read or write that must wait: the error once the bound has run out.
    fn expired(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        if !self.owes() {
            return None;
        }
        if self.timer.is_none() {
            self.rearm();
        }
        let timer = self.timer.as_mut()?;
        if timer.as_mut().poll(cx).is_pending() {
            return None;
        }
        let server = &self.server;
        Some(timed_out(if self.ready && self.bound.by_deadline {
            format!(
                "PostgreSQL at {server} did not answer a statement before the wait's \
             deadline ({} left when it began): another session may hold a lock on the \
             ledger's tables; the wait ended there",
                seconds(self.bound.query)
            )
        } else if self.ready {
            format!(
                "PostgreSQL at {server} sent no reply for {} while a statement was under way \
             (QUESTIONS_PG_QUERY_TIMEOUT sets this bound); the server or the network to \
             it is down or stuck, and the connection was given up",
                seconds(self.bound.query)
            )
        } else {
            format!(
                "PostgreSQL at {server} did not finish the start-up and authentication within \
             {} (connect_timeout in the location sets this bound); is the server up, and \
             is it PostgreSQL at that port?",
                seconds(self.limits.connect)
            )
        }))
    }

    /// A write, flush or shutdown that must wait for the server to take what is sent is
    /// bounded as a reply is: silence either way.
    fn writing<T>(
        &mut self,
        polled: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Pending => {
                // A reply already owed keeps its deadline.
                if !std::mem::replace(&mut self.blocked, true) && self.timer.is_none() {
                    self.rearm();
                }
                match self.expired(cx) {
                    Some(e) => Poll::Ready(Err(e)),
                    None => Poll::Pending,
                }
            }
            done => {
                if std::mem::take(&mut self.blocked) {
                    self.rearm();
                    self.watch(cx);
                }
                done
            }
        }
    }

    fn read_some(&mut self, bytes: &[u8]) {
        let (ready, owed) = (&mut self.ready, &mut self.owed);
        self.backend.feed(bytes, |kind| {
            if kind == b'Z' {
                if *ready {
                    *owed = owed.saturating_sub(1);
                } else {
                    *ready = true;
                    *owed = 0;
                }
            }
        });
        self.rearm();
    }

    fn wrote_some(&mut self, bytes: &[u8]) {
        if self.ready {
            let (owed, closing) = (&mut self.owed, &mut self.closing);
            // After start-up every message the client sends is typed.
            self.frontend.feed(bytes, |kind| match kind {
                b'Q' | b'S' => *owed += 1,
                b'X' => *closing = true,
                _ => {}
            });
        }
        self.rearm();
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = match &mut this.inner {
            Inner::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Inner::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        };
        match polled {
            Poll::Ready(Ok(())) => {
                let read = &buf.filled()[before..];
                if read.is_empty() {
                    // The end of the connection: nothing more is owed.
                    this.closing = false;
                    this.owed = 0;
                    this.timer = None;
                } else {
                    this.read_some(read);
                    this.watch(cx);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => match this.expired(cx) {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            },
            other => other,
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = match &mut this.inner {
            Inner::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Inner::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        };
        match polled {
            Poll::Ready(Ok(n)) => {
                this.blocked = false;
                this.wrote_some(&buf[..n]);
                this.watch(cx);
                Poll::Ready(Ok(n))
            }
            other => this.writing(other, cx),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = match &mut this.inner {
            Inner::Plain(s) => Pin::new(s).poll_flush(cx),
            Inner::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        };
        this.writing(polled, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = match &mut this.inner {
            Inner::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Inner::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        };
        this.writing(polled, cx)
    }
}

impl TlsStream for Guarded {
    fn channel_binding(&self) -> ChannelBinding {
        match &self.inner {
            Inner::Plain(_) => ChannelBinding::none(),
            Inner::Tls(s) => s.channel_binding(),
        }
    }
}

/// Finds where messages of the protocol end in a stream of bytes: a type byte, a length
/// (of itself and the body), the body.
#[derive(Debug, Default)]
struct Framer {
    header: [u8; 5],
    have: usize,
    body_left: usize,
}

impl Framer {
    /// Reads `bytes`, calling `done` with the type of each message that ends in them.
    fn feed(&mut self, mut bytes: &[u8], mut done: impl FnMut(u8)) {
        while !bytes.is_empty() {
            if self.have < 5 {
                let take = (5 - self.have).min(bytes.len());
                self.header[self.have..self.have + take].copy_from_slice(&bytes[..take]);
                self.have += take;
                bytes = &bytes[take..];
                if self.have < 5 {
                    return;
                }
                let length = u32::from_be_bytes([
                    self.header[1],
                    self.header[2],
                    self.header[3],
                    self.header[4],
                ]);
                self.body_left = (length as usize).saturating_sub(4);
            }
            let take = self.body_left.min(bytes.len());
            self.body_left -= take;
            bytes = &bytes[take..];
            if self.body_left == 0 {
                done(self.header[0]);
                self.have = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_framer_finds_each_message_however_the_bytes_are_cut() {
        // Z (ReadyForQuery, body 'I'), then A (a notification, body 3 bytes), then Z.
        let stream: Vec<u8> = [
            &[b'Z', 0, 0, 0, 5, b'I'][..],
            &[b'A', 0, 0, 0, 7, 1, 2, 3][..],
            &[b'Z', 0, 0, 0, 5, b'T'][..],
        ]
        .concat();
        for cut in 1..stream.len() {
            let mut framer = Framer::default();
            let mut seen = Vec::new();
            for chunk in stream.chunks(cut) {
                framer.feed(chunk, |kind| seen.push(kind));
            }
            assert_eq!(seen, [b'Z', b'A', b'Z'], "cut every {cut} bytes");
        }
    }
}
