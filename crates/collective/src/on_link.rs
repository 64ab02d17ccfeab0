//! A rank on a real interface, for ranks on different machines: its own stack on a link
//! named by a [`LinkSpec`] (`af_xdp:IFACE`, `af_packet:IFACE`, ...), its address on it, and
//! rank 0's rendezvous address. Rank 0 listens at that address; the others join through it
//! ([`Endpoint::bootstrap`]), so no rank needs to know any address but the root's.
//!
//! The values come from the caller (Python's `init(link=, ip=, root=)`, the command line's
//! `--link`/`--ip`/`--root`) or else from the launcher's variables (`LINERATE_LINK`,
//! `LINERATE_IP`, `LINERATE_ROOT_ADDR` / `MASTER_ADDR`, see [`crate::launch`]).

use crate::launch::{parse_root, Launch};
use crate::{CollectiveError, Communicator, Config, Endpoint, MeshState};
use link::spec::{LinkSpec, OpenOptions};
use link::Link;
use net::Stack;
use std::net::{Ipv4Addr, SocketAddr};

/// Where and how one rank joins on a link.
#[derive(Debug, Clone)]
pub struct LinkRank {
    /// The link.
    pub link: LinkSpec,
    /// This rank's host configuration (address, prefix length, gateway; the MAC and MTU come
    /// from the interface when it is opened).
    pub host: net::Config,
    /// Rank 0's rendezvous address (IPv4 or IPv6: the ranks meet in its family).
    pub root: SocketAddr,
    /// Open the link inside this network namespace (default: the caller's).
    pub netns: Option<String>,
}

/// A communicator on a link of any kind.
pub type LinkCommunicator = Communicator<Box<dyn Link>>;

/// A stack on a link of any kind.
pub type LinkStack = Stack<Box<dyn Link>>;

impl LinkRank {
    /// A rank on `link` (a spec) with address `ip` (`a.b.c.d/len`, optionally followed by
    /// IPv6 ones: `10.9.0.2/24,fd09::2/64`) whose root is `root` (`a.b.c.d[:port]`, or an
    /// IPv6 address `fd09::1` / `[fd09::1]:port`, when the ranks meet over IPv6). Errors are
    /// one sentence naming the bad value.
    pub fn new(link: &str, ip: &str, root: &str) -> Result<LinkRank, CollectiveError> {
        let spec: LinkSpec = link.parse().map_err(CollectiveError::Join)?;
        let mut parts = ip.split(',').map(str::trim);
        let ip4 = parts.next().unwrap_or_default();
        if !ip4.contains('/') {
            return Err(CollectiveError::Join(format!(
                "address {ip4:?} for {spec} needs a prefix length (a.b.c.d/len, such as 10.9.0.2/24)"
            )));
        }
        let mut host = net::Config::parse_host(ip4).map_err(|_| {
            CollectiveError::Join(format!(
                "address {ip4:?} for {spec} is not a.b.c.d/len (the IPv4 address comes first, IPv6 ones after a comma)"
            ))
        })?;
        for ip6 in parts {
            host =
                host.ipv6_addr(ip6).map_err(|e| CollectiveError::Join(format!("address {ip6:?} for {spec}: {e}")))?;
        }
        let root = parse_root(root).ok_or_else(|| {
            CollectiveError::Join(format!(
                "root {root:?} is not an IP address[:port] (such as 10.9.0.1:7470 or [fd09::1]:7470)"
            ))
        })?;
        Ok(LinkRank { link: spec, host, root, netns: None })
    }

    /// The rank's link from explicit values, each falling back to the launcher's variables
    /// in `l`; `Ok(None)` when no link is named anywhere (the rank joins the shared-memory
    /// fabric of its machine). A link without an address or a root is an error saying
    /// which is missing and how to give it.
    pub fn resolve(
        l: &Launch,
        link: Option<&str>,
        ip: Option<&str>,
        root: Option<&str>,
    ) -> Result<Option<LinkRank>, CollectiveError> {
        let Some(link) = link.or(l.link.as_deref()) else { return Ok(None) };
        let ip = ip.or(l.ip.as_deref()).ok_or_else(|| {
            CollectiveError::Join(format!(
                "rank {} on {link} has no address: pass ip=a.b.c.d/len (--ip) or set LINERATE_IP",
                l.rank
            ))
        })?;
        let root = match (root, l.root) {
            (Some(r), _) => r.to_string(),
            (None, Some(r)) => r.to_string(),
            (None, None) => {
                return Err(CollectiveError::Join(format!(
                    "rank {} on {link} does not know rank 0's address: pass root=a.b.c.d[:port] (--root) or set \
                     LINERATE_ROOT_ADDR (or MASTER_ADDR)",
                    l.rank
                )))
            }
        };
        LinkRank::new(link, ip, &root).map(Some)
    }

    /// Checks that rank `rank` can reach the root from its address: rank 0 must have the
    /// root's address, the others need it on their subnet (prefix) or a gateway.
    pub fn check(&self, rank: usize) -> Result<(), CollectiveError> {
        match self.root.ip() {
            std::net::IpAddr::V4(root) => self.check4(rank, root),
            std::net::IpAddr::V6(root) => self.check6(rank, root),
        }
    }

    /// [`LinkRank::check`] for an IPv4 root.
    fn check4(&self, rank: usize, root: Ipv4Addr) -> Result<(), CollectiveError> {
        let ip = self.host.ip;
        if rank == 0 && ip != root {
            return Err(CollectiveError::Join(format!(
                "rank 0 listens at the root address {}, but its address is {ip}: give rank 0 the root's address",
                self.root
            )));
        }
        let mask = u32::MAX.checked_shl(32 - u32::from(self.host.prefix_len)).unwrap_or(0);
        let same = u32::from(ip) & mask == u32::from(root) & mask;
        if !same && self.host.gateway.is_none() {
            return Err(CollectiveError::Join(format!(
                "the root {root} is outside {}/{} and no gateway is set",
                Ipv4Addr::from(u32::from(ip) & mask),
                self.host.prefix_len
            )));
        }
        Ok(())
    }

    /// [`LinkRank::check`] for an IPv6 root.
    fn check6(&self, rank: usize, root: std::net::Ipv6Addr) -> Result<(), CollectiveError> {
        let v6 = &self.host.ipv6;
        if v6.addrs.is_empty() {
            return Err(CollectiveError::Join(format!(
                "the root {} is IPv6, but rank {rank} has no IPv6 address (give one after its IPv4 one: \
                 10.9.0.2/24,fd09::2/64)",
                self.root
            )));
        }
        if rank == 0 && !v6.addrs.iter().any(|c| c.addr == root) {
            return Err(CollectiveError::Join(format!(
                "rank 0 listens at the root address {}, but its IPv6 addresses are {}: give rank 0 the root's address",
                self.root,
                v6.addrs.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
            )));
        }
        if !v6.addrs.iter().any(|c| c.contains(root)) && v6.gateway.is_none() {
            return Err(CollectiveError::Join(format!(
                "the root {root} is outside {} and no gateway is set",
                v6.addrs.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
            )));
        }
        Ok(())
    }

    /// Opens the link (one queue, steering only this rank's address to it) and builds the
    /// rank's stack and endpoint; also returns how the link runs (e.g. "AF_XDP native/copy").
    pub fn open(
        &self,
        rank: usize,
        size: usize,
        cfg: Config,
    ) -> Result<(LinkStack, Endpoint, String), CollectiveError> {
        self.check(rank)?;
        let opts = OpenOptions {
            addresses: vec![self.host.ip],
            addresses6: self.host.ipv6.addrs.iter().map(|c| c.addr).collect(),
            ..OpenOptions::default()
        };
        let opened = match &self.netns {
            Some(ns) => self.link.open_in_netns(ns, &opts),
            None => self.link.open(&opts),
        }
        .map_err(|e| CollectiveError::Join(format!("rank {rank} cannot open {}: {e}", self.link)))?;
        let mut host = self.host.clone().mtu(opened.mtu);
        if let Some(mac) = opened.mac {
            host.mac = wire::MacAddr(mac);
        }
        let link = opened
            .links
            .into_iter()
            .next()
            .ok_or_else(|| CollectiveError::Join(format!("{} opened no queue", self.link)))?;
        let mut stack = Stack::new(host, link)?;
        // The ranks connect from and to their IPv6 addresses once those have passed
        // duplicate address detection.
        let dups = stack.settle_ipv6(std::time::Duration::from_secs(5))?;
        if let Some(dup) = dups.first() {
            return Err(CollectiveError::Join(format!(
                "rank {rank}'s address {dup} is held by another node on the link"
            )));
        }
        let ep = Endpoint::bootstrap(rank, size, self.root, cfg)?;
        Ok((stack, ep, opened.mode))
    }

    /// Opens the link and waits until the full mesh is connected (see [`LinkRank::open`]);
    /// `bind` pins the calling thread to a CPU as [`Communicator::new_with_binding`] does. A
    /// rank that finds no root within `cfg.connect_timeout` fails with
    /// [`CollectiveError::RootUnreachable`].
    pub fn join(&self, rank: usize, size: usize, cfg: Config, bind: bool) -> Result<LinkCommunicator, CollectiveError> {
        let timeout = cfg.connect_timeout;
        let (stack, ep, _mode) = self.open(rank, size, cfg)?;
        let mut c = Communicator::new_with_binding(stack, ep, bind)?;
        match c.connect() {
            Err(CollectiveError::SetupTimeout { rank, waiting_for }) if rank != 0 && waiting_for.contains(&0) => {
                Err(CollectiveError::RootUnreachable { rank, root: self.root, timeout })
            }
            Err(e) => Err(e),
            Ok(()) => {
                debug_assert_eq!(c.endpoint().mesh_state().ok(), Some(MeshState::Ready));
                Ok(c)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::parse_launch;

    fn launch(pairs: &[(&str, &str)]) -> Launch {
        let m: std::collections::HashMap<String, String> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        parse_launch(move |k| m.get(k).cloned()).unwrap()
    }

    fn err(r: Result<Option<LinkRank>, CollectiveError>) -> String {
        r.expect_err("an error").to_string()
    }

    #[test]
    fn values_come_from_the_caller_or_else_the_launcher() {
        let l = launch(&[("LINERATE_RANK", "1"), ("LINERATE_WORLD_SIZE", "3")]);
        assert!(LinkRank::resolve(&l, None, Some("10.9.0.2/24"), None).unwrap().is_none(), "no link: the fabric");
        let r = LinkRank::resolve(&l, Some("af_xdp:veth0"), Some("10.9.0.2/24"), Some("10.9.0.1")).unwrap().unwrap();
        assert_eq!(r.link, LinkSpec::AfXdp("veth0".into()));
        assert_eq!((r.host.ip, r.host.prefix_len), (Ipv4Addr::new(10, 9, 0, 2), 24));
        assert_eq!(r.root, "10.9.0.1:7470".parse().unwrap());
        let l = launch(&[
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_SIZE", "3"),
            ("LINERATE_LINK", "af_packet:eth1"),
            ("LINERATE_IP", "10.9.0.3/16"),
            ("MASTER_ADDR", "10.9.0.1"),
            ("MASTER_PORT", "29500"),
        ]);
        let r = LinkRank::resolve(&l, None, None, None).unwrap().unwrap();
        assert_eq!((r.link.to_string(), r.host.prefix_len), ("af_packet:eth1".into(), 16));
        assert_eq!(r.root, "10.9.0.1:29500".parse().unwrap());
        // The caller's values win.
        let r = LinkRank::resolve(&l, Some("af_xdp:e2"), Some("10.8.0.3/24"), Some("10.8.0.1:1")).unwrap().unwrap();
        assert_eq!((r.link.to_string(), r.host.ip, r.root.port()), ("af_xdp:e2".into(), Ipv4Addr::new(10, 8, 0, 3), 1));
    }

    #[test]
    fn each_bad_or_missing_value_gets_its_sentence() {
        let l = launch(&[("LINERATE_RANK", "1"), ("LINERATE_WORLD_SIZE", "3")]);
        let e = err(LinkRank::resolve(&l, Some("af_xdp:v0"), None, Some("10.9.0.1")));
        assert!(e.contains("has no address") && e.contains("LINERATE_IP"), "{e}");
        let e = err(LinkRank::resolve(&l, Some("af_xdp:v0"), Some("10.9.0.2/24"), None));
        assert!(e.contains("rank 0's address") && e.contains("LINERATE_ROOT_ADDR"), "{e}");
        let e = err(LinkRank::resolve(&l, Some("veth0"), Some("10.9.0.2/24"), Some("10.9.0.1")));
        assert!(e.contains("KIND:NAME"), "{e}");
        let e = err(LinkRank::resolve(&l, Some("af_xdp:v0"), Some("10.9.0.2"), Some("10.9.0.1")));
        assert!(e.contains("prefix length"), "{e}");
        let e = err(LinkRank::resolve(&l, Some("af_xdp:v0"), Some("10.9.0.300/24"), Some("10.9.0.1")));
        assert!(e.contains("not a.b.c.d/len"), "{e}");
        let e = err(LinkRank::resolve(&l, Some("af_xdp:v0"), Some("10.9.0.2/24"), Some("root.example")));
        assert!(e.contains("root \"root.example\""), "{e}");
    }

    #[test]
    fn rank_0_must_hold_the_root_address_and_others_must_reach_it() {
        let r = LinkRank::new("af_xdp:v0", "10.9.0.2/24", "10.9.0.1").unwrap();
        assert!(r.check(1).is_ok());
        let e = r.check(0).unwrap_err().to_string();
        assert!(e.contains("rank 0 listens at the root address 10.9.0.1:7470"), "{e}");
        let r = LinkRank::new("af_xdp:v0", "10.9.1.2/24", "10.9.0.1").unwrap();
        let e = r.check(1).unwrap_err().to_string();
        assert!(e.contains("outside 10.9.1.0/24 and no gateway"), "{e}");
        // Over IPv6.
        let r = LinkRank::new("af_xdp:v0", "10.9.0.2/24,fd09::2/64", "[fd09::1]:7000").unwrap();
        assert_eq!(r.root, "[fd09::1]:7000".parse().unwrap());
        assert!(r.check(1).is_ok());
        let e = r.check(0).unwrap_err().to_string();
        assert!(e.contains("rank 0 listens at the root address [fd09::1]:7000") && e.contains("fd09::2/64"), "{e}");
        assert!(LinkRank::new("af_xdp:v0", "10.9.0.1/24,fd09::1/64", "fd09::1").unwrap().check(0).is_ok());
        let e = LinkRank::new("af_xdp:v0", "10.9.0.2/24", "fd09::1").unwrap().check(1).unwrap_err().to_string();
        assert!(e.contains("has no IPv6 address"), "{e}");
        let e = LinkRank::new("af_xdp:v0", "10.9.0.2/24,fd08::2/64", "fd09::1").unwrap().check(1).unwrap_err();
        assert!(e.to_string().contains("outside fd08::2/64 and no gateway"), "{e}");
        let e = LinkRank::new("af_xdp:v0", "10.9.0.2/24,fd09::x/64", "fd09::1").unwrap_err().to_string();
        assert!(e.contains("address \"fd09::x/64\""), "{e}");
        let e = LinkRank::new("af_xdp:v0", "fd09::2/64", "fd09::1").unwrap_err().to_string();
        assert!(e.contains("the IPv4 address comes first"), "{e}");
    }

    #[test]
    fn a_missing_interface_is_named() {
        let r = LinkRank::new("af_packet:lr-no-such-i22c", "10.9.0.2/24", "10.9.0.1").unwrap();
        let e = r.open(1, 2, Config::default()).err().unwrap().to_string();
        assert!(e.starts_with("rank 1 cannot open af_packet:lr-no-such-i22c:"), "{e}");
        assert!(e.contains("lr-no-such-i22c"), "{e}");
    }
}
