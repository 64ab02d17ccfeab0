//! A minimal NFQUEUE client (netlink, `NETLINK_NETFILTER`) and the delayer built on it: every
//! packet the kernel queues is held for a fixed delay and then accepted, so packets sent after
//! it overtake it. The delayer runs on a thread of its own, stops when told or dropped, and
//! accepts everything it still holds before it lets go of the queue.
//!
//! Why not the `nfq` crate (0.2.5, the maintained NFQUEUE client), checked against what the
//! delayer needs:
//! - Its `Queue` exposes no file descriptor (no `AsRawFd`), so the delayer cannot wait for the
//!   next packet *or* the next release time: it would have to spin on non-blocking `recv`
//!   or sleep in steps, adding that step to every delay this module promises to hold exactly.
//! - Its configuration calls (`bind`, `set_fail_open`, `unbind`, ...) wait for the kernel's
//!   answer with a plain blocking `recv` and no time bound (and fail with EAGAIN once the
//!   queue is non-blocking); here every wait is bounded ([`ACK_WAIT`]), as the project's
//!   network-safety rules ask.
//! - Packet messages that arrive while it waits for such an answer are dropped by it, so
//!   those packets never get a verdict and stay queued in the kernel; here they are kept.
//!   (Unbinding at the end, while traffic still flows, is exactly that case.)
//! - One `sendto` per verdict; the delayer batches up to 128 verdicts in one datagram.
//! - No forced receive buffer (`SO_RCVBUFFORCE`) without the descriptor.
//!
//! What is left here is small: netlink message building and parsing (tested below) and a
//! socket wrapper; the kernel's NFQUEUE protocol itself is not reimplemented beyond that.

use crate::TestbedError;
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `NETLINK_NETFILTER` protocol number.
const NETLINK_NETFILTER: libc::c_int = 12;
/// Netlink message flags and types.
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLMSG_ERROR: u16 = 2;
/// nfnetlink subsystem of the queue, and its message types.
const NFNL_SUBSYS_QUEUE: u16 = 3;
const NFQNL_MSG_PACKET: u16 = 0;
const NFQNL_MSG_VERDICT: u16 = 1;
const NFQNL_MSG_CONFIG: u16 = 2;
/// Configuration attributes and commands.
const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQA_CFG_MASK: u16 = 4;
const NFQA_CFG_FLAGS: u16 = 5;
const NFQNL_CFG_CMD_BIND: u8 = 1;
const NFQNL_CFG_CMD_UNBIND: u8 = 2;
const NFQNL_COPY_META: u8 = 1;
/// Accept queued packets if the queue is full or a message cannot reach us.
const NFQA_CFG_F_FAIL_OPEN: u32 = 0x1;
/// Queue GSO packets whole (as netem sees them) instead of segmenting them first.
const NFQA_CFG_F_GSO: u32 = 0x4;
/// Packet attributes.
const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
/// The accept verdict.
const NF_ACCEPT: u32 = 1;

/// First queue number tried; the next ones are tried while a number is taken.
const QUEUE_BASE: u16 = 0x4c52;
/// How many queue numbers are tried.
const QUEUE_TRIES: u16 = 32;
/// Packets the kernel may hold for us (beyond that it accepts them: fail-open).
const QUEUE_MAXLEN: u32 = 16_384;
/// Packets the delayer holds at most; beyond that the oldest is released early.
const MAX_HELD: usize = 65_536;
/// Longest sleep of the delayer, so that it notices a stop request soon.
const TICK: Duration = Duration::from_millis(20);
/// How long set-up waits for the kernel's answer to a configuration message.
const ACK_WAIT: Duration = Duration::from_secs(2);

/// A thread holding every packet of an NFQUEUE for a fixed delay before accepting it.
pub(crate) struct Delayer {
    /// The queue number the delayer bound.
    queue: u16,
    /// Set to stop the thread.
    stop: Arc<AtomicBool>,
    /// Packets held and accepted so far.
    delayed: Arc<AtomicU64>,
    /// The thread (None once joined).
    thread: Option<JoinHandle<()>>,
}

impl Delayer {
    /// Start a delayer holding packets for `delay`; with `netns_path` its socket lives in that
    /// namespace (else in the caller's). Returns once the queue is bound.
    pub(crate) fn start(netns_path: Option<String>, delay: Duration) -> Result<Delayer, TestbedError> {
        let stop = Arc::new(AtomicBool::new(false));
        let delayed = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel::<Result<u16, String>>();
        let (stop2, delayed2) = (stop.clone(), delayed.clone());
        let thread = std::thread::Builder::new()
            .name("nfqueue-delayer".into())
            .spawn(move || {
                let bound = set_up(netns_path.as_deref());
                let (mut sock, queue) = match bound {
                    Ok(b) => b,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let _ = tx.send(Ok(queue));
                run(&mut sock, queue, delay, &stop2, &delayed2);
            })
            .map_err(|e| TestbedError::Setup(format!("cannot start the NFQUEUE delayer: {e}")))?;
        let mut d = Delayer { queue: 0, stop, delayed, thread: Some(thread) };
        match rx.recv_timeout(ACK_WAIT * 3) {
            Ok(Ok(q)) => {
                d.queue = q;
                Ok(d)
            }
            Ok(Err(e)) => Err(TestbedError::Setup(format!("NFQUEUE delayer: {e}"))),
            Err(_) => Err(TestbedError::Setup("NFQUEUE delayer: no answer from its thread".into())),
        }
    }

    /// The queue number packets must be sent to.
    pub(crate) fn queue(&self) -> u16 {
        self.queue
    }

    /// Packets held and then accepted so far.
    pub(crate) fn delayed(&self) -> u64 {
        self.delayed.load(Ordering::Relaxed)
    }

    /// Stop the thread: it accepts everything it holds and unbinds the queue.
    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Delayer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// On the delayer's thread: enter the namespace, open the socket and bind a free queue.
fn set_up(netns_path: Option<&str>) -> Result<(NlSocket, u16), String> {
    if let Some(p) = netns_path {
        crate::netns::enter_netns(p).map_err(|e| e.to_string())?;
    }
    unpin_thread();
    let mut sock = NlSocket::open().map_err(|e| format!("netlink socket: {e}"))?;
    let mut last = String::new();
    for queue in QUEUE_BASE..QUEUE_BASE + QUEUE_TRIES {
        let cmd = [NFQNL_CFG_CMD_BIND, 0, 0, 0];
        match sock.request(NFQNL_MSG_CONFIG, queue, &[(NFQA_CFG_CMD, &cmd)]) {
            Ok(()) => {
                let mut params = [0u8; 5];
                params[4] = NFQNL_COPY_META;
                let flags = (NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO).to_be_bytes();
                let attrs: [(u16, &[u8]); 4] = [
                    (NFQA_CFG_PARAMS, &params),
                    (NFQA_CFG_QUEUE_MAXLEN, &QUEUE_MAXLEN.to_be_bytes()),
                    (NFQA_CFG_FLAGS, &flags),
                    (NFQA_CFG_MASK, &flags),
                ];
                sock.request(NFQNL_MSG_CONFIG, queue, &attrs).map_err(|e| format!("configure queue {queue}: {e}"))?;
                return Ok((sock, queue));
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => last = format!("queue {queue} is taken"),
            Err(e) => return Err(format!("bind queue {queue}: {e}")),
        }
    }
    Err(format!("no free queue among {QUEUE_BASE}..{} ({last})", QUEUE_BASE + QUEUE_TRIES))
}

/// Let the delayer run on any CPU even if its creator pinned itself to one.
fn unpin_thread() {
    // SAFETY: an all-ones cpu_set_t is a valid mask (the kernel keeps the allowed CPUs of it);
    // the call only affects the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in 0..libc::CPU_SETSIZE as usize {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The delayer's loop: hold each queued packet for `delay`, accept it, until `stop`.
fn run(sock: &mut NlSocket, queue: u16, delay: Duration, stop: &AtomicBool, delayed: &AtomicU64) {
    let mut held: VecDeque<(Instant, u32)> = VecDeque::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut due = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        while held.front().is_some_and(|&(t, _)| t <= now) || held.len() > MAX_HELD {
            due.extend(held.pop_front().map(|(_, id)| id));
        }
        accept(sock, queue, &mut due, delayed);
        let wait = held.front().map_or(TICK, |&(t, _)| t.saturating_duration_since(now).min(TICK));
        if sock.wait_readable(wait) {
            receive(sock, &mut buf, delay, &mut held);
        }
    }
    // Stopping: take what is still in the socket, accept everything, let go of the queue.
    receive(sock, &mut buf, Duration::ZERO, &mut held);
    due.extend(held.drain(..).map(|(_, id)| id));
    accept(sock, queue, &mut due, delayed);
    let cmd = [NFQNL_CFG_CMD_UNBIND, 0, 0, 0];
    let _ = sock.request(NFQNL_MSG_CONFIG, queue, &[(NFQA_CFG_CMD, &cmd)]);
}

/// Read the queued packets waiting in the socket (bounded) and hold each until now + `delay`.
fn receive(sock: &NlSocket, buf: &mut [u8], delay: Duration, held: &mut VecDeque<(Instant, u32)>) {
    for _ in 0..64 {
        let n = match sock.recv(buf) {
            Ok(n) => n,
            // ENOBUFS: messages were lost; fail-open has accepted their packets already.
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => continue,
            Err(_) => return,
        };
        let until = Instant::now() + delay;
        for m in parse(&buf[..n]) {
            if let Message::Packet { id } = m {
                held.push_back((until, id));
            }
        }
    }
}

/// Send accept verdicts for the packets in `ids` (emptied), several per datagram.
fn accept(sock: &NlSocket, queue: u16, ids: &mut Vec<u32>, delayed: &AtomicU64) {
    for chunk in ids.chunks(128) {
        let mut out = Vec::with_capacity(chunk.len() * 32);
        for &id in chunk {
            let mut hdr = [0u8; 8];
            hdr[..4].copy_from_slice(&NF_ACCEPT.to_be_bytes());
            hdr[4..].copy_from_slice(&id.to_be_bytes());
            out.extend(message(NFQNL_MSG_VERDICT, NLM_F_REQUEST, 0, queue, &[(NFQA_VERDICT_HDR, &hdr)]));
        }
        if sock.send(&out).is_ok() {
            delayed.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        }
    }
    ids.clear();
}

/// A message the kernel sent us.
#[derive(Debug, PartialEq)]
enum Message {
    /// A queued packet.
    Packet { id: u32 },
    /// The answer to a request: its sequence number and 0 or a negative errno.
    Ack { seq: u32, error: i32 },
    /// Anything else.
    Other,
}

/// A netlink message of the queue subsystem: header, nfgenmsg for `queue`, attributes.
fn message(kind: u16, flags: u16, seq: u32, queue: u16, attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut m = vec![0u8; 16];
    m.extend([libc::AF_UNSPEC as u8, 0]); // family, NFNETLINK_V0
    m.extend(queue.to_be_bytes());
    for (kind, payload) in attrs {
        m.extend(((4 + payload.len()) as u16).to_ne_bytes());
        m.extend(kind.to_ne_bytes());
        m.extend(*payload);
        m.resize(m.len().next_multiple_of(4), 0);
    }
    let len = m.len() as u32;
    m[0..4].copy_from_slice(&len.to_ne_bytes());
    m[4..6].copy_from_slice(&((NFNL_SUBSYS_QUEUE << 8) | kind).to_ne_bytes());
    m[6..8].copy_from_slice(&flags.to_ne_bytes());
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    m
}

/// The messages in one datagram (malformed ones end the walk).
fn parse(buf: &[u8]) -> Vec<Message> {
    let mut out = Vec::new();
    let mut at = 0;
    while buf.len() - at >= 16 {
        let h = &buf[at..];
        let len = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize;
        if len < 16 || len > h.len() {
            break;
        }
        let kind = u16::from_ne_bytes([h[4], h[5]]);
        let seq = u32::from_ne_bytes([h[8], h[9], h[10], h[11]]);
        let body = &h[16..len];
        out.push(if kind == NLMSG_ERROR && body.len() >= 4 {
            Message::Ack { seq, error: i32::from_ne_bytes([body[0], body[1], body[2], body[3]]) }
        } else if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET && body.len() >= 4 {
            packet_id(&body[4..]).map_or(Message::Other, |id| Message::Packet { id })
        } else {
            Message::Other
        });
        at += len.next_multiple_of(4).min(buf.len() - at);
    }
    out
}

/// The packet id in the attributes of a packet message.
fn packet_id(mut attrs: &[u8]) -> Option<u32> {
    while attrs.len() >= 4 {
        let len = u16::from_ne_bytes([attrs[0], attrs[1]]) as usize;
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]) & 0x3fff;
        if len < 4 || len > attrs.len() {
            return None;
        }
        if kind == NFQA_PACKET_HDR && len >= 8 {
            return Some(u32::from_be_bytes([attrs[4], attrs[5], attrs[6], attrs[7]]));
        }
        attrs = &attrs[len.next_multiple_of(4).min(attrs.len())..];
    }
    None
}

/// A netlink socket of the netfilter family.
struct NlSocket {
    /// The socket.
    fd: OwnedFd,
    /// The next request's sequence number.
    seq: u32,
}

impl NlSocket {
    /// Open and bind a `NETLINK_NETFILTER` socket with a large receive buffer.
    fn open() -> io::Result<NlSocket> {
        // SAFETY: plain socket call; the fd is owned right away.
        let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, NETLINK_NETFILTER) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: a zeroed sockaddr_nl with the family set asks the kernel for a port id.
        let rc = unsafe {
            let mut sa: libc::sockaddr_nl = std::mem::zeroed();
            sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
            libc::bind(
                fd.as_raw_fd(),
                &sa as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let sock = NlSocket { fd, seq: 1 };
        // Best effort: a big buffer (forced, as root), and no ENOBUFS errors (fail-open covers it).
        let big: libc::c_int = 8 << 20;
        if sock.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, big).is_err() {
            let _ = sock.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUF, big);
        }
        let _ = sock.setsockopt(libc::SOL_NETLINK, libc::NETLINK_NO_ENOBUFS, 1);
        Ok(sock)
    }

    /// Set an integer socket option.
    fn setsockopt(&self, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
        // SAFETY: the option value is a c_int that lives for the call.
        let rc = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                level,
                name,
                &value as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Send one datagram to the kernel.
    fn send(&self, buf: &[u8]) -> io::Result<()> {
        // SAFETY: the zeroed sockaddr_nl (family set, pid 0) addresses the kernel; buf is valid.
        let n = unsafe {
            let mut sa: libc::sockaddr_nl = std::mem::zeroed();
            sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
            libc::sendto(
                self.fd.as_raw_fd(),
                buf.as_ptr() as *const libc::c_void,
                buf.len(),
                0,
                &sa as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Receive one datagram without blocking.
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: buf is valid for writes of its length.
        let n = unsafe {
            libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT)
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Wait up to `timeout` for something to read; true if there is.
    fn wait_readable(&self, timeout: Duration) -> bool {
        let mut pfd = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
        rc > 0 && pfd.revents & libc::POLLIN != 0
    }

    /// Send a request with `attrs` for `queue` and wait (bounded) for the kernel's answer.
    fn request(&mut self, kind: u16, queue: u16, attrs: &[(u16, &[u8])]) -> io::Result<()> {
        let seq = self.seq;
        self.seq = self.seq.wrapping_add(1);
        self.send(&message(kind, NLM_F_REQUEST | NLM_F_ACK, seq, queue, attrs))?;
        let deadline = Instant::now() + ACK_WAIT;
        let mut buf = vec![0u8; 64 * 1024];
        while Instant::now() < deadline {
            if !self.wait_readable(deadline.saturating_duration_since(Instant::now())) {
                continue;
            }
            let n = match self.recv(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            };
            for m in parse(&buf[..n]) {
                match m {
                    Message::Ack { seq: s, error } if s == seq => {
                        return if error == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(-error)) };
                    }
                    _ => {}
                }
            }
        }
        Err(io::Error::new(io::ErrorKind::TimedOut, "no answer from the kernel"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_padded_and_carry_header_fields() {
        let m = message(NFQNL_MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK, 7, 0x1234, &[(NFQA_CFG_PARAMS, &[0, 0, 0, 0, 1])]);
        assert_eq!(m.len(), 16 + 4 + 12);
        assert_eq!(u32::from_ne_bytes(m[0..4].try_into().unwrap()), 32);
        assert_eq!(u16::from_ne_bytes(m[4..6].try_into().unwrap()), 0x0302);
        assert_eq!(u32::from_ne_bytes(m[8..12].try_into().unwrap()), 7);
        assert_eq!(&m[18..20], &[0x12, 0x34]);
        assert_eq!(u16::from_ne_bytes(m[20..22].try_into().unwrap()), 9);
    }

    #[test]
    fn packet_ids_and_acks_are_parsed_and_garbage_is_not() {
        let mut hdr = 0xdead_beefu32.to_be_bytes().to_vec();
        hdr.extend([8, 0, 3]);
        let mut dgram = message(NFQNL_MSG_PACKET, 0, 0, 1, &[(6, &[1, 0, 0, 0]), (NFQA_PACKET_HDR, &hdr)]);
        let mut ack = vec![0u8; 16];
        ack[0..4].copy_from_slice(&36u32.to_ne_bytes());
        ack[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        ack[8..12].copy_from_slice(&5u32.to_ne_bytes());
        ack.extend((-libc::EBUSY).to_ne_bytes());
        ack.extend([0u8; 16]);
        dgram.extend(&ack);
        assert_eq!(
            parse(&dgram),
            vec![Message::Packet { id: 0xdead_beef }, Message::Ack { seq: 5, error: -libc::EBUSY }]
        );
        assert_eq!(parse(&[0xff; 40]), vec![]);
        assert_eq!(parse(&dgram[..10]), vec![]);
        let mut bad = dgram.clone();
        bad[20] = 0xff; // attribute length beyond the message
        assert_eq!(parse(&bad)[0], Message::Other);
    }
}
