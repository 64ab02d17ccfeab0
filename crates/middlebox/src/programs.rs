//! Small ready-made unit programs: forwarders and a host tap.

use crate::desc::HOST_PORT;
use crate::program::{Ctx, Packet, Program};

/// Forwards every packet: from port `p` to port `p ^ 1` ("cross", the firewall's wiring), or
/// always to one port. Frames from the host or another unit go to port 0.
#[derive(Debug, Clone)]
pub struct Forwarder {
    to: Option<u16>,
    name: String,
    forwarded: u64,
}

impl Forwarder {
    /// Port `p` to port `p ^ 1` (a single port sends back out of itself).
    pub fn cross() -> Self {
        Forwarder { to: None, name: "forward-cross".into(), forwarded: 0 }
    }

    /// Everything to `port`.
    pub fn to(port: u16) -> Self {
        Forwarder { to: Some(port), name: format!("forward-to-{port}"), forwarded: 0 }
    }

    /// The port a packet from `port` goes to in a middlebox with `ports` ports.
    #[inline]
    pub fn out_port(&self, port: u16, ports: usize) -> u16 {
        match self.to {
            Some(p) => p,
            None if port == HOST_PORT => 0,
            None if usize::from(port ^ 1) < ports => port ^ 1,
            None => port,
        }
    }

    /// Name this forwarder (e.g. to tell two versions apart across a swap).
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.into();
        self
    }
}

impl Program for Forwarder {
    fn name(&self) -> &str {
        &self.name
    }

    #[inline]
    fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        let out = self.out_port(pkt.port(), ctx.ports());
        self.forwarded += 1;
        ctx.forward(pkt, out);
    }

    fn counters(&self, out: &mut Vec<(&'static str, u64)>) {
        out.push(("forwarded", self.forwarded));
    }

    fn dump(&self) -> String {
        format!("forwarded={}", self.forwarded)
    }
}

/// Sends every packet to the host, tagged with the unit number.
#[derive(Debug, Default, Clone)]
pub struct ToHost;

impl Program for ToHost {
    fn name(&self) -> &str {
        "to-host"
    }

    fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        let tag = ctx.unit_id() as u32;
        ctx.to_host(pkt, &[tag]);
    }
}
