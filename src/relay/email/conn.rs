//! A connection to a mail server, plain or TLS, read line by line.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Instant;

use super::{Endpoint, IO_TIMEOUT};
use crate::relay::kit::Res;

/// A connection, plain or TLS, read line by line.
pub(super) struct Conn {
    pub(super) stream: Stream,
    pub(super) buffer: Vec<u8>,
    pub(super) host: String,
    pub(super) port: u16,
}

pub(super) enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
    Gone,
}

impl Conn {
    pub(super) fn connect(
        at: &Endpoint,
        implicit_tls: bool,
        tls: &Arc<rustls::ClientConfig>,
    ) -> Res<Conn> {
        let tcp = TcpStream::connect((at.host.as_str(), at.port))
            .map_err(|e| format!("cannot connect to {}:{}: {e}", at.host, at.port))?;
        tcp.set_read_timeout(Some(IO_TIMEOUT))
            .and_then(|()| tcp.set_write_timeout(Some(IO_TIMEOUT)))
            .map_err(|e| e.to_string())?;
        let mut conn = Conn {
            stream: Stream::Plain(tcp),
            buffer: Vec::new(),
            host: at.host.clone(),
            port: at.port,
        };
        if implicit_tls {
            conn.start_tls(tls)?;
        }
        Ok(conn)
    }

    /// Wraps the connection in TLS and completes the handshake before anything else is
    /// said: the server's name and certificate checked against `config`'s roots.
    pub(super) fn start_tls(&mut self, config: &Arc<rustls::ClientConfig>) -> Res<()> {
        let Stream::Plain(tcp) = std::mem::replace(&mut self.stream, Stream::Gone) else {
            return Err("TLS is on already".into());
        };
        // What the server sent before TLS is not read as if it came over TLS.
        self.buffer.clear();
        let at = format!("{}:{}", self.host, self.port);
        let name = rustls::pki_types::ServerName::try_from(self.host.clone())
            .map_err(|e| format!("TLS to {at}: {e}"))?;
        let connection = rustls::ClientConnection::new(Arc::clone(config), name)
            .map_err(|e| format!("TLS to {at}: {e}"))?;
        let mut stream = rustls::StreamOwned::new(connection, tcp);
        while stream.conn.is_handshaking() {
            if let Err(e) = stream.conn.complete_io(&mut stream.sock) {
                return Err(tls_failure(&at, &e));
            }
        }
        self.stream = Stream::Tls(Box::new(stream));
        Ok(())
    }

    pub(super) fn tcp(&self) -> Option<&TcpStream> {
        match &self.stream {
            Stream::Plain(t) => Some(t),
            Stream::Tls(s) => Some(&s.sock),
            Stream::Gone => None,
        }
    }

    pub(super) fn write_all(&mut self, bytes: &[u8]) -> Res<()> {
        let written = match &mut self.stream {
            Stream::Plain(t) => t.write_all(bytes).and_then(|()| t.flush()),
            Stream::Tls(s) => s.write_all(bytes).and_then(|()| s.flush()),
            Stream::Gone => return Err("the connection is gone".into()),
        };
        written.map_err(|e| format!("cannot write to {}: {e}", self.host))
    }

    /// One line, without its CRLF. `Ok(None)`: the read timed out (what was read so far
    /// is kept for the next call).
    pub(super) fn line(&mut self) -> Res<Option<Vec<u8>>> {
        loop {
            if let Some(at) = self.buffer.windows(2).position(|w| w == b"\r\n") {
                let line = self.buffer[..at].to_vec();
                self.buffer.drain(..at + 2);
                return Ok(Some(line));
            }
            if self.buffer.len() > 1 << 20 {
                return Err("a line longer than a megabyte".into());
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// A line that must come (a timeout is an error).
    pub(super) fn must_line(&mut self) -> Res<Vec<u8>> {
        let end = Instant::now() + IO_TIMEOUT;
        loop {
            if let Some(line) = self.line()? {
                return Ok(line);
            }
            if Instant::now() > end {
                return Err(format!(
                    "{} said nothing for {}s",
                    self.host,
                    IO_TIMEOUT.as_secs()
                ));
            }
        }
    }

    /// `n` bytes (an IMAP literal).
    pub(super) fn bytes(&mut self, n: usize) -> Res<Vec<u8>> {
        let end = Instant::now() + IO_TIMEOUT;
        while self.buffer.len() < n {
            if !self.fill()? && Instant::now() > end {
                return Err(format!("{} stopped in a message", self.host));
            }
        }
        Ok(self.buffer.drain(..n).collect())
    }

    /// Reads what the server sent into the buffer; `false` when the read timed out.
    pub(super) fn fill(&mut self) -> Res<bool> {
        let mut chunk = [0u8; 16 * 1024];
        let read = match &mut self.stream {
            Stream::Plain(t) => t.read(&mut chunk),
            Stream::Tls(s) => s.read(&mut chunk),
            Stream::Gone => return Err("the connection is gone".into()),
        };
        match read {
            Ok(0) => Err(format!("{} closed the connection", self.host)),
            Ok(n) => {
                self.buffer.extend_from_slice(&chunk[..n]);
                Ok(true)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Ok(false)
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(true),
            Err(e) => Err(format!("cannot read from {}: {e}", self.host)),
        }
    }
}

/// Why a TLS handshake failed, in the config's words when the certificate was refused.
pub(super) fn tls_failure(at: &str, e: &std::io::Error) -> String {
    let refused = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .is_some_and(|r| {
            matches!(
                r,
                rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
            )
        });
    if refused {
        format!(
            "TLS to {at}: the server's certificate was refused ({e}); a private CA's \
             certificate goes in email.ca_file"
        )
    } else {
        format!("TLS to {at}: the handshake failed ({e})")
    }
}
