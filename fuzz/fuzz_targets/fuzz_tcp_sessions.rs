//! Random TCP segments into a stack with live sessions: each 16-byte record of the input picks
//! a connection (or a random port), flags, sequence and acknowledgment offsets around the
//! live values, a window, options and a payload length; the segment is sent with valid IP and
//! TCP checksums so it reaches the TCP engine. Application calls (send, recv, close, abort,
//! RX bypass on/off) and time steps are interleaved, with an activity watcher following.
//! Nothing may panic and every frame must be accounted for.
#![no_main]

use libfuzzer_sys::fuzz_target;
use link::{mem, Instant, Link, LinkConfig};
use net::{Config, Counter, Stack};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;
use wire::{EthernetRepr, Ipv4Repr, MacAddr, TcpOptions, TcpRepr};

const PEER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

fn frame(dst_mac: MacAddr, repr: &TcpRepr, payload: &[u8]) -> Vec<u8> {
    let tl = repr.header_len() + payload.len();
    let mut f = vec![0u8; 14 + 20 + tl];
    let eth = EthernetRepr { src: MacAddr([2, 0, 10, 0, 0, 1]), dst: dst_mac, ethertype: 0x0800, vlan: None };
    eth.emit(&mut f).unwrap();
    let ip = Ipv4Repr {
        src: PEER,
        dst: Ipv4Addr::new(10, 0, 0, 2),
        protocol: 6,
        payload_len: tl,
        ttl: 64,
        ident: 0,
        dont_frag: true,
        dscp_ecn: 0,
    };
    ip.emit(&mut f[14..]).unwrap();
    let hl = repr.header_len();
    f[34 + hl..].copy_from_slice(payload);
    let _ = repr.emit(&mut f[34..], PEER, Ipv4Addr::new(10, 0, 0, 2), payload.len());
    f
}

fuzz_target!(|data: &[u8]| {
    let mut ca = Config::host("10.0.0.1/24");
    let mut cb = Config::host("10.0.0.2/24");
    for c in [&mut ca, &mut cb] {
        c.tcp.secret = [3, 4];
        c.tcp.max_sessions = 16;
        c.tcp.tx_buffer = 8192;
        c.tcp.rx_buffer = 8192;
        c.socket_rx_queue = 8;
    }
    let (la, lb) = mem::pair(LinkConfig::default().depth(256));
    let mut a = Stack::new(ca, la).unwrap();
    let mut b = Stack::new(cb, lb).unwrap();
    let l = b.tcp_listen(80, 8).unwrap();
    let conns: Vec<_> = (0..3).map(|_| a.tcp_connect(SocketAddrV4::new(b.ip(), 80)).unwrap()).collect();
    let mut now = Instant::ZERO;
    for _ in 0..50 {
        now = now + Duration::from_micros(100);
        a.poll(now).unwrap();
        b.poll(now).unwrap();
    }
    let mut servers = vec![];
    while let Some(h) = b.tcp_accept(l) {
        servers.push(h);
    }
    // The first server connection hands its data over in RX bypass; a watcher follows activity.
    b.tcp_set_rx_handler(|_, d| {
        std::hint::black_box(d.len());
    });
    if let Some(&s) = servers.first() {
        let _ = b.tcp_set_rx_bypass(s, true);
    }
    let watch = b.tcp_watch().unwrap();
    let mut active = Vec::new();
    let bmac = b.mac();
    let mut buf = [0u8; 4096];
    for rec in data.chunks(16) {
        if rec.len() < 16 {
            break;
        }
        let which = rec[0] as usize;
        let flags = rec[1];
        let seq = u32::from_le_bytes([rec[2], rec[3], rec[4], rec[5]]);
        let ack = u32::from_le_bytes([rec[6], rec[7], rec[8], rec[9]]);
        let window = u16::from_le_bytes([rec[10], rec[11]]);
        let plen = rec[12] as usize * 8;
        let opt = rec[13];
        let action = rec[14];
        let src_port = 49152 + (rec[15] % 8) as u16;
        let mut options = TcpOptions::default();
        if opt & 1 != 0 {
            options.mss = Some(u16::from_le_bytes([rec[2], rec[13]]));
        }
        if opt & 2 != 0 {
            options.window_scale = Some(rec[3] % 16);
        }
        if opt & 4 != 0 {
            options.sack_permitted = true;
        }
        if opt & 8 != 0 {
            options.timestamps = Some((seq ^ ack, ack));
        }
        if opt & 16 != 0 {
            options.sack_blocks[0] = Some((ack, ack.wrapping_add(plen as u32 + 1)));
        }
        // Most records aim at a live connection, with sequence numbers near the live ones.
        let (src_port, dst_port, seq, ack) = match a.tcp_stats(conns[which % conns.len()]) {
            Ok(st) if which % 4 != 3 => (
                st.local_port,
                80,
                st.snd_nxt.wrapping_add((seq as i16) as u32),
                st.rcv_nxt.wrapping_add((ack as i16) as u32),
            ),
            _ => (src_port, 80 + (rec[0] >> 2) as u16, seq, ack),
        };
        let repr = TcpRepr { src_port, dst_port, seq, ack, flags, window, urgent: 0, options };
        let payload = vec![rec[15]; plen];
        let f = frame(bmac, &repr, &payload);
        let _ = b.inject(&f);
        match action % 8 {
            0 => {
                now = now + Duration::from_millis((action / 8) as u64);
                let _ = a.poll(now);
                let _ = b.poll(now);
            }
            1 => {
                if let Some(&s) = servers.get(which % servers.len().max(1)) {
                    let _ = b.tcp_send(s, &payload);
                }
            }
            2 => {
                if let Some(&s) = servers.get(which % servers.len().max(1)) {
                    let _ = b.tcp_recv(s, &mut buf);
                }
            }
            3 => {
                if let Some(&s) = servers.get(which % servers.len().max(1)) {
                    let _ = b.tcp_close(s);
                }
            }
            4 => {
                if let Some(&s) = servers.get(which % servers.len().max(1)) {
                    let _ = b.tcp_abort(s);
                }
            }
            5 => {
                if let Some(&s) = servers.get(which % servers.len().max(1)) {
                    let _ = b.tcp_set_rx_bypass(s, action & 8 != 0);
                }
            }
            _ => {}
        }
        active.clear();
        b.tcp_take_activity(watch, &mut active);
        // Keep a's side of the wire drained so b never blocks on a full ring.
        let _ = a.poll(now);
    }
    for _ in 0..20 {
        now = now + Duration::from_secs(1);
        let _ = a.poll(now);
        let _ = b.poll(now);
    }
    let c = b.counters();
    assert_eq!(c.get(Counter::rx_delivered) + c.rx_drops(), c.get(Counter::rx_frames));
    let _ = a.link().stats();
});
