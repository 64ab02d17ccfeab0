//! The full mesh of connections: listening, connecting (directly or bootstrapped through
//! rank 0), identifying, and closing or aborting.

use super::*;

impl Endpoint {
    /// Starts the full mesh (paper VI-A): listens on our port (`listen_ports`) and issues
    /// the connects to every lower rank at once, pipelined (`open_connections`). Each
    /// connection starts with a hello naming the connecting rank. Progress it with
    /// [`Endpoint::progress`] and watch [`Endpoint::mesh_state`]. Operations may be started
    /// before the mesh is ready; their messages wait for their connections.
    pub fn start<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<(), CollectiveError> {
        if self.started {
            return Ok(());
        }
        if self.size() > 1 {
            self.listener = Some(stack.tcp_listen(self.cfg.port, self.size().max(16))?);
        }
        if self.addrs[self.rank].is_none() {
            // Our address in the family the others use (the root's, when bootstrapping).
            let v6 = self.addrs.iter().flatten().any(SocketAddr::is_ipv6);
            self.addrs[self.rank] = Some(own_address(stack, self.cfg.port, v6)?);
        }
        self.started = true;
        for j in 0..self.rank {
            if self.addrs[j].is_some() {
                self.connect(stack, j)?;
            }
        }
        Ok(())
    }

    fn connect<L: Link>(&mut self, stack: &mut Stack<L>, j: usize) -> Result<(), CollectiveError> {
        let (Some(to), Some(me)) = (self.addrs[j], self.addrs[self.rank]) else { return Ok(()) };
        let h = stack.tcp_connect(to)?;
        let p = &mut self.peers[j];
        p.conn = Some(h);
        p.retry_at = None;
        p.parser = Parser::default();
        p.out_off = 0;
        let hello = encode_hello(me, self.cfg.host.as_deref());
        p.outbox.push_front(encode(Kind::Hello, self.rank as u32, self.size as u32, &hello));
        Ok(())
    }

    /// Whether every connection is up; an error if set-up timed out.
    pub fn mesh_state(&self) -> Result<MeshState, CollectiveError> {
        if let Some((rank, missing)) = &self.setup_error {
            return Err(CollectiveError::SetupTimeout { rank: *rank, waiting_for: missing.clone() });
        }
        Ok(if self.peers.iter().all(Peer::ready) { MeshState::Ready } else { MeshState::Connecting })
    }

    /// Leaves abruptly, as a crashed rank would: every connection is reset and every
    /// operation in progress fails. Peers waiting for us see [`CollectiveError::PeerLost`].
    pub fn abort<L: Link>(&mut self, stack: &mut Stack<L>) {
        for (j, p) in self.peers.iter_mut().enumerate() {
            if let Some(h) = p.conn.take() {
                let _ = stack.tcp_abort(h);
            }
            p.lost = Some("this rank aborted".into());
            p.up = j == self.rank;
            if let Some(q) = p.pipe.take() {
                q.close();
            }
        }
        for op in self.ops.values_mut() {
            if op.outcome.is_none() {
                op.outcome = Some(Err(CollectiveError::PeerLost {
                    op: op.name,
                    step: op.step,
                    rank: self.rank,
                    reason: "this rank aborted".into(),
                }));
            }
        }
    }

    /// Ranks to which sent data is not yet acknowledged (queued here or in the stack).
    pub fn unacknowledged<L: Link>(&self, stack: &Stack<L>) -> Vec<usize> {
        let mut v = Vec::new();
        for (j, p) in self.peers.iter().enumerate() {
            if p.lost.is_some() || j == self.rank {
                continue;
            }
            let in_stack = p.conn.map_or(0, |h| stack.tcp_send_pending(h).unwrap_or(0));
            let in_pipe = !p.pipe_out.is_empty()
                || p.pipe.as_ref().is_some_and(|q| !q.peer_closed() && (!q.peer_attached() || q.unread() > 0));
            if in_stack > 0 || !p.outbox.is_empty() || in_pipe {
                v.push(j);
            }
        }
        v
    }

    /// Closes every connection gracefully (FIN after the queued data). Call it once
    /// [`Endpoint::unacknowledged`] is empty, as [`crate::Communicator::finalize`] does.
    pub fn close<L: Link>(&mut self, stack: &mut Stack<L>) {
        for p in &mut self.peers {
            if let Some(h) = p.conn.take() {
                let _ = stack.tcp_close(h);
            }
            if let Some(q) = p.pipe.take() {
                q.close();
            }
            p.lost.get_or_insert_with(|| "closed by this rank".into());
        }
        if let Some(l) = self.listener.take() {
            let _ = stack.tcp_unlisten(l);
        }
    }

    /// A description of every peer's state, one line each, for diagnosing an operation that
    /// does not finish: the link's and the stack's non-zero counters, then per peer the
    /// connection (TCP state, windows, retransmissions, bytes queued
    /// and ready), the message being reassembled, the unmatched messages and the operations
    /// in progress with their steps.
    pub fn diagnose<L: Link>(&self, stack: &Stack<L>) -> String {
        let mut out = format!("link {:?}\n", stack.link().stats());
        let nonzero: Vec<_> = stack.counters().iter().filter(|(_, v)| *v > 0).collect();
        out += &format!("stack counters {nonzero:?}\n");
        for (id, op) in &self.ops {
            out += &format!("op #{id} {} seq {} step {}/{}\n", op.name, op.tag, op.step, op.sched.steps.len());
        }
        for (j, p) in self.peers.iter().enumerate().filter(|&(j, _)| j != self.rank) {
            out += &format!("rank {j}: up {} lost {:?} outbox {} ", p.up, p.lost, p.outbox.len());
            if let Some(q) = &p.pipe {
                out += &format!(
                    "pipe attached {} unread {} queued {} partial {:?} ",
                    q.peer_attached(),
                    q.unread(),
                    p.pipe_out.len(),
                    p.pipe_parser.partial()
                );
            }
            if let Some(h) = p.conn {
                if let Ok(st) = stack.tcp_stats(h) {
                    out += &format!(
                        "tcp {:?} cwnd {} snd_wnd {} rcv_wnd {} rto {:?} retrans {} timeouts {} snd_una {} snd_nxt {} rcv_nxt {} bufs {}/{} ",
                        st.state, st.cwnd, st.snd_wnd, st.rcv_wnd, st.rto, st.retransmits, st.timeouts, st.snd_una, st.snd_nxt, st.rcv_nxt, st.tx_buffer, st.rx_buffer
                    );
                }
                let pending = stack.tcp_send_pending(h).unwrap_or(0);
                let ready = stack.tcp_recv_ready(h).unwrap_or(0);
                out += &format!("send_pending {pending} recv_ready {ready} ");
            }
            let queued: Vec<_> = p.inbox.iter().take(8).map(|m| (m.kind, m.tag, m.step, m.payload.len())).collect();
            out += &format!("partial {:?} unmatched {} {queued:?}\n", p.parser.partial(), p.inbox.len());
        }
        out
    }

    /// Ranks that are not connected yet.
    pub fn unconnected(&self) -> Vec<usize> {
        (0..self.size()).filter(|&j| !self.peers[j].ready()).collect()
    }

    pub(super) fn setup_progress<L: Link>(
        &mut self,
        stack: &mut Stack<L>,
        now: Instant,
    ) -> Result<(), CollectiveError> {
        self.bootstrap_progress(stack)?;
        self.hosts_progress();
        self.pipes_progress();
        if self.peers.iter().all(Peer::ready) {
            return Ok(());
        }
        let deadline = *self.setup_deadline.get_or_insert(now + self.cfg.connect_timeout);
        // Connections we initiate.
        for j in 0..self.rank {
            let p = &mut self.peers[j];
            if p.up {
                continue;
            }
            match p.conn {
                Some(h) => match stack.tcp_connect_result(h) {
                    Ok(Some(Ok(()))) => p.up = true,
                    Ok(None) => {}
                    Ok(Some(Err(_))) | Err(_) => {
                        let _ = stack.tcp_close(h);
                        p.conn = None;
                        p.outbox.retain(|m| m.get(3) != Some(&0));
                        p.retry_at = Some(now + self.cfg.connect_retry);
                        self.counters.connect_retries += 1;
                    }
                },
                None => {
                    if p.retry_at.is_some_and(|t| now >= t) {
                        self.connect(stack, j)?;
                    }
                }
            }
        }
        // Connections from higher ranks: accept, then wait for the hello.
        if let Some(l) = self.listener {
            while let Some(h) = stack.tcp_accept(l) {
                self.pending.push(Pending { conn: h, parser: Parser::default(), msgs: VecDeque::new() });
            }
        }
        let mut i = 0;
        while i < self.pending.len() {
            let pd = &mut self.pending[i];
            let r = pd.parser.pump(stack, pd.conn, self.cfg.max_message, &mut pd.msgs, &mut self.pool);
            let hello = pd.msgs.front().map(|m| (m.kind, m.tag as usize, m.step as usize, decode_hello(&m.payload)));
            let verdict = match (r, hello) {
                (_, Some((Kind::Hello, j, size, Some((a, host))))) => {
                    if size == self.size() && j > self.rank && j < self.size() && !self.peers[j].up {
                        if self.addrs[j].is_none() {
                            self.addrs[j] = Some(a);
                        }
                        Some(Ok((j, host)))
                    } else {
                        Some(Err(()))
                    }
                }
                (_, Some(_)) | (Err(_), _) | (Ok(PumpEnd::Eof), None) => Some(Err(())),
                (Ok(PumpEnd::WouldBlock | PumpEnd::Held), None) => None,
            };
            match verdict {
                None => i += 1,
                Some(Ok((j, host))) => {
                    let mut pd = self.pending.swap_remove(i);
                    pd.msgs.pop_front();
                    self.counters.msgs_received += 1;
                    if let (Some(ours), Some(me)) = (&self.cfg.host, self.addrs[self.rank]) {
                        // Tell the peer our host name in turn: both decide alike.
                        let back = encode_hello(me, Some(ours));
                        self.peers[j].outbox.push_back(encode(Kind::Hello, self.rank as u32, self.size as u32, &back));
                    }
                    self.learn_host(j, host.as_deref());
                    let p = &mut self.peers[j];
                    p.conn = Some(pd.conn);
                    p.parser = pd.parser;
                    p.up = true;
                    self.counters.msgs_received += pd.msgs.len() as u64;
                    p.inbox_bytes += pd.msgs.iter().map(|m| m.payload.len()).sum::<usize>();
                    p.inbox.extend(pd.msgs);
                }
                Some(Err(())) => {
                    let pd = self.pending.swap_remove(i);
                    let _ = stack.tcp_abort(pd.conn);
                    self.counters.protocol_errors += 1;
                }
            }
        }
        if self.peers.iter().all(Peer::ready) {
            return Ok(());
        }
        if now >= deadline && self.setup_error.is_none() {
            self.setup_error = Some((self.rank, self.unconnected()));
        }
        Ok(())
    }

    /// Bootstrap through rank 0: rank 0 sends the table once everyone has arrived; the
    /// others connect to the ranks below them once the table is here.
    fn bootstrap_progress<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<(), CollectiveError> {
        if self.rank == 0 && !self.table_sent && self.peers.iter().all(|p| p.up) {
            let all: Option<Vec<SocketAddr>> = self.addrs.iter().copied().collect();
            if let Some(all) = all {
                let table = encode(Kind::Table, 0, self.size as u32, &encode_addrs(&all));
                for p in self.peers.iter_mut().skip(1) {
                    p.outbox.push_back(table.clone());
                }
                self.table_sent = true;
            }
        }
        if self.table_known || !self.peers[0].up {
            return Ok(());
        }
        let Some(m) = self.peers[0].take(|m| m.kind == Kind::Table) else { return Ok(()) };
        match decode_addrs(&m.payload) {
            Some(t) if t.len() == self.size && t[self.rank] == self.addrs[self.rank].unwrap_or(t[self.rank]) => {
                for (a, n) in self.addrs.iter_mut().zip(t) {
                    *a = Some(n);
                }
                self.table_known = true;
                for j in 1..self.rank {
                    self.connect(stack, j)?;
                }
            }
            _ => {
                self.peers[0].lost = Some("protocol violation: a bad address table".into());
                self.counters.protocol_errors += 1;
            }
        }
        Ok(())
    }
}

impl Endpoint {
    /// With [`Config::host`]: decides from peer `j`'s host name whether its messages go
    /// through a pipe (same machine, [`Config::shm`] set) or TCP.
    pub(super) fn learn_host(&mut self, j: usize, host: Option<&str>) {
        let p = &mut self.peers[j];
        if p.host_known {
            return;
        }
        p.host_known = true;
        p.pipe_wanted = self.cfg.shm.is_some() && host.is_some() && host == self.cfg.host.as_deref();
        self.counters.pipe_peers += u64::from(p.pipe_wanted);
    }

    /// Host names that lower ranks answered our hello with (they arrive as messages on the
    /// connection).
    pub(super) fn hosts_progress(&mut self) {
        for j in 0..self.rank {
            if self.peers[j].host_known {
                continue;
            }
            let Some(m) = self.peers[j].take(|m| m.kind == Kind::Hello) else { continue };
            let host = decode_hello(&m.payload).and_then(|(_, h)| h);
            self.pool.give(m.payload);
            self.learn_host(j, host.as_deref());
        }
    }
}

/// The address peers reach this rank at on `port`: the stack's IPv4 address, or with `v6`
/// its first usable global IPv6 address.
fn own_address<L: Link>(stack: &Stack<L>, port: u16, v6: bool) -> Result<SocketAddr, CollectiveError> {
    if !v6 {
        return Ok(SocketAddr::new(stack.ip().into(), port));
    }
    stack
        .ipv6_addrs()
        .iter()
        .find(|a| a.state == net::AddrState::Preferred && a.origin != net::AddrOrigin::LinkLocal)
        .map(|a| SocketAddr::new(a.cidr.addr.into(), port))
        .ok_or_else(|| {
            CollectiveError::Join(
                "the ranks meet over IPv6, but this rank has no usable IPv6 address (give it one)".into(),
            )
        })
}
