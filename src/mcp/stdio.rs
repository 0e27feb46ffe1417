//! stdio as the MCP session sees it, with JSON-RPC's parse errors: rmcp drops a line that
//! is not JSON without a word, and the client then waits for an answer that never comes.
//! Here every line of stdin is read first: JSON goes on to the session, anything else is
//! answered at once with `-32700 Parse error` (id null), as JSON-RPC says. Both writers
//! share one lock on stdout, so a reply is never cut into by another.

use std::io::Write;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};

/// stdout, written whole message by whole message under one lock.
#[derive(Clone)]
pub(super) struct Out(Arc<Mutex<std::io::Stdout>>);

impl Out {
    fn line(&self, text: &str) {
        if let Ok(mut out) = self.0.lock() {
            let _ = out.write_all(text.as_bytes());
            let _ = out.write_all(b"\n");
            let _ = out.flush();
        }
    }
}

impl AsyncWrite for Out {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let written = match self.0.lock() {
            Ok(mut out) => out.write_all(buf).map(|()| buf.len()),
            Err(_) => Err(std::io::Error::other("stdout is poisoned")),
        };
        Poll::Ready(written)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(match self.0.lock() {
            Ok(mut out) => out.flush(),
            Err(_) => Ok(()),
        })
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.poll_flush(cx)
    }
}

/// The session's side of stdio: what it reads (the lines of stdin that are JSON) and
/// where it writes. A task started here reads stdin until it ends.
pub(super) fn transport() -> (DuplexStream, Out) {
    let out = Out(Arc::new(Mutex::new(std::io::stdout())));
    let (mut to_session, session_reads) = tokio::io::duplex(1 << 16);
    let errors = out.clone();
    tokio::spawn(async move {
        let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
        let mut line = Vec::new();
        loop {
            line.clear();
            match stdin.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let text = line.trim_ascii();
            if text.is_empty() {
                continue;
            }
            if serde_json::from_slice::<serde_json::Value>(text).is_err() {
                errors.line(
                    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON"}}"#,
                );
                continue;
            }
            if to_session.write_all(text).await.is_err()
                || to_session.write_all(b"\n").await.is_err()
            {
                break;
            }
        }
        // stdin ended: so does the session's input.
        let _ = to_session.shutdown().await;
    });
    (session_reads, out)
}
