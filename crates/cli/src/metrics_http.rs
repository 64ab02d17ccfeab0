//! `--metrics-port PORT` of the long-running commands: an HTTP endpoint on loopback
//! (`http://127.0.0.1:PORT/metrics`) serving this process's counters as the OpenMetrics text
//! `linerate stats --prometheus` prints, for Prometheus to scrape. A thread of its own answers
//! one request per connection (parsed by `httparse`); it stops when the guard is dropped.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The flag, flattened into each long-running command's arguments.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct MetricsArgs {
    /// Serve this process's counters as OpenMetrics text (what `linerate stats --prometheus`
    /// prints) on http://127.0.0.1:PORT/metrics, for Prometheus to scrape.
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub metrics_port: Option<u16>,
}

/// The running endpoint; dropping it stops the thread.
pub struct Endpoint {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Start the endpoint if `--metrics-port` was given (one sentence if the port is taken).
pub fn serve(a: &MetricsArgs) -> Result<Option<Endpoint>, String> {
    let Some(port) = a.metrics_port else { return Ok(None) };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let listener =
        TcpListener::bind(addr).map_err(|e| format!("--metrics-port {port}: cannot listen on {addr}: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| format!("--metrics-port {port}: {e}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("metrics-http".into())
        .spawn(move || accept_loop(&listener, &flag))
        .map_err(|e| format!("--metrics-port {port}: {e}"))?;
    eprintln!("metrics: http://{addr}/metrics (OpenMetrics)");
    Ok(Some(Endpoint { stop, thread: Some(thread) }))
}

/// Accept and answer connections until `stop` is set (checked every 50 ms).
fn accept_loop(listener: &TcpListener, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((conn, _)) => {
                if let Err(e) = answer(conn) {
                    tracing::debug!(error = %e, "metrics request failed");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => {
                tracing::debug!(error = %e, "metrics accept failed");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Longest request head read.
const MAX_HEAD: usize = 8192;

/// Read one request (bounded in size and time) and write the response.
fn answer(mut conn: TcpStream) -> std::io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    conn.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let (status, body) = loop {
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(reply) = route(&buf) {
            break reply;
        }
        if buf.len() > MAX_HEAD {
            break ("431 Request Header Fields Too Large", String::new());
        }
    };
    let kind = if status.starts_with("200") {
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    } else {
        "text/plain; charset=utf-8"
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(body.as_bytes())
}

/// The status and body for the request at the start of `buf`, or None while its head is
/// incomplete.
fn route(buf: &[u8]) -> Option<(&'static str, String)> {
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut fields);
    match req.parse(buf) {
        Ok(httparse::Status::Partial) => None,
        Err(_) => Some(("400 Bad Request", "bad request\n".into())),
        Ok(httparse::Status::Complete(_)) => {
            Some(match (req.method, req.path.map(|p| p.split('?').next().unwrap_or(""))) {
                (Some("GET"), Some("/metrics" | "/")) => ("200 OK", exposition()),
                (Some("GET"), _) => ("404 Not Found", "not found: try /metrics\n".into()),
                _ => ("405 Method Not Allowed", "only GET\n".into()),
            })
        }
    }
}

/// This process's instances' counters as OpenMetrics text.
fn exposition() -> String {
    let pid = std::process::id();
    let mine: Vec<_> = crate::statsfile::read_all().into_iter().filter(|e| e.pid == pid).collect();
    crate::openmetrics::exposition(&mine)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_metrics_and_refuses_the_rest() {
        assert!(route(b"GET /metrics HTTP/1.1\r\nHost: x").is_none(), "incomplete head");
        let (status, body) = route(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert!(status.starts_with("200") && body.ends_with("# EOF\n"), "{status} {body}");
        assert!(route(b"GET /other HTTP/1.1\r\n\r\n").unwrap().0.starts_with("404"));
        assert!(route(b"POST /metrics HTTP/1.1\r\n\r\n").unwrap().0.starts_with("405"));
        assert!(route(b"GET /metrics HTTP/9\r\n\r\n").unwrap().0.starts_with("400"));
    }
}
