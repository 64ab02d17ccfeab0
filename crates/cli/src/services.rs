//! The services a linerate host runs for Linux tools (`tap`, `host`): TCP echo, a discard
//! sink, an HTTP responder, an iperf3 server, the sink of linerate's iperf protocol and a file
//! sender, each optional.

use apps::iperf3::Iperf3Server;
use apps::tcp_source::{Payload, SourceOptions};
use apps::{HttpServer, TcpEcho, TcpSink, TcpSource};
use link::Link;
use net::{NetError, Stack};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The services' ports on the command line (`tap`, `host`).
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct ServiceArgs {
    /// UDP port of the echo service (0: none).
    #[arg(long, default_value_t = 7)]
    pub echo_port: u16,
    /// TCP port of the echo service (0: none).
    #[arg(long, default_value_t = 7)]
    pub tcp_echo: u16,
    /// TCP port of the HTTP responder (0: none): GET `/BYTES` or `/size/BYTES`.
    #[arg(long, default_value_t = 80)]
    pub http: u16,
    /// TCP port of the discard sink, which counts bytes (0: none).
    #[arg(long, default_value_t = 9)]
    pub tcp_sink: u16,
    /// TCP port of the sink of linerate's iperf protocol (`linerate iperf -c HOST -p PORT`),
    /// which reports each connection's byte count back (0: none).
    #[arg(long, default_value_t = 5001)]
    pub iperf: u16,
}

impl ServiceArgs {
    /// The TCP services' ports, with an iperf3 server on `iperf3` (0: none).
    pub fn ports(&self, iperf3: u16) -> ServicePorts {
        ServicePorts { tcp_echo: self.tcp_echo, tcp_sink: self.tcp_sink, http: self.http, iperf3, iperf: self.iperf }
    }
}

/// TCP ports of the services (0: that service is off).
#[derive(Debug, Clone, Copy)]
pub struct ServicePorts {
    /// TCP echo.
    pub tcp_echo: u16,
    /// Discard sink.
    pub tcp_sink: u16,
    /// HTTP responder.
    pub http: u16,
    /// iperf3 server.
    pub iperf3: u16,
    /// Sink of linerate's iperf protocol.
    pub iperf: u16,
}

/// The TCP side of the host: echo, sink, HTTP responder and the file sender, each optional.
pub struct TcpServices {
    /// TCP echo.
    echo: Option<TcpEcho>,
    /// Discard sink.
    sink: Option<TcpSink>,
    /// HTTP responder.
    http: Option<HttpServer>,
    /// The file sender of --tcp-send.
    pub send: Option<TcpSource>,
    /// The iperf3 server.
    iperf3: Option<Iperf3Server>,
    /// iperf3 tests the server finished.
    iperf3_tests: u64,
    /// The reporting sink of linerate's iperf protocol.
    iperf: Option<TcpSink>,
}

impl TcpServices {
    /// Start the services on `ports` and, with `send` (to, file, how long to retry), the sender.
    pub fn start<L: Link>(
        stack: &mut Stack<L>,
        ports: &ServicePorts,
        send: Option<(SocketAddr, PathBuf, Duration)>,
    ) -> Result<TcpServices, String> {
        let on = |port: u16| (port != 0).then_some(port);
        let why = |what: &'static str, port: u16| move |e: NetError| format!("{what} on TCP port {port}: {e}");
        let echo = on(ports.tcp_echo).map(|p| TcpEcho::listen(stack, p).map_err(why("echo", p))).transpose()?;
        let sink = on(ports.tcp_sink).map(|p| TcpSink::listen(stack, p, 1024).map_err(why("sink", p))).transpose()?;
        let http = on(ports.http).map(|p| HttpServer::listen(stack, p).map_err(why("HTTP", p))).transpose()?;
        let iperf3 = on(ports.iperf3).map(|p| Iperf3Server::listen(stack, p).map_err(why("iperf3", p))).transpose()?;
        let iperf = on(ports.iperf)
            .map(|p| TcpSink::listen(stack, p, 1024).map(TcpSink::with_report).map_err(why("iperf sink", p)))
            .transpose()?;
        let send = match send {
            Some((to, path, retry_for)) => {
                let file = std::fs::File::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
                let opts = SourceOptions { retry_for, reply_limit: 0, ..SourceOptions::default() };
                Some(TcpSource::new(to, Payload::Reader(Box::new(file)), opts))
            }
            None => None,
        };
        Ok(TcpServices { echo, sink, http, send, iperf3, iperf3_tests: 0, iperf })
    }

    /// Tell the user how to reach the services.
    pub fn print_hints(&self, ns: &str, host: std::net::Ipv4Addr) {
        if let Some(e) = &self.echo {
            eprintln!("  TCP echo on port {p}: ip netns exec {ns} nc -N {host} {p}", p = e.port());
        }
        if let Some(s) = &self.sink {
            eprintln!("  TCP discard sink on port {p}: ip netns exec {ns} nc -N {host} {p} < FILE", p = s.port());
        }
        if let Some(h) = &self.http {
            eprintln!(
                "  HTTP on port {p}: ip netns exec {ns} curl -o /dev/null http://{host}:{p}/size/1000000",
                p = h.port()
            );
        }
        if let Some(s) = &self.iperf3 {
            eprintln!("  iperf3 server on port {p}: ip netns exec {ns} iperf3 -c {host} -p {p}", p = s.port());
        }
        if let Some(s) = &self.iperf {
            eprintln!(
                "  linerate iperf sink on port {p}: ip netns exec {ns} linerate iperf -c {host} -p {p} --link ...",
                p = s.port()
            );
        }
        if let Some(s) = &self.send {
            eprintln!("  sending the file to {} (retrying while refused)", s.remote());
        }
    }

    /// Serve every service once (after a poll); returns the work done.
    pub fn serve<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        let mut work = 0;
        if let Some(e) = self.echo.as_mut() {
            work += e.serve(stack)?;
        }
        if let Some(s) = self.sink.as_mut() {
            work += s.serve(stack)?;
        }
        if let Some(s) = self.iperf.as_mut() {
            work += s.serve(stack)?;
        }
        if let Some(h) = self.http.as_mut() {
            work += h.serve(stack)?;
        }
        if let Some(s) = self.iperf3.as_mut() {
            work += s.step(stack)?;
            for r in s.take_reports() {
                self.iperf3_tests += 1;
                tracing::info!(report = ?r, "iperf3 test done");
            }
        }
        if let Some(s) = self.send.as_mut() {
            work += s.step(stack)?;
        }
        Ok(work)
    }

    /// Named figures for the final table.
    pub fn figures(&self) -> Vec<(String, u64)> {
        let mut f = Vec::new();
        let mut conns = |name: &str, c: apps::tcp_conns::ConnCounts| {
            f.push((format!("{name}_connections"), c.accepted));
            f.push((format!("{name}_failed"), c.failed));
        };
        if let Some(e) = &self.echo {
            conns("tcp_echo", e.connections());
        }
        if let Some(s) = &self.sink {
            conns("tcp_sink", s.connections());
        }
        if let Some(s) = &self.iperf {
            conns("iperf", s.connections());
        }
        if let Some(h) = &self.http {
            conns("http", h.connections());
        }
        if let Some(e) = &self.echo {
            f.push(("tcp_echo_bytes".into(), e.bytes));
        }
        if let Some(s) = &self.sink {
            f.push(("tcp_sink_bytes".into(), s.bytes));
        }
        if let Some(s) = &self.iperf {
            f.push(("iperf_bytes".into(), s.bytes));
        }
        if let Some(h) = &self.http {
            let c = h.counts();
            f.extend([
                ("http_ok".into(), c.ok),
                ("http_errors".into(), c.errors),
                ("http_body_bytes".into(), c.body_bytes),
            ]);
        }
        if self.iperf3.is_some() {
            f.push(("iperf3_tests".into(), self.iperf3_tests));
        }
        if let Some(s) = &self.send {
            f.extend([
                ("tcp_send_bytes".into(), s.sent),
                ("tcp_send_acked".into(), s.acked),
                ("tcp_send_attempts".into(), s.attempts as u64),
            ]);
        }
        f
    }
}
