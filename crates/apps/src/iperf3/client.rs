//! An iperf3 client on a linerate stack: runs one test against a stock `iperf3 -s` (TCP or
//! UDP, forward, reverse or both ways, parallel streams, by time or by bytes) and reports
//! both sides' figures.

use super::cpu::CpuClock;
use super::ctrl::Control;
use super::proto::{
    is_udp_word, make_cookie, Params, Protocol, Results, State, LEGACY_UDP_CONNECT_REPLY, UDP_CONNECT_MSG,
    UDP_CONNECT_REPLY,
};
use super::stream::{drain_udp, Carrier, Stream};
use link::{Instant, Link};
use net::{NetError, Stack, TcpHandle, UdpHandle};
use std::net::SocketAddr;
use std::time::Duration;

/// How long each set-up and closing step may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);
/// Slack past the test's duration before it is given up.
const RUN_SLACK: Duration = Duration::from_secs(30);
/// The iperf3 version this client says it is (the protocol it speaks).
pub const CLIENT_VERSION: &str = "3.12";

/// Where the client is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Opening the control connection.
    Connecting,
    /// Cookie sent; following the server's states.
    Setup,
    /// Opening the data streams one after the other (then waiting for TEST_RUNNING).
    CreateStreams,
    /// Data flows.
    Running,
    /// TEST_END sent; waiting for EXCHANGE_RESULTS.
    Ending,
    /// Our results sent; waiting for the server's.
    Results,
    /// Waiting for DISPLAY_RESULTS.
    Display,
    /// Over.
    Done,
}

/// A stream being opened.
#[derive(Debug, Clone, Copy)]
enum Opening {
    /// TCP connection in progress.
    Tcp(TcpHandle),
    /// UDP handshake sent on this socket.
    Udp(UdpHandle),
}

/// Figures of one side of the test.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Side {
    /// Bytes.
    pub bytes: u64,
    /// Seconds the side measured over.
    pub seconds: f64,
    /// TCP retransmissions (sender side; -1: unknown).
    pub retransmits: i64,
    /// UDP packets (sender: sent; receiver: highest sequence number).
    pub packets: i64,
    /// UDP packets lost (receiver).
    pub lost: i64,
    /// UDP jitter, seconds (receiver; the mean over streams).
    pub jitter: f64,
}

impl Side {
    /// Bits per second.
    pub fn bits_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 * 8.0 / self.seconds
        } else {
            0.0
        }
    }
}

/// The outcome of a test: the sending and the receiving side of each direction.
#[derive(Debug, Clone, Default)]
pub struct ClientReport {
    /// Client to server: what the client sent and what the server received.
    pub upload: Option<(Side, Side)>,
    /// Server to client: what the server sent and what the client received.
    pub download: Option<(Side, Side)>,
    /// Streams per direction.
    pub streams: usize,
    /// CPU use of this process and of the server, percent.
    pub cpu_local: f64,
    /// CPU use the server reported, percent.
    pub cpu_remote: f64,
}

/// The iperf3 client.
pub struct Iperf3Client {
    server: SocketAddr,
    params: Params,
    cookie: [u8; super::proto::COOKIE_LEN],
    ctrl: Option<Control>,
    phase: Phase,
    since: Instant,
    opening: Option<Opening>,
    streams: Vec<Stream>,
    /// Streams this side sends on and receives on.
    to_send: usize,
    to_recv: usize,
    started: Option<Instant>,
    ended: Option<Instant>,
    cpu: CpuClock,
    ours: Option<Results>,
    theirs: Option<Results>,
    error: Option<String>,
    /// How long a refused control connection is retried.
    retry_for: Duration,
    /// When the first connection attempt was made, and when the next may be.
    first_try: Option<Instant>,
    next_try: Instant,
}

impl Iperf3Client {
    /// A client that will run a test with `params` against `server` (starting at the first
    /// step).
    pub fn new(server: SocketAddr, params: Params) -> Iperf3Client {
        let (to_send, to_recv) = match (params.reverse, params.bidirectional) {
            (_, true) => (params.parallel, params.parallel),
            (true, false) => (0, params.parallel),
            (false, false) => (params.parallel, 0),
        };
        Iperf3Client {
            server,
            params,
            cookie: make_cookie(),
            ctrl: None,
            phase: Phase::Connecting,
            since: Instant::ZERO,
            opening: None,
            streams: Vec::new(),
            to_send,
            to_recv,
            started: None,
            ended: None,
            cpu: CpuClock::start(),
            ours: None,
            theirs: None,
            error: None,
            retry_for: Duration::ZERO,
            first_try: None,
            next_try: Instant::ZERO,
        }
    }

    /// Retry a refused or failed control connection for up to `d` (a server still starting).
    pub fn retry_for(mut self, d: Duration) -> Self {
        self.retry_for = d;
        self
    }

    /// True once the test is over (done or failed).
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Done || self.error.is_some()
    }

    /// Why the test failed, if it did.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// True while data flows.
    pub fn running(&self) -> bool {
        self.phase == Phase::Running
    }

    /// Bytes this side moved so far (sent plus received).
    pub fn bytes(&self) -> u64 {
        self.streams.iter().map(|s| s.bytes).sum()
    }

    /// Advance the test (call after each poll); returns the work done.
    pub fn step<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        if self.is_finished() {
            return Ok(0);
        }
        let now = stack.now();
        if self.since == Instant::ZERO {
            self.since = now;
        }
        let mut work = 0;
        let r = self.advance(stack, now, &mut work);
        if let Err(e) = r {
            self.fail(stack, e);
        }
        Ok(work)
    }

    fn enter(&mut self, phase: Phase, now: Instant) {
        (self.phase, self.since) = (phase, now);
    }

    fn advance<L: Link>(&mut self, stack: &mut Stack<L>, now: Instant, work: &mut usize) -> Result<(), String> {
        let limit = match self.phase {
            Phase::Running | Phase::Ending if self.params.time > 0 => {
                Duration::from_secs(self.params.time + self.params.omit) + RUN_SLACK
            }
            Phase::Running | Phase::Ending => Duration::from_secs(3600),
            _ => STEP_TIMEOUT,
        };
        if now - self.since > limit {
            return Err(format!("the server did not go on within {limit:?} ({:?})", self.phase));
        }
        if self.phase == Phase::Connecting {
            return self.connect(stack, now);
        }
        let ctrl = self.ctrl.as_mut().ok_or("no control connection")?;
        *work += ctrl.pump(stack).map_err(|e| format!("the control connection failed: {e}"))?;
        match self.phase {
            Phase::CreateStreams => *work += self.open_streams(stack)?,
            Phase::Running => *work += self.run(stack, now)?,
            Phase::Ending | Phase::Results | Phase::Display => *work += self.drain(stack),
            _ => {}
        }
        self.on_messages(stack, now)?;
        if let Some(c) = self.ctrl.as_mut() {
            c.pump(stack).map_err(|e| format!("the control connection failed: {e}"))?;
        }
        Ok(())
    }

    /// Open the control connection and send the cookie.
    fn connect<L: Link>(&mut self, stack: &mut Stack<L>, now: Instant) -> Result<(), String> {
        let Some(c) = &self.ctrl else {
            if now < self.next_try {
                return Ok(());
            }
            self.first_try.get_or_insert(now);
            let h = stack.tcp_connect(self.server).map_err(|e| format!("cannot connect to {}: {e}", self.server))?;
            self.ctrl = Some(Control::new(h));
            return Ok(());
        };
        match stack.tcp_connect_result(c.h).map_err(|e| e.to_string())? {
            None => Ok(()),
            Some(Err(e)) => {
                if self.first_try.is_some_and(|t| now - t < self.retry_for) {
                    let _ = stack.tcp_close(c.h);
                    self.ctrl = None;
                    self.next_try = now + Duration::from_millis(100);
                    // Waiting for a server is not a step that times out.
                    self.since = now;
                    return Ok(());
                }
                Err(format!("cannot connect to {}: {e}", self.server))
            }
            Some(Ok(())) => {
                let cookie = self.cookie;
                let c = self.ctrl.as_mut().ok_or("no control connection")?;
                c.send_raw(&cookie);
                self.enter(Phase::Setup, now);
                Ok(())
            }
        }
    }

    /// Handle what the server said.
    fn on_messages<L: Link>(&mut self, stack: &mut Stack<L>, now: Instant) -> Result<(), String> {
        loop {
            let ctrl = self.ctrl.as_mut().ok_or("no control connection")?;
            if self.phase == Phase::Results {
                let Some(v) = ctrl.take_json()? else { return Ok(()) };
                self.theirs = Some(Results::from_json(&v).map_err(|e| format!("the server's {e}"))?);
                self.enter(Phase::Display, now);
                continue;
            }
            let Some(b) = ctrl.take_byte() else {
                if ctrl.at_eof() {
                    return Err(format!("the server closed the control connection ({:?})", self.phase));
                }
                return Ok(());
            };
            match State::from_byte(b) {
                Some(State::ParamExchange) => ctrl.send_json(&self.params.to_json(CLIENT_VERSION)),
                Some(State::CreateStreams) => self.enter(Phase::CreateStreams, now),
                Some(State::TestStart) => {}
                Some(State::TestRunning) => {
                    if self.streams.len() < self.to_send + self.to_recv {
                        return Err("the server started the test before all streams were open".into());
                    }
                    self.cpu = CpuClock::start();
                    self.started = Some(now);
                    self.enter(Phase::Running, now);
                }
                Some(State::ExchangeResults) => {
                    let ours = self.our_results();
                    self.ctrl.as_mut().ok_or("no control connection")?.send_json(&ours.to_json());
                    self.ours = Some(ours);
                    self.enter(Phase::Results, now);
                }
                Some(State::DisplayResults) => {
                    ctrl.send_state(State::IperfDone);
                    let _ = ctrl.pump(stack);
                    let h = ctrl.h;
                    for s in &mut self.streams {
                        s.close(stack);
                    }
                    let _ = stack.tcp_close(h);
                    self.ctrl = None;
                    self.enter(Phase::Done, now);
                    return Ok(());
                }
                Some(State::AccessDenied) => return Err("the server is busy with another test (access denied)".into()),
                Some(State::ServerTerminate) => return Err("the server terminated the test".into()),
                Some(State::ServerError) => {
                    let Some(e) = ctrl.take(8) else { return Err("the server reported an error".into()) };
                    let code = i32::from_be_bytes([e[0], e[1], e[2], e[3]]);
                    let errno = i32::from_be_bytes([e[4], e[5], e[6], e[7]]);
                    return Err(format!("the server reported error {code} (iperf3's i_errno; errno {errno})"));
                }
                other => return Err(format!("unexpected message {other:?} (byte {b}) from the server")),
            }
        }
    }

    /// Open the streams one at a time (the server numbers them in the order they arrive).
    fn open_streams<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, String> {
        let total = self.to_send + self.to_recv;
        if self.streams.len() >= total {
            return Ok(0);
        }
        // iperf3 opens the sending streams first.
        let sender = self.streams.len() < self.to_send;
        let id = super::proto::stream_id(self.streams.len());
        match self.opening {
            None => {
                self.opening = Some(match self.params.protocol {
                    Protocol::Tcp => Opening::Tcp(stack.tcp_connect(self.server).map_err(|e| e.to_string())?),
                    Protocol::Udp => {
                        let sock = stack.udp_bind(0).map_err(|e| e.to_string())?;
                        let hello = UDP_CONNECT_MSG.to_le_bytes();
                        if !stack.udp_send_to(sock, self.server, &hello).map_err(|e| e.to_string())? {
                            // The link is full: try again at the next step.
                            stack.udp_close(sock).map_err(|e| e.to_string())?;
                            return Ok(0);
                        }
                        Opening::Udp(sock)
                    }
                });
                Ok(1)
            }
            Some(Opening::Tcp(h)) => match stack.tcp_connect_result(h).map_err(|e| e.to_string())? {
                None => Ok(0),
                Some(Err(e)) => Err(format!("data connection {id} failed: {e}")),
                Some(Ok(())) => {
                    stack.tcp_send(h, &self.cookie).map_err(|e| e.to_string())?;
                    self.streams.push(Stream::new(id, sender, Carrier::Tcp(h)));
                    self.opening = None;
                    Ok(1)
                }
            },
            Some(Opening::Udp(sock)) => {
                let mut answered = None;
                drain_udp(stack, sock, |from, data| {
                    if is_udp_word(data, UDP_CONNECT_REPLY) || is_udp_word(data, LEGACY_UDP_CONNECT_REPLY) {
                        answered = Some(from);
                    }
                })
                .map_err(|e| e.to_string())?;
                let Some(peer) = answered else { return Ok(0) };
                self.streams.push(Stream::new(id, sender, Carrier::Udp { sock, peer }));
                self.opening = None;
                Ok(1)
            }
        }
    }

    /// Send and receive while the test runs; end it when its time or bytes are through.
    fn run<L: Link>(&mut self, stack: &mut Stack<L>, now: Instant) -> Result<usize, String> {
        let mut work = self.receive(stack, true);
        let p = &self.params;
        let start = self.started.unwrap_or(now);
        let total = match (p.bytes, p.blocks) {
            (0, 0) => None,
            (0, b) => Some(b.saturating_mul(p.len as u64)),
            (n, _) => Some(n),
        };
        for i in 0..self.streams.len() {
            if !self.streams[i].sender {
                continue;
            }
            let sent: u64 = self.streams.iter().filter(|s| s.sender).map(|s| s.bytes).sum();
            let budget = total.map(|t| t.saturating_sub(sent));
            let s = &mut self.streams[i];
            work +=
                s.send(stack, start, p.rate, p.len, budget, p.udp_counters_64bit).map_err(|e| e.to_string())? as usize;
            if let Some(e) = &s.error {
                return Err(format!("stream {} failed: {e}", s.id));
            }
        }
        let sum = |sender: bool| -> u64 { self.streams.iter().filter(|s| s.sender == sender).map(|s| s.bytes).sum() };
        let over = match total {
            Some(t) => (self.to_send > 0 && sum(true) >= t) || (self.to_recv > 0 && sum(false) >= t),
            None => now - start >= Duration::from_secs(p.time),
        };
        if over {
            for s in self.streams.iter_mut().filter(|s| s.sender) {
                s.take_retransmits(stack);
            }
            self.ended = Some(now);
            self.ctrl.as_mut().ok_or("no control connection")?.send_state(State::TestEnd);
            self.enter(Phase::Ending, now);
        }
        Ok(work)
    }

    /// Read the receiving streams; with `count` the bytes count as test data.
    fn receive<L: Link>(&mut self, stack: &mut Stack<L>, count: bool) -> usize {
        let wide = self.params.udp_counters_64bit;
        let mut work = 0;
        for s in self.streams.iter_mut().filter(|s| !s.sender) {
            match s.carrier {
                Carrier::Tcp(_) => work += s.recv_tcp(stack, count).unwrap_or(0) as usize,
                Carrier::Udp { sock, .. } => {
                    work += drain_udp(stack, sock, |_, data| {
                        if count {
                            s.recv_udp(data, wide);
                        }
                    })
                    .unwrap_or(0)
                }
            }
        }
        work
    }

    /// After the end: keep reading so that a sending server is never stuck on a full window.
    fn drain<L: Link>(&mut self, stack: &mut Stack<L>) -> usize {
        self.receive(stack, false)
    }

    fn seconds(&self) -> f64 {
        match (self.started, self.ended) {
            (Some(a), Some(b)) => (b - a).as_secs_f64(),
            _ => 0.0,
        }
    }

    /// The results we send.
    fn our_results(&self) -> Results {
        let tcp = self.params.protocol == Protocol::Tcp;
        let sender_has_retransmits = match (self.to_send > 0, tcp) {
            (false, _) => -1,
            (true, true) => 1,
            (true, false) => 0,
        };
        let secs = self.seconds();
        Results {
            cpu_util: self.cpu.utilization(),
            sender_has_retransmits,
            streams: self.streams.iter().map(|s| s.result(secs, tcp)).collect(),
            server_output_text: None,
        }
    }

    /// Give the test up: the server is told, every connection closed.
    fn fail<L: Link>(&mut self, stack: &mut Stack<L>, why: String) {
        if self.error.is_some() {
            return;
        }
        for s in &mut self.streams {
            if let Carrier::Tcp(h) = s.carrier {
                let _ = stack.tcp_abort(h);
            }
            s.closed = true;
        }
        if let Some(Opening::Tcp(h)) = self.opening.take() {
            let _ = stack.tcp_abort(h);
        }
        if let Some(c) = self.ctrl.as_mut() {
            if self.phase != Phase::Connecting {
                c.send_state(State::ClientTerminate);
                let _ = c.pump(stack);
            }
            let _ = stack.tcp_close(c.h);
        }
        self.error = Some(why);
    }

    /// The figures of both sides (None before the test is done).
    pub fn report(&self) -> Option<ClientReport> {
        let (ours, theirs) = (self.ours.as_ref()?, self.theirs.as_ref()?);
        if self.phase != Phase::Done {
            return None;
        }
        // Sum one side's streams of one direction: `mine` are the streams this client sends on.
        let side = |r: &Results, mine: bool| -> Side {
            let ids: Vec<u32> = self.streams.iter().filter(|s| s.sender == mine).map(|s| s.id).collect();
            let lines: Vec<_> = r.streams.iter().filter(|s| ids.contains(&s.id)).collect();
            let n = lines.len().max(1) as f64;
            Side {
                bytes: lines.iter().map(|s| s.bytes).sum(),
                seconds: lines.iter().map(|s| s.end_time - s.start_time).fold(0.0, f64::max),
                retransmits: if lines.iter().any(|s| s.retransmits < 0) {
                    -1
                } else {
                    lines.iter().map(|s| s.retransmits).sum()
                },
                packets: lines.iter().map(|s| s.packets).sum(),
                lost: lines.iter().map(|s| s.errors).sum(),
                jitter: lines.iter().map(|s| s.jitter).sum::<f64>() / n,
            }
        };
        let upload = (self.to_send > 0).then(|| (side(ours, true), side(theirs, true)));
        let download = (self.to_recv > 0).then(|| (side(theirs, false), side(ours, false)));
        Some(ClientReport {
            upload,
            download,
            streams: self.params.parallel,
            cpu_local: ours.cpu_util[0],
            cpu_remote: theirs.cpu_util[0],
        })
    }
}
