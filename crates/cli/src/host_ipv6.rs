//! The IPv6 flags of the commands that run one service host on a link or a TAP (`spn serve`,
//! `rdma serve|write`): the host's addresses (fd77::2/64 by default on a TAP, as `linerate
//! tap` gives it), the TAP's Linux side, and the wait for duplicate address detection.

use link::Link;
use net::{Config, Stack};

/// `--ip6` and `--linux-ip6`.
#[derive(clap::Args, Clone, Debug)]
pub struct Ipv6Flags {
    /// An IPv6 address and prefix of the host, beside the link-local address of its MAC
    /// (repeatable; default: fd77::2/64 on --tap, none elsewhere; "none": IPv4 only). On
    /// af_xdp the steering program takes IPv6 to these addresses.
    #[arg(long, value_name = "ADDR/LEN")]
    pub ip6: Vec<String>,
    /// With --tap: the IPv6 address of the Linux side of the TAP ("none": no IPv6).
    #[arg(long, default_value = "fd77::1/64", value_name = "ADDR/LEN")]
    pub linux_ip6: String,
}

impl Ipv6Flags {
    /// The host's IPv6 addresses (ADDR/LEN) the flags ask for on a TAP (`tap`) or elsewhere.
    fn host_addresses(&self, tap: bool) -> Result<Vec<String>, String> {
        if self.ip6.iter().any(|c| c == "none") {
            if self.ip6.len() > 1 {
                return Err("--ip6 none cannot be combined with addresses".into());
            }
            return Ok(Vec::new());
        }
        if self.ip6.is_empty() && tap {
            return Ok(vec!["fd77::2/64".into()]);
        }
        Ok(self.ip6.clone())
    }

    /// `cfg` with the host's IPv6 addresses, and (on a TAP) the address to give the Linux
    /// side, checked against the host's first one.
    pub fn apply(&self, mut cfg: Config, tap: bool) -> Result<(Config, Option<String>), String> {
        let host = self.host_addresses(tap)?;
        for c in &host {
            cfg = cfg.ipv6_addr(c).map_err(|e| format!("--ip6: {e}"))?;
        }
        let linux = match host.first() {
            Some(first) if tap => crate::commands::tap::ipv6_pair(first, &self.linux_ip6)
                .map_err(|e| e.replace("--host-ip6", "--ip6"))?
                .map(|(_, linux)| linux),
            _ => None,
        };
        Ok((cfg, linux))
    }
}

/// Poll `stack` until its IPv6 addresses have passed duplicate address detection, so that
/// the service's first packets can use them; says which ones another node holds.
pub fn settle<L: Link>(stack: &mut Stack<L>) -> Result<(), String> {
    let dups = stack.settle_ipv6(std::time::Duration::from_secs(5)).map_err(|e| e.to_string())?;
    say_duplicates(&dups);
    Ok(())
}

/// Tell the user which of the host's IPv6 addresses another node on the link holds.
pub fn say_duplicates(dups: &[std::net::Ipv6Addr]) {
    for dup in dups {
        eprintln!("linerate: IPv6 address {dup} is in use by another node on the link (not used)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(ip6: &[&str]) -> Ipv6Flags {
        Ipv6Flags { ip6: ip6.iter().map(|s| s.to_string()).collect(), linux_ip6: "fd77::1/64".into() }
    }

    #[test]
    fn a_tap_host_gets_fd77_2_by_default_and_none_turns_ipv6_off() {
        let base = || Config::host("10.77.0.2/24");
        let (cfg, linux) = flags(&[]).apply(base(), true).unwrap();
        assert_eq!(cfg.ipv6.addrs.iter().map(|c| c.to_string()).collect::<Vec<_>>(), ["fd77::2/64"]);
        assert_eq!(linux.as_deref(), Some("fd77::1/64"));
        let (cfg, linux) = flags(&[]).apply(base(), false).unwrap();
        assert!(cfg.ipv6.addrs.is_empty() && linux.is_none());
        let (cfg, linux) = flags(&["none"]).apply(base(), true).unwrap();
        assert!(cfg.ipv6.addrs.is_empty() && linux.is_none());
        let (cfg, linux) = flags(&["fd66::2/64", "fd67::2/64"]).apply(base(), false).unwrap();
        assert_eq!(cfg.ipv6.addrs.len(), 2);
        assert!(linux.is_none());
    }

    #[test]
    fn bad_ipv6_flags_are_one_sentence_naming_the_flag() {
        let base = || Config::host("10.77.0.2/24");
        for (ip6, tap, want) in [
            (&["none", "fd77::3/64"][..], true, "--ip6 none cannot be combined"),
            (&["fd99::2/64"][..], true, "--ip6 fd99::2 is not in the Linux side's prefix"),
            (&["bogus"][..], false, "--ip6: "),
        ] {
            let e = flags(ip6).apply(base(), tap).unwrap_err();
            assert!(e.starts_with(want) && !e.contains('\n'), "{e}");
        }
    }
}
