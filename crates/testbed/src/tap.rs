//! A linerate host on a TAP device inside a namespace of its own, facing the Linux stack of
//! that namespace (in-circuit emulation, seed 000 sections IV-E to IV-G).

use crate::netns::Netns;
use crate::TestbedError;
use link::capture::Format;
use link::impair::{Impaired, Impairment};
use link::pcap::PcapWriter;
use link::Link;
use net::{Config, Stack};
use std::net::Ipv4Addr;
use std::path::Path;

/// Name of the TAP device inside the namespace.
pub const TAP_IFNAME: &str = "lrtap0";

/// A namespace whose Linux stack reaches a linerate host through a TAP device.
pub struct TapSetup {
    /// The namespace (deleted on drop, which removes the TAP too).
    pub ns: Netns,
    /// The linerate host.
    pub stack: Stack<Box<dyn Link>>,
    /// The Linux side's address.
    pub linux_ip: Ipv4Addr,
}

impl TapSetup {
    /// Create namespace `<prefix>-…` with TAP `lrtap0` addressed `linux_cidr` (e.g.
    /// "10.77.0.1/24"), and a linerate host with `host` configuration on its other side.
    /// With `pcap`, the host's traffic is recorded (pcapng if the path ends in `.pcapng`; `-`
    /// is standard output), stamped with the wall-clock time: the host is to be polled on
    /// [`link::Instant::now`].
    pub fn create(prefix: &str, linux_cidr: &str, host: Config, pcap: Option<&Path>) -> Result<TapSetup, TestbedError> {
        Self::create_impaired(prefix, linux_cidr, host, pcap.map(|p| (p, Format::for_path(p))), None)
    }

    /// Like [`TapSetup::create`], with `impair` applied to everything the linerate host sends
    /// (for loss interop where the kernel's netem is not available), and the capture in the
    /// format given.
    pub fn create_impaired(
        prefix: &str,
        linux_cidr: &str,
        host: Config,
        pcap: Option<(&Path, Format)>,
        impair: Option<Impairment>,
    ) -> Result<TapSetup, TestbedError> {
        let linux_ip: Ipv4Addr = linux_cidr
            .split('/')
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| TestbedError::Setup(format!("bad address {linux_cidr}")))?;
        let ns = Netns::create(prefix)?;
        let tap = link::tap::create_in_netns(ns.name(), TAP_IFNAME, host.mtu)?;
        ns.ip(&["addr", "add", linux_cidr, "dev", TAP_IFNAME])?;
        ns.ip(&["link", "set", TAP_IFNAME, "txqueuelen", "10000"])?;
        ns.ip(&["link", "set", TAP_IFNAME, "up"])?;
        let mut link: Box<dyn Link> = Box::new(tap);
        if let Some(imp) = impair {
            link = Box::new(Impaired::new(link, imp)?);
        }
        if let Some((p, format)) = pcap {
            link = Box::new(PcapWriter::with_format(link, p, format)?.wall_clock());
        }
        let stack = Stack::new(host, link)?;
        Ok(TapSetup { ns, stack, linux_ip })
    }

    /// Give the Linux side IPv6 address `linux_cidr6` too (no duplicate address detection
    /// there: the TAP is ours alone), then poll the host until its own IPv6 addresses have
    /// passed theirs (about a second), so that the Linux side's first packets find them in
    /// use. Returns the host's addresses another node turned out to hold (not used).
    pub fn add_linux_ipv6(&mut self, linux_cidr6: &str) -> Result<Vec<std::net::Ipv6Addr>, TestbedError> {
        self.ns.ip(&["-6", "addr", "add", linux_cidr6, "dev", TAP_IFNAME, "nodad"])?;
        Ok(self.stack.settle_ipv6(std::time::Duration::from_secs(5))?)
    }
}
