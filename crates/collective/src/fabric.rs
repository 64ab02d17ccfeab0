//! A shared-memory fabric: one L2 segment for the `N` processes of a job on one machine.
//!
//! Every pair of ranks `i < j` shares one [`ShmLink`] (two SPSC rings in a POSIX shared
//! memory segment named `<name>-<i>-<j>`, created by rank `i` and opened by rank `j`), so
//! the fabric is a full mesh of rings with no switch and no kernel in the data path. A frame
//! is steered by its destination MAC: the fabric learns which ring leads to which MAC from
//! the source addresses of the frames it receives (as a switch learns), and floods broadcast,
//! multicast and not-yet-learned destinations to every ring. A peer that exits closes its
//! rings; the fabric then counts frames for it as dropped instead of failing the stack.
//!
//! A rank with nothing to do may sleep in the kernel on its [`Doorbell`]: every frame the
//! fabric puts in a peer's ring is followed by a ring of that peer's bell, which costs one
//! load unless the peer sleeps ([`crate::Communicator`] sleeps when idle long enough).
//!
//! This lives in `collective` rather than `link` for now because `link` is being reworked
//! elsewhere; it uses only `link`'s public [`ShmLink`].

use crate::doorbell::Doorbell;
use link::shm::ShmLink;
use link::{FrameBatch, Instant, Link, LinkConfig, LinkError, LinkStats};
use std::sync::Arc;
use std::time::Duration;

/// Counters of the fabric beyond the rings' own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FabricCounters {
    /// Frames sent to every ring (broadcast, multicast, unknown destination).
    pub flooded: u64,
    /// Copies not delivered because a ring was full or its peer had exited.
    pub dropped: u64,
    /// Rings whose peer has exited.
    pub closed_rings: u64,
    /// Peers woken from their sleep after a frame for them.
    pub wakeups: u64,
}

/// One process's attachment to the fabric.
pub struct ShmFabric {
    rank: usize,
    /// Ring to rank `j` at index `j` (`None` at our own index).
    ports: Vec<Option<ShmLink>>,
    closed: Vec<bool>,
    /// Learned (MAC, ring) pairs: a short list (one entry per peer), scanned linearly,
    /// which costs less per frame than hashing the address.
    macs: Vec<([u8; 6], usize)>,
    one: FrameBatch,
    next_rx: usize,
    max_frame: usize,
    counters: FabricCounters,
    /// The fabric's name (for the peers' doorbells).
    name: String,
    /// Our doorbell (peers ring it) and every peer's at its rank, opened once a frame came
    /// from that peer (its bell exists before its rings do); `None` at ours.
    bell: Arc<Doorbell>,
    peer_bells: Vec<Option<Doorbell>>,
    /// Rings that got a frame in the current `tx_batch` (their bells are rung at its end).
    fed: Vec<bool>,
}

/// Most learned MAC addresses per ring (a rank's stack has one).
const MACS_PER_RING: usize = 4;

/// IP MTU of the ranks' stacks on a fabric (jumbo frames: the rings carry them at memory speed).
pub const FABRIC_MTU: usize = 9000;

/// Least margin of the RTO above the smoothed RTT on a fabric (Linux's 200 ms; see
/// [`fabric_host_config`]).
pub const FABRIC_MIN_RTO: Duration = Duration::from_millis(200);

/// TCP port every rank listens on in [`fabric_addrs`].
pub const FABRIC_PORT: u16 = 7470;

/// The link settings of a fabric's rings.
pub fn fabric_link_config() -> LinkConfig {
    LinkConfig { mtu: FABRIC_MTU, depth: 256 }
}

/// Rank `k`'s address on a fabric: 10.77.0.(k+1).
pub fn fabric_ip(k: usize) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::new(10, 77, 0, (k + 1).min(254) as u8)
}

/// Every rank's listening address on a fabric of `size` ranks (deterministic addressing).
pub fn fabric_addrs(size: usize) -> Vec<std::net::SocketAddr> {
    (0..size).map(|k| std::net::SocketAddr::new(fabric_ip(k).into(), FABRIC_PORT)).collect()
}

/// The stack configuration of rank `rank` of `size` on a fabric: jumbo MTU, net's default
/// TCP buffers at a fixed size (256 KiB; measured here, 4 MiB buffers made large transfers
/// slower). Buffer auto-tuning is off: with it, a simultaneous 8 MiB exchange in both
/// directions of one connection (recursive doubling) sometimes desynchronised the two ends
/// (every segment, pure ACKs included, dropped as out of window by the other end) until the
/// operation timed out; `linerate bench collective --ranks 4` twice in parallel hit it about
/// once in ten runs, and not in 24 runs with fixed buffers.
///
/// The RTO's least margin is [`FABRIC_MIN_RTO`] instead of net's 10 ms: the rings lose no
/// frame (a connection's window, 256 KiB, is about 29 jumbo frames, far below a ring's 256
/// slots), so a timeout on the fabric is nearly always a rank descheduled for more than
/// 10 ms on a busy machine, and net's margin fired 9-15 spurious timeouts per goodput run,
/// each stalling a transfer; RACK and tail loss probes still repair a real loss sooner.
pub fn fabric_host_config(rank: usize, size: usize) -> Result<net::Config, net::NetError> {
    if size > 254 || rank >= size {
        return Err(net::NetError::BadConfig(format!("rank {rank} of {size}: a fabric holds at most 254 ranks")));
    }
    let mut c =
        net::Config::parse_host(&format!("{}/24", fabric_ip(rank)))?.mtu(FABRIC_MTU).mss(FABRIC_MTU as u16 - 40);
    c.tcp.rx_buffer_max = c.tcp.rx_buffer;
    c.tcp.tx_buffer_max = c.tcp.tx_buffer;
    c.tcp.min_rto = FABRIC_MIN_RTO;
    Ok(c)
}

fn ring_name(name: &str, i: usize, j: usize) -> String {
    format!("{name}-{i}-{j}")
}

impl ShmFabric {
    /// Joins fabric `name` as rank `rank` of `size`: creates its doorbell and the rings to
    /// every higher rank, then opens those of every lower rank, waiting up to `timeout` for
    /// them to appear.
    pub fn join(name: &str, rank: usize, size: usize, cfg: LinkConfig, timeout: Duration) -> Result<Self, LinkError> {
        if rank >= size {
            return Err(LinkError::Config(format!("rank {rank} of a fabric of {size}")));
        }
        let bell = Doorbell::create(name, rank).map_err(|e| LinkError::Config(format!("doorbell: {e}")))?;
        let bell = Arc::new(bell);
        let mut ports: Vec<Option<ShmLink>> = (0..size).map(|_| None).collect();
        for (j, p) in ports.iter_mut().enumerate().skip(rank + 1) {
            *p = Some(ShmLink::create(&ring_name(name, rank, j), cfg)?);
        }
        for (j, p) in ports.iter_mut().enumerate().take(rank) {
            *p = Some(ShmLink::open(&ring_name(name, j, rank), timeout)?);
        }
        let max_frame = cfg.max_frame();
        Ok(ShmFabric {
            name: name.to_string(),
            bell,
            peer_bells: (0..size).map(|_| None).collect(),
            fed: vec![false; size],
            rank,
            ports,
            closed: vec![false; size],
            macs: Vec::new(),
            one: FrameBatch::new(1, max_frame),
            next_rx: 0,
            max_frame,
            counters: FabricCounters::default(),
        })
    }

    /// Our rank on the fabric.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Our doorbell, for the wait loop of [`crate::Communicator`]: peers ring it after every
    /// frame they hand us.
    pub fn doorbell(&self) -> Arc<Doorbell> {
        self.bell.clone()
    }

    /// The fabric's own counters.
    pub fn counters(&self) -> FabricCounters {
        self.counters
    }

    /// The ring that leads to unicast address `mac`, if learned.
    fn ring_of(&self, mac: &[u8]) -> Option<usize> {
        self.macs.iter().find(|(m, _)| m[..] == *mac).map(|&(_, j)| j)
    }

    /// Records that `mac` is reached through ring `j` (a station that moved is updated).
    /// The list holds at most [`MACS_PER_RING`] addresses per ring: frames from further
    /// source addresses (a peer gone astray or hostile) are still delivered, their replies
    /// flooded, and lookups stay short.
    fn learn(&mut self, mac: &[u8], j: usize) {
        let full = self.macs.len() >= MACS_PER_RING * self.ports.len();
        match self.macs.iter_mut().find(|(m, _)| m[..] == *mac) {
            Some(e) => e.1 = j,
            None if full => {}
            None => {
                let mut m = [0u8; 6];
                m.copy_from_slice(mac);
                self.macs.push((m, j));
            }
        }
    }

    /// Sends one frame on ring `j`; false if the ring is full or closed.
    fn send_one(&mut self, now: Instant, j: usize, frame: &[u8]) -> bool {
        let Some(port) = self.ports[j].as_mut() else { return false };
        if self.closed[j] {
            return false;
        }
        self.one.clear();
        if !self.one.push(frame) {
            return false;
        }
        match port.tx_batch(now, &mut self.one) {
            Ok(1) => {
                self.fed[j] = true;
                true
            }
            Ok(_) => false,
            Err(_) => {
                self.closed[j] = true;
                self.counters.closed_rings += 1;
                false
            }
        }
    }
}

impl Link for ShmFabric {
    fn max_frame(&self) -> usize {
        self.max_frame
    }

    fn rx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let n = self.ports.len();
        let start = batch.len();
        for k in 0..n {
            if batch.is_full() {
                break;
            }
            let j = (self.next_rx + k) % n;
            let (Some(port), false) = (self.ports[j].as_mut(), self.closed[j]) else { continue };
            let before = batch.len();
            match port.rx_batch(now, batch) {
                Ok(_) => {}
                Err(LinkError::Closed) => {
                    self.closed[j] = true;
                    self.counters.closed_rings += 1;
                }
                Err(e) => return Err(e),
            }
            if batch.len() > before && self.peer_bells[j].is_none() {
                // The peer created its bell before its rings: it is there (or it is gone).
                self.peer_bells[j] = Doorbell::open(&self.name, j, Duration::ZERO).ok();
            }
            for i in before..batch.len() {
                let f = batch.get(i);
                if f.len() >= 12 && f[6] & 1 == 0 && self.ring_of(&f[6..12]) != Some(j) {
                    self.learn(&f[6..12], j);
                }
            }
        }
        self.next_rx = (self.next_rx + 1) % n.max(1);
        Ok(batch.len() - start)
    }

    fn tx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let mut sent = 0;
        while sent < batch.len() {
            let frame = batch.get(sent);
            if frame.len() < 14 {
                sent += 1;
                self.counters.dropped += 1;
                continue;
            }
            let to = if frame[0] & 1 == 0 { self.ring_of(&frame[..6]) } else { None };
            match to {
                Some(j) => {
                    if !self.send_one(now, j, frame) {
                        if self.closed[j] {
                            self.counters.dropped += 1;
                        } else {
                            break; // ring full: back-pressure, the rest stays in the batch
                        }
                    }
                }
                None => {
                    self.counters.flooded += 1;
                    for j in 0..self.ports.len() {
                        if j != self.rank && !self.send_one(now, j, frame) {
                            self.counters.dropped += 1;
                        }
                    }
                }
            }
            sent += 1;
        }
        batch.consume_front(sent);
        for (j, fed) in self.fed.iter_mut().enumerate() {
            if std::mem::take(fed) && self.peer_bells[j].as_ref().is_some_and(|b| b.ring()) {
                self.counters.wakeups += 1;
            }
        }
        Ok(sent)
    }

    fn stats(&self) -> LinkStats {
        let mut s = LinkStats::default();
        for p in self.ports.iter().flatten() {
            let t = p.stats();
            s.rx_frames += t.rx_frames;
            s.rx_bytes += t.rx_bytes;
            s.tx_frames += t.tx_frames;
            s.tx_bytes += t.tx_bytes;
            s.tx_dropped_full += t.tx_dropped_full;
            s.dropped_oversize += t.dropped_oversize;
            s.rx_dropped_no_room += t.rx_dropped_no_room;
        }
        s
    }

    fn kind(&self) -> &'static str {
        "shm-fabric"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(dst: [u8; 6], src: [u8; 6], body: u8) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        f.extend_from_slice(&[0x08, 0x00, body, body]);
        f
    }

    fn rx_all(f: &mut ShmFabric) -> Vec<Vec<u8>> {
        let mut b = FrameBatch::new(16, 1600);
        f.rx_batch(Instant::ZERO, &mut b).unwrap();
        b.iter().map(|x| x.to_vec()).collect()
    }

    #[test]
    fn a_flood_of_source_addresses_is_delivered_but_not_all_learned() {
        let name = format!("fabric-macs-{}", std::process::id());
        let cfg = LinkConfig { mtu: 1500, depth: 64 };
        let mut f0 = ShmFabric::join(&name, 0, 2, cfg, Duration::from_secs(5)).unwrap();
        let mut f1 = ShmFabric::join(&name, 1, 2, cfg, Duration::from_secs(5)).unwrap();
        let mut b = FrameBatch::new(64, 1600);
        for k in 0..40u8 {
            assert!(b.push(&frame([0xff; 6], [2, 0, 0, 0, 1, k], k)));
        }
        assert_eq!(f1.tx_batch(Instant::ZERO, &mut b).unwrap(), 40);
        let mut got = FrameBatch::new(64, 1600);
        assert_eq!(f0.rx_batch(Instant::ZERO, &mut got).unwrap(), 40);
        assert_eq!(f0.macs.len(), MACS_PER_RING * 2);
        // A learned address is still steered; an unlearned one is flooded (to the one peer).
        assert!(b.push(&frame([2, 0, 0, 0, 1, 0], [2, 0, 0, 0, 0, 9], 1)));
        assert!(b.push(&frame([2, 0, 0, 0, 1, 39], [2, 0, 0, 0, 0, 9], 2)));
        assert_eq!(f0.tx_batch(Instant::ZERO, &mut b).unwrap(), 2);
        assert_eq!(f0.counters().flooded, 1);
        assert_eq!(rx_all(&mut f1).len(), 2);
    }

    #[test]
    fn floods_unknown_then_steers_by_learned_mac() {
        let name = format!("fabric-unit-{}", std::process::id());
        let cfg = LinkConfig { mtu: 1500, depth: 64 };
        // Join in order: creators first (rank 0 creates both of its rings before 1 and 2 open).
        let mut f0 = ShmFabric::join(&name, 0, 3, cfg, Duration::from_secs(5)).unwrap();
        let mut f1 = ShmFabric::join(&name, 1, 3, cfg, Duration::from_secs(5)).unwrap();
        let mut f2 = ShmFabric::join(&name, 2, 3, cfg, Duration::from_secs(5)).unwrap();
        let (m0, m1, m2) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 3]);
        let now = Instant::ZERO;
        // Rank 1 broadcasts: everyone else gets it and learns m1.
        let mut b = FrameBatch::new(4, 1600);
        assert!(b.push(&frame([0xff; 6], m1, 1)));
        assert_eq!(f1.tx_batch(now, &mut b).unwrap(), 1);
        assert_eq!(rx_all(&mut f0), vec![frame([0xff; 6], m1, 1)]);
        assert_eq!(rx_all(&mut f2), vec![frame([0xff; 6], m1, 1)]);
        // Rank 0 answers m1 by unicast: only rank 1 sees it.
        assert!(b.push(&frame(m1, m0, 2)));
        f0.tx_batch(now, &mut b).unwrap();
        assert_eq!(rx_all(&mut f1), vec![frame(m1, m0, 2)]);
        assert!(rx_all(&mut f2).is_empty());
        assert_eq!(f0.counters().flooded, 0);
        // Rank 2 sends to m0 before it learned m0: flooded, rank 1 sees the stray copy.
        assert!(b.push(&frame(m0, m2, 3)));
        f2.tx_batch(now, &mut b).unwrap();
        assert_eq!(f2.counters().flooded, 1);
        assert_eq!(rx_all(&mut f0).len(), 1);
        assert_eq!(rx_all(&mut f1).len(), 1);
        // Rank 1 exits: rank 0 keeps working, frames to it are counted as dropped.
        drop(f1);
        assert!(rx_all(&mut f0).is_empty());
        assert!(b.push(&frame(m1, m0, 4)));
        assert_eq!(f0.tx_batch(now, &mut b).unwrap(), 1);
        assert_eq!(f0.counters().dropped, 1);
    }
}
