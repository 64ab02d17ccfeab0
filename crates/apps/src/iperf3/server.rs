//! An iperf3 server on a linerate stack: stock `iperf3 -c` clients run their tests against it
//! (TCP and UDP, reverse, bidirectional, parallel streams, by time or by bytes). One test at a
//! time: a second client is answered ACCESS_DENIED. The results it sends carry the bytes it
//! really received; as receiver it keeps reading, for a bounded while, until it has every
//! byte the client says it sent.

use super::cpu::CpuClock;
use super::ctrl::Control;
use super::proto::{
    is_cookie, is_udp_word, Params, Protocol, Results, State, COOKIE_LEN, UDP_CONNECT_MSG, UDP_CONNECT_REPLY,
};
use super::stream::{drain_udp, Carrier, Stream};
use link::{Instant, Link};
use net::{NetError, Stack, TcpHandle, TcpListener, UdpHandle};
use std::net::SocketAddr;
use std::time::Duration;

/// How long the set-up steps (cookie, parameters, streams) and the closing steps (results,
/// done) may each take.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);
/// Slack past the test's duration before a running test is given up.
const RUN_SLACK: Duration = Duration::from_secs(30);
/// How long the receiver waits for bytes still in flight when the test ended.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(3);
/// iperf3's error number for "unable to receive parameters".
const IERECVPARAMS: i32 = 114;

/// Where a test is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the control connection's cookie.
    Cookie,
    /// Waiting for the parameters.
    Params,
    /// Waiting for the data streams.
    CreateStreams,
    /// Data flows.
    Running,
    /// The client ended the test; waiting for its results.
    Results,
    /// Reading bytes still in flight before answering with ours.
    Drain,
    /// Waiting for the client's IPERF_DONE.
    AwaitDone,
}

/// What the server reports about one test.
#[derive(Debug, Clone)]
pub struct TestReport {
    /// The client's control connection.
    pub client: Option<SocketAddr>,
    /// The test's parameters (None if it failed before they came).
    pub params: Option<Params>,
    /// Seconds from the start of data to the client's end of the test.
    pub seconds: f64,
    /// Bytes this server received in all streams.
    pub bytes_received: u64,
    /// Bytes this server sent in all streams.
    pub bytes_sent: u64,
    /// Our results, as sent to the client.
    pub ours: Results,
    /// The client's results.
    pub theirs: Option<Results>,
    /// Why the test failed, if it did.
    pub error: Option<String>,
}

/// One test in progress.
struct Test {
    ctrl: Control,
    client: Option<SocketAddr>,
    cookie: Vec<u8>,
    params: Option<Params>,
    phase: Phase,
    since: Instant,
    /// Data connections waiting for their cookie.
    pending: Vec<(TcpHandle, Vec<u8>)>,
    streams: Vec<Stream>,
    to_recv: usize,
    to_send: usize,
    running_at: Option<Instant>,
    ended_at: Option<Instant>,
    cpu: CpuClock,
    theirs: Option<Results>,
    ours: Option<Results>,
    /// The client said IPERF_DONE (or closed after the results).
    done: bool,
    /// The omitted start of the test (-O) is over and its counts were dropped.
    omit_over: bool,
    error: Option<String>,
}

/// The iperf3 server.
pub struct Iperf3Server {
    listener: TcpListener,
    udp: UdpHandle,
    port: u16,
    test: Option<Test>,
    /// Finished tests not yet taken.
    reports: Vec<TestReport>,
    /// Connections answered ACCESS_DENIED.
    pub denied: u64,
    /// UDP streams whose handshake answer still has to go out (the link was full).
    replies: Vec<SocketAddr>,
}

impl Iperf3Server {
    /// Listen on TCP and UDP `port` of `stack`.
    pub fn listen<L: Link>(stack: &mut Stack<L>, port: u16) -> Result<Iperf3Server, NetError> {
        let listener = stack.tcp_listen(port, 256)?;
        let udp = stack.udp_bind(port)?;
        Ok(Iperf3Server { listener, udp, port, test: None, reports: Vec::new(), denied: 0, replies: Vec::new() })
    }

    /// The port served.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// True while a client's test is in progress.
    pub fn busy(&self) -> bool {
        self.test.is_some()
    }

    /// Take the reports of the tests finished since the last call.
    pub fn take_reports(&mut self) -> Vec<TestReport> {
        std::mem::take(&mut self.reports)
    }

    /// Serve (call after each poll); returns the work done (0: idle).
    pub fn step<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        let now = stack.now();
        let mut work = 0;
        while let Some(h) = stack.tcp_accept(self.listener) {
            work += 1;
            match &mut self.test {
                None => self.test = Some(Test::new(h, now, stack.tcp_stats(h).ok().and_then(|s| s.remote))),
                Some(t) if t.phase == Phase::CreateStreams && t.protocol() == Some(Protocol::Tcp) => {
                    t.pending.push((h, Vec::new()))
                }
                Some(_) => self.deny(stack, h),
            }
        }
        work += self.take_datagrams(stack)?;
        let Some(t) = self.test.as_mut() else { return Ok(work) };
        let (w, denied) = t.step(stack, now);
        work += w;
        if let Some(report) = t.finished(stack, now) {
            self.reports.push(report);
            self.test = None;
        }
        for h in denied {
            self.deny(stack, h);
        }
        Ok(work)
    }

    /// Answer a connection ACCESS_DENIED and close it.
    fn deny<L: Link>(&mut self, stack: &mut Stack<L>, h: TcpHandle) {
        self.denied += 1;
        let _ = stack.tcp_send(h, &[State::AccessDenied.byte()]);
        let _ = stack.tcp_close(h);
    }

    /// Hand the datagrams on the UDP port to the test: stream handshakes and data.
    fn take_datagrams<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        let mut replies = std::mem::take(&mut self.replies);
        let test = &mut self.test;
        let n = drain_udp(stack, self.udp, |from, data| {
            if let Some(t) = test.as_mut() {
                if t.on_datagram(from, data, self.udp) {
                    replies.push(from);
                }
            }
        })?;
        for to in replies {
            if !stack.udp_send_to(self.udp, to, &UDP_CONNECT_REPLY.to_le_bytes())? {
                self.replies.push(to);
            }
        }
        if self.test.is_none() {
            self.replies.clear();
        }
        Ok(n)
    }
}

impl Test {
    fn new(h: TcpHandle, now: Instant, client: Option<SocketAddr>) -> Test {
        Test {
            ctrl: Control::new(h),
            client,
            cookie: Vec::new(),
            params: None,
            phase: Phase::Cookie,
            since: now,
            pending: Vec::new(),
            streams: Vec::new(),
            to_recv: 0,
            to_send: 0,
            running_at: None,
            ended_at: None,
            cpu: CpuClock::start(),
            theirs: None,
            ours: None,
            done: false,
            omit_over: false,
            error: None,
        }
    }

    fn protocol(&self) -> Option<Protocol> {
        self.params.as_ref().map(|p| p.protocol)
    }

    fn counters_64bit(&self) -> bool {
        self.params.as_ref().is_some_and(|p| p.udp_counters_64bit)
    }

    fn enter(&mut self, phase: Phase, now: Instant) {
        (self.phase, self.since) = (phase, now);
    }

    /// A datagram on the UDP port; returns true if it opened a stream (to be answered).
    fn on_datagram(&mut self, from: SocketAddr, data: &[u8], sock: UdpHandle) -> bool {
        let wide = self.counters_64bit();
        let receiving = matches!(self.phase, Phase::Running | Phase::Results | Phase::Drain);
        if let Some(s) =
            self.streams.iter_mut().find(|s| matches!(s.carrier, Carrier::Udp { peer, .. } if peer == from))
        {
            if receiving && !s.sender {
                s.recv_udp(data, wide);
            }
            return false;
        }
        if self.phase != Phase::CreateStreams
            || self.protocol() != Some(Protocol::Udp)
            || !is_udp_word(data, UDP_CONNECT_MSG)
        {
            return false;
        }
        self.add_stream(Carrier::Udp { sock, peer: from });
        true
    }

    /// A stream arrived: the first `to_recv` receive, the next `to_send` send (iperf3's order).
    fn add_stream(&mut self, carrier: Carrier) {
        let sender = self.streams.len() >= self.to_recv;
        let id = super::proto::stream_id(self.streams.len());
        self.streams.push(Stream::new(id, sender, carrier));
    }

    fn all_streams(&self) -> bool {
        self.streams.len() >= self.to_recv + self.to_send
    }

    /// One step; returns the work done and connections to deny.
    fn step<L: Link>(&mut self, stack: &mut Stack<L>, now: Instant) -> (usize, Vec<TcpHandle>) {
        let mut denied = Vec::new();
        let mut work = match self.ctrl.pump(stack) {
            Ok(n) => n,
            Err(e) => {
                self.fail(stack, format!("the control connection failed: {e}"));
                return (0, denied);
            }
        };
        if let Err(e) = self.advance(stack, now, &mut work, &mut denied) {
            self.fail(stack, e);
        }
        if let Err(e) = self.ctrl.pump(stack) {
            self.fail(stack, format!("the control connection failed: {e}"));
        }
        (work, denied)
    }

    fn advance<L: Link>(
        &mut self,
        stack: &mut Stack<L>,
        now: Instant,
        work: &mut usize,
        denied: &mut Vec<TcpHandle>,
    ) -> Result<(), String> {
        if self.phase_expired(now) {
            return Err(format!("the client did not go on within the time allowed ({:?})", self.phase));
        }
        let waiting = matches!(self.phase, Phase::Cookie | Phase::Params | Phase::CreateStreams | Phase::Results);
        if waiting && self.ctrl.at_eof() {
            return Err(format!("the client closed the control connection ({:?})", self.phase));
        }
        match self.phase {
            Phase::Cookie => {
                if let Some(c) = self.ctrl.take(COOKIE_LEN) {
                    if !is_cookie(&c) {
                        self.ctrl.send_state(State::AccessDenied);
                        return Err("the client's first bytes are not an iperf3 cookie".into());
                    }
                    self.cookie = c;
                    self.ctrl.send_state(State::ParamExchange);
                    self.enter(Phase::Params, now);
                }
            }
            Phase::Params => {
                if let Some(v) = self.ctrl.take_json()? {
                    let p = match Params::from_json(&v) {
                        Ok(p) => p,
                        Err(e) => {
                            self.ctrl.send_state(State::ServerError);
                            self.ctrl.send_raw(&IERECVPARAMS.to_be_bytes());
                            self.ctrl.send_raw(&0i32.to_be_bytes());
                            return Err(format!("the client's parameters are refused: {e}"));
                        }
                    };
                    (self.to_recv, self.to_send) = match (p.reverse, p.bidirectional) {
                        (_, true) => (p.parallel, p.parallel),
                        (true, false) => (0, p.parallel),
                        (false, false) => (p.parallel, 0),
                    };
                    self.params = Some(p);
                    self.ctrl.send_state(State::CreateStreams);
                    self.enter(Phase::CreateStreams, now);
                }
            }
            Phase::CreateStreams => {
                self.check_pending(stack, denied);
                if self.all_streams() {
                    self.ctrl.send_state(State::TestStart);
                    self.ctrl.send_state(State::TestRunning);
                    self.cpu = CpuClock::start();
                    self.running_at = Some(now);
                    self.enter(Phase::Running, now);
                }
            }
            Phase::Running => {
                self.end_omit(stack, now);
                *work += self.move_data(stack)?;
                match self.ctrl.take_byte().map(State::from_byte) {
                    None if self.ctrl.at_eof() => return Err("the client closed the control connection".into()),
                    None => {}
                    Some(Some(State::TestEnd)) => {
                        self.ended_at = Some(now);
                        for s in self.streams.iter_mut().filter(|s| s.sender) {
                            s.take_retransmits(stack);
                            s.close(stack);
                        }
                        self.ctrl.send_state(State::ExchangeResults);
                        self.enter(Phase::Results, now);
                    }
                    Some(Some(State::ClientTerminate)) => return Err("the client terminated the test".into()),
                    Some(b) => return Err(format!("unexpected message {b:?} from the client while running")),
                }
            }
            Phase::Results => {
                *work += self.receive_all(stack, true);
                if let Some(v) = self.ctrl.take_json()? {
                    self.theirs = Some(Results::from_json(&v).map_err(|e| format!("the client's {e}"))?);
                    self.enter(Phase::Drain, now);
                }
            }
            Phase::Drain => {
                *work += self.receive_all(stack, true);
                if self.caught_up() || now - self.since >= DRAIN_TIMEOUT {
                    let ours = self.our_results();
                    self.ctrl.send_json(&ours.to_json());
                    self.ctrl.send_state(State::DisplayResults);
                    self.ours = Some(ours);
                    self.enter(Phase::AwaitDone, now);
                }
            }
            Phase::AwaitDone => {
                self.receive_all(stack, false);
                match self.ctrl.take_byte().map(State::from_byte) {
                    Some(Some(State::IperfDone)) => self.done = true,
                    None if self.ctrl.at_eof() => self.done = true,
                    None => {}
                    Some(b) => return Err(format!("unexpected message {b:?} from the client at the end")),
                }
            }
        }
        Ok(())
    }

    /// At the end of the omitted start (iperf3's -O), drop what was counted so far: the
    /// figures then cover the rest of the test, as the client's do.
    fn end_omit<L: Link>(&mut self, stack: &Stack<L>, now: Instant) {
        let (Some(p), Some(at)) = (&self.params, self.running_at) else { return };
        if self.omit_over || p.omit == 0 || now - at < Duration::from_secs(p.omit) {
            return;
        }
        for s in &mut self.streams {
            s.reset_counts(stack);
        }
        self.running_at = Some(now);
        self.omit_over = true;
    }

    /// True if the current phase has lasted longer than it may.
    fn phase_expired(&self, now: Instant) -> bool {
        let limit = match (self.phase, &self.params) {
            (Phase::Running, Some(p)) if p.time > 0 => Duration::from_secs(p.time + p.omit) + RUN_SLACK,
            // A test bounded by bytes or blocks ends when they are through: give it long.
            (Phase::Running, _) => Duration::from_secs(3600),
            _ => STEP_TIMEOUT,
        };
        now - self.since > limit
    }

    /// Read the cookies of waiting data connections: the test's cookie makes a stream, any
    /// other is denied.
    fn check_pending<L: Link>(&mut self, stack: &mut Stack<L>, denied: &mut Vec<TcpHandle>) {
        let mut i = 0;
        while i < self.pending.len() {
            let (h, got) = &mut self.pending[i];
            let h = *h;
            let mut buf = [0u8; COOKIE_LEN];
            let want = COOKIE_LEN - got.len();
            match stack.tcp_recv(h, &mut buf[..want]) {
                Ok(net::Recv::Data(n)) => got.extend_from_slice(&buf[..n]),
                Ok(net::Recv::WouldBlock) => {}
                Ok(net::Recv::Eof) | Err(_) => {
                    let _ = stack.tcp_abort(h);
                    self.pending.remove(i);
                    continue;
                }
            }
            if got.len() < COOKIE_LEN {
                i += 1;
                continue;
            }
            let matches = *got == self.cookie;
            self.pending.remove(i);
            if matches && !self.all_streams() {
                self.add_stream(Carrier::Tcp(h));
            } else {
                denied.push(h);
            }
        }
    }

    /// Bytes the sending streams may still send in all (None: no bound), for tests bounded
    /// by bytes or blocks.
    fn send_budget(&self, p: &Params) -> Option<u64> {
        let total = match (p.bytes, p.blocks) {
            (0, 0) => return None,
            (0, b) => b.saturating_mul(p.len as u64),
            (n, _) => n,
        };
        let sent: u64 = self.streams.iter().filter(|s| s.sender).map(|s| s.bytes).sum();
        Some(total.saturating_sub(sent))
    }

    /// Send on the sending streams and read the receiving ones.
    fn move_data<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, String> {
        let p = self.params.clone().ok_or("no parameters")?;
        let start = self.running_at.unwrap_or(stack.now());
        let mut work = self.receive_all(stack, true);
        for i in 0..self.streams.len() {
            if !self.streams[i].sender {
                continue;
            }
            let budget = self.send_budget(&p);
            let s = &mut self.streams[i];
            work +=
                s.send(stack, start, p.rate, p.len, budget, p.udp_counters_64bit).map_err(|e| e.to_string())? as usize;
            if let Some(e) = &s.error {
                return Err(format!("stream {} failed: {e}", s.id));
            }
        }
        Ok(work)
    }

    /// Read every receiving TCP stream (UDP data comes through the server's socket); with
    /// `count` what arrives counts as test data (not after our results went out).
    fn receive_all<L: Link>(&mut self, stack: &mut Stack<L>, count: bool) -> usize {
        let mut work = 0;
        for s in self.streams.iter_mut().filter(|s| !s.sender) {
            work += s.recv_tcp(stack, count).unwrap_or(0) as usize;
        }
        work
    }

    /// True once every receiving TCP stream has the bytes the client says it sent (UDP
    /// datagrams still in flight are not waited for: lost ones never come).
    fn caught_up(&self) -> bool {
        let Some(theirs) = &self.theirs else { return false };
        self.streams.iter().filter(|s| !s.sender).all(|s| {
            let sent = theirs.streams.iter().find(|t| t.id == s.id).map_or(0, |t| t.bytes);
            matches!(s.carrier, Carrier::Udp { .. }) || s.closed || s.bytes >= sent
        })
    }

    /// The results we send.
    fn our_results(&self) -> Results {
        let seconds = match (self.running_at, self.ended_at) {
            (Some(a), Some(b)) => (b - a).as_secs_f64(),
            _ => 0.0,
        };
        let tcp = self.protocol() == Some(Protocol::Tcp);
        let sends = self.streams.iter().any(|s| s.sender);
        let sender_has_retransmits = match (sends, tcp) {
            (false, _) => -1,
            (true, true) => 1,
            (true, false) => 0,
        };
        let streams = self.streams.iter().map(|s| s.result(seconds, tcp)).collect();
        let server_output_text =
            self.params.as_ref().filter(|p| p.get_server_output).map(|_| self.summary_text(seconds));
        Results { cpu_util: self.cpu.utilization(), sender_has_retransmits, streams, server_output_text }
    }

    /// A line of text on what this server measured.
    fn summary_text(&self, seconds: f64) -> String {
        let (rx, tx) = self.byte_totals();
        format!("linerate iperf3 server: received {rx} bytes, sent {tx} bytes in {seconds:.3} s\n")
    }

    /// Bytes received and sent in all streams.
    fn byte_totals(&self) -> (u64, u64) {
        let sum = |sender: bool| self.streams.iter().filter(|s| s.sender == sender).map(|s| s.bytes).sum();
        (sum(false), sum(true))
    }

    /// Give the test up: every connection is reset.
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
        for (h, _) in self.pending.drain(..) {
            let _ = stack.tcp_abort(h);
        }
        // A queued SERVER_ERROR still goes out before the FIN.
        let _ = self.ctrl.pump(stack);
        let _ = stack.tcp_close(self.ctrl.h);
        self.error = Some(why);
    }

    /// If the test is over (done or failed), close what is left and report it.
    fn finished<L: Link>(&mut self, stack: &mut Stack<L>, now: Instant) -> Option<TestReport> {
        if self.done {
            for s in &mut self.streams {
                s.close(stack);
            }
            let _ = stack.tcp_close(self.ctrl.h);
        } else if self.error.is_none() {
            return None;
        }
        let (bytes_received, bytes_sent) = self.byte_totals();
        let seconds = match (self.running_at, self.ended_at) {
            (Some(a), Some(b)) => (b - a).as_secs_f64(),
            (Some(a), None) => (now - a).as_secs_f64(),
            _ => 0.0,
        };
        Some(TestReport {
            client: self.client,
            params: self.params.clone(),
            seconds,
            bytes_received,
            bytes_sent,
            ours: self.ours.clone().unwrap_or_else(|| self.our_results()),
            theirs: self.theirs.clone(),
            error: self.error.clone(),
        })
    }
}
