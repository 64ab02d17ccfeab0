//! TCP flow control, exact segments in virtual time: delayed ACKs and window updates, window
//! scaling (RFC 7323) and the peer's window, Nagle's algorithm, half-close.

mod tcp_behaviour_util;

use net::{Config, Counter, Recv, SendError, TcpState};
use tcp_behaviour_util::*;
use wire::TcpOptions;

fn delayed(ms_: u64) -> Config {
    let mut cfg = config();
    cfg.tcp.delayed_ack = ms(ms_);
    cfg
}

// ---- Delayed ACK and window updates ----

#[test]
fn one_in_order_segment_is_acked_after_the_delayed_ack_time() {
    let mut b = Bench::new(delayed(40));
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    assert_eq!(b.send(c.p(ACK | PSH, PEER_ISS + 1, c.iss + 1).data(&[1; 100])), vec![]);
    assert_eq!(b.advance(ms(39)), vec![]);
    assert_eq!(b.advance(ms(1)), vec![c.h(ACK, c.iss + 1, PEER_ISS + 101, 65535)]);
    assert_eq!(b.next_output(secs(10)), None);
}

#[test]
fn a_second_segment_is_acked_at_once() {
    let mut b = Bench::new(delayed(40));
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, c.iss + 1).data(&[1; 100])), vec![]);
    assert_eq!(b.advance(ms(10)), vec![]);
    assert_eq!(
        b.send(c.p(ACK | PSH, PEER_ISS + 101, c.iss + 1).data(&[2; 100])),
        vec![c.h(ACK, c.iss + 1, PEER_ISS + 201, 65535)]
    );
    assert_eq!(b.next_output(secs(10)), None, "the delayed-ACK timer was cancelled");
}

#[test]
fn out_of_order_segments_get_an_immediate_duplicate_ack_with_sack_blocks() {
    let mut b = Bench::new(delayed(40));
    let opts = PeerOpts { sack: true, ..PeerOpts::default() };
    let (c, _, synack) = passive_open(&mut b, 80, 40000, opts, ms(1));
    assert!(synack.repr.options.sack_permitted);
    let p = |k: u32| PEER_ISS + 1 + k * 100;
    let data = |k: u32| c.p(ACK, p(k), c.iss + 1).data(&[k as u8; 100]);
    let dup = |blocks: &[(u32, u32)]| c.h(ACK, c.iss + 1, p(0), 65535).sack(blocks);
    assert_eq!(b.send(data(1)), vec![dup(&[(p(1), p(2))])]);
    // The block of the latest segment first (RFC 2018 4).
    assert_eq!(b.send(data(3)), vec![dup(&[(p(3), p(4)), (p(1), p(2))])]);
    assert_eq!(b.counter(Counter::tcp_out_of_order), 2);
    // Filling the first hole is acknowledged at once too (RFC 5681 4.2).
    assert_eq!(b.send(data(0)), vec![c.h(ACK, c.iss + 1, p(2), 65535).sack(&[(p(3), p(4))])]);
    assert_eq!(b.send(data(2)), vec![c.h(ACK, c.iss + 1, p(4), 65535)]);
    let mut got = vec![];
    drain(&mut b.host, c.h, &mut got);
    assert_eq!(got, [[0u8; 100], [1; 100], [2; 100], [3; 100]].concat());
}

#[test]
fn each_out_of_order_segment_of_a_batch_gets_its_own_duplicate_ack() {
    // The sender counts duplicate ACKs (RFC 5681 3.2): one per out-of-order segment (4.2),
    // even when they arrive in one receive batch.
    for sack in [false, true] {
        let mut b = Bench::new(delayed(40));
        let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts { sack, ..PeerOpts::default() }, ms(1));
        let p = |k: u32| PEER_ISS + 1 + k * 100;
        let segs: Vec<Seg> = (1..4).map(|k| c.p(ACK, p(k), c.iss + 1).data(&[k as u8; 100])).collect();
        let dup = |k: u32| {
            let s = c.h(ACK, c.iss + 1, p(0), 65535);
            if sack {
                s.sack(&[(p(1), p(k + 1))])
            } else {
                s
            }
        };
        assert_eq!(b.send_all(&segs), vec![dup(1), dup(2), dup(3)], "sack {sack}");
    }
}

#[test]
fn reading_a_full_receive_buffer_sends_a_window_update_at_once() {
    let mut cfg = delayed(40);
    cfg.tcp.rx_buffer = 1000;
    let mut b = Bench::new(cfg);
    let (c, _, synack) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    assert_eq!(synack.window(), 1000);
    // The segment filling the buffer: its ACK is delayed.
    assert_eq!(b.send(c.p(ACK | PSH, PEER_ISS + 1, c.iss + 1).data(&[9; 1000])), vec![]);
    assert_eq!(b.advance(ms(10)), vec![]);
    // The application empties the buffer: the window update (carrying the ACK) goes at once.
    let mut buf = [0u8; 2000];
    assert_eq!(b.host.tcp_recv(c.h, &mut buf).unwrap(), Recv::Data(1000));
    assert_eq!(b.flush(), vec![c.h(ACK, c.iss + 1, PEER_ISS + 1001, 1000)]);
    assert_eq!(b.next_output(secs(10)), None, "no second ACK when the delayed-ACK timer would have fired");
}

#[test]
fn small_reads_do_not_send_tiny_window_updates() {
    let mut cfg = delayed(40);
    cfg.tcp.rx_buffer = 4000;
    let mut b = Bench::new(cfg);
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    let d = pattern(4000);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, c.iss + 1).data(&d[..1460])), vec![]);
    assert_eq!(
        b.send(c.p(ACK, PEER_ISS + 1461, c.iss + 1).data(&d[1460..2920])),
        vec![c.h(ACK, c.iss + 1, PEER_ISS + 2921, 1080)]
    );
    assert_eq!(b.send(c.p(ACK | PSH, PEER_ISS + 2921, c.iss + 1).data(&d[2920..])), vec![]);
    assert_eq!(b.advance(ms(40)), vec![c.h(ACK, c.iss + 1, PEER_ISS + 4001, 0)]);
    // Receiver SWS avoidance (RFC 1122 4.2.3.3): reading 100 bytes opens no window.
    let mut buf = [0u8; 1900];
    assert_eq!(b.host.tcp_recv(c.h, &mut buf[..100]).unwrap(), Recv::Data(100));
    assert_eq!(b.flush(), vec![]);
    // Half the buffer free: the window update goes out.
    assert_eq!(b.host.tcp_recv(c.h, &mut buf).unwrap(), Recv::Data(1900));
    assert_eq!(b.flush(), vec![c.h(ACK, c.iss + 1, PEER_ISS + 4001, 2000)]);
}

// ---- Window scaling and the peer's window ----

#[test]
fn a_large_receive_buffer_is_advertised_with_window_scaling() {
    let mut cfg = config();
    cfg.tcp.rx_buffer = 1 << 20;
    let mut b = Bench::new(cfg);
    let opts = PeerOpts { ws: Some(2), ..PeerOpts::default() };
    let (c, _, synack) = passive_open(&mut b, 80, 40000, opts, ms(1));
    // The SYN-ACK's window is never scaled (RFC 7323 2.2); it carries our shift.
    let o = TcpOptions { mss: Some(1460), window_scale: Some(7), ..TcpOptions::default() };
    assert_eq!(synack, c.h(SYN | ACK, c.iss, PEER_ISS + 1, 65535).opts(o));
    assert_eq!(b.host.tcp_stats(c.h).unwrap().wscale, Some((7, 2)));
    // 100 000 bytes, two segments at a time: more than an unscaled window could allow. Every
    // second segment is acknowledged with the free space in units of 128 bytes.
    let d = pattern(100_000);
    let segs: Vec<Seg> = d
        .chunks(1460)
        .enumerate()
        .map(|(i, ch)| c.p(ACK, PEER_ISS + 1 + (i * 1460) as u32, c.iss + 1).data(ch))
        .collect();
    for (k, pair) in segs.chunks(2).take(34).enumerate() {
        let got = 2920 * (k as u32 + 1);
        assert_eq!(b.send_all(pair), vec![c.h(ACK, c.iss + 1, PEER_ISS + 1 + got, (((1 << 20) - got) >> 7) as u16)]);
    }
    assert_eq!(b.send(segs[68].clone()), vec![]);
    let rest = c.h(ACK, c.iss + 1, PEER_ISS + 100_001, (((1 << 20) - 100_000) >> 7) as u16);
    assert_eq!(b.advance(ms(1)), vec![rest]);
    assert_eq!(b.host.tcp_recv_ready(c.h).unwrap(), 100_000);
}

#[test]
fn the_advertised_window_never_promises_more_than_the_receive_buffer() {
    let mut cfg = config();
    cfg.tcp.rx_buffer = 65536;
    let mut b = Bench::new(cfg);
    let opts = PeerOpts { ws: Some(0), ..PeerOpts::default() };
    let (c, _, _) = passive_open(&mut b, 80, 40000, opts, ms(1));
    assert_eq!(b.host.tcp_stats(c.h).unwrap().wscale, Some((7, 0)));
    // The peer sends as much as each ACK allows; the application does not read. The right
    // edge (ACK + window << 7) must stay within the buffer, and everything sent within the
    // window must be taken.
    let start = PEER_ISS + 1;
    let d = pattern(65536);
    let (mut seq, mut edge) = (start, start + 65535);
    while seq != edge {
        let len = (edge - seq).min(1460) as usize;
        let off = (seq - start) as usize;
        let out = b.send(c.p(ACK, seq, c.iss + 1).data(&d[off..off + len]));
        seq += len as u32;
        for a in out.iter().chain(b.advance(ms(1)).iter()) {
            let e = a.ack() + ((a.window() as u32) << 7);
            assert!(
                e.wrapping_sub(start) <= 65536,
                "right edge {} bytes past the start, buffer 65536",
                e.wrapping_sub(start)
            );
            assert_eq!(a.ack(), seq, "all data taken");
            edge = e;
        }
    }
    assert_eq!(b.host.tcp_recv_ready(c.h).unwrap(), (seq - start) as usize);
    assert_eq!(b.counter(Counter::rx_drop_tcp_rx_buffer_full), 0);
}

#[test]
fn the_sender_never_exceeds_the_peers_scaled_window() {
    let mut b = Bench::new(config());
    let opts = PeerOpts { ws: Some(2), window: 1000, ..PeerOpts::default() };
    let (c, _, _) = passive_open(&mut b, 80, 40000, opts, ms(1));
    assert_eq!(b.host.tcp_stats(c.h).unwrap().snd_wnd, 4000, "1000 << 2");
    let d = pattern(20_000);
    b.host.tcp_send(c.h, &d).unwrap();
    let x = c.iss + 1;
    let seg = |off: usize, len: usize| c.h(ACK, x + off as u32, PEER_ISS + 1, 2048).data(&d[off..off + len]);
    // The 1080 bytes the window leaves after two full segments are less than half the largest
    // window offered: silly-window avoidance holds them while data is in flight.
    assert_eq!(b.flush(), vec![seg(0, 1460), seg(1460, 1460)]);
    // Acknowledged, the window shrinks to 2000 bytes beyond the ACK.
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x + 2920).win(500)), vec![seg(2920, 1460)]);
    // A partial ACK with the same right edge opens nothing worth sending.
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x + 4000).win(230)), vec![]);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x + 4380).win(1000)), vec![seg(4380, 1460), seg(5840, 1460)]);
    // Everything acknowledged and a small window (1200 < 2000) with nothing in flight: the
    // override timer lets the short segment go instead of waiting forever.
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x + 7300).win(300)), vec![]);
    let held_at = b.now;
    let (at, out) = b.next_output(secs(5)).expect("the override timer sends");
    assert_eq!(out, vec![seg(7300, 1200)]);
    assert!(at >= held_at + ms(200), "not before the override timeout: {:?}", at - held_at);
}

#[test]
fn an_old_ack_does_not_move_the_send_window() {
    let mut b = Bench::new(delayed(40));
    let opts = PeerOpts { ws: Some(2), window: 1000, ..PeerOpts::default() };
    let (c, _, _) = passive_open(&mut b, 80, 40000, opts, ms(1));
    let d = pattern(20_000);
    b.host.tcp_send(c.h, &d).unwrap();
    let x = c.iss + 1;
    assert_eq!(b.flush().len(), 2);
    let out = b.send(c.p(ACK | PSH, PEER_ISS + 1, x + 2920).data(b"hi"));
    assert_eq!(
        out.iter().map(|s| (s.seq() - x, s.len(), s.ack())).collect::<Vec<_>>(),
        vec![(2920, 1460, PEER_ISS + 3), (4380, 1460, PEER_ISS + 3)]
    );
    // New data from the peer carrying an older (still acceptable) ACK and a window relative
    // to it: right edge x + 1000 + 5000, barely past what is already sent (x + 5840). RFC 9293
    // updates SND.WND only when SND.UNA =< SEG.ACK: taken relative to SND.UNA, this window
    // would let a full segment go beyond the peer's edge.
    assert_eq!(b.send(c.p(ACK | PSH, PEER_ISS + 3, x + 1000).win(1250).data(b"yo")), vec![]);
    assert_eq!(b.host.tcp_stats(c.h).unwrap().snd_wnd, 4000);
    assert_eq!(b.host.tcp_recv_ready(c.h).unwrap(), 4);
}

/// Check that no data segment in the log went beyond the right edge of the window the
/// receiver had advertised so far (ACK + window << shift).
fn assert_within_peer_window(r: &Relay, dir: Dir, shift: u8) -> usize {
    let back = if dir == Dir::AtoB { Dir::BtoA } else { Dir::AtoB };
    let mut edge: Option<u32> = None;
    let mut checked = 0;
    for l in &r.log {
        if l.dir == back && l.seg.flags() & ACK != 0 && !l.dropped {
            let sh = if l.seg.flags() & SYN != 0 { 0 } else { shift };
            let e = l.seg.ack().wrapping_add((l.seg.window() as u32) << sh);
            if edge.is_none_or(|x| (e.wrapping_sub(x) as i32) > 0) {
                edge = Some(e);
            }
        }
        if l.dir == dir && !l.seg.payload.is_empty() {
            let end = l.seg.seq().wrapping_add(l.seg.len() as u32);
            let e = edge.expect("data before any window");
            assert!((end.wrapping_sub(e) as i32) <= 0, "segment {:?} beyond the right edge {e}", l.seg);
            checked += 1;
        }
    }
    checked
}

/// Move `n` bytes from a to b, b reading `read_chunk` bytes every `read_every` steps.
fn relay_transfer(
    r: &mut Relay,
    c: net::TcpHandle,
    s: net::TcpHandle,
    n: usize,
    read_chunk: usize,
    read_every: u32,
) -> Vec<u8> {
    let data = pattern(n);
    let (mut sent, mut got, mut steps) = (0, vec![], 0u32);
    let mut buf = vec![0u8; read_chunk];
    let ok = r.run_until(secs(60), |r| {
        if sent < data.len() {
            sent += r.a.tcp_send(c, &data[sent..]).unwrap();
        }
        steps += 1;
        if steps % read_every == 0 {
            if let Recv::Data(k) = r.b.tcp_recv(s, &mut buf).unwrap() {
                got.extend_from_slice(&buf[..k]);
            }
        }
        got.len() == n
    });
    assert!(ok, "transfer incomplete: {} of {n}", got.len());
    assert!(got == data);
    got
}

#[test]
fn a_slow_reader_limits_a_scaled_sender_to_its_window() {
    let ca = host_config("10.0.0.1/24");
    let mut cb = host_config("10.0.0.2/24");
    cb.tcp.rx_buffer = 50_000;
    let mut r = Relay::new(ca, cb);
    let (c, s) = relay_connect(&mut r, 5001);
    assert_eq!(r.a.tcp_stats(c).unwrap().wscale, Some((7, 7)));
    relay_transfer(&mut r, c, s, 1_000_000, 3000, 20);
    let checked = assert_within_peer_window(&r, Dir::AtoB, 7);
    assert!(checked > 600, "{checked}");
    assert!(r.log.iter().any(|l| l.dir == Dir::BtoA && l.seg.window() == 0), "the window closed at times");
}

#[test]
fn a_stack_without_window_scaling_interoperates_with_one_that_has_it() {
    for (wa, wb) in [(Some(7), None), (None, Some(7))] {
        let mut ca = host_config("10.0.0.1/24");
        ca.tcp.window_scale = wa;
        let mut cb = host_config("10.0.0.2/24");
        cb.tcp.window_scale = wb;
        let mut r = Relay::new(ca, cb);
        let (c, s) = relay_connect(&mut r, 5001);
        let (syn, synack) = (r.segs(Dir::AtoB)[0].clone(), r.segs(Dir::BtoA)[0].clone());
        assert_eq!((syn.flags(), synack.flags()), (SYN, SYN | ACK));
        assert_eq!(syn.repr.options.window_scale, wa);
        assert_eq!(synack.repr.options.window_scale, None, "only offered back when both do");
        assert_eq!((r.a.tcp_stats(c).unwrap().wscale, r.b.tcp_stats(s).unwrap().wscale), (None, None));
        relay_transfer(&mut r, c, s, 300_000, 16384, 1);
        // Unscaled windows: 64 KiB at most, even with 256 KiB buffers.
        assert_eq!(r.a.tcp_stats(c).unwrap().snd_wnd, 65535);
        assert!(assert_within_peer_window(&r, Dir::AtoB, 0) > 200);
    }
}

// ---- Nagle ----

#[test]
fn nagle_coalesces_small_writes_while_data_is_unacknowledged() {
    let mut cfg = config();
    cfg.tcp.nagle = true;
    let mut b = Bench::new(cfg);
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    let d = pattern(3000);
    let x = c.iss + 1;
    let seg =
        |flags: u8, off: usize, len: usize| c.h(flags, x + off as u32, PEER_ISS + 1, 65535).data(&d[off..off + len]);
    b.host.tcp_send(c.h, &d[..10]).unwrap();
    assert_eq!(b.flush(), vec![seg(ACK | PSH, 0, 10)], "nothing in flight: sent at once");
    b.host.tcp_send(c.h, &d[10..20]).unwrap();
    b.host.tcp_send(c.h, &d[20..30]).unwrap();
    assert_eq!(b.flush(), vec![], "held while the first is unacknowledged");
    // A full segment may always go; the small rest waits.
    b.host.tcp_send(c.h, &d[30..1500]).unwrap();
    assert_eq!(b.flush(), vec![seg(ACK, 10, 1460)]);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x + 10)), vec![]);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x + 1470)), vec![seg(ACK | PSH, 1470, 30)]);
}

#[test]
fn without_nagle_every_small_write_goes_out_at_once() {
    let mut b = Bench::new(config());
    assert!(!b.host.config().tcp.nagle, "off by default");
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    let x = c.iss + 1;
    for k in 0..3u32 {
        b.host.tcp_send(c.h, &[k as u8; 10]).unwrap();
        assert_eq!(b.flush(), vec![c.h(ACK | PSH, x + 10 * k, PEER_ISS + 1, 65535).data(&[k as u8; 10])]);
    }
}

// ---- Half-close ----

#[test]
fn half_close_the_peer_keeps_sending_until_it_closes_too() {
    let mut r = Relay::pair();
    let (c, s) = relay_connect(&mut r, 5001);
    r.a.tcp_send(c, b"request").unwrap();
    r.a.tcp_shutdown(c).unwrap();
    let mut req = vec![];
    assert!(r.run_until(secs(1), |r| drain(&mut r.b, s, &mut req)), "b sees the end of a's stream");
    assert_eq!(req, b"request");
    assert!(r.run_until(secs(1), |r| r.a.tcp_state(c).unwrap() == TcpState::FinWait2));
    assert_eq!(r.b.tcp_state(s).unwrap(), TcpState::CloseWait);
    assert!(matches!(r.a.tcp_send(c, b"more"), Err(SendError::NotConnected)));
    // b keeps sending a large response; a receives all of it while half-closed.
    let data = pattern(500_000);
    let (mut sent, mut got) = (0, vec![]);
    assert!(r.run_until(secs(10), |r| {
        if sent < data.len() {
            sent += r.b.tcp_send(s, &data[sent..]).unwrap();
        }
        drain(&mut r.a, c, &mut got);
        got.len() == data.len()
    }));
    assert!(got == data);
    assert_eq!(r.a.tcp_state(c).unwrap(), TcpState::FinWait2);
    r.b.tcp_close(s).unwrap();
    let mut rest = vec![];
    assert!(r.run_until(secs(1), |r| drain(&mut r.a, c, &mut rest) && r.b.tcp_sessions() == 0));
    assert!(rest.is_empty());
    assert_eq!(r.a.tcp_state(c).unwrap(), TcpState::TimeWait);
    assert_eq!(r.a.tcp_error(c).unwrap(), None);
}

#[test]
fn shutdown_with_queued_data_sends_the_fin_after_the_data() {
    let mut b = Bench::new(config());
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    b.host.tcp_send(c.h, b"last words").unwrap();
    b.host.tcp_shutdown(c.h).unwrap();
    assert_eq!(
        b.flush(),
        vec![
            c.h(ACK | PSH, c.iss + 1, PEER_ISS + 1, 65535).data(b"last words"),
            c.h(FIN | ACK, c.iss + 11, PEER_ISS + 1, 65535)
        ]
    );
    assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::FinWait1);
    // Retransmitted after the RTO, the data and the FIN travel together.
    let (_, out) = b.next_output(secs(10)).unwrap();
    assert_eq!(out, vec![c.h(FIN | ACK | PSH, c.iss + 1, PEER_ISS + 1, 65535).data(b"last words")]);
}

#[test]
fn an_application_limited_sender_keeps_its_congestion_window() {
    let mut b = Bench::new(config());
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    let cwnd0 = b.host.tcp_stats(c.h).unwrap().cwnd;
    let x = c.iss + 1;
    // 100 bytes at a time, each acknowledged before the next: the flight never fills cwnd.
    for i in 0..50u32 {
        b.host.tcp_send(c.h, &[1u8; 100]).unwrap();
        assert_eq!(b.flush().len(), 1);
        b.send(c.p(ACK, PEER_ISS + 1, x + (i + 1) * 100));
    }
    assert_eq!(b.host.tcp_stats(c.h).unwrap().cwnd, cwnd0, "no growth without use (RFC 7661)");
    // A flight that fills the window does grow it (slow start).
    b.host.tcp_send(c.h, &pattern(200_000)).unwrap();
    let n = b.flush().iter().map(|s| s.len() as u32).sum::<u32>();
    assert!(n >= cwnd0 - 1460, "the flight fills cwnd: {n} of {cwnd0}");
    b.send(c.p(ACK, PEER_ISS + 1, x + 5000 + n));
    assert!(b.host.tcp_stats(c.h).unwrap().cwnd > cwnd0);
}

/// A host whose 1,024-byte receive buffer is its whole window (no scaling, no growth).
fn small_window_host() -> Bench {
    let mut cfg = config();
    cfg.tcp.rx_buffer = 1024;
    cfg.tcp.rx_buffer_max = 1024;
    cfg.tcp.window_scale = None;
    Bench::new(cfg)
}

#[test]
fn data_past_the_offered_window_is_trimmed_at_its_right_edge() {
    let mut b = small_window_host();
    let (c, _, synack) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    assert_eq!(synack.repr.window, 1024);
    // The peer ignores the window and sends 1,400 bytes in one segment: the first 1,024 are
    // taken, the rest is trimmed (RFC 9293 3.10.7.4), and the ACK says so at once.
    let data = pattern(1400);
    let out = b.send(c.p(ACK | PSH, PEER_ISS + 1, c.iss + 1).data(&data));
    assert_eq!(out, vec![c.h(ACK, c.iss + 1, PEER_ISS + 1 + 1024, 0)]);
    assert_eq!(b.counter(Counter::tcp_rx_trimmed), 1);
    let mut buf = vec![0u8; 2048];
    assert_eq!(b.host.tcp_recv(c.h, &mut buf).unwrap(), Recv::Data(1024));
    assert_eq!(&buf[..1024], &data[..1024]);
    // The reader made room: the window update goes out first, and the rest is taken.
    let out = b.send(c.p(ACK | PSH, PEER_ISS + 1 + 1024, c.iss + 1).data(&data[1024..]));
    assert_eq!(out.first().map(|s| (s.ack(), s.repr.window)), Some((PEER_ISS + 1 + 1024, 1024)));
    assert_eq!(b.host.tcp_recv(c.h, &mut buf).unwrap(), Recv::Data(376));
    assert_eq!(&buf[..376], &data[1024..]);
    assert_eq!(b.counter(Counter::tcp_rx_trimmed), 1);
}

#[test]
fn the_rx_bypass_takes_nothing_past_the_offered_window() {
    let mut b = small_window_host();
    let got = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sink = got.clone();
    b.host.tcp_set_rx_handler(move |_, d| {
        sink.fetch_add(d.len(), std::sync::atomic::Ordering::Relaxed);
    });
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    b.host.tcp_set_rx_bypass(c.h, true).unwrap();
    let data = pattern(1400);
    let out = b.send(c.p(ACK | PSH, PEER_ISS + 1, c.iss + 1).data(&data));
    assert_eq!(got.load(std::sync::atomic::Ordering::Relaxed), 1024);
    assert_eq!(out.last().map(|s| s.ack()), Some(PEER_ISS + 1 + 1024));
    assert_eq!(b.counter(Counter::tcp_rx_trimmed), 1);
}
