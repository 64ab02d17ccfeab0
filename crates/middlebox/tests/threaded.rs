//! The runtime on threads: forwarding, a program swap in the middle of a 1,000,000-packet
//! stream (no loss, no reordering within a flow), Rosebud-style drain-and-swap.

use std::any::Any;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant as StdInstant};

use middlebox::frames::{self, Endpoints};
use middlebox::programs::Forwarder;
use middlebox::testlinks::TestLink;
use middlebox::{Ctx, FlowHash, Packet, Program, Runtime, RuntimeConfig, SlotSpec};

const FLOWS: u16 = 64;
/// Payload offset in the UDP frames below: flow id at +0, global sequence at +4.
const PAYLOAD: usize = 42;

fn trace() -> Vec<Vec<u8>> {
    (0..FLOWS)
        .map(|i| {
            let e = Endpoints {
                src: Ipv4Addr::new(10, 0, 0, i as u8),
                dst: Ipv4Addr::new(10, 9, 0, 1),
                sport: 5000 + i,
                dport: 9,
            };
            let mut p = vec![0u8; 22];
            p[..2].copy_from_slice(&i.to_le_bytes());
            frames::udp(&e, &p).unwrap()
        })
        .collect()
}

#[derive(Default)]
struct Order {
    frames: u64,
    reordered: u64,
    last: HashMap<u16, u64>,
}

fn checked_sink() -> (TestLink, Arc<Mutex<Order>>) {
    let st = Arc::new(Mutex::new(Order::default()));
    let s2 = st.clone();
    let link = TestLink::sink().inspect(move |f| {
        let flow = u16::from_le_bytes([f[PAYLOAD], f[PAYLOAD + 1]]);
        let seq = u64::from_le_bytes(f[PAYLOAD + 4..PAYLOAD + 12].try_into().unwrap());
        let mut g = s2.lock().unwrap();
        g.frames += 1;
        if g.last.get(&flow).is_some_and(|&l| seq <= l) {
            g.reordered += 1;
        }
        g.last.insert(flow, seq);
    });
    (link, st)
}

/// A forwarder that counts per unit and hands its count to its successor.
struct Counting {
    version: &'static str,
    count: u64,
}

impl Program for Counting {
    fn name(&self) -> &str {
        self.version
    }
    fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        self.count += 1;
        ctx.forward(pkt, 1);
    }
    fn counters(&self, out: &mut Vec<(&'static str, u64)>) {
        out.push(("count", self.count));
    }
    fn handoff(&mut self) -> Option<Box<dyn Any + Send>> {
        Some(Box::new(self.count))
    }
    fn adopt(&mut self, _ctx: &mut Ctx<'_>, state: Box<dyn Any + Send>) {
        if let Ok(c) = state.downcast::<u64>() {
            self.count = *c;
        }
    }
}

fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = StdInstant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    done()
}

#[test]
fn swap_mid_stream_of_a_million_packets_loses_and_reorders_nothing() {
    const N: u64 = 1_000_000;
    let gen = TestLink::generator(trace(), N).stamp_seq(PAYLOAD + 4);
    let generated = gen.tally();
    let (sink, order) = checked_sink();
    let out = sink.tally();
    let cfg = RuntimeConfig { slots: SlotSpec::new(128, 256), ..RuntimeConfig::default() };
    let rt = Runtime::builder_with(cfg)
        .port(gen)
        .port(sink)
        .unit(Counting { version: "v1", count: 0 })
        .unit(Counting { version: "v1", count: 0 })
        .policy(FlowHash::new(2))
        .build()
        .unwrap();
    let running = rt.start().unwrap();
    let c = running.control();
    assert!(wait_for(Duration::from_secs(60), || generated.generated() >= N / 2), "stream did not reach the middle");
    let before = out.frames();
    let r0 = c.swap(0, Box::new(Counting { version: "v2", count: 0 })).unwrap();
    let r1 = c.swap(1, Box::new(Counting { version: "v2", count: 0 })).unwrap();
    let r0 = r0.wait(Duration::from_secs(10)).unwrap();
    let r1 = r1.wait(Duration::from_secs(10)).unwrap();
    let after = out.frames();
    assert!(before < N && after < N, "swap happened mid-stream ({before}, {after})");
    assert!(wait_for(Duration::from_secs(120), || out.frames() >= N), "only {} of {N} frames arrived", out.frames());
    c.wait_quiet(Duration::from_secs(10)).unwrap();
    let mut rt = running.stop().unwrap();
    let s = rt.stats();
    let g = order.lock().unwrap();
    assert_eq!(g.frames, N, "lost frames");
    assert_eq!(g.reordered, 0, "reordered frames within a flow");
    assert_eq!(s.drops().total(), 0, "{:?}", s.drops());
    for (i, u) in s.units.iter().enumerate() {
        assert_eq!(u.program, "v2");
        assert_eq!(u.unit.swaps, 1);
        assert_eq!(u.program_counters, vec![("count", u.unit.rx_frames)], "unit {i}: state handed over");
    }
    println!(
        "swap: unit 0 paused {:?} (request to start {:?}, {} packets held), unit 1 paused {:?} (latency {:?})",
        r0.pause, r0.latency, r0.held, r1.pause, r1.latency
    );
}

#[test]
fn threaded_forwarding_and_drained_swap() {
    const N: u64 = 200_000;
    let gen = TestLink::generator(trace(), N).stamp_seq(PAYLOAD + 4);
    let (sink, order) = checked_sink();
    let out = sink.tally();
    let rt = Runtime::builder().port(gen).port(sink).unit(Forwarder::cross()).unit(Forwarder::cross()).build().unwrap();
    let running = rt.start().unwrap();
    let c = running.control();
    assert!(wait_for(Duration::from_secs(60), || out.frames() >= N / 4));
    let (d, s) = c.swap_drained(1, Box::new(Forwarder::cross().named("new")), Duration::from_secs(10)).unwrap();
    assert_eq!(d.unit, 1);
    assert_eq!(s.held, 0);
    println!("drain {:?}, swap pause {:?}", d.elapsed, s.pause);
    assert!(wait_for(Duration::from_secs(60), || out.frames() >= N), "only {} of {N}", out.frames());
    let mut rt = running.stop().unwrap();
    let st = rt.stats();
    assert_eq!(order.lock().unwrap().frames, N);
    assert_eq!(st.units[1].program, "new");
    assert!(st.units[1].lb.enabled);
    assert_eq!(st.drops().total(), 0);
}
