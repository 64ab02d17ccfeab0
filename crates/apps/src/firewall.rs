//! The blacklisting firewall (Rosebud case study 2) as a middlebox unit program: a frame
//! whose IPv4 source lies in the blacklist is dropped; every other frame goes out of the other
//! port (`p ^ 1`). The blacklist is the unit's accelerator table ([`accel::prefix::PrefixSet`]);
//! it can be replaced while traffic flows with `Control::configure`.

use std::any::Any;
use std::net::Ipv4Addr;
use std::sync::Arc;

use accel::prefix::PrefixSet;
use link::Link;
use middlebox::frames::{self, Endpoints};
use middlebox::programs::Forwarder;
use middlebox::{Ctx, FlowHash, MiddleboxError, Packet, Program, Runtime, RuntimeConfig};
use wire::{ethertype, EthernetFrame, Ipv4Packet};

/// What the firewall does with frames that are not IPv4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NonIpv4 {
    /// Forward them (ARP and IPv6 keep working).
    #[default]
    Forward,
    /// Drop them, as Rosebud's firmware does.
    Drop,
}

/// The firewall program of one unit.
#[derive(Debug, Clone)]
pub struct Firewall {
    blacklist: Arc<PrefixSet>,
    non_ipv4: NonIpv4,
    out: Forwarder,
    passed: u64,
    blocked: u64,
    non_ipv4_seen: u64,
    malformed: u64,
}

impl Firewall {
    /// A firewall dropping sources in `blacklist` (shared by every unit).
    pub fn new(blacklist: Arc<PrefixSet>) -> Self {
        Firewall {
            blacklist,
            non_ipv4: NonIpv4::default(),
            out: Forwarder::cross(),
            passed: 0,
            blocked: 0,
            non_ipv4_seen: 0,
            malformed: 0,
        }
    }

    /// Choose what happens to non-IPv4 frames.
    pub fn non_ipv4(mut self, policy: NonIpv4) -> Self {
        self.non_ipv4 = policy;
        self
    }

    /// The blacklist in use.
    pub fn blacklist(&self) -> &PrefixSet {
        &self.blacklist
    }

    /// The verdict for one frame: `Ok(true)` pass, `Ok(false)` blocked, `Err(reason)` drop.
    pub fn verdict(&self, frame: &[u8]) -> Result<bool, &'static str> {
        self.judge(frame).1
    }

    /// Whether `frame` is IPv4 (its EtherType after any VLAN tags), and its verdict; the
    /// counters use the same parse as the verdict.
    #[inline]
    fn judge(&self, frame: &[u8]) -> (bool, Result<bool, &'static str>) {
        match fast_source(frame) {
            Some(src) => (true, Ok(!self.blacklist.contains(src))),
            None => self.judge_parsed(frame),
        }
    }

    /// [`Firewall::judge`] through the full Ethernet and IPv4 parse (VLAN tags, IP options,
    /// non-IPv4 and malformed frames).
    #[inline(never)]
    fn judge_parsed(&self, frame: &[u8]) -> (bool, Result<bool, &'static str>) {
        let eth = match EthernetFrame::new_checked(frame) {
            Ok(e) => e,
            Err(e) => return (false, Err(e.reason())),
        };
        if eth.ethertype() != ethertype::IPV4 {
            return match self.non_ipv4 {
                NonIpv4::Forward => (false, Ok(true)),
                NonIpv4::Drop => (false, Err("non_ipv4")),
            };
        }
        match Ipv4Packet::new_checked(eth.payload()) {
            Ok(ip) => (true, Ok(!self.blacklist.contains(ip.src()))),
            Err(e) => (true, Err(e.reason())),
        }
    }
}

impl Firewall {
    /// Every frame the fixed-offset path declines: the full parse decides and counts.
    #[inline(never)]
    fn other_frame(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        let (is_ip, verdict) = self.judge_parsed(ctx.data(&pkt));
        match verdict {
            Ok(true) => {
                self.passed += 1;
                if !is_ip {
                    self.non_ipv4_seen += 1;
                }
                let port = self.out.out_port(pkt.port(), ctx.ports());
                ctx.forward(pkt, port);
            }
            Ok(false) => {
                self.blocked += 1;
                ctx.discard(pkt, "blacklisted");
            }
            Err(reason) => {
                if reason == "non_ipv4" {
                    self.non_ipv4_seen += 1;
                } else {
                    self.malformed += 1;
                }
                ctx.discard(pkt, reason);
            }
        }
    }
}

/// The source address of the common frame read at fixed offsets: untagged, IPv4 with a
/// 20-byte header whose total length fits the frame. `None` for anything else; where it
/// answers, the full parse accepts the frame and reads the same address.
#[inline]
fn fast_source(frame: &[u8]) -> Option<Ipv4Addr> {
    let h: &[u8; 34] = frame.get(..34)?.try_into().ok()?;
    let total = usize::from(u16::from_be_bytes([h[16], h[17]]));
    if h[12] != 0x08 || h[13] != 0x00 || h[14] != 0x45 || total < 20 || total > frame.len() - 14 {
        return None;
    }
    Some(Ipv4Addr::new(h[26], h[27], h[28], h[29]))
}

impl Program for Firewall {
    fn name(&self) -> &str {
        "firewall"
    }

    #[inline]
    fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        // The common frame: straight from the fixed-offset source to the lookup.
        match fast_source(ctx.data(&pkt)) {
            Some(src) if !self.blacklist.contains(src) => {
                self.passed += 1;
                let port = self.out.out_port(pkt.port(), ctx.ports());
                ctx.forward(pkt, port);
            }
            Some(_) => {
                self.blocked += 1;
                ctx.discard(pkt, "blacklisted");
            }
            None => self.other_frame(ctx, pkt),
        }
    }

    fn counters(&self, out: &mut Vec<(&'static str, u64)>) {
        out.push(("passed", self.passed));
        out.push(("blocked", self.blocked));
        out.push(("non_ipv4", self.non_ipv4_seen));
        out.push(("malformed", self.malformed));
    }

    fn dump(&self) -> String {
        format!(
            "blacklist of {} prefixes; passed {} blocked {} non-IPv4 {} malformed {}",
            self.blacklist.len(),
            self.passed,
            self.blocked,
            self.non_ipv4_seen,
            self.malformed
        )
    }

    fn handoff(&mut self) -> Option<Box<dyn Any + Send>> {
        Some(Box::new((self.passed, self.blocked, self.non_ipv4_seen, self.malformed)))
    }

    fn adopt(&mut self, _ctx: &mut Ctx<'_>, state: Box<dyn Any + Send>) {
        if let Ok(s) = state.downcast::<(u64, u64, u64, u64)>() {
            (self.passed, self.blocked, self.non_ipv4_seen, self.malformed) = *s;
        }
    }

    /// Accepts a new blacklist: `Arc<PrefixSet>` or `PrefixSet`.
    fn configure(&mut self, _ctx: &mut Ctx<'_>, cfg: Box<dyn Any + Send>) -> Result<(), String> {
        let cfg = match cfg.downcast::<Arc<PrefixSet>>() {
            Ok(set) => {
                self.blacklist = *set;
                return Ok(());
            }
            Err(c) => c,
        };
        match cfg.downcast::<PrefixSet>() {
            Ok(set) => {
                self.blacklist = Arc::new(*set);
                Ok(())
            }
            Err(_) => Err("the firewall takes a PrefixSet or an Arc<PrefixSet>".into()),
        }
    }
}

/// A firewall middlebox: `ports` (normally two: traffic from one leaves by the other), `units`
/// firewall units sharing `blacklist`, spread by the symmetric flow hash.
pub fn build(
    blacklist: Arc<PrefixSet>,
    units: usize,
    ports: Vec<Box<dyn Link>>,
    cfg: RuntimeConfig,
    non_ipv4: NonIpv4,
) -> Result<Runtime, MiddleboxError> {
    let mut b = Runtime::builder_with(cfg).policy(FlowHash::new(units));
    for p in ports {
        b = b.port_boxed(p);
    }
    for _ in 0..units {
        b = b.unit(Firewall::new(blacklist.clone()).non_ipv4(non_ipv4));
    }
    b.build()
}

/// A benchmark trace for a firewall with `blacklist`: 1,024 UDP frames of `size` bytes (at
/// least 42) from pseudo-random sources, every 50th from a blacklisted prefix (about 2%).
/// Deterministic, so `linerate bench middlebox` and the cost example see the same traffic.
pub fn sample_trace(blacklist: &PrefixSet, size: usize) -> Vec<Vec<u8>> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let prefixes = blacklist.prefixes();
    (0..1024u16)
        .map(|i| {
            let src = if i % 50 == 0 && !prefixes.is_empty() {
                let p = &prefixes[next() as usize % prefixes.len()];
                Ipv4Addr::from(p.first())
            } else {
                Ipv4Addr::from(next() as u32)
            };
            let e = Endpoints { src, dst: Ipv4Addr::new(192, 168, 0, 1), sport: 1024 + i, dport: 443 };
            frames::udp_of_size(&e, size.max(42)).unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixed-offset path and the full parse agree on every frame the fast path takes,
    /// and it declines the ones it must (VLAN, options, bad lengths, short frames).
    #[test]
    fn fast_path_agrees_with_the_full_parse() {
        let set = Arc::new(PrefixSet::parse("10.0.0.0/8\n192.168.1.0/24\n", "test").unwrap());
        let fw = Firewall::new(set.clone());
        let base = sample_trace(&set, 80);
        let mut taken = 0;
        for (i, f) in base.iter().enumerate().take(200) {
            for variant in 0..8u8 {
                let mut g = f.clone();
                match variant {
                    0 => {}
                    1 => g[26] = 10,
                    2 => g[14] = 0x46,
                    3 => g[12..14].copy_from_slice(&[0x81, 0x00]),
                    4 => {
                        let too_long = (g.len() as u16).to_be_bytes();
                        g[16..18].copy_from_slice(&too_long);
                    }
                    5 => g[16..18].copy_from_slice(&19u16.to_be_bytes()),
                    6 => g.truncate(33 + i % 3),
                    _ => g[13] = 0xdd,
                }
                if fast_source(&g).is_some() {
                    taken += 1;
                }
                assert_eq!(fw.judge(&g), fw.judge_parsed(&g), "variant {variant} of frame {i}");
            }
        }
        assert!(taken >= 400, "the fast path took only {taken} frames");
    }
}
