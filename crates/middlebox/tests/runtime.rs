//! Runtime behaviour in deterministic step mode: forwarding, back-pressure, policies,
//! messaging, loopback, host channel, swap, drain, dump, breakpoints, robustness.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use link::Instant;
use middlebox::frames::{self, Endpoints};
use middlebox::programs::{Forwarder, ToHost};
use middlebox::testlinks::TestLink;
use middlebox::{
    Ctx, FlowHash, LeastLoaded, Message, Packet, PacketInfo, Policy, Program, RoundRobin, Runtime, RuntimeConfig,
    SlotSpec, Source, UnitState, UnitView, HOST_PORT,
};

const T0: Instant = Instant::ZERO;

fn ep(i: u16) -> Endpoints {
    Endpoints {
        src: Ipv4Addr::new(10, 0, (i >> 8) as u8, i as u8),
        dst: Ipv4Addr::new(10, 1, 0, 1),
        sport: 1000 + i,
        dport: 80,
    }
}

/// `n` distinct UDP flows of one frame each, 100 bytes.
fn flows(n: u16) -> Vec<Vec<u8>> {
    (0..n).map(|i| frames::udp_of_size(&ep(i), 100).unwrap()).collect()
}

fn cfg(slots: usize) -> RuntimeConfig {
    RuntimeConfig { slots: SlotSpec::new(slots, 2048), ..RuntimeConfig::default() }
}

#[test]
fn forwards_everything_across_ports_with_two_units() {
    let a = TestLink::generator(flows(50), 1000);
    let b = TestLink::generator(flows(7), 500);
    let (ta, tb) = (a.tally(), b.tally());
    let mut rt = Runtime::builder().port(a).port(b).unit(Forwarder::cross()).unit(Forwarder::cross()).build().unwrap();
    assert!(rt.run_until_quiet(T0, 10_000));
    assert_eq!(ta.generated(), 1000);
    assert_eq!(tb.frames(), 1000, "port 0 -> port 1");
    assert_eq!(ta.frames(), 500, "port 1 -> port 0");
    let s = rt.stats();
    assert_eq!(s.ports[0].rx_frames, 1000);
    assert_eq!(s.ports[1].tx_frames, 1000);
    assert_eq!(s.ports[1].tx_bytes, 100_000);
    assert_eq!(s.drops().total(), 0);
    assert_eq!(s.units[0].unit.rx_frames + s.units[1].unit.rx_frames, 1500);
    let (u0, u1) = (s.units[0].unit.rx_frames, s.units[1].unit.rx_frames);
    assert!(u0.abs_diff(u1) <= 64, "round robin splits evenly except when a unit is full: {u0} {u1}");
    assert_eq!(s.occupancy(), 0);
    assert_eq!(s.units[0].program_counters, vec![("forwarded", u0)]);
    assert_eq!(s.units[0].program, "forward-cross");
}

#[test]
fn full_units_stall_the_port_and_nothing_is_dropped() {
    let a = TestLink::generator(flows(10), 100);
    let b = TestLink::sink();
    let tb = b.tally();
    let mut rt = Runtime::builder_with(cfg(4)).port(a).port(b).unit(Forwarder::cross()).build().unwrap();
    let c = rt.control();
    c.pause(0).unwrap();
    for _ in 0..20 {
        rt.step(T0);
    }
    let s = rt.stats();
    assert_eq!(s.units[0].state, UnitState::Paused);
    assert_eq!(s.units[0].lb.occupancy, 4, "all slots taken");
    assert_eq!(s.ports[0].rx_frames, 4);
    assert!(s.ports[0].stalls > 0);
    assert_eq!(tb.frames(), 0);
    c.resume(0).unwrap();
    assert!(rt.run_until_quiet(T0, 10_000));
    assert_eq!(tb.frames(), 100);
    let s = rt.stats();
    assert_eq!(s.drops().total(), 0);
    assert_eq!(s.units[0].lb.max_occupancy, 4);
}

/// Records which unit saw each flow (by source port) and in which direction.
struct Recorder {
    seen: Arc<Mutex<Vec<(usize, u16, u16)>>>,
}

impl Program for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        let h = middlebox::parse::parse(ctx.data(&pkt)).unwrap();
        let (sp, dp) = h.ipv4.unwrap().ports.unwrap();
        self.seen.lock().unwrap().push((ctx.unit_id(), sp, dp));
        ctx.discard(pkt, "recorded");
    }
}

#[test]
fn flow_hash_keeps_both_directions_of_a_flow_on_one_unit() {
    let mut frames_ = Vec::new();
    for i in 0..200 {
        let e = ep(i);
        frames_.push(frames::udp(&e, b"ping").unwrap());
        frames_.push(frames::udp(&e.reversed(), b"pong").unwrap());
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut b = Runtime::builder().port(TestLink::generator(frames_, 400)).policy(FlowHash::new(4));
    for _ in 0..4 {
        b = b.unit(Recorder { seen: seen.clone() });
    }
    let mut rt = b.build().unwrap();
    assert!(rt.run_until_quiet(T0, 10_000));
    let mut unit_of: HashMap<u16, usize> = HashMap::new();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 400);
    for &(u, sp, dp) in seen.iter() {
        let flow = if sp == 80 { dp } else { sp };
        assert_eq!(*unit_of.entry(flow).or_insert(u), u, "flow {flow} split across units");
    }
    let per_unit: Vec<usize> = (0..4).map(|u| unit_of.values().filter(|&&x| x == u).count()).collect();
    assert!(per_unit.iter().all(|&n| n > 20), "{per_unit:?}");
    let s = rt.stats();
    assert_eq!(s.policy, "flow-hash");
    assert_eq!(s.drops().get("recorded"), 400);
}

/// Holds every packet until the timer fires, then releases them all.
struct Holder {
    kept: Vec<Packet>,
}

impl Program for Holder {
    fn name(&self) -> &str {
        "holder"
    }
    fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        self.kept.push(pkt);
        let at = Instant::from_micros(ctx.now().as_nanos() / 1000 + 10);
        ctx.set_timer(at);
    }
    fn on_timer(&mut self, ctx: &mut Ctx<'_>) {
        self.on_flush(ctx);
    }
    fn on_flush(&mut self, ctx: &mut Ctx<'_>) {
        for p in self.kept.drain(..) {
            ctx.forward(p, 1);
        }
    }
    fn dump(&self) -> String {
        format!("kept={}", self.kept.len())
    }
}

#[test]
fn least_loaded_prefers_the_emptier_unit_and_timers_release_held_packets() {
    let a = TestLink::generator(flows(10), 6);
    let b = TestLink::sink();
    let tb = b.tally();
    let mut rt = Runtime::builder_with(cfg(8))
        .port(a)
        .port(b)
        .unit(Holder { kept: Vec::new() })
        .unit(Forwarder::cross())
        .policy(LeastLoaded)
        .build()
        .unwrap();
    rt.step(T0);
    rt.step(T0);
    let s = rt.stats();
    // Both start with 8 free; the holder fills while the forwarder empties, so the
    // forwarder gets more.
    assert!(s.units[0].held > 0 && s.units[0].held < 6);
    let dump = rt.control().dump(0).unwrap();
    rt.step(T0);
    let d = dump.try_take().unwrap();
    assert_eq!(d.program, "holder");
    assert_eq!(d.held.len(), s.units[0].held as usize);
    assert!(d.program_state.starts_with("kept="));
    assert!(d.timer_ns.is_some());
    assert!(rt.run_until_quiet(Instant::from_micros(100), 100));
    assert_eq!(tb.frames(), 6);
    assert_eq!(rt.stats().units[0].unit.timer_fires, 1);
}

/// A custom policy: frames from port 1 to unit 1, the rest to unit 0.
struct ByPort;

impl Policy for ByPort {
    fn name(&self) -> &str {
        "by-port"
    }
    fn choose(&mut self, pkt: &PacketInfo<'_>, _units: &UnitView<'_>) -> Option<usize> {
        Some(usize::from(pkt.port == 1))
    }
}

#[test]
fn a_user_policy_decides() {
    let mut rt = Runtime::builder()
        .port(TestLink::generator(flows(3), 30))
        .port(TestLink::generator(flows(3), 12))
        .unit(Forwarder::cross())
        .unit(Forwarder::cross())
        .policy(ByPort)
        .build()
        .unwrap();
    assert!(rt.run_until_quiet(T0, 1000));
    let s = rt.stats();
    assert_eq!((s.units[0].unit.rx_frames, s.units[1].unit.rx_frames), (30, 12));
    rt.control().set_policy(Box::new(RoundRobin::new()));
    rt.step(T0);
    assert_eq!(rt.stats().policy, "round-robin");
}

/// What each unit saw: (seq, from, addr, value) per message.
type MessageLog = Arc<Mutex<Vec<Vec<(u64, Source, u32, u64)>>>>;

/// Broadcasts a message per packet and logs every message it sees.
struct Chatty {
    log: MessageLog,
    me: usize,
    sent: u64,
}

impl Program for Chatty {
    fn name(&self) -> &str {
        "chatty"
    }
    fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        self.sent += 1;
        assert!(ctx.broadcast(ctx.unit_id() as u32, self.sent));
        ctx.discard(pkt, "consumed");
    }
    fn on_message(&mut self, _ctx: &mut Ctx<'_>, m: &Message) {
        self.log.lock().unwrap()[self.me].push((m.seq, m.from, m.addr, m.value));
    }
}

#[test]
fn broadcasts_reach_every_unit_in_one_order() {
    let log = Arc::new(Mutex::new(vec![Vec::new(); 3]));
    let mut b = Runtime::builder().port(TestLink::generator(flows(5), 90));
    for me in 0..3 {
        b = b.unit(Chatty { log: log.clone(), me, sent: 0 });
    }
    let mut rt = b.build().unwrap();
    rt.control().broadcast(7, 42);
    for _ in 0..50 {
        rt.step(T0);
    }
    let log = log.lock().unwrap();
    assert_eq!(log[0].len(), 91);
    assert_eq!(log[0], log[1]);
    assert_eq!(log[1], log[2]);
    assert!(log[0].windows(2).all(|w| w[0].0 < w[1].0), "sequence increases");
    assert!(log[0].iter().any(|&(_, from, addr, v)| from == Source::Host && addr == 7 && v == 42));
    assert_eq!(rt.stats().host.broadcasts, 91);
}

/// Unit 0 passes packets to unit 1 (a chain); unit 1 forwards them.
struct PassOn;

impl Program for PassOn {
    fn name(&self) -> &str {
        "pass-on"
    }
    fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        if ctx.unit_id() == 0 {
            ctx.to_unit(pkt, 1);
        } else {
            assert_eq!(pkt.source(), Source::Unit(0));
            ctx.forward(pkt, 1);
        }
    }
}

#[test]
fn loopback_chains_units() {
    let sink = TestLink::sink().keep();
    let t = sink.tally();
    let input = flows(20);
    let mut rt = Runtime::builder_with(cfg(4))
        .port(TestLink::generator(input.clone(), 20))
        .port(sink)
        .unit(PassOn)
        .unit(PassOn)
        .policy(ByPort) // everything from port 0 lands on unit 0
        .build()
        .unwrap();
    assert!(rt.run_until_quiet(T0, 1000));
    assert_eq!(t.take_kept(), input, "all frames, in order");
    let s = rt.stats();
    assert_eq!((s.units[0].lb.loop_out, s.units[1].lb.loop_in), (20, 20));
    assert_eq!(s.units[1].unit.to_port, 20);
}

#[test]
fn host_channel_carries_tags_and_injected_frames() {
    let mut rt = Runtime::builder().unit(ToHost).unit(ToHost).build().unwrap();
    let c = rt.control();
    for f in flows(6) {
        c.inject(HOST_PORT, &f);
    }
    assert!(rt.run_until_quiet(T0, 100));
    let got = c.host_recv_all();
    assert_eq!(got.len(), 6);
    assert_eq!(got[0].frame, flows(6)[0]);
    assert_eq!(got[0].tags, vec![got[0].meta.unit as u32]);
    assert_eq!(got[0].meta.source, Source::Host);
    let s = rt.stats();
    assert_eq!((s.host.injected, s.host.delivered), (6, 6));
}

/// Checks per-flow order: the payload carries (flow, seq).
fn seq_frame(flow: u16, seq: u32) -> Vec<u8> {
    let mut p = [0u8; 8];
    p[..2].copy_from_slice(&flow.to_le_bytes());
    p[4..].copy_from_slice(&seq.to_le_bytes());
    frames::udp(&ep(flow), &p).unwrap()
}

/// Frames seen, frames out of order, last sequence per flow.
type OrderState = Arc<Mutex<(u64, u64, HashMap<u16, u32>)>>;

fn order_checker() -> (TestLink, OrderState) {
    let st = Arc::new(Mutex::new((0u64, 0u64, HashMap::new())));
    let s2 = st.clone();
    let link = TestLink::sink().inspect(move |f| {
        let flow = u16::from_le_bytes([f[42], f[43]]);
        let seq = u32::from_le_bytes([f[46], f[47], f[48], f[49]]);
        let mut g = s2.lock().unwrap();
        g.0 += 1;
        if let Some(&last) = g.2.get(&flow) {
            if seq <= last {
                g.1 += 1;
            }
        }
        g.2.insert(flow, seq);
    });
    (link, st)
}

#[test]
fn swap_in_step_mode_loses_and_reorders_nothing() {
    let mut trace = Vec::new();
    for s in 0..200u32 {
        for f in 0..16u16 {
            trace.push(seq_frame(f, s));
        }
    }
    let n = trace.len() as u64;
    let (sink, st) = order_checker();
    let mut rt = Runtime::builder_with(cfg(16))
        .port(TestLink::generator(trace, n))
        .port(sink)
        .unit(Forwarder::cross())
        .unit(Forwarder::cross())
        .policy(FlowHash::new(2))
        .build()
        .unwrap();
    let c = rt.control();
    for _ in 0..10 {
        rt.step(T0);
    }
    let p = c.swap(1, Box::new(Forwarder::cross().named("v2"))).unwrap();
    rt.step(T0);
    let rep = p.try_take().expect("swap done within a step");
    assert_eq!(rep.old.name(), "forward-cross");
    assert!(rt.run_until_quiet(T0, 10_000));
    let g = st.lock().unwrap();
    assert_eq!((g.0, g.1), (n, 0));
    let s = rt.stats();
    assert_eq!(s.units[1].program, "v2");
    assert_eq!(s.units[1].unit.swaps, 1);
    assert_eq!(s.drops().total(), 0);
}

#[test]
fn drain_waits_for_held_packets_and_disables_the_unit() {
    let sink = TestLink::sink();
    let t = sink.tally();
    let mut rt = Runtime::builder_with(cfg(8))
        .port(TestLink::generator(flows(4), 4))
        .port(sink)
        .unit(Holder { kept: Vec::new() })
        .unit(Forwarder::cross())
        .policy(ByPort)
        .build()
        .unwrap();
    for _ in 0..3 {
        rt.step(T0);
    }
    assert_eq!(rt.stats().units[0].held, 4);
    let c = rt.control();
    let d = c.drain(0).unwrap();
    for _ in 0..5 {
        rt.step(T0);
    }
    let rep = d.try_take().expect("drained");
    assert_eq!(rep.unit, 0);
    assert_eq!(t.frames(), 4, "flush sent the held packets on");
    assert!(!rt.stats().units[0].lb.enabled);
    c.enable(0, true).unwrap();
    rt.step(T0);
    assert!(rt.stats().units[0].lb.enabled);
}

#[test]
fn swap_without_handoff_flushes_kept_packets() {
    let sink = TestLink::sink();
    let t = sink.tally();
    let mut rt = Runtime::builder_with(cfg(8))
        .port(TestLink::generator(flows(4), 4))
        .port(sink)
        .unit(Holder { kept: Vec::new() })
        .build()
        .unwrap();
    for _ in 0..3 {
        rt.step(T0);
    }
    let p = rt.control().swap(0, Box::new(Forwarder::cross())).unwrap();
    rt.step(T0);
    let rep = p.try_take().unwrap();
    assert_eq!(rep.held, 0);
    assert!(rt.run_until_quiet(T0, 100));
    assert_eq!(t.frames(), 4);
    assert_eq!(rt.stats().drops().total(), 0);
}

#[test]
fn breakpoint_stops_the_unit_and_hands_the_packet_to_the_host() {
    let sink = TestLink::sink();
    let t = sink.tally();
    let trace = flows(10);
    let target = trace[3].clone();
    let mut rt =
        Runtime::builder().port(TestLink::generator(trace, 10)).port(sink).unit(Forwarder::cross()).build().unwrap();
    let c = rt.control();
    let tgt = target.clone();
    c.set_breakpoint(0, Some(Box::new(move |_m, f| f == &tgt[..]))).unwrap();
    for _ in 0..10 {
        rt.step(T0);
    }
    let trap = c.trap().expect("trapped");
    assert_eq!(trap.reason, "breakpoint");
    assert_eq!(trap.frame, target);
    assert_eq!(trap.dump.state, UnitState::Running, "dump taken as it stopped");
    assert_eq!(rt.stats().units[0].state, UnitState::Trapped);
    assert_eq!(t.frames(), 3);
    c.set_breakpoint(0, None).unwrap();
    c.resume(0).unwrap();
    assert!(rt.run_until_quiet(T0, 100));
    assert_eq!(t.frames(), 10);
}

/// Traps from inside the program on the packet with a given length, and panics on another.
struct Fragile;

impl Program for Fragile {
    fn name(&self) -> &str {
        "fragile"
    }
    fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        match ctx.data(&pkt).len() {
            77 => panic!("bad length"),
            88 => {
                ctx.trap(&pkt, "saw 88");
                ctx.forward(pkt, 1);
            }
            _ => ctx.forward(pkt, 1),
        }
    }
}

#[test]
fn program_panics_are_caught_and_traps_stop_the_unit() {
    let e = ep(1);
    let trace = vec![
        frames::udp_of_size(&e, 60).unwrap(),
        frames::udp_of_size(&e, 77).unwrap(),
        frames::udp_of_size(&e, 60).unwrap(),
        frames::udp_of_size(&e, 88).unwrap(),
        frames::udp_of_size(&e, 60).unwrap(),
    ];
    let sink = TestLink::sink();
    let t = sink.tally();
    let mut rt = Runtime::builder().port(TestLink::generator(trace, 5)).port(sink).unit(Fragile).build().unwrap();
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for _ in 0..10 {
        rt.step(T0);
    }
    std::panic::set_hook(default_hook);
    let c = rt.control();
    let t1 = c.trap().unwrap();
    assert!(t1.reason.contains("bad length"), "{}", t1.reason);
    let t2 = c.trap().unwrap();
    assert_eq!(t2.reason, "saw 88");
    assert_eq!(t2.frame.len(), 88);
    let s = rt.stats();
    assert_eq!(s.units[0].unit.program_panics, 1);
    assert_eq!(s.units[0].unit.drops.get("program_panic"), 1);
    assert_eq!(s.units[0].state, UnitState::Trapped);
    assert_eq!(t.frames(), 3, "the 88-byte frame was forwarded before stopping");
    c.resume(0).unwrap();
    assert!(rt.run_until_quiet(T0, 100));
    assert_eq!(t.frames(), 4);
}

/// Misuses tokens: keeps a stale one, sends to a port that does not exist.
struct Sloppy {
    old: Option<Packet>,
}

impl Program for Sloppy {
    fn name(&self) -> &str {
        "sloppy"
    }
    fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        if let Some(old) = self.old.take() {
            // `old` was already sent (we keep a forged copy by re-receiving); use it anyway.
            ctx.forward(old, 0);
        }
        ctx.send(pkt, middlebox::Dest::Port(9));
    }
    fn on_flush(&mut self, _ctx: &mut Ctx<'_>) {}
}

#[test]
fn bad_destinations_are_counted_drops() {
    let mut rt = Runtime::builder().port(TestLink::generator(flows(3), 3)).unit(Sloppy { old: None }).build().unwrap();
    assert!(rt.run_until_quiet(T0, 100));
    let s = rt.stats();
    assert_eq!(s.units[0].unit.drops.get("bad_port"), 3);
    assert_eq!(s.occupancy(), 0);
}

#[test]
fn malformed_frames_reach_programs_without_harm() {
    // Random bytes of every length 1..200 and truncated real frames through a parsing program.
    let mut trace: Vec<Vec<u8>> = Vec::new();
    let mut x = 0x1234_5678u32;
    for len in 1..200usize {
        trace.push(
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect(),
        );
    }
    let good = frames::tcp(&ep(3), 1, 2, 0x18, b"payload bytes").unwrap();
    for n in 1..good.len() {
        trace.push(good[..n].to_vec());
    }
    let n = trace.len() as u64;
    let seen = Arc::new(Mutex::new(HashMap::<&'static str, u64>::new()));
    struct Parser(Arc<Mutex<HashMap<&'static str, u64>>>);
    impl Program for Parser {
        fn name(&self) -> &str {
            "parser"
        }
        fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
            match middlebox::parse::parse(ctx.data(&pkt)) {
                Ok(_) => ctx.forward(pkt, 0),
                Err(e) => {
                    *self.0.lock().unwrap().entry(e.reason()).or_default() += 1;
                    ctx.discard(pkt, e.reason());
                }
            }
        }
    }
    let mut rt = Runtime::builder()
        .port(TestLink::generator(trace, n))
        .unit(Parser(seen.clone()))
        .unit(Parser(seen.clone()))
        .policy(FlowHash::new(2))
        .build()
        .unwrap();
    assert!(rt.run_until_quiet(T0, 10_000));
    let s = rt.stats();
    assert_eq!(s.ports[0].rx_frames, n);
    let drops = s.drops();
    assert!(drops.get("truncated") > 0, "{drops:?}");
    assert_eq!(drops.total() + s.ports[0].tx_frames, n);
    assert_eq!(s.units.iter().map(|u| u.unit.program_panics).sum::<u64>(), 0);
}

#[test]
fn bad_configurations_are_refused_with_a_reason() {
    let e = Runtime::builder().build().err().unwrap().to_string();
    assert!(e.contains("1..=64 units"), "{e}");
    let e = Runtime::builder_with(RuntimeConfig { slots: SlotSpec::new(0, 2048), ..RuntimeConfig::default() })
        .unit(ToHost)
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("slot count 0"), "{e}");
}

#[test]
fn queue_ports_are_fed_and_drained_from_outside() {
    let (a, ha) = middlebox::testlinks::QueueLink::new();
    let (b, hb) = middlebox::testlinks::QueueLink::new();
    let mut rt = Runtime::builder().port(a).port(b).unit(Forwarder::cross()).build().unwrap();
    for f in flows(3) {
        ha.send(&f);
    }
    hb.send(&flows(4)[3]);
    assert!(rt.run_until_quiet(T0, 100));
    assert_eq!(hb.recv_all(), flows(3));
    assert_eq!(ha.recv_all(), vec![flows(4)[3].clone()]);
    assert_eq!(ha.pending(), 0);
}
