//! Helpers of the rdma integration tests: hosts with RDMA nodes on an in-process testbed,
//! stepped on virtual time.
#![allow(dead_code)]

use link::impair::Impairment;
use link::Instant;
use net::Config;
use rdma::{Completion, Counter, Peer, RdmaConfig, RdmaNode};
use std::time::Duration;
use testbed::{HostId, HostOptions, Testbed, TestbedConfig};

/// A testbed whose hosts each carry one RDMA node.
pub struct Net {
    pub tb: Testbed,
    pub ids: Vec<HostId>,
    pub nodes: Vec<RdmaNode>,
}

impl Net {
    /// `n` hosts 10.0.0.1.. with `cfg`, impaired by `imp` (seed varied per host).
    pub fn new(n: usize, imp: Option<Impairment>, cfg: RdmaConfig) -> Net {
        Net::with(n, imp, |_| cfg.clone(), |_, c| c)
    }

    /// As [`Net::new`] with a per-host RDMA configuration and stack configuration.
    pub fn with(
        n: usize,
        imp: Option<Impairment>,
        cfg: impl Fn(usize) -> RdmaConfig,
        stack: impl Fn(usize, Config) -> Config,
    ) -> Net {
        let mut tb = Testbed::new(TestbedConfig { mtu: 1500, step: Duration::from_micros(10), depth: 1024 });
        let mut ids = Vec::new();
        let mut nodes = Vec::new();
        for i in 0..n {
            // ARP retries quickly here: with 10% loss a lost request must not stall a host for
            // the stack's default half second.
            let mut c = Config::host(&format!("10.0.{}.{}/16", i / 200, i % 200 + 1));
            c.arp_retry = Duration::from_millis(5);
            c.arp_max_tries = 8;
            let c = stack(i, c);
            let impairment = imp.map(|m| Impairment { seed: m.seed.wrapping_mul(31).wrapping_add(i as u64 + 1), ..m });
            let id = tb.add_host_with(c, HostOptions { impairment, pcap: None }).expect("host");
            let node = RdmaNode::new(tb.host(id), cfg(i)).expect("node");
            ids.push(id);
            nodes.push(node);
        }
        Net { tb, ids, nodes }
    }

    /// Address of node `i`.
    pub fn addr(&mut self, i: usize) -> Peer {
        let id = self.ids[i];
        self.nodes[i].address(self.tb.host(id))
    }

    /// Poll every node, then step the testbed once.
    pub fn step(&mut self) {
        let now = self.tb.now();
        for (i, n) in self.nodes.iter_mut().enumerate() {
            n.poll(self.tb.host(self.ids[i]), now).expect("poll");
        }
        self.tb.step().expect("step");
    }

    /// Current virtual time.
    pub fn now(&self) -> Instant {
        self.tb.now()
    }

    /// Step until `done` or `limit` of virtual time; returns whether `done` held.
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Net) -> bool) -> bool {
        let end = self.tb.now() + limit;
        while self.tb.now() < end {
            if done(self) {
                return true;
            }
            self.step();
        }
        done(self)
    }

    /// Run for `d` more of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        self.run_until(d, |_| false);
    }
}

/// Everything waiting on a queue.
pub fn drain(q: &rdma::NotifyQueue, out: &mut Vec<Completion>) {
    while let Some(c) = q.poll() {
        out.push(c);
    }
}

/// FNV-1a of a byte slice, for reporting region contents.
pub fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| (h ^ u64::from(*x)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Deterministic test data.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Every verified packet of `node` has exactly one verdict, and every datagram either
/// verified or was dropped for a counted reason.
pub fn assert_accounted(node: &RdmaNode) {
    let c = node.counters();
    assert_eq!(c.get(Counter::rx_datagrams), c.get(Counter::rx_packets) + c.parse_drops(), "datagrams");
    assert_eq!(
        c.verdicts(),
        c.get(Counter::rx_packets),
        "verdicts: {:?}",
        c.iter().filter(|x| x.1 > 0).collect::<Vec<_>>()
    );
    assert_eq!(
        c.get(Counter::rx_escape_parked),
        c.get(Counter::rx_escape_applied)
            + c.get(Counter::drop_escape_expired)
            + c.get(Counter::drop_escape_purged)
            + node.escape_len() as u64,
        "escape channel"
    );
}
