//! A real HTTP receiver on 127.0.0.1 for the watcher's webhooks: it records every request
//! and answers as it is told (fail a few times, never answer, answer slowly).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Behavior {
    /// 200 to everything.
    Accept,
    /// 500 to the first `n` requests, then 200.
    FailFirst(usize),
    /// Reads the request and never answers.
    Silent,
    /// Answers 200 after this long.
    Slow(Duration),
    /// Answers every request with a redirect to another path of its own (where a GET
    /// would get 200).
    Redirect,
}

pub(crate) struct Receiver {
    pub url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl Receiver {
    pub(crate) fn start(behavior: Behavior) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port on loopback");
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicUsize::new(0));
        let (r, s) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (r, s, seen) = (r.clone(), s.clone(), seen.clone());
                        std::thread::spawn(move || serve(stream, behavior, &r, &s, &seen));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Receiver {
            url,
            requests,
            stop,
        }
    }

    pub(crate) fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits (at most `within`) until `n` requests have come.
    pub(crate) fn wait_for(&self, n: usize, within: Duration) -> Vec<Request> {
        let end = std::time::Instant::now() + within;
        while self.requests().len() < n && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.requests()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn serve(
    mut stream: TcpStream,
    behavior: Behavior,
    requests: &Mutex<Vec<Request>>,
    stop: &AtomicBool,
    seen: &AtomicUsize,
) {
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let Some(request) = read_request(&mut stream) else {
        return;
    };
    requests.lock().unwrap().push(request);
    let n = seen.fetch_add(1, Ordering::SeqCst);
    let status = match behavior {
        Behavior::Accept => "200 OK",
        Behavior::FailFirst(k) if n < k => "500 Internal Server Error",
        Behavior::FailFirst(_) => "200 OK",
        Behavior::Silent => {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
            return;
        }
        Behavior::Slow(pause) => {
            std::thread::sleep(pause);
            "200 OK"
        }
        Behavior::Redirect if request_path(requests) == "/elsewhere" => "200 OK",
        Behavior::Redirect => "302 Found\r\nLocation: /elsewhere",
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    );
}

fn request_path(requests: &Mutex<Vec<Request>>) -> String {
    requests
        .lock()
        .unwrap()
        .last()
        .map(|r| r.path.clone())
        .unwrap_or_default()
}

fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = data[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Some(Request {
        path,
        headers,
        body,
    })
}
