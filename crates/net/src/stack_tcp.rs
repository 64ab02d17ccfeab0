//! The TCP application interface of a [`Stack`] (seeds 000 and 003): listen/accept, connect
//! with a completion result, send with back-pressure and a transfer-based send, receive by
//! copy or zero-copy borrow, shutdown, close, abort, and per-connection statistics.

use crate::egress::Egress;
use crate::error::{
    BadHandle, BypassError, ConnectError, ControlError, ListenError, RecvError, SendError, TooManyWatchers,
};
use crate::tcp::sink::LinkSink;
use crate::tcp::tcb::app::Shutdown;
use crate::tcp::tcb::SessionId;
use crate::tcp::{Recv, TcpConnStats, TcpError, TcpHandle, TcpListener, TcpMemory, TcpState, TcpWatch};
use crate::{Counter, Stack};
use link::{Link, LinkError};
use std::net::{IpAddr, SocketAddr};

impl<L: Link> Stack<L> {
    /// Listen on `port`; up to `backlog` connections may wait (half-open or unaccepted).
    /// Take established connections with [`Stack::tcp_accept`].
    ///
    /// ```
    /// # use link::{mem, LinkConfig};
    /// # use net::{Config, ListenError, Stack};
    /// # let (l, _peer) = mem::pair(LinkConfig::default());
    /// let mut stack = Stack::new(Config::host("10.0.0.2/24"), l).unwrap();
    /// let listener = stack.tcp_listen(80, 16).unwrap();
    /// assert_eq!(listener.port(), 80);
    /// assert!(matches!(stack.tcp_listen(80, 16), Err(ListenError::PortInUse(80))));
    /// ```
    pub fn tcp_listen(&mut self, port: u16, backlog: usize) -> Result<TcpListener, ListenError> {
        self.core.tcp.listen(port, backlog)
    }

    /// Stop listening; connections not yet accepted are reset.
    pub fn tcp_unlisten(&mut self, l: TcpListener) -> Result<(), ControlError> {
        let orphans = self.core.tcp.unlisten(l)?;
        for sid in orphans {
            let mut out = LinkSink::new(&mut self.core.env, &mut self.core.eg, &mut self.core.v6, &mut self.link);

            self.core.tcp.send_abort_reset(&mut out, sid);

            out.finish_link()?;
            self.core.tcp.abort(sid);
        }
        Ok(())
    }

    /// The next established connection waiting on `l`.
    #[must_use = "an accepted connection that is dropped stays open until the peer gives up: close it"]
    pub fn tcp_accept(&mut self, l: TcpListener) -> Option<TcpHandle> {
        let tcp = &mut self.core.tcp;
        let sid = tcp.listeners.get_mut(&l.0)?.ready.pop_front()?;
        tcp.tcb(sid).0.accepted();
        Some(tcp.handle(sid))
    }

    /// Open a connection to `remote` (IPv4 or IPv6) from an ephemeral port; the SYN goes out
    /// now (or at the first poll). Watch [`Stack::tcp_connect_result`] for completion. A
    /// destination with no route fails at once with [`ConnectError::NoRoute`]; so does an IPv6
    /// one while the stack has no usable IPv6 address.
    ///
    /// ```
    /// # use link::{mem, Instant, LinkConfig};
    /// # use net::{Config, ConnectError, Stack};
    /// # let (la, lb) = mem::pair(LinkConfig::default());
    /// let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
    /// let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
    /// let listener = b.tcp_listen(5001, 8).unwrap();
    /// let conn = a.tcp_connect("10.0.0.2:5001".parse::<std::net::SocketAddr>().unwrap()).unwrap();
    /// for ms in 0..20 {
    ///     a.poll(Instant::from_millis(ms)).unwrap();
    ///     b.poll(Instant::from_millis(ms)).unwrap();
    /// }
    /// assert_eq!(a.tcp_connect_result(conn).unwrap(), Some(Ok(())));
    /// assert!(b.tcp_accept(listener).is_some());
    /// // Off our subnet and no gateway configured:
    /// let far: std::net::SocketAddr = "192.0.2.1:80".parse().unwrap();
    /// assert!(matches!(a.tcp_connect(far), Err(ConnectError::NoRoute(_))));
    /// ```
    pub fn tcp_connect(&mut self, remote: impl Into<SocketAddr>) -> Result<TcpHandle, ConnectError> {
        let remote = remote.into();
        let local = self.connect_source(remote)?;
        let port = self.core.tcp.ephemeral_port(local, remote)?;
        self.connect_via(local, port, remote)
    }

    /// Open a connection to `remote` from local port `local_port`.
    pub fn tcp_connect_from(
        &mut self,
        local_port: u16,
        remote: impl Into<SocketAddr>,
    ) -> Result<TcpHandle, ConnectError> {
        let remote = remote.into();
        let local = self.connect_source(remote)?;
        self.connect_via(local, local_port, remote)
    }

    /// Open a connection from `local:local_port` (a source [`Stack::connect_source`] chose)
    /// to `remote`.
    fn connect_via(&mut self, local: IpAddr, local_port: u16, remote: SocketAddr) -> Result<TcpHandle, ConnectError> {
        let now = self.core.env.now;
        let sid = self.core.tcp.connect(local, local_port, remote, now)?;
        // Before the first poll the stack has no time yet: the SYN then leaves at that poll,
        // stamped with the real time (else its RTO would look long expired).
        if self.started {
            let mut out = LinkSink::new(&mut self.core.env, &mut self.core.eg, &mut self.core.v6, &mut self.link);

            self.core.tcp.flush_dirty(&mut out, now);

            out.finish_link()?;
        }
        Ok(self.core.tcp.handle(sid))
    }

    /// Our address for a connection to `remote`, or `NoRoute`: refused before a session
    /// exists, since a SYN that cannot be routed would only retransmit into nothing until the
    /// connection timed out.
    fn connect_source(&self, remote: SocketAddr) -> Result<IpAddr, ConnectError> {
        let no_route = Err(ConnectError::NoRoute(remote.ip()));
        if remote.port() == 0 {
            return no_route;
        }
        match remote.ip() {
            IpAddr::V4(ip) => {
                let env = &self.core.env;
                if env.cfg.is_broadcast(ip) || Egress::unicast_hop(env, ip).is_err() {
                    return no_route;
                }
                Ok(IpAddr::V4(self.core.env.cfg.ip))
            }
            IpAddr::V6(ip) => {
                let v6 = &self.core.v6;
                if ip.is_multicast() || ip.is_unspecified() || ip.is_loopback() || ip.to_ipv4_mapped().is_some() {
                    return no_route;
                }
                match (v6.source_for(ip), v6.next_hop(ip, self.core.env.now)) {
                    (Some(src), Some(_)) => Ok(IpAddr::V6(src)),
                    _ => no_route,
                }
            }
        }
    }

    /// `None` while connecting; then `Ok(())` once established or `Err` if it failed.
    pub fn tcp_connect_result(&self, h: TcpHandle) -> Result<Option<Result<(), TcpError>>, BadHandle> {
        let sid = self.core.tcp.sid(h)?;
        let s = self.core.tcp.row(sid);
        Ok(match (s.state(), s.error()) {
            (_, Some(e)) => Some(Err(e)),
            (TcpState::SynSent | TcpState::SynReceived, None) => None,
            _ => Some(Ok(())),
        })
    }

    /// The connection's state.
    pub fn tcp_state(&self, h: TcpHandle) -> Result<TcpState, BadHandle> {
        Ok(self.core.tcp.row(self.core.tcp.sid(h)?).state())
    }

    /// The remote address `(ip, port)` of the connection (for accepted ones: who connected).
    pub fn tcp_peer(&self, h: TcpHandle) -> Result<SocketAddr, BadHandle> {
        Ok(self.core.tcp.row(self.core.tcp.sid(h)?).tuple().remote())
    }

    /// Our address `(ip, port)` of the connection (for accepted ones: the address the peer
    /// connected to).
    pub fn tcp_local(&self, h: TcpHandle) -> Result<SocketAddr, BadHandle> {
        let t = self.core.tcp.row(self.core.tcp.sid(h)?).tuple();
        Ok(SocketAddr::new(t.local_ip, t.local_port))
    }

    /// Why the connection ended, if it ended abnormally.
    pub fn tcp_error(&self, h: TcpHandle) -> Result<Option<TcpError>, BadHandle> {
        Ok(self.core.tcp.row(self.core.tcp.sid(h)?).error())
    }

    fn sendable(&self, sid: u32) -> Result<(), SendError> {
        let row = self.core.tcp.row(sid);
        if let Some(e) = row.error() {
            return Err(SendError::Connection(e));
        }
        if !row.state().can_send() || row.fin_queued() {
            return Err(SendError::NotConnected);
        }
        Ok(())
    }

    /// Queue as much of `data` as the send buffer takes; returns the bytes accepted (0 when
    /// the buffer is full: back-pressure). What was not accepted must be offered again after
    /// a poll (or use [`Stack::tcp_send_transfer`] to hand over a whole buffer).
    ///
    /// ```
    /// # use link::{mem, Instant, LinkConfig};
    /// # use net::{Config, Recv, Stack};
    /// # let (la, lb) = mem::pair(LinkConfig::default());
    /// # let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
    /// # let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
    /// # let l = b.tcp_listen(80, 1).unwrap();
    /// # let conn = a.tcp_connect("10.0.0.2:80".parse::<std::net::SocketAddr>().unwrap()).unwrap();
    /// # let mut peer = None;
    /// # for ms in 0..20 {
    /// #     a.poll(Instant::from_millis(ms)).unwrap();
    /// #     b.poll(Instant::from_millis(ms)).unwrap();
    /// #     peer = peer.or_else(|| b.tcp_accept(l));
    /// # }
    /// # let peer = peer.unwrap();
    /// let data = vec![7u8; 1 << 20];
    /// let mut sent = 0;
    /// for ms in 20..2000 {
    ///     // Only part of a large buffer fits at once.
    ///     sent += a.tcp_send(conn, &data[sent..]).unwrap();
    ///     a.poll(Instant::from_millis(ms)).unwrap();
    ///     b.poll(Instant::from_millis(ms)).unwrap();
    ///     let mut buf = [0u8; 65536];
    ///     while let Recv::Data(_) = b.tcp_recv(peer, &mut buf).unwrap() {}
    ///     if sent == data.len() {
    ///         break;
    ///     }
    /// }
    /// assert_eq!(sent, data.len());
    /// ```
    #[must_use = "only the returned number of bytes was queued (0 when the send buffer is full): the rest must be sent again later"]
    pub fn tcp_send(&mut self, h: TcpHandle, data: &[u8]) -> Result<usize, SendError> {
        let sid = self.core.tcp.sid(h)?;
        self.sendable(sid)?;
        let (mut tcb, mut ctx) = self.core.tcp.tcb(sid);
        let Some(n) = tcb.enqueue(&mut ctx, data) else {
            // The memory budget's limit: back-pressure, as a full send buffer.
            self.core.env.counters.bump(Counter::tcp_mem_send_refused);
            return Ok(0);
        };
        if n > 0 {
            self.kick(sid)?;
        }
        Ok(n)
    }

    /// Hand over a whole buffer (the transfer-based API of seeds 000/003): the stack segments
    /// it to MSS and sends it as the windows allow, copying each segment from the buffer
    /// straight into the frame (no copy into the send ring); it keeps the buffer until every
    /// byte is acknowledged, then [`Stack::tcp_reclaim_transfer`] gives it back. Bytes passed
    /// to [`Stack::tcp_send`] afterwards wait until the transfers are acknowledged (it returns
    /// 0 until then), so the stream keeps the order in which it was handed over.
    pub fn tcp_send_transfer(&mut self, h: TcpHandle, data: Vec<u8>) -> Result<(), SendError> {
        let sid = self.core.tcp.sid(h)?;
        self.sendable(sid)?;
        if !data.is_empty() {
            self.core.tcp.tcb(sid).0.push_transfer(data);
            self.kick(sid)?;
        }
        Ok(())
    }

    /// Bytes queued for sending and not yet acknowledged (send ring plus transfers).
    pub fn tcp_send_pending(&self, h: TcpHandle) -> Result<usize, BadHandle> {
        Ok(self.core.tcp.row(self.core.tcp.sid(h)?).send_queue().len())
    }

    /// Take back a buffer handed over with [`Stack::tcp_send_transfer`] whose bytes are all
    /// acknowledged (the newest first; a connection keeps the last few), to fill and send
    /// again without touching fresh memory. `None` if none is waiting.
    pub fn tcp_reclaim_transfer(&mut self, h: TcpHandle) -> Result<Option<Vec<u8>>, BadHandle> {
        let sid = self.core.tcp.sid(h)?;
        Ok(self.core.tcp.tcb(sid).0.reclaim_transfer())
    }

    /// Free space in the send buffer: its size less what is queued (transfers included), so
    /// 0 while transfers fill it.
    pub fn tcp_send_space(&self, h: TcpHandle) -> Result<usize, BadHandle> {
        Ok(self.core.tcp.row(self.core.tcp.sid(h)?).send_queue().room())
    }

    fn kick(&mut self, sid: u32) -> Result<(), LinkError> {
        let now = self.core.env.now;
        let mut out = LinkSink::new(&mut self.core.env, &mut self.core.eg, &mut self.core.v6, &mut self.link);

        self.core.tcp.output(&mut out, sid, now);

        out.finish_link()
    }

    /// Copy received in-order data into `buf`: [`Recv::Data`] with the count,
    /// [`Recv::WouldBlock`] when nothing is ready yet, [`Recv::Eof`] once the peer closed and
    /// everything was read. A connection that ended abnormally fails with
    /// [`RecvError::Connection`].
    ///
    /// ```
    /// # use link::{mem, Instant, LinkConfig};
    /// # use net::{Config, Recv, Stack};
    /// # let (la, lb) = mem::pair(LinkConfig::default());
    /// # let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
    /// # let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
    /// # let l = b.tcp_listen(80, 1).unwrap();
    /// # let conn = a.tcp_connect("10.0.0.2:80".parse::<std::net::SocketAddr>().unwrap()).unwrap();
    /// # let mut peer = None;
    /// # for ms in 0..20 {
    /// #     a.poll(Instant::from_millis(ms)).unwrap();
    /// #     b.poll(Instant::from_millis(ms)).unwrap();
    /// #     peer = peer.or_else(|| b.tcp_accept(l));
    /// # }
    /// # let peer = peer.unwrap();
    /// assert_eq!(a.tcp_send(conn, b"ping").unwrap(), 4);
    /// a.tcp_shutdown(conn).unwrap();
    /// let mut got = Vec::new();
    /// for ms in 20..100 {
    ///     a.poll(Instant::from_millis(ms)).unwrap();
    ///     b.poll(Instant::from_millis(ms)).unwrap();
    ///     let mut buf = [0u8; 16];
    ///     match b.tcp_recv(peer, &mut buf).unwrap() {
    ///         Recv::Data(n) => got.extend_from_slice(&buf[..n]),
    ///         Recv::WouldBlock => {}
    ///         Recv::Eof => break,
    ///     }
    /// }
    /// assert_eq!(got, b"ping");
    /// ```
    #[must_use = "the data copied into the buffer is consumed: the returned length says how much of the buffer holds it"]
    pub fn tcp_recv(&mut self, h: TcpHandle, buf: &mut [u8]) -> Result<Recv, RecvError> {
        let sid = self.core.tcp.sid(h)?;
        let ring = self.core.tcp.row(sid).recv_ring();
        // A busy-polling reader mostly finds nothing: answer that without the copy's set-up.
        let n = if ring.is_empty() { 0 } else { ring.copy_out(0, buf) };
        if n > 0 {
            self.tcp_recv_consume(h, n)?;
            return Ok(Recv::Data(n));
        }
        self.recv_idle(sid)
    }

    fn recv_idle(&self, sid: u32) -> Result<Recv, RecvError> {
        let row = self.core.tcp.row(sid);
        if row.fin_received() {
            return Ok(Recv::Eof);
        }
        match row.error() {
            Some(e) => Err(RecvError::Connection(e)),
            None if row.state() == TcpState::Closed => Ok(Recv::Eof),
            None => Ok(Recv::WouldBlock),
        }
    }

    /// Borrow the next contiguous run of received in-order data without copying; release it
    /// with [`Stack::tcp_recv_consume`].
    pub fn tcp_recv_borrow(&self, h: TcpHandle) -> Result<&[u8], BadHandle> {
        Ok(self.core.tcp.row(self.core.tcp.sid(h)?).recv_ring().contiguous())
    }

    /// Install the RX-bypass handler (seed 000): for connections switched to bypass with
    /// [`Stack::tcp_set_rx_bypass`], in-order payload is handed to `handler` straight from
    /// the received frame during [`Stack::poll`], without a copy into the receive buffer.
    /// The handler must take every byte (there is no back-pressure in bypass mode).
    pub fn tcp_set_rx_handler(&mut self, handler: impl FnMut(TcpHandle, &[u8]) + Send + 'static) {
        self.core.tcp.shared.bypass.set(Box::new(handler));
    }

    /// Switch connection `h` to RX bypass (`on`) or back to the receive buffer. Switching on
    /// first hands whatever is already buffered to the handler, so the order is kept.
    /// Fails with [`BypassError::NoHandler`] if no handler is installed.
    pub fn tcp_set_rx_bypass(&mut self, h: TcpHandle, on: bool) -> Result<(), BypassError> {
        let sid = self.core.tcp.sid(h)?;
        let tcp = &mut self.core.tcp;
        if on && !tcp.shared.bypass.is_set() {
            return Err(BypassError::NoHandler);
        }
        let (mut tcb, mut ctx) = tcp.tcb(sid);
        let n = tcb.set_rx_bypass(&mut ctx, on);
        if n > 0 {
            self.tcp_recv_consume(h, n)?;
        }
        Ok(())
    }

    /// A new watcher of connection activity (at most [`crate::tcp::MAX_WATCHERS`] per stack).
    /// Each watcher sees every
    /// connection where something happened (see [`Stack::tcp_take_activity`]) independently of
    /// the others, so several services on one stack can each have one.
    pub fn tcp_watch(&mut self) -> Result<TcpWatch, TooManyWatchers> {
        let sessions = self.core.tcp.capacity();
        let w = self.core.tcp.activity.add(sessions);
        w.map(TcpWatch).ok_or(TooManyWatchers)
    }

    /// Append to `out` the connections with activity since watcher `w` last looked: a
    /// segment was processed for them (data, ACK, window update, FIN, handshake) or they
    /// ended. Each connection appears once; ones already released are left out.
    pub fn tcp_take_activity(&mut self, w: TcpWatch, out: &mut Vec<TcpHandle>) {
        let tcp = &mut self.core.tcp;
        let mut sids = std::mem::take(&mut tcp.scratch_activity);
        tcp.activity.take(w.0, &mut sids);
        out.extend(sids.drain(..).filter(|&sid| tcp.row(sid).in_use()).map(|sid| tcp.handle(sid)));
        tcp.scratch_activity = sids;
    }

    /// Bytes of in-order data ready to read.
    pub fn tcp_recv_ready(&self, h: TcpHandle) -> Result<usize, BadHandle> {
        Ok(self.core.tcp.row(self.core.tcp.sid(h)?).recv_ring().len())
    }

    /// True once the peer's FIN arrived and every byte before it was read.
    pub fn tcp_at_eof(&self, h: TcpHandle) -> Result<bool, RecvError> {
        let sid = self.core.tcp.sid(h)?;
        Ok(self.core.tcp.row(sid).recv_ring().is_empty() && self.recv_idle(sid)? == Recv::Eof)
    }

    /// Release `n` bytes of received data; sends a window update at once if the window opened
    /// noticeably (a delayed ACK never holds back a window update).
    pub fn tcp_recv_consume(&mut self, h: TcpHandle, n: usize) -> Result<(), ControlError> {
        let sid = self.core.tcp.sid(h)?;
        let (mut tcb, ctx) = self.core.tcp.tcb(SessionId(sid));
        if tcb.consume_rx(n, ctx.rx_storage) {
            self.kick(sid)?;
        }
        Ok(())
    }

    /// Close our direction: a FIN follows the queued data. Receiving continues.
    pub fn tcp_shutdown(&mut self, h: TcpHandle) -> Result<(), ControlError> {
        let sid = self.core.tcp.sid(h)?;
        let now = self.core.env.now;
        let tcp = &mut self.core.tcp;
        match tcp.tcb(sid).0.shutdown() {
            Shutdown::Abandon => {
                tcp.finish(sid, None);
                return Ok(());
            }
            Shutdown::Nothing => return Ok(()),
            Shutdown::FinQueued => {}
        }
        let mut out = LinkSink::new(&mut self.core.env, &mut self.core.eg, &mut self.core.v6, &mut self.link);
        tcp.output(&mut out, sid, now);
        Ok(out.finish_link()?)
    }

    /// Close the connection and give up the handle: queued data and a FIN still go out, and
    /// the stack finishes the close (TIME-WAIT included) on its own.
    pub fn tcp_close(&mut self, h: TcpHandle) -> Result<(), ControlError> {
        let sid = self.core.tcp.sid(h)?;
        let now = self.core.env.now;
        if self.core.tcp.row(sid).state() == TcpState::Closed {
            let (mut tcb, mut ctx) = self.core.tcp.tcb(sid);
            tcb.release(&mut ctx, now);
            self.core.tcp.free_session(sid);
            return Ok(());
        }
        self.tcp_shutdown(h)?;
        let tcp = &mut self.core.tcp;
        if !tcp.row(sid).in_use() {
            return Ok(());
        }
        let (mut tcb, mut ctx) = tcp.tcb(sid);
        tcb.release(&mut ctx, now);
        tcp.park_buffers_if_done(sid);
        Ok(())
    }

    /// Abort: send RST and drop everything.
    pub fn tcp_abort(&mut self, h: TcpHandle) -> Result<(), ControlError> {
        let sid = self.core.tcp.sid(h)?;
        let mut out = LinkSink::new(&mut self.core.env, &mut self.core.eg, &mut self.core.v6, &mut self.link);

        self.core.tcp.send_abort_reset(&mut out, sid);

        out.finish_link()?;
        self.core.tcp.abort(sid);
        Ok(())
    }

    /// TCP timers armed now, over every session (a leak check: zero once every session ended).
    pub fn tcp_timers_armed(&self) -> usize {
        self.core.tcp.shared.timers.armed().0
    }

    /// TCP's memory budget and its use (see [`crate::tcp::memory`]).
    pub fn tcp_memory(&self) -> TcpMemory {
        let t = &self.core.tcp;
        let m = &t.shared.mem;
        let pooled = t.shared.tx_storage.held() + t.shared.rx_storage.held();
        TcpMemory { used: m.used - m.udp, peak: m.peak, pooled, pressure: m.pressure, limit: m.limit }
    }

    /// Statistics of a connection.
    pub fn tcp_stats(&self, h: TcpHandle) -> Result<TcpConnStats, BadHandle> {
        let tcp = &self.core.tcp;
        let row = tcp.row(tcp.sid(h)?);
        let t = row.tuple();
        Ok(TcpConnStats { local_port: t.local_port, remote: Some(t.remote()), ..row.stats() })
    }

    /// Choose the congestion control of a connection.
    pub fn tcp_set_cc(&mut self, h: TcpHandle, algo: crate::tcp::CcAlgorithm) -> Result<(), BadHandle> {
        let sid = self.core.tcp.sid(h)?;
        self.core.tcp.tcb(sid).0.set_cc(algo);
        Ok(())
    }

    /// Sessions in use (all states).
    pub fn tcp_sessions(&self) -> usize {
        self.core.tcp.sessions()
    }

    /// Table memory per session slot in bytes (buffers not included).
    pub fn tcp_table_bytes_per_session(&self) -> usize {
        self.core.tcp.table_bytes_per_session()
    }
}
