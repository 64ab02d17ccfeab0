//! Regressions found against real Linux peers.

use link::{mem, FrameBatch, Instant, Link, LinkConfig};
use net::{Config, Recv, Stack};
use std::net::SocketAddrV4;
use std::time::Duration;
use wire::{Ipv4Packet, TcpSegment};

type S = Stack<mem::MemLink>;

/// A peer's segment that starts at our RCV.NXT and carries data while our window is zero
/// (Linux sends exactly this: its retransmission of bytes we dropped after our window
/// edge moved back) must still have its ACK processed (RFC 9293 3.10.7.4: "special
/// allowance should be made to accept valid ACKs"; Linux's tcp_sequence() accepts it).
#[test]
fn ack_on_a_data_segment_is_taken_while_our_window_is_zero() {
    let (la, lb) = mem::pair(LinkConfig::default());
    let mut ca = Config::host("10.0.0.1/24");
    ca.tcp.delayed_ack = Duration::ZERO; // a acknowledges every segment at once
    let mut a = S::new(ca, la).unwrap();
    let mut cb = Config::host("10.0.0.2/24");
    cb.tcp.rx_buffer = 4096; // b's application never reads: its window closes
    let mut b = S::new(cb, lb).unwrap();
    let l = b.tcp_listen(7, 4).unwrap();
    let mut now = Instant::ZERO + Duration::from_secs(1);
    let tick = |a: &mut S, b: &mut S, now: &mut Instant| {
        *now = *now + Duration::from_micros(10);
        a.poll(*now).unwrap();
        b.poll(*now).unwrap();
    };
    tick(&mut a, &mut b, &mut now);
    let c = a.tcp_connect(SocketAddrV4::new(b.ip(), 7)).unwrap();
    let mut s = None;
    for _ in 0..1000 {
        tick(&mut a, &mut b, &mut now);
        s = s.or_else(|| b.tcp_accept(l));
    }
    let s = s.unwrap();
    let _ = a.tcp_send(c, &[1u8; 8192]);
    // The last bytes before b's window closes are short of half its window: a's silly-window
    // avoidance sends them when its override timer (one RTO) fires, within 3 s.
    for _ in 0..300_000 {
        tick(&mut a, &mut b, &mut now);
        if a.tcp_stats(c).unwrap().snd_wnd == 0 {
            break;
        }
    }
    assert_eq!(a.tcp_stats(c).unwrap().snd_wnd, 0, "b's advertised window is closed: {:?}", b.tcp_stats(s));
    // b sends 100 bytes; a receives them and acknowledges.
    b.tcp_send(s, &[7u8; 100]).unwrap();
    b.flush().unwrap();
    now = now + Duration::from_micros(10);
    a.poll(now).unwrap();
    let mut buf = [0u8; 200];
    assert_eq!(a.tcp_recv(c, &mut buf).unwrap(), Recv::Data(100));
    a.flush().unwrap();
    // Take a's ACK off the wire and give it 68 bytes of payload, as Linux's retransmission has.
    let mut batch = FrameBatch::new(16, 2048);
    b.link_mut().rx_batch(now, &mut batch).unwrap();
    let ack = (0..batch.len()).map(|i| batch.get(i).to_vec()).find(|f| f.len() > 34 && f[23] == 6).expect("a's ACK");
    let mut f = ack.clone();
    f.extend_from_slice(&[9u8; 68]);
    let ip_len = (f.len() - 14) as u16;
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    Ipv4Packet::new_unchecked(&mut f[14..]).fill_checksum();
    let (src, dst) = (a.ip(), b.ip());
    TcpSegment::new_unchecked(&mut f[34..]).fill_checksum(src, dst);
    b.inject(&f).unwrap();
    let st = b.tcp_stats(s).unwrap();
    let count = |s: &S, name: &str| s.counters().iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| v);
    assert_eq!(
        st.bytes_acked,
        100,
        "the ACK was dropped with the segment (rx_drop_tcp_out_of_window = {}): {st:?}",
        count(&b, "rx_drop_tcp_out_of_window")
    );
}

/// `tcp_connect` before the first poll sends exactly one SYN, stamped at the first poll.
#[test]
fn connect_before_the_first_poll_sends_one_syn() {
    let (la, lb) = mem::pair(LinkConfig::default());
    let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
    let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
    b.tcp_listen(80, 4).unwrap();
    let c = a.tcp_connect(SocketAddrV4::new(b.ip(), 80)).unwrap(); // a's clock is still ZERO
    let mut now = Instant::ZERO + Duration::from_secs(1000); // a real clock is far from zero
    for _ in 0..100 {
        now = now + Duration::from_micros(10);
        a.poll(now).unwrap();
        b.poll(now).unwrap();
    }
    assert_eq!(a.tcp_connect_result(c).unwrap(), Some(Ok(())));
    let count =
        |s: &Stack<mem::MemLink>, name: &str| s.counters().iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| v);
    assert_eq!((count(&a, "tcp_rto_fired"), count(&a, "tcp_tx_segments")), (0, 2), "SYN sent twice");
}
