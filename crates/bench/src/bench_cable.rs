//! What joins the two linerate processes of a benchmark (`bench tcp`, `bench udp`): a
//! shared-memory link, or a veth between two new namespaces with AF_XDP or AF_PACKET on each
//! end. The parent opens its side ([`Cable::open_ours`]); the `bench-peer` child gets the
//! arguments that name its side ([`Cable::peer_args`]) and opens it with [`open_peer`].

use crate::bench_common::msg;
use link::shm::ShmLink;
use link::spec::{LinkSpec, OpenOptions};
use link::{Link, LinkConfig};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;
use testbed::Netns;

/// What joins the two linerate processes of a measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cable {
    /// A shared-memory link: no network, memory speed.
    Shm,
    /// A veth pair between two new namespaces, AF_XDP on each end.
    VethXdp,
    /// A veth pair between two new namespaces, AF_PACKET on each end.
    VethPacket,
}

/// The cable's kinds as `--link` takes them.
pub const CABLE_KINDS: [&str; 3] = ["shm", "af_xdp", "af_packet"];

impl Cable {
    /// The cable `--link KIND` names: shm, af_xdp or af_packet.
    pub fn parse(kind: &str) -> Result<Cable, String> {
        match kind {
            "shm" => Ok(Cable::Shm),
            "af_xdp" | "af-xdp" | "xdp" => Ok(Cable::VethXdp),
            "af_packet" | "af-packet" | "packet" => Ok(Cable::VethPacket),
            other => Err(format!("--link {other}: use shm, af_xdp or af_packet")),
        }
    }

    /// How a table names our side.
    pub fn label(self) -> &'static str {
        match self {
            Cable::Shm => "linerate (shm)",
            Cable::VethXdp => "linerate (AF_XDP, veth)",
            Cable::VethPacket => "linerate (AF_PACKET, veth)",
        }
    }

    /// How a table's title says the two processes are joined.
    pub fn joined(self) -> &'static str {
        match self {
            Cable::Shm => "on the shared-memory link",
            Cable::VethXdp => "in two namespaces over veth, AF_XDP on each end",
            Cable::VethPacket => "in two namespaces over veth, AF_PACKET on each end",
        }
    }

    /// The link spec on veth end `ifname`.
    fn spec(self, ifname: &str) -> LinkSpec {
        match self {
            Cable::VethPacket => LinkSpec::AfPacket(ifname.into()),
            _ => LinkSpec::AfXdp(ifname.into()),
        }
    }

    /// A fresh cable of IP MTU `mtu` with our end open for a host at `ip`: the link, the MAC
    /// our host should use (veth), and what the cable holds until it is dropped (the
    /// namespaces). `shm_name` names a shared-memory link.
    pub fn open_ours(self, shm_name: &str, mtu: usize, ip: Ipv4Addr, ip6: Option<Ipv6Addr>) -> Result<OurEnd, String> {
        if self == Cable::Shm {
            let link = ShmLink::create(shm_name, LinkConfig::default().mtu(mtu)).map_err(msg)?;
            return Ok(OurEnd { link: Box::new(link), mac: None, veth: None });
        }
        let veth = Veth::create(mtu)?;
        let opts = OpenOptions {
            mtu: Some(mtu),
            addresses: vec![ip],
            addresses6: ip6.into_iter().collect(),
            ..OpenOptions::default()
        };
        let spec = self.spec("lrb0");
        let opened = spec.open_in_netns(veth.ours.name(), &opts).map_err(|e| format!("{spec}: {e}"))?;
        let link = opened.links.into_iter().next().ok_or("no queue opened")?;
        Ok(OurEnd { link, mac: opened.mac, veth: Some(veth) })
    }

    /// The `bench-peer` arguments that name the child's end of `ours` (`--shm NAME`, or
    /// `--link SPEC --netns NS`).
    pub fn peer_args(self, ours: &OurEnd, shm_name: &str) -> Vec<String> {
        match &ours.veth {
            None => vec!["--shm".into(), shm_name.into()],
            Some(v) => {
                vec!["--link".into(), self.spec("lrb1").to_string(), "--netns".into(), v.theirs.name().to_string()]
            }
        }
    }
}

/// Our end of a fresh cable.
pub struct OurEnd {
    /// The link our stack runs on.
    pub link: Box<dyn Link>,
    /// The MAC our host should use (the veth end's).
    pub mac: Option<[u8; 6]>,
    /// The namespaces of a veth cable (deleted on drop, with the veth).
    pub veth: Option<Veth>,
}

/// Two new namespaces joined by a veth (`lrb0` in `ours`, `lrb1` in `theirs`) with no kernel
/// address on it; both are deleted on drop, with the veth.
pub struct Veth {
    ours: Netns,
    theirs: Netns,
}

impl Veth {
    /// The namespaces and the veth, IP MTU `mtu`, up.
    fn create(mtu: usize) -> Result<Veth, String> {
        let ours = Netns::create("lrbt-a").map_err(msg)?;
        let theirs = Netns::create("lrbt-b").map_err(msg)?;
        let m = mtu.to_string();
        ours.ip(&["link", "add", "lrb0", "mtu", &m, "type", "veth", "peer", "name", "lrb1", "netns", theirs.name()])
            .map_err(msg)?;
        theirs.ip(&["link", "set", "lrb1", "mtu", &m, "up"]).map_err(msg)?;
        ours.ip(&["link", "set", "lrb0", "mtu", &m, "up"]).map_err(msg)?;
        Ok(Veth { ours, theirs })
    }
}

/// A child's end of a cable: the link, its IP MTU and the MAC its host should use.
pub type PeerEnd = (Box<dyn Link>, usize, Option<[u8; 6]>);

/// The child's end: the shared-memory link `shm` (opened within five seconds), or `link` in
/// namespace `netns` (this process's if `None`) for a host at `ip`. Returns the link, its IP
/// MTU and the MAC the host should use.
pub fn open_peer(
    shm: Option<&str>,
    link: Option<&LinkSpec>,
    netns: Option<&str>,
    ip: Ipv4Addr,
    ip6: Option<Ipv6Addr>,
) -> Result<PeerEnd, String> {
    match (shm, link) {
        (_, Some(spec)) => {
            let opts =
                OpenOptions { addresses: vec![ip], addresses6: ip6.into_iter().collect(), ..OpenOptions::default() };
            let opened = match netns {
                Some(ns) => spec.open_in_netns(ns, &opts),
                None => spec.open(&opts),
            }
            .map_err(|e| format!("{spec}: {e}"))?;
            let link = opened.links.into_iter().next().ok_or("no queue opened")?;
            Ok((link, opened.mtu, opened.mac))
        }
        (Some(name), None) => {
            let link = ShmLink::open(name, Duration::from_secs(5)).map_err(msg)?;
            let mtu = link.max_frame() - 18;
            Ok((Box::new(link), mtu, None))
        }
        (None, None) => Err("--shm or --link is required".into()),
    }
}
