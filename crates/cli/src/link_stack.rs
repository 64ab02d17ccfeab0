//! One linerate host on a link named by `--link SPEC`, for the commands that run one stack on
//! one queue (`iperf`, `iperf3`, `spn serve`, the `bench-peer` children): open the link in this
//! network namespace, steer the host's address to it, and take the interface's MAC and MTU.

use link::spec::{LinkSpec, OpenOptions, Opened};
use link::Link;
use net::{Config, Stack};

/// A link opened for one host, before its stack exists.
pub struct OneLink {
    /// The link (one queue).
    pub link: Box<dyn Link>,
    /// The interface's MAC address, where it has one the host should use.
    pub mac: Option<[u8; 6]>,
    /// The IP MTU the link carries.
    pub mtu: usize,
    /// Where the host runs, for the user: the spec and its mode ("af_xdp:veth0 (AF_XDP native/copy)").
    pub label: String,
}

/// Open `spec` for the host `cfg` configures: AF_XDP steers IPv4 and ARP for its address, and
/// IPv6 for its IPv6 addresses (with their solicited-node groups), to it and leaves the rest to
/// the kernel. `mtu`: the IP MTU to use (`None`: the interface's; 1500 for shm and TAP).
/// Warns on stderr when AF_XDP had to fall back to generic (SKB) mode.
pub fn open_one(spec: &LinkSpec, cfg: &Config, mtu: Option<usize>) -> Result<OneLink, String> {
    let opts = OpenOptions {
        mtu,
        addresses: vec![cfg.ip],
        addresses6: cfg.ipv6.addrs.iter().map(|c| c.addr).collect(),
        ..OpenOptions::default()
    };
    let opened = spec.open(&opts).map_err(|e| format!("{spec}: {e}"))?;
    warn_about(spec, &opened);
    let link = opened.links.into_iter().next().ok_or_else(|| format!("{spec} opened no queue"))?;
    Ok(OneLink { link, mac: opened.mac, mtu: opened.mtu, label: format!("{spec} ({})", opened.mode) })
}

/// Say on stderr what the user should know about `spec` as `opened`: generic XDP mode, and
/// the link's own warnings (queues left to the kernel).
pub fn warn_about(spec: &LinkSpec, opened: &Opened) {
    if opened.mode.contains("generic") {
        eprintln!("linerate: warning: {spec} takes no native XDP; running in generic (SKB) mode, which is slower");
    }
    for w in &opened.warnings {
        eprintln!("linerate: warning: {w}");
    }
}

/// `cfg` for a host on a link of IP MTU `mtu` with MAC `mac`: the MTU, and an MSS that fills
/// it (MTU - 40), as Linux derives its MSS from the interface's MTU.
pub fn fit_config(cfg: Config, mtu: usize, mac: Option<[u8; 6]>) -> Config {
    let mut cfg = cfg.mtu(mtu).mss(mtu.saturating_sub(40).min(u16::MAX as usize) as u16);
    if let Some(mac) = mac {
        cfg.mac = wire::MacAddr(mac);
    }
    cfg
}

impl OneLink {
    /// The host's stack on this link with configuration `cfg` (MAC, MTU and MSS fitted to the
    /// link by [`fit_config`]).
    pub fn stack(self, cfg: Config) -> Result<(Stack<Box<dyn Link>>, String), String> {
        let cfg = fit_config(cfg, self.mtu, self.mac);
        cfg.validate().map_err(|e| e.to_string())?;
        let stack = Stack::new(cfg, self.link).map_err(|e| e.to_string())?;
        Ok((stack, self.label))
    }
}
