//! A raw Ethernet echo service: every frame of one EtherType goes back to the MAC address it
//! came from with its payload unchanged (the raw-Ethernet counterpart of the UDP echo, for
//! seed 000's round trip per protocol).

use crate::datagram_echo::DatagramEcho;
use link::Link;
use net::{NetError, RawHandle, Stack};

/// A raw Ethernet echo bound to one EtherType of a stack.
pub type RawEcho = DatagramEcho<RawHandle>;

impl DatagramEcho<RawHandle> {
    /// Bind the echo to `ethertype` on `stack` (not IPv4, ARP or VLAN; at least 0x0600).
    pub fn bind<L: Link>(stack: &mut Stack<L>, ethertype: u16) -> Result<Self, NetError> {
        Ok(DatagramEcho::on(stack.raw_bind(ethertype)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use link::mem::pair;
    use link::{Instant, LinkConfig};
    use net::Config;

    #[test]
    fn frames_come_back_to_their_sender_unchanged() {
        let (la, lb) = pair(LinkConfig::default());
        let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
        let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
        let mut echo = RawEcho::bind(&mut b, 0x88b5).unwrap();
        let ours = a.raw_bind(0x88b5).unwrap();
        let payload: Vec<u8> = (0..64u8).collect();
        assert!(a.raw_send(ours, b.mac(), &payload).unwrap());
        a.flush().unwrap();
        let mut got = None;
        let mut buf = [0u8; 256];
        for _ in 0..100 {
            b.poll(Instant::ZERO).unwrap();
            echo.serve(&mut b).unwrap();
            b.flush().unwrap();
            a.poll(Instant::ZERO).unwrap();
            if let Some(r) = a.raw_recv(ours, &mut buf).unwrap() {
                got = Some(r);
                break;
            }
        }
        let (n, from) = got.expect("no echo");
        assert_eq!((&buf[..n], from), (&payload[..], b.mac()));
        assert_eq!((echo.echoed, echo.bytes), (1, 64));
    }

    #[test]
    fn reserved_ethertypes_are_refused() {
        let (la, _lb) = pair(LinkConfig::default());
        let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
        assert!(RawEcho::bind(&mut a, wire::ethertype::IPV4).is_err());
    }
}
