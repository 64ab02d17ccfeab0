//! TCP timers, exact segments in virtual time: retransmission timeout and backoff (RFC 6298),
//! giving up (syn_retries / max_retries), zero-window probing (persist timer), TIME-WAIT and
//! keep-alive.

mod tcp_behaviour_util;

use net::{Counter, RecvError, SendError, TcpError, TcpState};
use std::net::SocketAddrV4;
use tcp_behaviour_util::*;
use wire::TcpOptions;

fn host_syn(t: net::Instant, port: u16, peer_port: u16, iss: u32) -> Seg {
    Seg::new(port, peer_port, SYN, iss, 0, 65535).opts(TcpOptions {
        mss: Some(1460),
        window_scale: Some(7),
        sack_permitted: true,
        timestamps: Some((ts_of(t), 0)),
        sack_blocks: [None; 4],
    })
}

#[test]
fn syn_rto_starts_at_one_second_and_doubles_until_syn_retries_then_times_out() {
    let mut b = Bench::new(config());
    assert_eq!(b.host.config().tcp.min_rto, ms(200));
    assert_eq!(b.host.config().tcp.syn_retries, 6);
    let h = b.host.tcp_connect_from(40000, SocketAddrV4::new(PEER, 80)).unwrap();
    let out = b.flush();
    assert_eq!(out.len(), 1);
    let iss = out[0].seq();
    assert_eq!(out, vec![host_syn(b.now, 40000, 80, iss)]);
    let mut at = b.now;
    for backoff in [1, 2, 4, 8, 16, 32] {
        at = at + secs(backoff);
        let (t, out) = b.next_output(secs(100)).expect("SYN retransmission");
        assert_eq!(t, at, "retransmission {backoff} s after the previous SYN");
        assert_eq!(out, vec![host_syn(at, 40000, 80, iss)], "the same SYN (fresh TSval)");
        assert_eq!(b.host.tcp_connect_result(h).unwrap(), None);
    }
    // 32 s doubled, under max_rto (120 s): Linux gives up 127 s after the first SYN too.
    assert_eq!(b.host.tcp_stats(h).unwrap().rto, secs(64));
    // The seventh expiry gives up, 64 s after the last SYN, and sends nothing.
    assert_eq!(b.advance(at + secs(64) - b.now - ms(1)), vec![]);
    assert_eq!(b.host.tcp_connect_result(h).unwrap(), None);
    assert_eq!(b.advance(ms(1)), vec![]);
    assert_eq!(b.host.tcp_connect_result(h).unwrap(), Some(Err(TcpError::TimedOut)));
    assert_eq!(b.host.tcp_state(h).unwrap(), TcpState::Closed);
    assert_eq!((b.counter(Counter::tcp_rto_fired), b.counter(Counter::tcp_timeouts_fatal)), (6, 1));
    b.host.tcp_close(h).unwrap();
    assert_eq!(b.host.tcp_sessions(), 0);
}

#[test]
fn rto_is_srtt_plus_four_rttvar_after_a_sample_and_data_backs_off_until_max_retries() {
    let mut cfg = config();
    cfg.tcp.max_retries = 3;
    let mut b = Bench::new(cfg);
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(100));
    let st = b.host.tcp_stats(c.h).unwrap();
    // First sample R = 100 ms: SRTT = R, RTTVAR = R/2, RTO = SRTT + 4 RTTVAR (RFC 6298 2.2).
    assert_eq!((st.srtt, st.rttvar, st.rto), (Some(ms(100)), ms(50), ms(300)));

    let data = pattern(1000);
    assert_eq!(b.host.tcp_send(c.h, &data).unwrap(), 1000);
    let seg = c.h(ACK | PSH, c.iss + 1, PEER_ISS + 1, 65535).data(&data);
    let sent = b.now;
    assert_eq!(b.flush(), vec![seg.clone()]);
    assert_eq!(b.advance(ms(299)), vec![]);
    assert_eq!(b.advance(ms(1)), vec![seg.clone()], "retransmitted after exactly one RTO");
    let st = b.host.tcp_stats(c.h).unwrap();
    assert_eq!((st.rto, st.timeouts, st.cwnd), (ms(600), 1, 1460), "RTO doubled, cwnd = 1 MSS");
    for at in [900, 2100] {
        let (t, out) = b.next_output(secs(10)).unwrap();
        assert_eq!((t - sent, out), (ms(at), vec![seg.clone()]));
    }
    // max_retries = 3 retransmissions; the fourth expiry (RTO 2.4 s) ends the connection.
    assert_eq!(b.advance(sent + ms(4500) - b.now - ms(1)), vec![]);
    assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::Established);
    assert_eq!(b.advance(ms(1)), vec![], "no reset is sent when giving up");
    assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::Closed);
    assert_eq!(b.host.tcp_error(c.h).unwrap(), Some(TcpError::TimedOut));
    assert!(matches!(b.host.tcp_send(c.h, b"x"), Err(SendError::Connection(TcpError::TimedOut))));
    assert!(matches!(b.host.tcp_recv(c.h, &mut [0u8; 8]), Err(RecvError::Connection(TcpError::TimedOut))));
    assert_eq!((b.counter(Counter::tcp_rto_fired), b.counter(Counter::tcp_timeouts_fatal)), (3, 1));
}

#[test]
fn rto_is_clamped_to_min_rto_and_karn_keeps_the_backoff_until_a_fresh_sample() {
    let mut b = Bench::new(config());
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(10));
    let st = b.host.tcp_stats(c.h).unwrap();
    // RTO = SRTT + max(min_rto, 4 RTTVAR): 4 RTTVAR = 20 ms is below the 200 ms margin.
    assert_eq!((st.srtt, st.rto), (Some(ms(10)), ms(210)));
    let data = pattern(200);
    b.host.tcp_send(c.h, &data[..100]).unwrap();
    let seg = c.h(ACK | PSH, c.iss + 1, PEER_ISS + 1, 65535).data(&data[..100]);
    assert_eq!(b.flush(), vec![seg.clone()]);
    // A lone segment waits SRTT + 200 ms (the peer may delay its ACK that long), above
    // min_rto here.
    assert_eq!(b.advance(ms(209)), vec![]);
    assert_eq!(b.advance(ms(1)), vec![seg]);
    assert_eq!(b.host.tcp_stats(c.h).unwrap().rto, ms(420));
    // The ACK of a retransmission gives no sample (Karn): the backed-off RTO stays.
    b.now = b.now + ms(10);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, c.iss + 101)), vec![]);
    let st = b.host.tcp_stats(c.h).unwrap();
    assert_eq!((st.rto, st.srtt, st.bytes_acked), (ms(420), Some(ms(10)), 100));
    // New data, acknowledged after 10 ms: a fresh sample brings the RTO back.
    b.host.tcp_send(c.h, &data[100..]).unwrap();
    let seg = c.h(ACK | PSH, c.iss + 101, PEER_ISS + 1, 65535).data(&data[100..]);
    assert_eq!(b.flush(), vec![seg]);
    b.now = b.now + ms(10);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, c.iss + 201)), vec![]);
    let st = b.host.tcp_stats(c.h).unwrap();
    assert_eq!((st.rto, st.srtt, st.rttvar), (ms(210), Some(ms(10)), std::time::Duration::from_micros(3750)));
}

#[test]
fn zero_window_stops_sending_and_probes_with_backoff_until_the_window_opens() {
    let mut cfg = config();
    cfg.tcp.max_retries = 3;
    let mut b = Bench::new(cfg);
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(100));
    let data = pattern(5000);
    b.host.tcp_send(c.h, &data[..3000]).unwrap();
    let x = c.iss + 1;
    assert_eq!(
        b.flush(),
        vec![
            c.h(ACK, x, PEER_ISS + 1, 65535).data(&data[..1460]),
            c.h(ACK, x + 1460, PEER_ISS + 1, 65535).data(&data[1460..2920]),
            c.h(ACK | PSH, x + 2920, PEER_ISS + 1, 65535).data(&data[2920..3000]),
        ]
    );
    // Everything is acknowledged after 100 ms, and the window closes.
    b.now = b.now + ms(100);
    let x = x + 3000;
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x).win(0)), vec![]);
    assert_eq!(b.host.tcp_stats(c.h).unwrap().rto, ms(300));
    assert_eq!(b.host.tcp_send(c.h, &data[3000..]).unwrap(), 2000);
    assert_eq!(b.flush(), vec![], "nothing goes out into a zero window");
    let probe = c.h(ACK, x, PEER_ISS + 1, 65535).data(&data[3000..3001]);
    let mut at = b.now;
    // Probes after one RTO, then with exponential backoff up to the maximum RTO (120 s, as
    // Linux); each answered with a zero window; the connection survives it (RFC 1122
    // 4.2.2.17) up to the zero-window limit (10 minutes by default).
    for interval in [300, 600, 1200, 2400, 4800, 9600, 19200, 38400, 76800, 120_000] {
        at = at + ms(interval);
        let (t, out) = b.next_output(secs(200)).expect("a window probe");
        assert_eq!((t, out), (at, vec![probe.clone()]), "probe {interval} ms after the previous");
        assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x).win(0)), vec![], "a probe's answer is no duplicate ACK");
    }
    assert_eq!(b.counter(Counter::tcp_window_probes), 10);
    assert_eq!(b.counter(Counter::tcp_fast_retransmits), 0);
    assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::Established);
    // The window opens: the transfer resumes at the probed byte.
    let out = b.send(c.p(ACK, PEER_ISS + 1, x));
    assert_eq!(
        out,
        vec![
            c.h(ACK, x, PEER_ISS + 1, 65535).data(&data[3000..4460]),
            c.h(ACK | PSH, x + 1460, PEER_ISS + 1, 65535).data(&data[4460..]),
        ]
    );
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x + 2000)), vec![]);
    assert_eq!(b.host.tcp_send_pending(c.h).unwrap(), 0);
    assert_eq!(b.next_output(secs(100)), None, "no probe or retransmission after the transfer");
}

#[test]
fn window_closing_with_data_in_flight_turns_into_probing_after_the_rto() {
    let mut cfg = config();
    cfg.tcp.max_retries = 3;
    let mut b = Bench::new(cfg);
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(100));
    let data = pattern(3000);
    b.host.tcp_send(c.h, &data).unwrap();
    let x = c.iss + 1;
    assert_eq!(b.flush().len(), 3);
    // The peer takes only the first segment and its buffer is full.
    b.now = b.now + ms(100);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x + 1460).win(0)), vec![]);
    assert_eq!(b.host.tcp_stats(c.h).unwrap().rto, ms(300));
    // The retransmission timer expires with the window closed: nothing can be sent, so the
    // stack starts probing one (backed-off) RTO later, with the first unacknowledged byte.
    let probe = c.h(ACK, x + 1460, PEER_ISS + 1, 65535).data(&data[1460..1461]);
    let mut at = b.now + ms(300);
    for interval in [600, 1200, 2400, 4800, 9600] {
        at = at + ms(interval);
        let (t, out) = b.next_output(secs(60)).expect("a window probe");
        assert_eq!((t, out), (at, vec![probe.clone()]));
        assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x + 1460).win(0)), vec![]);
    }
    assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::Established);
    // The window opens: after the timeout the congestion window is one segment (RFC 5681 3.1).
    let out = b.send(c.p(ACK, PEER_ISS + 1, x + 1460));
    assert_eq!(out, vec![c.h(ACK, x + 1460, PEER_ISS + 1, 65535).data(&data[1460..2920])]);
    assert_eq!(b.host.tcp_stats(c.h).unwrap().cwnd, 1460);
    let out = b.send(c.p(ACK, PEER_ISS + 1, x + 2920));
    assert_eq!(out, vec![c.h(ACK | PSH, x + 2920, PEER_ISS + 1, 65535).data(&data[2920..])]);
}

/// An established connection closed by the host (the active closer) up to TIME-WAIT; returns
/// the connection and the instant TIME-WAIT began.
fn host_closes_into_time_wait(b: &mut Bench) -> (Conn, net::Instant) {
    let (c, _, _) = passive_open(b, 80, 40000, PeerOpts::default(), ms(1));
    b.host.tcp_close(c.h).unwrap();
    assert_eq!(b.flush(), vec![c.h(FIN | ACK, c.iss + 1, PEER_ISS + 1, 65535)]);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, c.iss + 2)), vec![]);
    assert_eq!(b.send(c.p(FIN | ACK, PEER_ISS + 1, c.iss + 2)), vec![c.h(ACK, c.iss + 2, PEER_ISS + 2, 65535)]);
    (c, b.now)
}

#[test]
fn time_wait_lasts_exactly_time_wait_then_the_session_is_freed() {
    let mut cfg = config();
    cfg.tcp.time_wait = secs(2);
    let mut b = Bench::new(cfg);
    let (c, tw) = host_closes_into_time_wait(&mut b);
    assert_eq!(b.host.tcp_sessions(), 1);
    assert_eq!(b.advance(tw + secs(2) - b.now - ms(1)), vec![]);
    assert_eq!(b.host.tcp_sessions(), 1, "still in TIME-WAIT");
    assert_eq!(b.advance(ms(1)), vec![]);
    assert_eq!(b.host.tcp_sessions(), 0, "freed after 2 s");
    // The tuple is gone: a stray ACK now gets a reset.
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 2, c.iss + 2)), vec![c.h(RST, c.iss + 2, 0, 0)]);
}

#[test]
fn time_wait_reacks_a_retransmitted_fin_and_restarts_the_timer() {
    let mut cfg = config();
    cfg.tcp.time_wait = secs(2);
    let mut b = Bench::new(cfg);
    let (c, tw) = host_closes_into_time_wait(&mut b);
    // Our last ACK was lost: the peer retransmits its FIN one second later.
    assert_eq!(b.advance(secs(1)), vec![]);
    let fin = c.p(FIN | ACK, PEER_ISS + 1, c.iss + 2);
    assert_eq!(b.send(fin.clone()), vec![c.h(ACK, c.iss + 2, PEER_ISS + 2, 65535)]);
    assert_eq!(b.counter(Counter::rx_drop_tcp_out_of_window), 1);
    // 2 MSL from the retransmitted FIN (RFC 9293 3.10.7.4, TIME-WAIT: restart the timer).
    assert_eq!(b.advance(tw + secs(3) - b.now - ms(1)), vec![]);
    assert_eq!(b.host.tcp_sessions(), 1);
    assert_eq!(b.advance(ms(1)), vec![]);
    assert_eq!(b.host.tcp_sessions(), 0);
}

#[test]
fn rst_in_time_wait_frees_the_session() {
    let mut cfg = config();
    cfg.tcp.time_wait = secs(60);
    let mut b = Bench::new(cfg);
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    b.host.tcp_shutdown(c.h).unwrap();
    assert_eq!(b.flush(), vec![c.h(FIN | ACK, c.iss + 1, PEER_ISS + 1, 65535)]);
    assert_eq!(b.send(c.p(FIN | ACK, PEER_ISS + 1, c.iss + 2)), vec![c.h(ACK, c.iss + 2, PEER_ISS + 2, 65535)]);
    assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::TimeWait);
    assert_eq!(b.send(c.p(RST, PEER_ISS + 2, 0)), vec![]);
    assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::Closed);
    assert_eq!(b.host.tcp_error(c.h).unwrap(), None, "a reset in TIME-WAIT is no error");
    b.host.tcp_close(c.h).unwrap();
    assert_eq!(b.host.tcp_sessions(), 0);
}

#[test]
fn keepalive_probes_an_idle_connection_and_times_out_when_the_peer_is_gone() {
    let mut cfg = config();
    cfg.tcp.keepalive = Some(secs(10));
    let mut b = Bench::new(cfg);
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    let idle_from = b.now;
    // SEG.SEQ = SND.NXT - 1, no data (RFC 9293 3.8.4).
    let probe = c.h(ACK, c.iss, PEER_ISS + 1, 65535);
    assert_eq!(b.next_output(secs(60)), Some((idle_from + secs(10), vec![probe.clone()])));
    // The peer answers: the connection is idle again from now.
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, c.iss + 1)), vec![]);
    let idle_from = b.now;
    let mut at = idle_from + secs(10);
    assert_eq!(b.next_output(secs(60)), Some((at, vec![probe.clone()])));
    // No more answers: eight more probes one second apart, then the connection times out.
    for _ in 0..8 {
        at = at + secs(1);
        assert_eq!(b.next_output(secs(60)), Some((at, vec![probe.clone()])));
    }
    assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::Established);
    assert_eq!(b.advance(at + secs(1) - b.now), vec![]);
    assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::Closed);
    assert_eq!(b.host.tcp_error(c.h).unwrap(), Some(TcpError::TimedOut));
    assert_eq!(b.next_output(secs(60)), None);
}

#[test]
fn no_keepalive_without_the_option() {
    let mut b = Bench::new(config());
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    assert_eq!(b.next_output(secs(7200)), None);
    assert_eq!(b.host.tcp_state(c.h).unwrap(), TcpState::Established);
}

#[test]
fn a_peer_holding_a_zero_window_for_ten_minutes_sees_probes_back_off_to_120_s_and_the_connection_end_at_the_limit() {
    let cfg = config();
    assert_eq!(cfg.tcp.zero_window_limit, Some(secs(600)), "the documented default");
    assert_eq!(cfg.tcp.max_rto, secs(120), "the documented default");
    let mut b = Bench::new(cfg);
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    let data = pattern(1000);
    b.host.tcp_send(c.h, &data).unwrap();
    let x = c.iss + 1;
    assert_eq!(b.flush().len(), 1);
    // The peer takes the data and closes its window: it never reads again.
    b.now = b.now + ms(1);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x + 1000).win(0)), vec![]);
    b.host.tcp_send(c.h, &data).unwrap();
    let closed_at = b.now;
    let probe = c.h(ACK, x + 1000, PEER_ISS + 1, 65535).data(&data[..1]);
    let mut gaps = vec![];
    let mut last = closed_at;
    let end = closed_at + secs(660);
    let mut reset_at = None;
    while let Some((t, out)) = b.next_output(end.saturating_since(b.now)) {
        if out.iter().any(|s| s.flags() & RST != 0) {
            reset_at = Some(t);
            break;
        }
        assert_eq!(out, vec![probe.clone()]);
        gaps.push((t - last).as_millis() as u64);
        last = t;
        assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x + 1000).win(0)), vec![]);
    }
    // Backoff from the RTO (10 ms here) doubling to the 120 s maximum, never beyond it.
    assert!(gaps.windows(2).all(|w| w[1] >= w[0]), "{gaps:?}");
    assert_eq!(gaps.iter().max(), Some(&120_000), "{gaps:?}");
    assert!(gaps.iter().filter(|&&g| g == 120_000).count() >= 1, "{gaps:?}");
    // At the 600 s limit the connection is reset, counted, and the application is told.
    assert_eq!(reset_at, Some(closed_at + secs(600)), "gaps {gaps:?}");
    assert_eq!(b.counter(Counter::tcp_zero_window_aborts), 1);
    assert_eq!(b.host.tcp_error(c.h).unwrap(), Some(TcpError::TimedOut));
    assert_eq!(b.counter(Counter::tcp_window_probes), gaps.len() as u64);
    // Nothing more for the minute after.
    assert_eq!(b.next_output(end.saturating_since(b.now)), None);
}
