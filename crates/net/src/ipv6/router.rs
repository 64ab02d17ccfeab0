//! What a host learns from Router Advertisements (RFC 4861 section 6.3.4, RFC 4862 section
//! 5.5.3): default routers, the link MTU and, with SLAAC on, addresses from the advertised
//! prefixes. How much an advertisement flood can make the host hold is bounded by
//! `NdpConfig::max_routers` and `max_slaac_addrs`.

use super::config::{link_local_from_mac, Ipv6Cidr};
use super::{AddrOrigin, AddrState, HostAddr, Ipv6Host, Router};
use crate::counters::Counter;
use link::Instant;
use std::net::Ipv6Addr;
use std::time::Duration;
use wire::{NdpMessage, NdpOptions};

/// Valid lifetime meaning "forever".
const INFINITE: u32 = u32::MAX;
/// RFC 4862 5.5.3 e): an advertisement may cut a SLAAC address's remaining lifetime only
/// to two hours (unless it was shorter already).
const TWO_HOURS: Duration = Duration::from_secs(7200);

impl Ipv6Host {
    /// Take in a router advertisement from `src` (already checked by `wire::ndp::parse`).
    /// Returns the reason to count if it was not accepted.
    pub fn on_router_advert(
        &mut self,
        src: Ipv6Addr,
        msg: &NdpMessage,
        opts: &NdpOptions<'_>,
        now: Instant,
    ) -> Result<(), Counter> {
        let NdpMessage::RouterAdvert { router_lifetime, .. } = *msg else { return Err(Counter::rx_drop_ndp_invalid) };
        if !self.cfg.ndp.accept_ra {
            return Err(Counter::rx_drop_ndp_ra_ignored);
        }
        // Routers and addresses may change their lifetimes: the next poll recomputes when
        // the host's timers are due.
        self.timers_from = Instant::ZERO;
        self.note_router(src, router_lifetime, now)?;
        if let Some(mac) = opts.source_link_addr() {
            self.neighbors.on_link_addr(src, mac, now);
        }
        if let Some(mtu) = opts.mtu() {
            let mtu = mtu as usize;
            if (wire::ipv6::MIN_MTU..=self.link_mtu).contains(&mtu) {
                self.mtu = mtu;
            }
        }
        if self.cfg.ndp.slaac {
            for p in opts.prefixes() {
                if p.autonomous
                    && p.prefix_len == 64
                    && !p.prefix.is_multicast()
                    && p.preferred_lifetime <= p.valid_lifetime
                {
                    self.slaac(p.prefix, p.valid_lifetime, now);
                }
            }
        }
        Ok(())
    }

    fn note_router(&mut self, addr: Ipv6Addr, lifetime: u16, now: Instant) -> Result<(), Counter> {
        let until = now + Duration::from_secs(u64::from(lifetime));
        match self.routers.iter_mut().find(|r| r.addr == addr) {
            Some(_) if lifetime == 0 => self.routers.retain(|r| r.addr != addr),
            Some(r) => r.until = until,
            None if lifetime == 0 => {}
            None => {
                self.routers.retain(|r| r.until > now);
                if self.routers.len() >= self.cfg.ndp.max_routers {
                    return Err(Counter::rx_drop_ndp_router_table_full);
                }
                self.routers.push(Router { addr, until });
            }
        }
        Ok(())
    }

    /// Form (or refresh) the address of `prefix` with our interface identifier.
    fn slaac(&mut self, prefix: Ipv6Addr, valid: u32, now: Instant) {
        let iid = u128::from(link_local_from_mac(self.mac)) & u128::from(u64::MAX);
        let addr = Ipv6Addr::from((u128::from(prefix) & !u128::from(u64::MAX)) | iid);
        let until =
            if valid == INFINITE { Instant::from_nanos(u64::MAX) } else { now + Duration::from_secs(u64::from(valid)) };
        if let Some(a) = self.addrs.iter_mut().find(|a| a.cidr.addr == addr) {
            if let AddrOrigin::Slaac(old) = a.origin {
                let floor = now + TWO_HOURS;
                a.origin = AddrOrigin::Slaac(if until > floor || until > old { until } else { old.min(floor) });
            }
            return;
        }
        if valid == 0 {
            return;
        }
        let formed = self.addrs.iter().filter(|a| matches!(a.origin, AddrOrigin::Slaac(_))).count();
        if formed >= self.cfg.ndp.max_slaac_addrs {
            self.slaac_refused += 1;
            return;
        }
        let cidr = Ipv6Cidr { addr, prefix_len: 64 };
        self.addrs.push(HostAddr::new(cidr, AddrOrigin::Slaac(until), self.cfg.ndp.dad_transmits));
    }

    /// Forget routers and autoconfigured addresses whose lifetime ended.
    pub fn expire_learned(&mut self, now: Instant) {
        self.routers.retain(|r| r.until > now);
        self.addrs.retain(|a| !matches!(a.origin, AddrOrigin::Slaac(until) if until <= now));
    }

    /// Mark our address `a` as used by another node (duplicate address detection failed).
    pub fn mark_duplicate(&mut self, a: Ipv6Addr) {
        if let Some(h) = self.addrs.iter_mut().find(|h| h.cidr.addr == a) {
            h.state = AddrState::Duplicate;
        }
    }
}
