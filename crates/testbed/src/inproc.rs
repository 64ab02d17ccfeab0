//! The in-process testbed: hosts on mem links joined by a switch, advanced on virtual time.

use crate::switch::Switch;
use crate::TestbedError;
use link::impair::{Impaired, Impairment};
use link::pcap::PcapWriter;
use link::{mem, FrameBatch, Instant, Link, LinkConfig};
use net::{Config, Stack};
use std::path::PathBuf;
use std::time::Duration;

/// A host's stack as the testbed holds it.
pub type HostStack = Stack<Box<dyn Link>>;

/// Index of a host in a [`Testbed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HostId(pub usize);

/// How a host is attached.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// Impairment applied in both directions between the host and the switch (the seed is
    /// varied per direction).
    pub impairment: Option<Impairment>,
    /// Record everything the host sends and receives in this capture file (pcapng if the name
    /// ends in `.pcapng`, else pcap), stamped with virtual time.
    pub pcap: Option<PathBuf>,
}

/// Settings of a testbed.
#[derive(Debug, Clone)]
pub struct TestbedConfig {
    /// IP MTU of every link.
    pub mtu: usize,
    /// Virtual time advanced by one [`Testbed::step`].
    pub step: Duration,
    /// Depth of every link ring.
    pub depth: usize,
}

impl Default for TestbedConfig {
    fn default() -> Self {
        TestbedConfig { mtu: 1500, step: Duration::from_micros(10), depth: 1024 }
    }
}

struct Host {
    stack: HostStack,
    bench: Option<link::mem::MemLink>,
}

/// An in-process network of linerate hosts on one Ethernet segment, on virtual time.
pub struct Testbed {
    cfg: TestbedConfig,
    now: Instant,
    hosts: Vec<Host>,
    switch: Switch,
    bench_rx: FrameBatch,
}

impl Default for Testbed {
    fn default() -> Self {
        Testbed::new(TestbedConfig::default())
    }
}

impl Testbed {
    /// An empty testbed.
    pub fn new(cfg: TestbedConfig) -> Self {
        let max_frame = cfg.mtu + 18;
        Testbed {
            now: Instant::ZERO,
            hosts: Vec::new(),
            switch: Switch::new(max_frame),
            bench_rx: FrameBatch::new(64, max_frame),
            cfg,
        }
    }

    /// Add a host with address `cidr` ("10.0.0.1/24") on the shared segment.
    pub fn add_host(&mut self, cidr: &str) -> Result<HostId, TestbedError> {
        let cfg = Config::parse_host(cidr)?.mtu(self.cfg.mtu);
        self.add_host_with(cfg, HostOptions::default())
    }

    /// Add a host with a full configuration and attachment options.
    pub fn add_host_with(&mut self, cfg: Config, opts: HostOptions) -> Result<HostId, TestbedError> {
        let lc = LinkConfig { mtu: self.cfg.mtu, depth: self.cfg.depth };
        let (host_end, far_end) = mem::pair(lc);
        let mut host_link: Box<dyn Link> = Box::new(host_end);
        let mut far_link: Box<dyn Link> = Box::new(far_end);
        if let Some(imp) = &opts.impairment {
            host_link = Box::new(Impaired::new(host_link, *imp)?);
            let back = Impairment { seed: imp.seed ^ 0x9e37_79b9_7f4a_7c15, ..*imp };
            far_link = Box::new(Impaired::new(far_link, back)?);
        }
        if let Some(path) = &opts.pcap {
            host_link = Box::new(PcapWriter::new(host_link, path)?);
        }
        let stack = Stack::new(cfg, host_link)?;
        self.switch.add_port(far_link);
        self.hosts.push(Host { stack, bench: None });
        Ok(HostId(self.hosts.len() - 1))
    }

    /// Add a host whose link ends at a test bench instead of the switch: the caller injects
    /// frames into it and collects what it sends.
    pub fn add_bench_host(&mut self, cfg: Config) -> Result<HostId, TestbedError> {
        let lc = LinkConfig { mtu: self.cfg.mtu, depth: self.cfg.depth };
        let (host_end, bench_end) = mem::pair(lc);
        let stack = Stack::new(cfg, Box::new(host_end) as Box<dyn Link>)?;
        self.hosts.push(Host { stack, bench: Some(bench_end) });
        Ok(HostId(self.hosts.len() - 1))
    }

    /// The stack of host `id`.
    pub fn host(&mut self, id: HostId) -> &mut HostStack {
        &mut self.hosts[id.0].stack
    }

    /// The stack of host `id`, read-only.
    pub fn host_ref(&self, id: HostId) -> &HostStack {
        &self.hosts[id.0].stack
    }

    /// The testbed's settings.
    pub fn config(&self) -> &TestbedConfig {
        &self.cfg
    }

    /// True if host `id` is wired to the test bench rather than the switch.
    pub fn is_bench(&self, id: HostId) -> bool {
        self.hosts[id.0].bench.is_some()
    }

    /// Number of hosts.
    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    /// True if there is no host.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Frames the switch could not forward (full output queue) and malformed frames it saw.
    pub fn switch_drops(&self) -> (u64, u64) {
        (self.switch.dropped, self.switch.malformed)
    }

    /// Poll the switch and every host once, then advance virtual time by one step.
    /// Returns the number of frames moved.
    pub fn step(&mut self) -> Result<usize, TestbedError> {
        let now = self.now;
        let mut moved = self.switch.poll(now)?;
        for h in &mut self.hosts {
            moved += h.stack.poll(now)?;
        }
        self.now = now + self.cfg.step;
        Ok(moved)
    }

    /// Run for `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) -> Result<(), TestbedError> {
        let end = self.now + d;
        while self.now < end {
            self.step()?;
        }
        Ok(())
    }

    /// Step until `done` returns true or `limit` of virtual time has passed; returns whether
    /// `done` became true.
    pub fn run_until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&mut Testbed) -> bool,
    ) -> Result<bool, TestbedError> {
        let end = self.now + limit;
        while self.now < end {
            if done(self) {
                return Ok(true);
            }
            self.step()?;
        }
        Ok(done(self))
    }

    /// Put `frame` on the wire towards bench host `id` (it arrives at its next poll).
    pub fn bench_inject(&mut self, id: HostId, frame: &[u8]) -> Result<bool, TestbedError> {
        let now = self.now;
        let bench = self.hosts[id.0].bench.as_mut().ok_or_else(|| TestbedError::Setup("not a bench host".into()))?;
        let mut one = FrameBatch::new(1, frame.len().max(1));
        if !one.push(frame) {
            return Ok(false);
        }
        Ok(bench.tx_batch(now, &mut one)? == 1)
    }

    /// Take every frame bench host `id` has sent so far.
    pub fn bench_collect(&mut self, id: HostId) -> Result<Vec<Vec<u8>>, TestbedError> {
        let now = self.now;
        let bench = self.hosts[id.0].bench.as_mut().ok_or_else(|| TestbedError::Setup("not a bench host".into()))?;
        let mut out = Vec::new();
        loop {
            self.bench_rx.clear();
            if bench.rx_batch(now, &mut self.bench_rx)? == 0 {
                break;
            }
            out.extend(self.bench_rx.iter().map(|f| f.to_vec()));
        }
        Ok(out)
    }
}
