//! A driver for the in-process testbed: every rank is a virtual-time host, all stacks and
//! endpoints are polled in turn by one thread.
#![allow(dead_code)]

use collective::{CollectiveError, Config, Element, Endpoint, MeshState, Request};
use link::impair::Impairment;
use std::net::SocketAddr;
use std::time::Duration;
use testbed::{HostId, HostOptions, Testbed, TestbedConfig};

/// `n` ranks on one switch, rank `i` at 10.0.0.(i+1).
pub struct World {
    pub tb: Testbed,
    pub eps: Vec<Endpoint>,
    pub ids: Vec<HostId>,
    /// Ranks whose endpoint is no longer progressed (their stack still runs: a hung process).
    pub hung: Vec<bool>,
}

pub const PORT: u16 = 7470;

impl World {
    pub fn new(n: usize) -> World {
        World::with(n, Config::default(), None)
    }

    pub fn with(n: usize, cfg: Config, imp: Option<Impairment>) -> World {
        let mut tb = Testbed::new(TestbedConfig::default());
        let mut ids = Vec::new();
        let mut addrs = Vec::new();
        for i in 0..n {
            let mut nc = net::Config::parse_host(&format!("10.0.0.{}/24", i + 1)).unwrap().mtu(1500);
            nc.tcp.min_rto = Duration::from_millis(5);
            let opts = HostOptions {
                impairment: imp.map(|m| Impairment { seed: m.seed.wrapping_add(i as u64 * 7919), ..m }),
                pcap: None,
            };
            let id = tb.add_host_with(nc, opts).unwrap();
            addrs.push(SocketAddr::new(tb.host_ref(id).ip().into(), PORT));
            ids.push(id);
        }
        let mut eps: Vec<Endpoint> = (0..n).map(|r| Endpoint::new(r, addrs.clone(), cfg.clone()).unwrap()).collect();
        for (ep, &id) in eps.iter_mut().zip(&ids) {
            ep.start(tb.host(id)).unwrap();
        }
        let mut w = World { tb, eps, ids, hung: vec![false; n] };
        let limit = Duration::from_secs(5);
        let end = w.tb.now() + limit;
        while w.eps.iter().any(|e| e.mesh_state().unwrap() != MeshState::Ready) {
            assert!(
                w.tb.now() < end,
                "mesh of {n} not up: {:?}",
                w.eps.iter().map(|e| e.unconnected()).collect::<Vec<_>>()
            );
            w.step();
        }
        w
    }

    pub fn n(&self) -> usize {
        self.eps.len()
    }

    /// One virtual-time step: every stack polls, then every live endpoint progresses.
    pub fn step(&mut self) {
        let now = self.tb.now();
        self.tb.step().unwrap();
        for (i, ep) in self.eps.iter_mut().enumerate() {
            if !self.hung[i] {
                ep.progress(self.tb.host(self.ids[i]), now).unwrap();
            }
        }
    }

    /// Runs until every (rank, request) pair is finished; results in the same order.
    pub fn run_pairs<T: Element>(
        &mut self,
        reqs: Vec<(usize, Request<T>)>,
        limit: Duration,
    ) -> Vec<Result<Vec<T>, CollectiveError>> {
        let start = self.tb.now();
        let mut out: Vec<Option<Result<Vec<T>, CollectiveError>>> = (0..reqs.len()).map(|_| None).collect();
        loop {
            for (i, (rank, r)) in reqs.iter().enumerate() {
                if out[i].is_none() {
                    match self.eps[*rank].test(r) {
                        Ok(Some(v)) => out[i] = Some(Ok(v)),
                        Ok(None) => {}
                        Err(e) => out[i] = Some(Err(e)),
                    }
                }
            }
            if out.iter().all(|o| o.is_some()) {
                return out.into_iter().flatten().collect();
            }
            assert!(self.tb.now() - start < limit, "operations still running after {limit:?} of virtual time");
            self.step();
        }
    }

    /// Starts one operation per rank with `f(rank, endpoint)` and runs them all to the end;
    /// panics on an operation error.
    pub fn all<T: Element>(&mut self, mut f: impl FnMut(usize, &mut Endpoint) -> Request<T>) -> Vec<Vec<T>> {
        let reqs = (0..self.n()).map(|r| (r, f(r, &mut self.eps[r]))).collect();
        let res = self.run_pairs(reqs, Duration::from_secs(60));
        if res.iter().any(|o| o.is_err()) {
            for (i, id) in self.ids.iter().enumerate() {
                eprintln!("=== rank {i}\n{}", self.eps[i].diagnose(self.tb.host_ref(*id)));
            }
        }
        res.into_iter().enumerate().map(|(r, o)| o.unwrap_or_else(|e| panic!("rank {r}: {e}"))).collect()
    }
}

/// SplitMix64: deterministic test data without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}
