//! A middlebox program on the Rosebud-style runtime: every IPv4 packet has its TTL decremented
//! (checksum updated incrementally, RFC 1624) and crosses from port 0 to port 1; packets whose
//! TTL would reach zero are dropped and counted; DNS queries (UDP to port 53) are copied to the
//! host instead, tagged with the unit that saw them; malformed frames are dropped under the
//! parser's reason. Two units share the traffic by the symmetric flow hash.
//!
//! Run it with `cargo run --release -p middlebox --example ttl_guard`.

use link::Instant;
use middlebox::frames::{self, Endpoints};
use middlebox::testlinks::TestLink;
use middlebox::{parse, Ctx, FlowHash, Packet, Program, Runtime};
use std::net::Ipv4Addr;
use wire::Ipv4Packet;

/// The unit program.
#[derive(Default)]
struct TtlGuard {
    forwarded: u64,
    dns: u64,
}

impl Program for TtlGuard {
    fn name(&self) -> &str {
        "ttl-guard"
    }

    fn on_packet(&mut self, ctx: &mut Ctx<'_>, mut pkt: Packet) {
        let h = match parse::parse(ctx.data(&pkt)) {
            Ok(h) => h,
            Err(e) => return ctx.discard(pkt, e.reason()),
        };
        let out = if pkt.port() == 0 { 1 } else { 0 };
        let Some(ip) = h.ipv4 else { return ctx.forward(pkt, out) };
        if ip.proto == wire::protocol::UDP && ip.ports.is_some_and(|(_, d)| d == 53) {
            self.dns += 1;
            let unit = ctx.unit_id() as u32;
            return ctx.to_host(pkt, &[unit]);
        }
        let mut v = Ipv4Packet::new_unchecked(&mut ctx.data_mut(&mut pkt)[h.l3..]);
        if v.ttl() <= 1 {
            return ctx.discard(pkt, "ttl_expired");
        }
        v.decrement_ttl_incremental();
        self.forwarded += 1;
        ctx.forward(pkt, out);
    }

    fn counters(&self, out: &mut Vec<(&'static str, u64)>) {
        out.push(("forwarded", self.forwarded));
        out.push(("dns_to_host", self.dns));
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ep = |i: u8, dport: u16| Endpoints {
        src: Ipv4Addr::new(10, 0, 0, i),
        dst: Ipv4Addr::new(192, 0, 2, 1),
        sport: 40000 + u16::from(i),
        dport,
    };
    let mut templates = Vec::new();
    for i in 1..=8 {
        templates.push(frames::udp(&ep(i, 443), b"quic-ish payload").ok_or("frame")?);
        templates.push(frames::tcp(&ep(i, 80), 1, 0, wire::flags::ACK, b"GET / HTTP/1.1\r\n\r\n").ok_or("frame")?);
    }
    templates.push(frames::udp(&ep(9, 53), b"\x12\x34\x01\x00\x00\x01").ok_or("frame")?);
    let mut dying = frames::udp(&ep(10, 9), b"last hop").ok_or("frame")?;
    Ipv4Packet::new_unchecked(&mut dying[14..]).set_ttl(1);
    Ipv4Packet::new_unchecked(&mut dying[14..]).fill_checksum();
    templates.push(dying);
    let mut cut = frames::udp(&ep(11, 9), b"cut short").ok_or("frame")?;
    cut.truncate(30); // an IPv4 header cut in the middle: malformed
    templates.push(cut);
    let per_template = 100;
    let total = (templates.len() * per_template) as u64;

    let input = TestLink::generator(templates, total);
    let output = TestLink::sink().keep();
    let tally = output.tally();
    let mut rt = Runtime::builder()
        .port(input)
        .port(output)
        .policy(FlowHash::new(2))
        .unit(TtlGuard::default())
        .unit(TtlGuard::default())
        .build()?;
    if !rt.run_until_quiet(Instant::ZERO, 100_000) {
        return Err("the middlebox did not finish within 100,000 steps".into());
    }
    let host = rt.control().host_recv_all();
    let out = tally.take_kept();
    let good_ttl = out
        .iter()
        .filter(|f| {
            let ip = f.get(14..).and_then(|b| Ipv4Packet::new_checked(b).ok());
            ip.is_some_and(|ip| ip.ttl() == 63 && ip.verify_checksum())
        })
        .count();
    let s = rt.stats();
    println!("frames in:                         {total}");
    println!("forwarded to port 1 with TTL 63:   {good_ttl} of {}", out.len());
    println!("DNS queries to the host:           {}", host.len());
    for (i, u) in s.units.iter().enumerate() {
        let drops: Vec<String> = u.unit.drops.iter().map(|(r, n)| format!("{r}={n}")).collect();
        println!("unit {i}: {} frames, drops: {}", u.unit.rx_frames, drops.join(" "));
    }
    if good_ttl != out.len() || good_ttl != 16 * per_template || host.len() != per_template {
        return Err("the middlebox did not do what it should".into());
    }
    Ok(())
}
