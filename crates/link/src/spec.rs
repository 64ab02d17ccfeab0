//! One way to name a link, shared by every command and the Python package:
//! `shm:NAME`, `tap:IFNAME`, `af_packet:IFACE`, `af_xdp:IFACE`.
//!
//! - `shm:NAME` attaches to the shared-memory link NAME if another process created it, and
//!   creates it otherwise (the creator is side A).
//! - `tap:IFNAME` creates (or attaches to) TAP device IFNAME in this network namespace.
//! - `af_packet:IFACE` opens an AF_PACKET socket on an existing interface.
//! - `af_xdp:IFACE` attaches linerate's XDP program to IFACE and opens `queues` AF_XDP
//!   sockets (queues 0..queues), one link per queue: one stack per queue.
//!
//! Only `af_xdp` has more than one queue; the others refuse `queues > 1`.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;
use std::time::Duration;

use crate::af_xdp::{self, Steer, XdpConfig};
use crate::{ifreq, packet, shm, tap, Link, LinkConfig, LinkError};

/// A link named on the command line (see the module docs for the forms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkSpec {
    /// A shared-memory link between two processes of this machine.
    Shm(String),
    /// A TAP device in this network namespace.
    Tap(String),
    /// AF_PACKET on an existing interface.
    AfPacket(String),
    /// AF_XDP on an existing interface.
    AfXdp(String),
}

impl FromStr for LinkSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<LinkSpec, String> {
        let (kind, name) = s.split_once(':').ok_or_else(|| {
            format!("link '{s}' is not KIND:NAME (shm:NAME, tap:IFNAME, af_packet:IFACE or af_xdp:IFACE)")
        })?;
        if name.is_empty() {
            return Err(format!("link '{s}' names no {}", if kind == "shm" { "link" } else { "interface" }));
        }
        let name = name.to_string();
        match kind {
            "shm" => Ok(LinkSpec::Shm(name)),
            "tap" => Ok(LinkSpec::Tap(name)),
            "af_packet" | "af-packet" | "packet" => Ok(LinkSpec::AfPacket(name)),
            "af_xdp" | "af-xdp" | "xdp" => Ok(LinkSpec::AfXdp(name)),
            other => Err(format!("unknown link kind '{other}' in '{s}': use shm, tap, af_packet or af_xdp")),
        }
    }
}

impl std::fmt::Display for LinkSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkSpec::Shm(n) => write!(f, "shm:{n}"),
            LinkSpec::Tap(n) => write!(f, "tap:{n}"),
            LinkSpec::AfPacket(n) => write!(f, "af_packet:{n}"),
            LinkSpec::AfXdp(n) => write!(f, "af_xdp:{n}"),
        }
    }
}

/// How to open a [`LinkSpec`].
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// IP MTU; `None`: the interface's (1500 for shm and TAP).
    pub mtu: Option<usize>,
    /// Queues (stacks) to open; only af_xdp takes more than one.
    pub queues: u32,
    /// The host's addresses: af_xdp steers IPv4 and ARP for them to linerate and passes the
    /// rest to the kernel. Empty: every frame (a middlebox owning the interface).
    pub addresses: Vec<Ipv4Addr>,
    /// The host's IPv6 addresses: af_xdp steers IPv6 to them and to their solicited-node
    /// groups to linerate, and adds the link-local address of the interface's MAC. Empty:
    /// IPv6 passes to the kernel (or, with no IPv4 address either, every frame is taken).
    pub addresses6: Vec<Ipv6Addr>,
    /// How long `shm:` waits for a link another process is creating.
    pub shm_wait: Duration,
}

/// The link-local address a host forms from `mac` (RFC 4291 appendix A: the modified EUI-64),
/// as `net` gives its IPv6 hosts.
fn link_local(mac: [u8; 6]) -> Ipv6Addr {
    let m = mac;
    Ipv6Addr::from([0xfe, 0x80, 0, 0, 0, 0, 0, 0, m[0] ^ 0x02, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]])
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            mtu: None,
            queues: 1,
            addresses: Vec::new(),
            addresses6: Vec::new(),
            shm_wait: Duration::from_secs(5),
        }
    }
}

/// Links opened from a spec: one per queue, with what the interface says about itself.
pub struct Opened {
    /// One link per queue (one for every kind but af_xdp).
    pub links: Vec<Box<dyn Link>>,
    /// The interface's MAC address, where it has one a host should use (AF_PACKET, AF_XDP).
    pub mac: Option<[u8; 6]>,
    /// The IP MTU the links carry.
    pub mtu: usize,
    /// How the link runs, for the user (AF_XDP: "native/copy", ...).
    pub mode: String,
    /// What the user should know before relying on it, one sentence each (AF_XDP on fewer
    /// queues than the interface receives on: the other queues' flows go to the kernel).
    pub warnings: Vec<String>,
}

impl LinkSpec {
    /// Open the link in this thread's network namespace.
    pub fn open(&self, o: &OpenOptions) -> Result<Opened, LinkError> {
        if o.queues == 0 {
            return Err(LinkError::Config("--queues must be at least 1".into()));
        }
        if o.queues > 1 && !matches!(self, LinkSpec::AfXdp(_)) {
            return Err(LinkError::Config(format!(
                "{self} has one queue: several queues (one stack each) need af_xdp:IFACE"
            )));
        }
        match self {
            LinkSpec::Shm(name) => {
                let mtu = o.mtu.unwrap_or(1500);
                let path = format!("/dev/shm/linerate-{name}");
                let link = if std::path::Path::new(&path).exists() {
                    shm::ShmLink::open(name, o.shm_wait)?
                } else {
                    shm::ShmLink::create(name, LinkConfig::default().mtu(mtu))?
                };
                let mtu = link.max_frame() - 18;
                Ok(Opened {
                    links: vec![Box::new(link)],
                    mac: None,
                    mtu,
                    mode: "shared memory".into(),
                    warnings: Vec::new(),
                })
            }
            LinkSpec::Tap(ifname) => {
                let mtu = o.mtu.unwrap_or(1500);
                let link = tap::TapLink::open(ifname, mtu)?;
                Ok(Opened { links: vec![Box::new(link)], mac: None, mtu, mode: "TAP".into(), warnings: Vec::new() })
            }
            LinkSpec::AfPacket(ifname) => {
                let (up, if_mtu) = ifreq::flags_and_mtu(ifname)?;
                if !up {
                    return Err(LinkError::Config(format!(
                        "interface {ifname} is down: bring it up with `ip link set {ifname} up`"
                    )));
                }
                let mtu = o.mtu.unwrap_or(if_mtu);
                let link = packet::PacketLink::open(ifname, mtu)?;
                let mac = ifreq::hwaddr(ifname)?;
                Ok(Opened {
                    links: vec![Box::new(link)],
                    mac: Some(mac),
                    mtu,
                    mode: "AF_PACKET".into(),
                    warnings: Vec::new(),
                })
            }
            LinkSpec::AfXdp(ifname) => {
                let steer = if o.addresses.is_empty() && o.addresses6.is_empty() {
                    Steer::All
                } else {
                    let mut ipv6 = o.addresses6.clone();
                    if !ipv6.is_empty() {
                        ipv6.push(link_local(ifreq::hwaddr(ifname)?));
                    }
                    Steer::Host { ipv4: o.addresses.clone(), ipv6 }
                };
                let mut cfg = XdpConfig::new(steer);
                cfg.mtu = o.mtu;
                let links = af_xdp::open(ifname, o.queues, &cfg)?;
                let mode = links.first().map(|l| l.mode_label()).unwrap_or_default();
                let mtu = links.first().map_or(1500, |l| l.interface().mtu());
                let mac = ifreq::hwaddr(ifname)?;
                let mut warnings = Vec::new();
                if let Some(rxq) = ifreq::rx_queues(ifname).filter(|&n| n > links.len() as u32) {
                    warnings.push(format!(
                        "{ifname} receives on {rxq} queues and linerate opened {}: flows the interface steers to \
                         the others reach the kernel, not linerate; open them all (--queues {rxq}) or give the \
                         interface fewer (`ethtool -L {ifname} combined {}`)",
                        links.len(),
                        links.len()
                    ));
                }
                let links = links.into_iter().map(|l| Box::new(l) as Box<dyn Link>).collect();
                Ok(Opened { links, mac: Some(mac), mtu, mode: format!("AF_XDP {mode}"), warnings })
            }
        }
    }

    /// [`LinkSpec::open`] inside network namespace `netns`.
    pub fn open_in_netns(&self, netns: &str, o: &OpenOptions) -> Result<Opened, LinkError> {
        let (spec, o) = (self.clone(), o.clone());
        crate::netns::run_in_netns(netns, move || spec.open(&o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_back() {
        for s in ["shm:a", "tap:lr0", "af_packet:veth0", "af_xdp:eth1"] {
            assert_eq!(s.parse::<LinkSpec>().unwrap().to_string(), s);
        }
        assert_eq!("xdp:e".parse::<LinkSpec>().unwrap(), LinkSpec::AfXdp("e".into()));
        assert!("veth0".parse::<LinkSpec>().unwrap_err().contains("KIND:NAME"));
        assert!("af_xdp:".parse::<LinkSpec>().unwrap_err().contains("names no interface"));
        assert!("dpdk:0".parse::<LinkSpec>().unwrap_err().contains("unknown link kind"));
        let o = OpenOptions { queues: 2, ..OpenOptions::default() };
        let e = LinkSpec::Shm("x".into()).open(&o).err().unwrap().to_string();
        assert!(e.contains("need af_xdp"), "{e}");
    }
}
