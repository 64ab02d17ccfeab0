//! The listen side, exact segments in virtual time: SYN cookies when the half-open queue is
//! full (RFC 4987 3.6), what a listener drops or resets (RFC 9293 3.10.7.2), a new SYN on a
//! 4-tuple in TIME-WAIT (RFC 6191), TIME-WAIT sessions reclaimed when the table is full, and
//! D-SACK (RFC 2883) for duplicates below and above RCV.NXT.

mod tcp_behaviour_util;

use net::{Counter, Recv, TcpState};
use tcp_behaviour_util::*;
use wire::tcp::flags::{ACK, FIN, PSH, RST, SYN};
use wire::TcpOptions;

fn syn(peer_port: u16, opts: PeerOpts) -> Seg {
    Seg::new(peer_port, 80, SYN, PEER_ISS, 0, opts.window).opts(opts.syn_options())
}

fn read_all(b: &mut Bench, h: net::TcpHandle) -> Vec<u8> {
    let mut buf = vec![0u8; 65536];
    match b.host.tcp_recv(h, &mut buf).unwrap() {
        Recv::Data(n) => buf[..n].to_vec(),
        other => panic!("expected data, got {other:?}"),
    }
}

#[test]
fn a_full_half_open_queue_answers_with_syn_cookies_that_open_connections() {
    let mut cfg = config();
    cfg.tcp.syn_backlog = 2;
    let mut b = Bench::new(cfg);
    let l = b.host.tcp_listen(80, 64).unwrap();
    let opts = PeerOpts { ws: Some(9), sack: true, ts: Some(5000), mss: Some(1400), ..Default::default() };
    // Two half-open sessions fill the queue; the third SYN gets a cookie and no state.
    b.send_all(&[syn(40001, opts), syn(40002, opts)]);
    assert_eq!(b.host.tcp_sessions(), 2);
    let out = b.send(syn(40003, opts));
    assert_eq!(out.len(), 1);
    let synack = &out[0];
    assert_eq!((synack.flags(), synack.ack()), (SYN | ACK, PEER_ISS + 1));
    let o = synack.repr.options;
    assert_eq!((o.mss, o.window_scale, o.sack_permitted), (Some(1460), Some(7), true));
    assert_eq!(b.host.tcp_sessions(), 2, "a cookie keeps no state");
    assert_eq!(b.counter(Counter::tcp_syncookies_sent), 1);
    // The ACK returns the cookie and carries the request: the connection exists.
    let (tsval, _) = o.timestamps.expect("timestamps carry the options");
    let iss = synack.seq();
    let ack =
        Seg::new(40003, 80, ACK | PSH, PEER_ISS + 1, iss + 1, 100).ts(5001, tsval).data(b"GET / HTTP/1.0\r\n\r\n");
    let out = b.send(ack);
    assert_eq!(b.counter(Counter::tcp_syncookies_accepted), 1);
    let h = loop {
        let h = b.host.tcp_accept(l).expect("the cookie connection is in the accept queue");
        if b.host.tcp_stats(h).unwrap().remote.map(|r| r.port()) == Some(40003) {
            break h;
        }
    };
    assert_eq!(b.host.tcp_state(h).unwrap(), TcpState::Established);
    assert_eq!(read_all(&mut b, h), b"GET / HTTP/1.0\r\n\r\n");
    // Its state came back from the cookie: MSS 1400 (rounded down to 1360 in the table) minus
    // the timestamp option, window scale 9 on what the peer advertises, SACK.
    let st = b.host.tcp_stats(h).unwrap();
    assert_eq!(st.mss, 1360 - 12);
    assert_eq!(st.snd_wnd, 100 << 9);
    let acks: Vec<_> = out.iter().chain(b.advance(ms(50)).iter()).map(|s| (s.flags(), s.ack())).collect::<Vec<_>>();
    assert!(acks.contains(&(ACK, PEER_ISS + 1 + 18)), "{acks:?}");
}

#[test]
fn a_forged_or_stale_cookie_is_reset_and_counted() {
    let mut cfg = config();
    cfg.tcp.syn_backlog = 1;
    let mut b = Bench::new(cfg);
    b.host.tcp_listen(80, 64).unwrap();
    b.send(syn(40001, PeerOpts::default()));
    let out = b.send(syn(40002, PeerOpts::default()));
    let iss = out[0].seq();
    let out = b.send(Seg::new(40002, 80, ACK, PEER_ISS + 1, iss + 2, 65535));
    assert_eq!(out.iter().map(|s| (s.flags(), s.seq())).collect::<Vec<_>>(), vec![(RST, iss + 2)]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_bad_cookie), 1);
    // Cookies expire after two 64-second slots.
    b.now = b.now + secs(129);
    let out = b.send(Seg::new(40002, 80, ACK, PEER_ISS + 1, iss + 1, 65535));
    let to_40002: Vec<_> = out.iter().filter(|s| s.repr.dst_port == 40002).map(|s| s.flags()).collect();
    assert_eq!(to_40002, vec![RST]);
    assert_eq!(b.counter(Counter::tcp_syncookies_accepted), 0);
}

#[test]
fn a_listener_drops_syn_fin_and_flagless_segments_and_resets_acks() {
    let mut b = Bench::new(config());
    b.host.tcp_listen(80, 8).unwrap();
    assert_eq!(b.send(Seg::new(40001, 80, SYN | FIN, PEER_ISS, 0, 65535)), vec![]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_syn_fin), 1);
    assert_eq!(b.send(Seg::new(40001, 80, 0, PEER_ISS, 0, 65535)), vec![]);
    assert_eq!(b.send(Seg::new(40001, 80, FIN, PEER_ISS, 0, 65535)), vec![]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_listen_no_syn), 2);
    assert_eq!(b.send(Seg::new(40001, 80, RST, PEER_ISS, 0, 65535)), vec![]);
    let out = b.send(Seg::new(40001, 80, ACK, PEER_ISS, 777, 65535));
    assert_eq!(out.iter().map(|s| (s.flags(), s.seq())).collect::<Vec<_>>(), vec![(RST, 777)]);
    // A closed port answers a flagless segment with RST|ACK (RFC 9293 3.10.7.1, as Linux).
    let out = b.send(Seg::new(40001, 81, 0, PEER_ISS, 0, 65535));
    assert_eq!(out.iter().map(|s| (s.flags(), s.ack())).collect::<Vec<_>>(), vec![(RST | ACK, PEER_ISS)]);
    assert_eq!(b.host.tcp_sessions(), 0);
}

/// A passive connection closed by the host first and then by the peer: the host is in
/// TIME-WAIT. Returns the peer's next sequence number.
fn into_time_wait(b: &mut Bench, l: net::TcpListener, peer_port: u16, opts: PeerOpts) -> (Conn, u32) {
    let (c, _) = passive_open_on(b, l, peer_port, opts, ms(1));
    b.host.tcp_close(c.h).unwrap();
    let out = b.flush();
    assert_eq!(out.len(), 1);
    let fin = &out[0];
    assert_eq!(fin.flags() & FIN, FIN);
    let mut peer_fin = c.p(FIN | ACK, PEER_ISS + 1, fin.seq() + 1);
    if let Some(ts) = opts.ts {
        peer_fin = peer_fin.ts(ts + 10, fin.repr.options.timestamps.unwrap().0);
    }
    let out = b.send(peer_fin);
    assert_eq!(out.iter().map(|s| s.flags()).collect::<Vec<_>>(), vec![ACK]);
    (c, PEER_ISS + 2)
}

#[test]
fn a_new_syn_reopens_a_tuple_in_time_wait_only_if_it_is_newer() {
    let mut b = Bench::new(config());
    let l = b.host.tcp_listen(80, 8).unwrap();
    let opts = PeerOpts { ts: Some(1000), ..Default::default() };
    into_time_wait(&mut b, l, 40001, opts);
    // An older timestamp: the old incarnation answers (challenge ACK), no new session.
    let old = Seg::new(40001, 80, SYN, PEER_ISS + 100_000, 0, 65535).opts(TcpOptions {
        mss: Some(1460),
        timestamps: Some((900, 0)),
        ..Default::default()
    });
    let out = b.send(old);
    assert_eq!(out.iter().map(|s| s.flags()).collect::<Vec<_>>(), vec![ACK]);
    assert_eq!(b.counter(Counter::tcp_time_wait_reused), 0);
    // A newer timestamp: RFC 6191 accepts it at once.
    b.now = b.now + ms(10);
    let new = Seg::new(40001, 80, SYN, PEER_ISS + 100_000, 0, 65535).opts(TcpOptions {
        mss: Some(1460),
        timestamps: Some((2000, 0)),
        ..Default::default()
    });
    let out = b.send(new);
    assert_eq!(out.iter().map(|s| (s.flags(), s.ack())).collect::<Vec<_>>(), vec![(SYN | ACK, PEER_ISS + 100_001)]);
    assert_eq!(b.counter(Counter::tcp_time_wait_reused), 1);
    // Without timestamps the sequence number decides.
    let mut b = Bench::new(config());
    let l = b.host.tcp_listen(80, 8).unwrap();
    into_time_wait(&mut b, l, 40002, PeerOpts::default());
    let out = b.send(
        Seg::new(40002, 80, SYN, PEER_ISS + 5000, 0, 65535).opts(TcpOptions { mss: Some(1460), ..Default::default() }),
    );
    assert_eq!(out.iter().map(|s| s.flags()).collect::<Vec<_>>(), vec![SYN | ACK]);
}

#[test]
fn time_wait_sessions_are_reclaimed_when_the_table_is_full() {
    let mut cfg = config();
    cfg.tcp.max_sessions = 4;
    let mut b = Bench::new(cfg);
    let l = b.host.tcp_listen(80, 8).unwrap();
    for port in 0..20u16 {
        into_time_wait(&mut b, l, 41000 + port, PeerOpts::default());
    }
    assert_eq!(b.host.tcp_sessions(), 4);
    assert_eq!(b.counter(Counter::tcp_time_wait_reclaimed), 16);
    assert_eq!(b.counter(Counter::rx_drop_tcp_table_full), 0);
}

#[test]
fn duplicates_below_and_above_rcv_nxt_are_reported_with_d_sack() {
    let mut cfg = config();
    cfg.tcp.delayed_ack = ms(0);
    let mut b = Bench::new(cfg);
    let opts = PeerOpts { sack: true, ..Default::default() };
    let (c, _, _) = passive_open(&mut b, 80, 40000, opts, ms(1));
    let p = PEER_ISS + 1;
    let win = |o: &[Seg]| o.iter().map(|s| (s.ack(), s.repr.options.sack_blocks)).collect::<Vec<_>>();
    b.send(c.p(ACK, p, c.iss + 1).data(&[1; 100]));
    // The same segment again: D-SACK of it, below RCV.NXT.
    let out = b.send(c.p(ACK, p, c.iss + 1).data(&[1; 100]));
    assert_eq!(win(&out), vec![(p + 100, [Some((p, p + 100)), None, None, None])]);
    // Out of order, then its duplicate: D-SACK first, then the SACK block it lies in.
    b.send(c.p(ACK, p + 200, c.iss + 1).data(&[3; 100]));
    let out = b.send(c.p(ACK, p + 200, c.iss + 1).data(&[3; 100]));
    assert_eq!(win(&out), vec![(p + 100, [Some((p + 200, p + 300)), Some((p + 200, p + 300)), None, None])]);
    assert_eq!(b.counter(Counter::tcp_dsacks_sent), 2);
    // The next ACK carries no D-SACK any more.
    let out = b.send(c.p(ACK, p + 100, c.iss + 1).data(&[2; 100]));
    assert_eq!(win(&out), vec![(p + 300, [None, None, None, None])]);
}
