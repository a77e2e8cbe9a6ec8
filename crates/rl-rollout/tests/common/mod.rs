//! A scripted HTTP server on 127.0.0.1 for the engine clients' tests: one reply per connection,
//! in order; it records each request line and body, and stops when dropped.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rl_rollout::RetryPolicy;

/// What the server does with the n-th connection.
#[derive(Clone, Debug)]
pub enum Reply {
    Status(u16, &'static str),
    /// Closes the connection without answering.
    Drop,
    /// Waits this long, then answers 200 `{}`.
    Stall(Duration),
}

pub struct Server {
    pub url: String,
    pub seen: Arc<Mutex<Vec<String>>>,
    pub bodies: Arc<Mutex<Vec<String>>>,
    handle: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

/// The request line and the body.
fn read_request(s: &mut TcpStream) -> (String, String) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    loop {
        let n = s.read(&mut chunk).unwrap_or(0);
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&buf).to_string();
    let line = text.lines().next().unwrap_or("").to_string();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (line, body)
}

fn answer(s: &mut TcpStream, code: u16, body: &str) {
    let _ = write!(
        s,
        "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Serves `script` (one reply per connection, in order), then stops.
pub fn serve(script: Vec<Reply>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let bodies_seen = Arc::new(Mutex::new(Vec::new()));
    let bodies = bodies_seen.clone();
    let handle = std::thread::spawn(move || {
        for reply in script {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let (line, body) = read_request(&mut s);
            log.lock().unwrap().push(line);
            bodies.lock().unwrap().push(body);
            match reply {
                Reply::Status(code, body) => answer(&mut s, code, body),
                Reply::Drop => drop(s),
                Reply::Stall(d) => {
                    std::thread::sleep(d);
                    answer(&mut s, 200, "{}");
                }
            }
        }
    });
    Server {
        url,
        seen,
        bodies: bodies_seen,
        handle: Some(handle),
        stop: Arc::new(AtomicBool::new(false)),
    }
}

/// Answers every connection with `handler(request line, body)` = (status, body) until dropped.
pub fn serve_with(mut handler: impl FnMut(&str, &str) -> (u16, String) + Send + 'static) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (seen, bodies) = (
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(Mutex::new(Vec::new())),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let (log, bodies_log, stopped) = (seen.clone(), bodies.clone(), stop.clone());
    let handle = std::thread::spawn(move || {
        while let Ok((mut s, _)) = listener.accept() {
            if stopped.load(Ordering::SeqCst) {
                return;
            }
            let (line, body) = read_request(&mut s);
            let (code, reply) = handler(&line, &body);
            log.lock().unwrap().push(line);
            bodies_log.lock().unwrap().push(body);
            answer(&mut s, code, &reply);
        }
    });
    Server {
        url,
        seen,
        bodies,
        handle: Some(handle),
        stop,
    }
}

impl Server {
    /// Request body `i` (in arrival order), parsed as JSON.
    pub fn json_body(&self, i: usize) -> serde_json::Value {
        serde_json::from_str(&self.bodies.lock().unwrap()[i]).unwrap()
    }

    /// Every request body received so far, parsed as JSON (all must be JSON).
    pub fn json_bodies(&self) -> Vec<serde_json::Value> {
        let n = self.bodies.lock().unwrap().len();
        (0..n).map(|i| self.json_body(i)).collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Unblock a pending accept, then join.
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

pub fn policy(retries: usize, timeout_s: f64) -> RetryPolicy {
    RetryPolicy {
        timeout_s,
        max_retries: retries,
        backoff_s: 0.01,
    }
}

/// A `&'static str` for a [`Reply::Status`] body built at run time.
pub fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}
