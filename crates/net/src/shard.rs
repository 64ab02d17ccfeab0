//! One stack per queue, shared nothing (`docs/DESIGN.md` section 3): [`shard_links`] wraps the
//! queues of a multi-queue link so that each stack sees exactly the frames of the flows it owns.
//!
//! A NIC's RSS (or, on veth, the sender's choice of queue) decides where a frame arrives;
//! `wire::flow::shard_of_frame` decides which shard owns it. When they differ, the shard that
//! received the frame hands a copy to the owner through a bounded channel, and the owner
//! processes it at its next poll as if it had arrived on its own queue. ARP and IPv6 Neighbor
//! Discovery go to every shard, so each one's neighbour cache learns what the others learn and
//! every shard answers for the host's one MAC and addresses (IPv6 flows are steered by their
//! four-tuple as IPv4's are). Connections a stack opens take source ports that hash
//! back to it (`TcpConfig::shard`), and two linerate hosts with as many queues each send a
//! flow's frames on the queue that owns it, so between them nothing is handed over.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};

use link::{FrameBatch, Instant, Link, LinkError, LinkStats};
use wire::flow::{ports_of_frame, shard_of_frame, FrameShard};

/// Frames a shard's inbox holds before further hand-overs to it are dropped (and counted).
pub const INBOX_FRAMES: usize = 4096;

/// Counters of the hand-over between shards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardStats {
    /// Frames this shard received for another shard and handed over.
    pub handed_out: u64,
    /// Frames other shards handed to this one.
    pub handed_in: u64,
    /// Hand-overs dropped because the owner's inbox was full.
    pub handover_dropped: u64,
}

/// One queue of a multi-queue link as one shard's [`Link`].
pub struct ShardLink {
    inner: Box<dyn Link>,
    me: u16,
    n: u16,
    inbox: Receiver<Vec<u8>>,
    peers: Vec<SyncSender<Vec<u8>>>,
    scratch: FrameBatch,
    stats: ShardStats,
    /// Local TCP/UDP ports whose frames one shard takes whatever their flow (a service that
    /// runs on one shard only, such as an iperf3 server whose test spans connections).
    pinned: Vec<(u16, u16)>,
}

/// Wrap the queues `links` (queue i becomes shard i) so that each sees the frames it owns.
pub fn shard_links(links: Vec<Box<dyn Link>>) -> Vec<ShardLink> {
    let n = links.len() as u16;
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..n).map(|_| sync_channel(INBOX_FRAMES)).unzip();
    links
        .into_iter()
        .zip(receivers)
        .enumerate()
        .map(|(i, (inner, inbox))| {
            let scratch = FrameBatch::new(64, inner.max_frame());
            ShardLink {
                inner,
                me: i as u16,
                n,
                inbox,
                peers: senders.clone(),
                scratch,
                stats: ShardStats::default(),
                pinned: Vec::new(),
            }
        })
        .collect()
}

impl ShardLink {
    /// This shard's index.
    pub fn shard(&self) -> u16 {
        self.me
    }

    /// Send every frame to or from local port `port` to shard `to` (set the same on every shard).
    pub fn pin_port(&mut self, port: u16, to: u16) {
        self.pinned.push((port, to.min(self.n - 1)));
    }

    /// Counters of the hand-over.
    pub fn shard_stats(&self) -> ShardStats {
        self.stats
    }

    /// The queue's own link.
    pub fn inner(&self) -> &dyn Link {
        &*self.inner
    }

    /// Hand a copy of `frame` to shard `to`.
    fn hand_over(peers: &[SyncSender<Vec<u8>>], stats: &mut ShardStats, to: u16, frame: &[u8]) {
        match peers[to as usize].try_send(frame.to_vec()) {
            Ok(()) => stats.handed_out += 1,
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => stats.handover_dropped += 1,
        }
    }

    /// Route a received frame: true if this shard processes it (also when every shard does).
    fn route(
        peers: &[SyncSender<Vec<u8>>],
        stats: &mut ShardStats,
        pinned: &[(u16, u16)],
        me: u16,
        n: u16,
        frame: &[u8],
    ) -> bool {
        let pin = ports_of_frame(frame).and_then(|(s, d)| pinned.iter().find(|(p, _)| *p == s || *p == d));
        let owner = match pin {
            Some(&(_, to)) => FrameShard::One(to),
            None => shard_of_frame(frame, n),
        };
        match owner {
            FrameShard::One(s) if s == me => true,
            FrameShard::One(s) => {
                Self::hand_over(peers, stats, s, frame);
                false
            }
            FrameShard::All => {
                for s in (0..n).filter(|&s| s != me) {
                    Self::hand_over(peers, stats, s, frame);
                }
                true
            }
        }
    }
}

impl Link for ShardLink {
    fn max_frame(&self) -> usize {
        self.inner.max_frame()
    }

    fn rx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let mut got = 0;
        while batch.len() < batch.capacity() {
            let Ok(f) = self.inbox.try_recv() else { break };
            self.stats.handed_in += 1;
            got += usize::from(batch.push(&f));
        }
        self.scratch.clear();
        let room = batch.capacity() - batch.len();
        if room == 0 {
            return Ok(got);
        }
        self.inner.rx_batch(now, &mut self.scratch)?;
        for f in self.scratch.iter() {
            if Self::route(&self.peers, &mut self.stats, &self.pinned, self.me, self.n, f) && batch.push(f) {
                got += 1;
            }
        }
        Ok(got)
    }

    fn tx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        self.inner.tx_batch(now, batch)
    }

    fn stats(&self) -> LinkStats {
        self.inner.stats()
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn raw_fd(&self) -> Option<i32> {
        self.inner.raw_fd()
    }

    fn rx_in_place(
        &mut self,
        now: Instant,
        max: usize,
        f: &mut dyn FnMut(&mut dyn Link, &[u8]),
    ) -> Option<Result<usize, LinkError>> {
        let mut handled = 0;
        while handled < max {
            let Ok(frame) = self.inbox.try_recv() else { break };
            self.stats.handed_in += 1;
            f(&mut *self.inner, &frame);
            handled += 1;
        }
        let (peers, stats, pinned, me, n) = (&self.peers, &mut self.stats, &self.pinned, self.me, self.n);
        let r = self.inner.rx_in_place(now, max - handled, &mut |tx, frame| {
            if Self::route(peers, stats, pinned, me, n, frame) {
                f(tx, frame);
            }
        })?;
        Some(r.map(|k| k + handled))
    }

    fn tx_in_place(
        &mut self,
        now: Instant,
        build: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Option<Result<bool, LinkError>> {
        self.inner.tx_in_place(now, build)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use link::{mem, LinkConfig};

    fn tcp_frame(sport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[23] = 6;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&80u16.to_be_bytes());
        f
    }

    #[test]
    fn each_shard_gets_the_frames_of_its_flows_wherever_they_arrived() {
        let (mut wire0, q0) = mem::pair(LinkConfig::default());
        let (_wire1, q1) = mem::pair(LinkConfig::default());
        let mut shards = shard_links(vec![Box::new(q0), Box::new(q1)]);
        // Everything arrives on queue 0: 40 flows and one ARP frame.
        let mut b = FrameBatch::new(64, 1518);
        for p in 0..40 {
            assert!(b.push(&tcp_frame(40000 + p)));
        }
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert!(b.push(&arp));
        assert_eq!(wire0.tx_batch(Instant::ZERO, &mut b).unwrap(), 41);
        let mut got = [Vec::new(), Vec::new()];
        for (i, s) in shards.iter_mut().enumerate() {
            s.rx_in_place(Instant::ZERO, 64, &mut |_, f| got[i].push(f.to_vec())).unwrap().unwrap();
        }
        // Shard 1 polled after shard 0 handed over: it has its flows and the ARP copy.
        let owner = |f: &Vec<u8>| shard_of_frame(f, 2);
        assert!(got[0].iter().all(|f| matches!(owner(f), FrameShard::One(0) | FrameShard::All)));
        assert!(got[1].iter().all(|f| matches!(owner(f), FrameShard::One(1) | FrameShard::All)));
        assert_eq!(got[0].len() + got[1].len(), 42, "40 flows once, ARP to both");
        assert!(!got[1].is_empty() && got[1].len() < 41, "the flows spread over both shards");
        assert_eq!(shards[0].shard_stats().handed_out as usize, got[1].len());
        assert_eq!(shards[1].shard_stats().handed_in as usize, got[1].len());
    }
}
