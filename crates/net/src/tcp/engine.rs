//! The TCP engine: session tables, the port table of listeners, session allocation and
//! release, opening and closing, and the timer event dispatch.

use super::activity::Activity;
use super::isn::IsnGenerator;
use super::lookup::{FourTuple, SessionLookup, TableFull, IPV6_EXTRA};
use super::memory::MemAccount;
use super::sink::SegmentSink;
use super::tcb::lifecycle::Ending;
use super::tcb::tables::{Buffers, RxSar, StateEntry, TxSar};
use super::tcb::{Ctx, SessionId, Shared, TcbMut, TcbRef};
use super::{TcpConfig, TcpError, TcpHandle, TcpListener, TcpState};
use crate::error::{BadHandle, ConnectError, ListenError};
use crate::int_hash::IntMap;
use link::Instant;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// A listening port: its backlog and the connections waiting to be accepted.
#[derive(Debug)]
pub struct Listener {
    /// Most connections waiting in `accept` plus half-open ones.
    pub backlog: usize,
    /// Established connections not yet accepted.
    pub ready: VecDeque<u32>,
    /// Connections in SYN-RECEIVED.
    pub half_open: usize,
}

/// All TCP state of one stack.
#[derive(Debug)]
pub struct TcpEngine {
    /// Configuration.
    pub cfg: TcpConfig,
    /// Our IPv4 address.
    pub local_ip: Ipv4Addr,
    /// Our MSS (announced) over IPv4.
    pub local_mss: u16,
    /// Our MSS over IPv6 (its header is 20 bytes longer).
    pub local_mss6: u16,
    /// State table.
    state: Vec<StateEntry>,
    /// Send sequence table.
    tx: Vec<TxSar>,
    /// Receive sequence table.
    rx: Vec<RxSar>,
    /// Session buffers.
    bufs: Vec<Buffers>,
    /// The parts each connection's view borrows (timers, the dirty queue, the memory budget, …).
    pub(crate) shared: Shared,
    /// 4-tuple -> session id.
    pub lookup: SessionLookup,
    /// Port table: listening ports.
    pub listeners: IntMap<u16, Listener>,
    free: Vec<u32>,
    isn: IsnGenerator,
    next_ephemeral: u16,
    first_ephemeral: u16,
    /// Connection activity for the application's watchers.
    pub(crate) activity: Activity,
    /// Reused list for taking activity.
    pub(crate) scratch_activity: Vec<u32>,
    /// SYN cookies (RFC 4987 3.6).
    pub(crate) cookies: super::syncookie::CookieJar,
    /// When we last answered a SYN with a cookie.
    pub(crate) last_cookie: Option<Instant>,
    /// Sessions that entered TIME-WAIT, oldest first (session id, generation); stale
    /// entries are skipped.
    pub(crate) time_wait: VecDeque<(u32, u32)>,
    /// TIME-WAIT sessions reclaimed since the counters last took them.
    pub(crate) time_wait_reclaimed: u64,
}

impl TcpEngine {
    /// An engine for host `local_ip` with IP MTU `mtu`.
    pub fn new(cfg: TcpConfig, local_ip: Ipv4Addr, mtu: usize, first_ephemeral: u16) -> Self {
        let n = cfg.max_sessions.max(1);
        let local_mss = (cfg.mss as usize).min(mtu - 40) as u16;
        let local_mss6 = (cfg.mss as usize).min(mtu.saturating_sub(40 + IPV6_EXTRA)) as u16;
        let proto = TxSar::new(0, local_mss, cfg.cc, cfg.min_rto, cfg.max_rto);
        TcpEngine {
            state: vec![StateEntry::default(); n],
            tx: vec![proto; n],
            rx: vec![RxSar::default(); n],
            bufs: (0..n).map(|_| Buffers::default()).collect(),
            shared: Shared::new(&cfg, n, MemAccount::new(cfg.mem_pressure, cfg.mem_limit)),
            lookup: SessionLookup::new(n, cfg.secret[0] ^ cfg.secret[1]),
            listeners: IntMap::default(),
            free: (0..n as u32).rev().collect(),
            isn: IsnGenerator::new(cfg.secret),
            next_ephemeral: first_ephemeral,
            first_ephemeral,
            activity: Activity::default(),
            scratch_activity: Vec::new(),
            cookies: super::syncookie::CookieJar::new(cfg.secret),
            last_cookie: None,
            time_wait: VecDeque::new(),
            time_wait_reclaimed: 0,
            local_ip,
            local_mss,
            local_mss6,
            cfg,
        }
    }

    /// Sessions the tables hold (in use or not).
    pub(crate) fn capacity(&self) -> usize {
        self.state.len()
    }

    /// Sessions in use.
    pub fn sessions(&self) -> usize {
        self.state.len() - self.free.len()
    }

    /// Bytes of table memory per session (state, sequence tables, timers, lookup), excluding
    /// the per-connection buffers, which are allocated when a connection opens.
    pub fn table_bytes_per_session(&self) -> usize {
        let per = std::mem::size_of::<StateEntry>()
            + std::mem::size_of::<TxSar>()
            + std::mem::size_of::<RxSar>()
            + std::mem::size_of::<Buffers>()
            + 2 * 5 * std::mem::size_of::<Option<Instant>>()
            + 1;
        per + self.lookup.memory_bytes() / self.state.len().max(1)
    }

    /// The session id of a live handle.
    pub fn sid(&self, h: TcpHandle) -> Result<u32, BadHandle> {
        match self.state.get(h.id as usize) {
            Some(s) if s.live(h.gen) => Ok(h.id),
            _ => Err(BadHandle),
        }
    }

    /// The handle of session `sid`.
    pub fn handle(&self, sid: u32) -> TcpHandle {
        TcpHandle { id: sid, gen: self.row(sid).gen() }
    }

    /// Session `sid` as one connection ([`TcbMut`]) for one event, with what its methods
    /// need of the engine ([`Ctx`]: the configuration, timers, dirty queue, memory budget,
    /// storage pools). The one place the per-connection tables are indexed for an event.
    #[inline(always)] // a few loads; out of line it cost 1% of an exchange (tcp_cost)
    pub(crate) fn tcb(&mut self, sid: impl Into<SessionId>) -> (TcbMut<'_>, Ctx<'_>) {
        let sid = sid.into();
        let i = sid.index();
        let local_mss = if self.state[i].is_v6() { self.local_mss6 } else { self.local_mss };
        let tcb = TcbMut::new(sid, &mut self.state[i], &mut self.tx[i], &mut self.rx[i], &mut self.bufs[i]);
        (tcb, self.shared.ctx(&self.cfg, local_mss))
    }

    /// Session `sid`'s rows to read.
    #[inline(always)]
    pub(crate) fn row(&self, sid: u32) -> TcbRef<'_> {
        let i = sid as usize;
        TcbRef::new(&self.state[i], &self.tx[i], &self.rx[i], &self.bufs[i])
    }

    /// Note that `sid` has something to send.
    #[inline]
    pub fn mark_dirty(&mut self, sid: u32) {
        self.shared.dirty.mark(sid);
    }

    /// The next dirty session, its flag cleared (it may be marked again while it sends).
    pub fn pop_dirty(&mut self) -> Option<u32> {
        self.shared.dirty.pop()
    }

    /// Start listening on `port`.
    pub fn listen(&mut self, port: u16, backlog: usize) -> Result<TcpListener, ListenError> {
        if port == 0 {
            return Err(ListenError::PortZero);
        }
        if self.listeners.contains_key(&port) {
            return Err(ListenError::PortInUse(port));
        }
        self.listeners.insert(port, Listener { backlog: backlog.max(1), ready: VecDeque::new(), half_open: 0 });
        Ok(TcpListener(port))
    }

    /// Stop listening; connections not yet accepted are reset by the caller.
    pub fn unlisten(&mut self, l: TcpListener) -> Result<Vec<u32>, BadHandle> {
        let lst = self.listeners.remove(&l.0).ok_or(BadHandle)?;
        let mut orphans: Vec<u32> = lst.ready.into_iter().collect();
        for sid in 0..self.capacity() as u32 {
            let r = self.row(sid);
            if r.in_use() && r.listener() == Some(l.0) && r.state() == TcpState::SynReceived {
                orphans.push(sid);
            }
        }
        Ok(orphans)
    }

    /// Allocate a session for `tuple` in `state`, with buffers; `Err` if the table is full.
    /// A full table first gives up its oldest released session in TIME-WAIT.
    pub fn alloc(&mut self, tuple: FourTuple, state: TcpState, now: Instant) -> Result<u32, TableFull> {
        let sid = match self.free.pop() {
            Some(sid) => sid,
            None if self.reclaim_time_wait() => self.free.pop().ok_or(TableFull)?,
            None => return Err(TableFull),
        };
        let mut tries = 0;
        while let Err(e) = self.lookup.insert(&tuple, sid) {
            // The cuckoo table found no place: freeing TIME-WAIT entries may open one.
            tries += 1;
            if tries > 8 || !self.reclaim_time_wait() {
                self.free.push(sid);
                return Err(e);
            }
        }
        let iss = self.isn.isn(&tuple, now);
        let (mut tcb, mut ctx) = self.tcb(sid);
        tcb.open(&mut ctx, tuple, state, iss);
        self.count_sessions();
        let (mut tcb, ctx) = self.tcb(sid);
        tcb.size_buffers(&ctx);
        Ok(sid)
    }

    /// A session the application released that reached TIME-WAIT needs no buffers any more
    /// (all it sent is acknowledged, nobody reads what it received): their storage goes to
    /// the pool for other sessions instead of every new session touching fresh memory while
    /// thousands linger.
    pub(crate) fn park_buffers_if_done(&mut self, sid: u32) {
        let (mut tcb, mut ctx) = self.tcb(sid);
        tcb.park_buffers_if_done(&mut ctx);
    }

    /// Free session `sid` (it leaves the lookup table; its slot can be reused).
    pub fn free_session(&mut self, sid: u32) {
        let Some((tuple, half_open)) = self.tcb(sid).0.free() else { return };
        if let Some(l) = half_open.and_then(|p| self.listeners.get_mut(&p)) {
            l.half_open = l.half_open.saturating_sub(1);
        }
        self.lookup.remove(&tuple);
        self.shared.timers.cancel_all(sid);
        self.free.push(sid);
        self.count_sessions();
        // Its buffers' storage goes back now (to the pool or the allocator), not when the
        // slot is next used: a crowd of ended sessions holds no memory.
        let (mut tcb, mut ctx) = self.tcb(sid);
        tcb.release_buffers(&mut ctx);
    }

    /// Tell the storage pools how many sessions the stack holds.
    fn count_sessions(&mut self) {
        let n = self.sessions();
        self.shared.tx_storage.set_sessions(n);
        self.shared.rx_storage.set_sessions(n);
    }

    /// The connection ended (normally or not): free it now if the application released it,
    /// else keep it in CLOSED with `error` for the application to see.
    pub fn finish(&mut self, sid: u32, error: Option<TcpError>) {
        self.activity.mark(sid);
        let ending = self.tcb(sid).0.end(error);
        self.shared.timers.cancel_all(sid);
        match ending {
            Ending::Free(listener) => {
                if let Some(l) = listener.and_then(|p| self.listeners.get_mut(&p)) {
                    l.ready.retain(|&x| x != sid);
                }
                self.free_session(sid);
            }
            Ending::Closed(tuple) => {
                self.lookup.remove(&tuple);
            }
        }
    }

    /// A free local port from `local_ip` towards `remote` (the tuple must be unused). With
    /// several shards, a port whose flow hashes to this shard (`wire::flow`).
    pub fn ephemeral_port(&mut self, local_ip: IpAddr, remote: SocketAddr) -> Result<u16, ConnectError> {
        let span = 65536 - self.first_ephemeral as u32;
        for _ in 0..span {
            let p = self.next_ephemeral;
            self.next_ephemeral = if p == u16::MAX { self.first_ephemeral } else { p + 1 };
            let t = FourTuple::new(local_ip, p, remote);
            let (shard, shards) = self.cfg.shard;
            if shards > 1 {
                let owner = match (local_ip, remote.ip()) {
                    (IpAddr::V6(l), IpAddr::V6(r)) => wire::flow::shard_of6(l, p, r, remote.port(), shards),
                    (_, IpAddr::V4(r)) => wire::flow::shard_of(self.local_ip, p, r, remote.port(), shards),
                    _ => shard,
                };
                if owner != shard {
                    continue;
                }
            }
            if self.lookup.get(&t).is_none() && !self.listeners.contains_key(&p) {
                return Ok(p);
            }
        }
        Err(ConnectError::NoFreePort)
    }

    /// Active open from `local_ip:local_port` towards `remote`: allocate and queue the SYN.
    pub fn connect(
        &mut self,
        local_ip: IpAddr,
        local_port: u16,
        remote: SocketAddr,
        now: Instant,
    ) -> Result<u32, ConnectError> {
        let t = FourTuple::new(local_ip, local_port, remote);
        if self.lookup.get(&t).is_some() {
            return Err(ConnectError::PortInUse(local_port));
        }
        let sid = self.alloc(t, TcpState::SynSent, now).map_err(|_| ConnectError::TableFull)?;
        self.mark_dirty(sid);
        Ok(sid)
    }

    /// Mark a connection as errored by the application and let the caller send RST.
    pub fn abort(&mut self, sid: u32) {
        self.tcb(sid).0.set_released();
        self.finish(sid, Some(TcpError::Aborted));
    }

    /// Count the ring storage afresh (every `memory::RECOUNT_EVERY`): what freed rings gave
    /// back lowers the use. Under pressure, emptied rings of live sessions shed their storage.
    fn recount_memory(&mut self, now: Instant) {
        if !self.shared.mem.recount_due(now) {
            return;
        }
        let shed = self.shared.mem.level() != super::memory::MemLevel::Normal;
        let mut used = 0;
        for (s, b) in self.state.iter().zip(self.bufs.iter_mut()) {
            used += b.recount(
                shed && s.in_use(),
                &mut self.shared.tx_storage,
                &mut self.shared.rx_storage,
                &self.shared.mem,
            );
        }
        self.shared.mem.set_used(used + self.shared.tx_storage.held() + self.shared.rx_storage.held());
    }

    /// True if [`TcpEngine::on_timers`] at `now` has anything to do: a session with something
    /// to send, a timer due or the memory recount. A busy-polling stack with nothing going on
    /// skips the rest in a few instructions.
    #[inline]
    pub(crate) fn has_work(&self, now: Instant) -> bool {
        self.shared.dirty.len() > 0
            || self.shared.timers.next().is_some_and(|t| t <= now)
            || self.shared.mem.recount_pending(now)
    }

    /// Process timers due at `now`.
    pub(crate) fn on_timers<S: SegmentSink>(&mut self, out: &mut S, now: Instant) {
        self.recount_memory(now);
        while let Some((sid, kind)) = self.shared.timers.pop_due(now) {
            let (mut tcb, mut ctx) = self.tcb(sid);
            if !tcb.in_use() {
                continue;
            }
            if let Some(error) = tcb.on_timer(&mut ctx, out, kind, now) {
                self.finish(sid, error);
            }
        }
        self.flush_dirty(out, now)
    }

    /// The next instant a timer may fire.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.shared.timers.next()
    }
}

#[cfg(test)]
mod tests {
    use super::super::sink::recorder::{Recorder, LOCAL, PEER};
    use super::super::unit_util::*;
    use super::super::TcpState;
    use std::net::SocketAddrV4;
    use wire::tcp::flags::{ACK, SYN};
    use wire::TcpOptions;

    #[test]
    fn an_active_open_sends_one_syn_with_our_options_and_the_syn_ack_completes_it() {
        let mut e = engine();
        let mut out = Recorder::new();
        let sid = e.connect(LOCAL.into(), PORT, SocketAddrV4::new(PEER, PEER_PORT).into(), out.now).unwrap();
        let segs = flush(&mut e, &mut out);
        assert_eq!(segs.len(), 1);
        let (syn, payload) = &segs[0];
        assert_eq!((syn.flags, payload.len()), (SYN, 0));
        assert_eq!(
            (syn.options.mss, syn.options.window_scale, syn.options.sack_permitted),
            (Some(1460), Some(9), true)
        );
        let options =
            TcpOptions { mss: Some(MSS), window_scale: Some(7), sack_permitted: true, ..TcpOptions::default() };
        let syn_ack = from_peer(PEER_ISS, syn.seq.wrapping_add(1), SYN | ACK, 1000, options, &[]);
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &syn_ack), Ok(()));
        assert_eq!(e.row(sid).state(), TcpState::Established);
        let ack = flush(&mut e, &mut out);
        assert_eq!(ack.len(), 1, "the handshake's ACK");
        assert_eq!(
            (ack[0].0.flags, ack[0].0.seq, ack[0].0.ack),
            (ACK, syn.seq.wrapping_add(1), PEER_ISS.wrapping_add(1))
        );
    }

    #[test]
    fn a_shard_opens_connections_from_ports_whose_flow_hashes_back_to_it() {
        for shard in 0..3u16 {
            let mut e = engine();
            e.cfg.shard = (shard, 3);
            let remote = SocketAddrV4::new(PEER, PEER_PORT);
            for _ in 0..50 {
                let p = e.ephemeral_port(LOCAL.into(), remote.into()).unwrap();
                assert_eq!(wire::flow::shard_of(LOCAL, p, PEER, PEER_PORT, 3), shard, "port {p}");
                e.connect(LOCAL.into(), p, remote.into(), Recorder::new().now).unwrap();
            }
            let (l6, r6): (std::net::Ipv6Addr, std::net::Ipv6Addr) =
                ("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap());
            let remote6 = std::net::SocketAddrV6::new(r6, PEER_PORT, 0, 0);
            for _ in 0..50 {
                let p = e.ephemeral_port(l6.into(), remote6.into()).unwrap();
                assert_eq!(wire::flow::shard_of6(l6, p, r6, PEER_PORT, 3), shard, "IPv6 port {p}");
                e.connect(l6.into(), p, remote6.into(), Recorder::new().now).unwrap();
            }
        }
    }

    #[test]
    fn a_full_link_leaves_the_session_to_send_at_the_next_flush() {
        let mut e = engine();
        let mut out = Recorder::new();
        out.room = 0;
        e.connect(LOCAL.into(), PORT, SocketAddrV4::new(PEER, PEER_PORT).into(), out.now).unwrap();
        assert!(flush(&mut e, &mut out).is_empty());
        out.room = usize::MAX;
        assert_eq!(flush(&mut e, &mut out).len(), 1, "the SYN goes once the link has room");
    }

    #[test]
    fn the_retransmission_timer_resends_an_unanswered_syn_with_back_off() {
        let mut e = engine();
        let mut out = Recorder::new();
        e.connect(LOCAL.into(), PORT, SocketAddrV4::new(PEER, PEER_PORT).into(), out.now).unwrap();
        let first = flush(&mut e, &mut out)[0].0;
        let t1 = e.next_deadline().expect("the SYN's timer");
        out.now = t1;
        e.on_timers(&mut out, t1);
        let again = out.take();
        assert_eq!(again.len(), 1);
        assert_eq!((again[0].0.flags, again[0].0.seq), (SYN, first.seq));
        let t2 = e.next_deadline().expect("armed again");
        assert!(t2 - t1 > t1 - link::Instant::ZERO, "the timeout doubled: {:?} then {:?}", t1, t2 - t1);
    }
}
