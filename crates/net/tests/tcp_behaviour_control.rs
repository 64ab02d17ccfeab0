//! TCP control segments, exact segments in virtual time: RST handling per state and to closed
//! ports (RFC 9293), challenge ACKs (RFC 5961), simultaneous open and close, PAWS and
//! TS.Recent (RFC 7323), the listen backlog and SYN-ACK retransmission.

mod tcp_behaviour_util;

use net::{Counter, Recv, RecvError, SendError, TcpError, TcpState};
use std::net::SocketAddrV4;
use tcp_behaviour_util::*;
use wire::TcpOptions;

fn mss_only() -> TcpOptions {
    TcpOptions { mss: Some(1460), ..TcpOptions::default() }
}

fn peer_syn(peer_port: u16, port: u16) -> Seg {
    Seg::new(peer_port, port, SYN, PEER_ISS, 0, 65535).opts(mss_only())
}

// ---- RST handling per state ----

#[test]
fn syn_sent_ignores_rst_without_ack_and_is_refused_by_rst_with_acceptable_ack() {
    let mut b = Bench::new(config());
    let h = b.host.tcp_connect_from(40000, SocketAddrV4::new(PEER, 80)).unwrap();
    let iss = b.flush()[0].seq();
    let p = |flags: u8, seq: u32, ack: u32| Seg::new(80, 40000, flags, seq, ack, 0);
    // A reset without ACK cannot be verified against our SYN: dropped (RFC 9293 3.10.7.3).
    assert_eq!(b.send(p(RST, PEER_ISS, 0)), vec![]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_rst_ignored), 1);
    // A reset whose ACK is not SND.UNA < ACK <= SND.NXT: dropped without reply.
    assert_eq!(b.send(p(RST | ACK, 0, iss + 2)), vec![]);
    assert_eq!(b.send(p(RST | ACK, 0, iss)), vec![]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_bad_ack), 2);
    // A SYN-ACK with a bad ACK is answered with <SEQ=SEG.ACK><CTL=RST>.
    assert_eq!(b.send(p(SYN | ACK, PEER_ISS, iss + 100)), vec![Seg::new(40000, 80, RST, iss + 100, 0, 0)]);
    assert_eq!(b.host.tcp_connect_result(h).unwrap(), None);
    assert_eq!(b.host.tcp_state(h).unwrap(), TcpState::SynSent);
    // RST|ACK acknowledging our SYN: connection refused; nothing more is sent.
    assert_eq!(b.send(p(RST | ACK, 0, iss + 1)), vec![]);
    assert_eq!(b.host.tcp_connect_result(h).unwrap(), Some(Err(TcpError::Refused)));
    assert_eq!(b.host.tcp_state(h).unwrap(), TcpState::Closed);
    assert_eq!(b.next_output(secs(30)), None, "no SYN retransmission");
}

#[test]
fn syn_received_rst_frees_the_half_open_session_and_the_listener_stays() {
    let mut b = Bench::new(config());
    let l = b.host.tcp_listen(80, 1).unwrap();
    let out = b.send(peer_syn(40000, 80));
    assert_eq!(out.len(), 1);
    let iss = out[0].seq();
    assert_eq!(out, vec![Seg::new(80, 40000, SYN | ACK, iss, PEER_ISS + 1, 65535).opts(mss_only())]);
    assert_eq!(b.host.tcp_sessions(), 1);
    // RST at RCV.NXT: back to LISTEN (RFC 9293 3.10.7.4), the half-open session is gone.
    assert_eq!(b.send(Seg::new(40000, 80, RST, PEER_ISS + 1, 0, 0)), vec![]);
    assert_eq!(b.host.tcp_sessions(), 0);
    assert_eq!(b.host.tcp_accept(l), None);
    assert_eq!(b.counter(Counter::tcp_resets_received), 1);
    // The backlog slot is free again (backlog 1): a new SYN is answered.
    let out = b.send(peer_syn(40001, 80));
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].flags(), out[0].repr.dst_port), (SYN | ACK, 40001));
    // Only the new session's SYN-ACK is ever retransmitted.
    let (_, out) = b.next_output(secs(10)).unwrap();
    assert_eq!(out.iter().map(|s| s.repr.dst_port).collect::<Vec<_>>(), vec![40001]);
}

#[test]
fn syn_received_answers_an_unacceptable_ack_with_rst_and_stays_half_open() {
    let mut b = Bench::new(config());
    let l = b.host.tcp_listen(80, 1).unwrap();
    let iss = b.send(peer_syn(40000, 80))[0].seq();
    // An ACK of something we never sent: <SEQ=SEG.ACK><CTL=RST> (RFC 9293 3.10.7.4).
    let bad = Seg::new(40000, 80, ACK, PEER_ISS + 1, iss + 1000, 65535);
    assert_eq!(b.send(bad), vec![Seg::new(80, 40000, RST, iss + 1000, 0, 0)]);
    // An ACK that acknowledges nothing new (our ISS itself) is just as unacceptable.
    assert_eq!(b.send(Seg::new(40000, 80, ACK, PEER_ISS + 1, iss, 65535)), vec![Seg::new(80, 40000, RST, iss, 0, 0)]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_unacceptable_ack), 2);
    assert_eq!(b.host.tcp_accept(l), None);
    assert_eq!(b.host.tcp_sessions(), 1, "the half-open session survives");
    // The right ACK still completes the handshake.
    assert_eq!(b.send(Seg::new(40000, 80, ACK, PEER_ISS + 1, iss + 1, 65535)), vec![]);
    assert!(b.host.tcp_accept(l).is_some());
}

#[test]
fn exact_rst_resets_established_close_wait_fin_wait_1_and_fin_wait_2() {
    for state in [TcpState::Established, TcpState::CloseWait, TcpState::FinWait1, TcpState::FinWait2] {
        let mut b = Bench::new(config());
        let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
        let mut rcv_nxt = PEER_ISS + 1;
        match state {
            TcpState::CloseWait => {
                let out = b.send(c.p(FIN | ACK, PEER_ISS + 1, c.iss + 1));
                assert_eq!(out, vec![c.h(ACK, c.iss + 1, PEER_ISS + 2, 65535)]);
                rcv_nxt += 1;
            }
            TcpState::FinWait1 | TcpState::FinWait2 => {
                b.host.tcp_shutdown(c.h).unwrap();
                assert_eq!(b.flush(), vec![c.h(FIN | ACK, c.iss + 1, PEER_ISS + 1, 65535)]);
                if state == TcpState::FinWait2 {
                    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, c.iss + 2)), vec![]);
                }
            }
            _ => {}
        }
        assert_eq!(b.host.tcp_state(c.h).unwrap(), state);
        assert_eq!(b.send(c.p(RST, rcv_nxt, 0)), vec![], "{state:?}: no answer to a reset");
        assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::Closed, "{state:?}");
        assert_eq!(b.host.tcp_error(c.h).unwrap(), Some(TcpError::Reset), "{state:?}");
        assert!(matches!(
            b.host.tcp_recv(c.h, &mut [0u8; 4]),
            Err(RecvError::Connection(TcpError::Reset)) | Ok(Recv::Eof)
        ));
        assert!(matches!(b.host.tcp_send(c.h, b"x"), Err(SendError::Connection(TcpError::Reset))), "{state:?}");
        assert_eq!(b.next_output(secs(100)), None, "{state:?}: no retransmissions after a reset");
        b.host.tcp_close(c.h).unwrap();
        assert_eq!(b.host.tcp_sessions(), 0);
    }
}

#[test]
fn segments_to_a_closed_port_are_answered_with_rst() {
    let mut b = Bench::new(config());
    let rst = |flags: u8, seq: u32, ack: u32| Seg::new(81, 40000, flags, seq, ack, 0);
    // No ACK: <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK> (SYN and FIN count).
    assert_eq!(b.send(peer_syn(40000, 81)), vec![rst(RST | ACK, 0, PEER_ISS + 1)]);
    assert_eq!(
        b.send(Seg::new(40000, 81, FIN | PSH, PEER_ISS, 0, 65535).data(b"hello")),
        vec![rst(RST | ACK, 0, PEER_ISS + 6)]
    );
    assert_eq!(b.send(Seg::new(40000, 81, 0, PEER_ISS, 0, 65535).data(b"abc")), vec![rst(RST | ACK, 0, PEER_ISS + 3)]);
    // ACK set: <SEQ=SEG.ACK><CTL=RST>.
    assert_eq!(b.send(Seg::new(40000, 81, ACK | PSH, PEER_ISS, 12345, 65535).data(b"hello")), vec![rst(RST, 12345, 0)]);
    assert_eq!(b.send(Seg::new(40000, 81, SYN | ACK, PEER_ISS, 777, 65535)), vec![rst(RST, 777, 0)]);
    // A reset is never answered.
    assert_eq!(b.send(Seg::new(40000, 81, RST | ACK, PEER_ISS, 1, 0)), vec![]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_no_session), 6);
    assert_eq!(b.counter(Counter::tcp_resets_sent), 5);
}

#[test]
fn non_syn_segments_to_a_listening_port_are_answered_with_rst() {
    let mut b = Bench::new(config());
    let l = b.host.tcp_listen(80, 8).unwrap();
    let rst = |flags: u8, seq: u32, ack: u32| Seg::new(80, 40000, flags, seq, ack, 0);
    assert_eq!(b.send(Seg::new(40000, 80, ACK, PEER_ISS, 4242, 65535)), vec![rst(RST, 4242, 0)]);
    assert_eq!(b.send(Seg::new(40000, 80, SYN | ACK, PEER_ISS, 99, 65535)), vec![rst(RST, 99, 0)]);
    assert_eq!(b.send(Seg::new(40000, 80, RST, PEER_ISS, 0, 65535)), vec![]);
    assert_eq!((b.host.tcp_sessions(), b.host.tcp_accept(l)), (0, None));
}

// ---- Challenge ACKs (RFC 5961) ----

#[test]
fn rst_in_window_but_not_at_rcv_nxt_gets_a_challenge_ack() {
    let mut b = Bench::new(config());
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    let challenge = c.h(ACK, c.iss + 1, PEER_ISS + 1, 65535);
    assert_eq!(b.send(c.p(RST, PEER_ISS + 1 + 1000, 0)), vec![challenge.clone()]);
    assert_eq!(b.send(c.p(RST | ACK, PEER_ISS + 1 + 65534, c.iss + 1)), vec![challenge.clone()], "last in-window byte");
    assert_eq!((b.counter(Counter::tcp_challenge_acks), b.counter(Counter::rx_drop_tcp_rst_challenged)), (2, 2));
    assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::Established);
    // Outside the window (or just before it): silently dropped.
    assert_eq!(b.send(c.p(RST, PEER_ISS + 1 + 65535, 0)), vec![]);
    assert_eq!(b.send(c.p(RST, PEER_ISS, 0)), vec![]);
    assert_eq!(b.counter(Counter::tcp_challenge_acks), 2);
    // The connection still works: data is accepted.
    assert_eq!(b.send(c.p(ACK | PSH, PEER_ISS + 1, c.iss + 1).data(b"ping")), vec![]);
    assert_eq!(b.host.tcp_recv_ready(c.h).unwrap(), 4);
    // A legitimate peer answers the challenge ACK with a reset at exactly RCV.NXT.
    assert_eq!(b.send(c.p(RST, PEER_ISS + 5, 0)), vec![]);
    assert_eq!(b.host.tcp_error(c.h).unwrap(), Some(TcpError::Reset));
}

#[test]
fn syn_on_an_established_connection_gets_a_challenge_ack() {
    let mut b = Bench::new(config());
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    let ack = c.h(ACK, c.iss + 1, PEER_ISS + 1, 65535);
    // In window (RFC 5961 4.2): challenge ACK, connection unchanged.
    assert_eq!(b.send(c.p(SYN, PEER_ISS + 1, 0).opts(mss_only())), vec![ack.clone()]);
    assert_eq!(b.send(c.p(SYN, PEER_ISS + 5000, 0).opts(mss_only())), vec![ack.clone()]);
    assert_eq!((b.counter(Counter::rx_drop_tcp_syn_challenged), b.counter(Counter::tcp_challenge_acks)), (2, 2));
    // The old SYN again (before the window): a plain duplicate ACK.
    assert_eq!(b.send(peer_syn(40000, 80)), vec![ack.clone()]);
    assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::Established);
    assert_eq!(b.host.tcp_sessions(), 1);
    assert_eq!(b.send(c.p(ACK | PSH, PEER_ISS + 1, c.iss + 1).data(b"data")), vec![]);
    assert_eq!(b.host.tcp_recv_ready(c.h).unwrap(), 4);
}

#[test]
fn an_ack_older_than_the_window_gets_a_challenge_ack_and_its_data_is_dropped() {
    let mut cfg = config();
    cfg.tcp.delayed_ack = ms(0);
    let mut b = Bench::new(cfg);
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    b.host.tcp_send(c.h, &[7u8; 100]).unwrap();
    assert_eq!(b.flush().len(), 1);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, c.iss + 101)), vec![]);
    let una = c.iss + 101;
    // SEG.ACK < SND.UNA - MAX.SND.WND (65535): challenge ACK, segment dropped (RFC 5961 5.2).
    let out = b.send(c.p(ACK | PSH, PEER_ISS + 1, una.wrapping_sub(65536)).data(b"0123456789"));
    assert_eq!(out, vec![c.h(ACK, una, PEER_ISS + 1, 65535)]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_ack_too_old), 1);
    assert_eq!(b.host.tcp_recv_ready(c.h).unwrap(), 0);
    // SEG.ACK = SND.UNA - MAX.SND.WND is still acceptable: the data is taken.
    let out = b.send(c.p(ACK | PSH, PEER_ISS + 1, una.wrapping_sub(65535)).data(b"0123456789"));
    assert_eq!(out, vec![c.h(ACK, una, PEER_ISS + 11, 65535)]);
    assert_eq!(b.host.tcp_recv_ready(c.h).unwrap(), 10);
    // An ACK of data never sent gets an ACK too, and its data is dropped (RFC 9293).
    let out = b.send(c.p(ACK | PSH, PEER_ISS + 11, una + 1).data(b"x"));
    assert_eq!(out, vec![c.h(ACK, una, PEER_ISS + 11, 65535)]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_ack_unsent), 1);
}

#[test]
fn challenge_acks_are_rate_limited() {
    let mut cfg = config();
    cfg.tcp.challenge_ack_limit = 2;
    let mut b = Bench::new(cfg);
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    let challenge = c.h(ACK, c.iss + 1, PEER_ISS + 1, 65535);
    let bad: Vec<Seg> = (0..3).map(|i| c.p(RST, PEER_ISS + 100 + i, 0)).collect();
    assert_eq!(b.send(bad[0].clone()), vec![challenge.clone()]);
    assert_eq!(b.send(bad[1].clone()), vec![challenge.clone()]);
    assert_eq!(b.send(bad[2].clone()), vec![]);
    assert_eq!(b.counter(Counter::tcp_challenge_acks_suppressed), 1);
    assert_eq!(b.send(c.p(SYN, PEER_ISS + 1, 0)), vec![], "the limit covers SYN challenges too");
    assert_eq!(b.counter(Counter::tcp_challenge_acks_suppressed), 2);
    // A second later the budget is back.
    assert_eq!(b.advance(secs(1)), vec![]);
    assert_eq!(b.send(bad[0].clone()), vec![challenge]);
    assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::Established);
}

#[test]
fn challenge_acks_sent_and_suppressed_add_up_to_the_segments_that_called_for_one() {
    let mut b = Bench::new(config());
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    let challenge = c.h(ACK, c.iss + 1, PEER_ISS + 1, 65535);
    // Five blind RSTs in one batch call for five challenges: one ACK leaves, so one is
    // counted sent and the four folded into it suppressed.
    let bad: Vec<Seg> = (0..5).map(|i| c.p(RST, PEER_ISS + 100 + i, 0)).collect();
    assert_eq!(b.send_all(&bad), vec![challenge.clone()]);
    let sent = b.counter(Counter::tcp_challenge_acks);
    let suppressed = b.counter(Counter::tcp_challenge_acks_suppressed);
    assert_eq!((sent, suppressed), (1, 4));
    assert_eq!(sent + suppressed, b.counter(Counter::rx_drop_tcp_rst_challenged));
    // The next one is a new challenge of its own.
    assert_eq!(b.send(bad[0].clone()), vec![challenge]);
    assert_eq!(b.counter(Counter::tcp_challenge_acks), 2);
}

// ---- Simultaneous open and close ----

#[test]
fn simultaneous_open_reaches_established_on_both_sides() {
    let mut r = Relay::pair();
    let ha = r.a.tcp_connect_from(1111, SocketAddrV4::new(r.b.ip(), 2222)).unwrap();
    let hb = r.b.tcp_connect_from(2222, SocketAddrV4::new(r.a.ip(), 1111)).unwrap();
    // Both SYNs cross on the wire (each stack first resolves the other's MAC address).
    assert!(r.run_until(secs(1), |r| {
        r.a.tcp_state(ha).unwrap() == TcpState::Established && r.b.tcp_state(hb).unwrap() == TcpState::Established
    }));
    assert!(r.now < T0 + ms(5), "no retransmission was needed");
    let (sa, sb) = (r.segs(Dir::AtoB), r.segs(Dir::BtoA));
    let (iss_a, iss_b) = (sa[0].seq(), sb[0].seq());
    for (segs, iss, irs) in [(&sa, iss_a, iss_b), (&sb, iss_b, iss_a)] {
        // SYN, then SYN-ACK with the same ISS (RFC 9293 figure 8); no third segment.
        assert_eq!(segs.len(), 2, "{segs:?}");
        assert_eq!((segs[0].flags(), segs[0].seq(), segs[0].ack()), (SYN, iss, 0));
        assert_eq!((segs[1].flags(), segs[1].seq(), segs[1].ack()), (SYN | ACK, iss, irs + 1));
        let o = segs[1].repr.options;
        assert_eq!(
            (o.mss, o.window_scale, o.sack_permitted, o.timestamps.is_some()),
            (Some(1460), Some(7), true, true)
        );
    }
    for (s, h) in [(&r.a, ha), (&r.b, hb)] {
        let st = s.tcp_stats(h).unwrap();
        assert_eq!((st.wscale, st.sack, st.timestamps, st.mss), (Some((7, 7)), true, true, 1448));
    }
    // Data flows both ways.
    r.a.tcp_send(ha, b"from a").unwrap();
    r.b.tcp_send(hb, b"from b").unwrap();
    let (mut ga, mut gb) = (vec![], vec![]);
    assert!(r.run_until(secs(1), |r| {
        drain(&mut r.a, ha, &mut ga);
        drain(&mut r.b, hb, &mut gb);
        ga == b"from b" && gb == b"from a"
    }));
}

#[test]
fn simultaneous_close_goes_through_closing_to_time_wait() {
    let mut ca = host_config("10.0.0.1/24");
    ca.tcp.time_wait = secs(2);
    let mut cb = host_config("10.0.0.2/24");
    cb.tcp.time_wait = secs(2);
    let mut r = Relay::new(ca, cb);
    let (ha, hb) = relay_connect(&mut r, 5001);
    r.log.clear();
    r.a.tcp_shutdown(ha).unwrap();
    r.b.tcp_shutdown(hb).unwrap();
    let (mut states_a, mut states_b) = (vec![], vec![]);
    assert!(r.run_until(secs(1), |r| {
        let (s1, s2) = (r.a.tcp_state(ha).unwrap(), r.b.tcp_state(hb).unwrap());
        if states_a.last() != Some(&s1) {
            states_a.push(s1);
        }
        if states_b.last() != Some(&s2) {
            states_b.push(s2);
        }
        s1 == TcpState::TimeWait && s2 == TcpState::TimeWait
    }));
    let expected = vec![TcpState::FinWait1, TcpState::Closing, TcpState::TimeWait];
    assert_eq!((states_a, states_b), (expected.clone(), expected));
    // Each side sent its FIN, then the ACK of the other's FIN: nothing else.
    for dir in [Dir::AtoB, Dir::BtoA] {
        let s = r.segs(dir);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!((s[0].flags(), s[1].flags()), (FIN | ACK, ACK));
        assert_eq!(s[1].seq(), s[0].seq() + 1);
    }
    assert_eq!(r.segs(Dir::AtoB)[1].ack(), r.segs(Dir::BtoA)[0].seq() + 1);
    let tw = r.now;
    assert!(r.run_until(secs(3), |r| r.a.tcp_state(ha).unwrap() == TcpState::Closed));
    assert!(r.now - tw >= secs(2) - ms(1));
    assert_eq!(r.b.tcp_state(hb).unwrap(), TcpState::Closed);
    assert_eq!((r.a.tcp_error(ha).unwrap(), r.b.tcp_error(hb).unwrap()), (None, None));
}

// ---- PAWS and TS.Recent (RFC 7323) ----

#[test]
fn paws_drops_a_segment_with_an_older_tsval_and_answers_with_an_ack() {
    let mut cfg = config();
    cfg.tcp.delayed_ack = ms(0);
    let mut b = Bench::new(cfg);
    let opts = PeerOpts { ts: Some(1000), ..PeerOpts::default() };
    let (c, _, synack) = passive_open(&mut b, 80, 40000, opts, ms(1));
    let o = synack.repr.options;
    assert_eq!(
        (o.mss, o.window_scale, o.sack_permitted, o.timestamps),
        (Some(1460), None, false, Some((ts_of(T0), 1000)))
    );
    let p1 = PEER_ISS + 1;
    let out = b.send(c.p(ACK | PSH, p1, c.iss + 1).data(b"aaaa").ts(2000, 1));
    assert_eq!(out, vec![c.h(ACK, c.iss + 1, p1 + 4, 65535).ts(ts_of(b.now), 2000)]);
    // Older TSval than TS.Recent: dropped, answered with an ACK (RFC 7323 5.3).
    let out = b.send(c.p(ACK | PSH, p1 + 4, c.iss + 1).data(b"bbbb").ts(1999, 1));
    assert_eq!(out, vec![c.h(ACK, c.iss + 1, p1 + 4, 65535).ts(ts_of(b.now), 2000)]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_paws), 1);
    assert_eq!(b.host.tcp_recv_ready(c.h).unwrap(), 4);
    // An equal TSval is fine.
    let out = b.send(c.p(ACK | PSH, p1 + 4, c.iss + 1).data(b"bbbb").ts(2000, 1));
    assert_eq!(out, vec![c.h(ACK, c.iss + 1, p1 + 8, 65535).ts(ts_of(b.now), 2000)]);
    // TSvals are compared in sequence space: 2^31 - 1 ahead is newer, 2^31 + 1 ahead is older.
    let newer = 2000u32.wrapping_add(0x7fff_ffff);
    let out = b.send(c.p(ACK | PSH, p1 + 8, c.iss + 1).data(b"cc").ts(newer, 1));
    assert_eq!(out, vec![c.h(ACK, c.iss + 1, p1 + 10, 65535).ts(ts_of(b.now), newer)]);
    let older = newer.wrapping_add(0x8000_0001);
    let out = b.send(c.p(ACK | PSH, p1 + 10, c.iss + 1).data(b"dd").ts(older, 1));
    assert_eq!(out, vec![c.h(ACK, c.iss + 1, p1 + 10, 65535).ts(ts_of(b.now), newer)]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_paws), 2);
    // PAWS does not apply to resets.
    assert_eq!(b.send(c.p(RST, p1 + 10, 0).ts(5, 0)), vec![]);
    assert_eq!(b.host.tcp_error(c.h).unwrap(), Some(TcpError::Reset));
}

#[test]
fn ts_recent_echoes_the_earliest_unacknowledged_segment() {
    let mut cfg = config();
    cfg.tcp.delayed_ack = ms(40);
    let mut b = Bench::new(cfg);
    let opts = PeerOpts { ts: Some(1000), ..PeerOpts::default() };
    let (c, _, _) = passive_open(&mut b, 80, 40000, opts, ms(1));
    let p1 = PEER_ISS + 1;
    // Two segments, the first one's ACK delayed: the ACK echoes the TSval of the first one,
    // so that the peer's RTT sample includes the delay (RFC 7323 4.3, SEG.SEQ <= Last.ACK.sent).
    assert_eq!(b.send(c.p(ACK, p1, c.iss + 1).data(&[1; 100]).ts(3000, 1)), vec![]);
    b.now = b.now + ms(5);
    let out = b.send(c.p(ACK, p1 + 100, c.iss + 1).data(&[2; 100]).ts(3005, 1));
    assert_eq!(out, vec![c.h(ACK, c.iss + 1, p1 + 200, 65535).ts(ts_of(b.now), 3000)]);
    // The next segment starts at Last.ACK.sent: its TSval is taken.
    b.now = b.now + ms(5);
    assert_eq!(b.send(c.p(ACK, p1 + 200, c.iss + 1).data(&[3; 100]).ts(3010, 1)), vec![]);
    let (t, out) = b.next_output(secs(1)).unwrap();
    assert_eq!(out, vec![c.h(ACK, c.iss + 1, p1 + 300, 65535).ts(ts_of(t), 3010)]);
}

// ---- Listen backlog and SYN-ACK retransmission ----

#[test]
fn syns_beyond_the_backlog_are_dropped_and_counted_without_syn_cookies() {
    let mut cfg = config();
    cfg.tcp.syn_cookies = false;
    let mut b = Bench::new(cfg);
    let l = b.host.tcp_listen(80, 2).unwrap();
    let out = b.send_all(&[peer_syn(40001, 80), peer_syn(40002, 80), peer_syn(40003, 80)]);
    assert_eq!(
        out.iter().map(|s| (s.flags(), s.repr.dst_port)).collect::<Vec<_>>(),
        vec![(SYN | ACK, 40001), (SYN | ACK, 40002)]
    );
    assert_eq!(b.counter(Counter::rx_drop_tcp_backlog_full), 1);
    assert_eq!(b.host.tcp_sessions(), 2);
    // Complete and accept one: its slot frees; the third client's retransmitted SYN gets in.
    let iss1 = out[0].seq();
    assert_eq!(b.send(Seg::new(40001, 80, ACK, PEER_ISS + 1, iss1 + 1, 65535)), vec![]);
    // Established but not accepted still counts against the backlog.
    assert_eq!(b.send(peer_syn(40003, 80)), vec![]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_backlog_full), 2);
    assert!(b.host.tcp_accept(l).is_some());
    let out = b.send(peer_syn(40003, 80));
    assert_eq!(out.iter().map(|s| (s.flags(), s.repr.dst_port)).collect::<Vec<_>>(), vec![(SYN | ACK, 40003)]);
}

#[test]
fn syn_ack_is_retransmitted_when_the_final_ack_is_lost() {
    let mut b = Bench::new(config());
    let l = b.host.tcp_listen(80, 8).unwrap();
    let out = b.send(peer_syn(40000, 80));
    let synack = out[0].clone();
    let t0 = b.now;
    assert_eq!(b.next_output(secs(10)), Some((t0 + secs(1), vec![synack.clone()])));
    assert_eq!(b.next_output(secs(10)), Some((t0 + secs(3), vec![synack.clone()])));
    // The peer's SYN retransmission gets the SYN-ACK again at once.
    assert_eq!(b.send(peer_syn(40000, 80)), vec![synack.clone()]);
    assert_eq!(b.host.tcp_accept(l), None);
    assert_eq!(b.send(Seg::new(40000, 80, ACK, PEER_ISS + 1, synack.seq() + 1, 65535)), vec![]);
    let h = b.host.tcp_accept(l).expect("established");
    assert_eq!(b.host.tcp_state(h).unwrap(), TcpState::Established);
    assert_eq!(b.next_output(secs(100)), None);
}

#[test]
fn half_open_connections_that_time_out_give_their_backlog_slot_back() {
    let mut cfg = config();
    cfg.tcp.syn_retries = 1;
    let mut b = Bench::new(cfg);
    let l = b.host.tcp_listen(80, 1).unwrap();
    let synack = b.send(peer_syn(40000, 80)).remove(0);
    let t0 = b.now;
    assert_eq!(b.next_output(secs(10)), Some((t0 + secs(1), vec![synack])));
    assert_eq!(b.advance(t0 + secs(3) - b.now), vec![]);
    assert_eq!(b.host.tcp_sessions(), 0, "given up after syn_retries");
    assert_eq!(b.counter(Counter::tcp_timeouts_fatal), 1);
    let out = b.send(peer_syn(40001, 80));
    assert_eq!(out.iter().map(|s| (s.flags(), s.repr.dst_port)).collect::<Vec<_>>(), vec![(SYN | ACK, 40001)]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_backlog_full), 0);
    assert_eq!(b.host.tcp_accept(l), None);
}
