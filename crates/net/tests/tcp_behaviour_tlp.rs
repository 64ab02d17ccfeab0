//! Tail loss probes (RFC 8985 section 7), exact segments in virtual time: a lost tail is
//! probed two smoothed RTTs after the last ACK instead of waiting for the 200 ms RTO; a probe
//! SACKed above holes starts a recovery that resends them all; a probe that repaired the only
//! loss answers with a congestion response, and one reported as a duplicate (D-SACK) does not.

mod tcp_behaviour_util;

use net::Counter;
use tcp_behaviour_util::*;
use wire::tcp::flags::{ACK, PSH};

const MSS: u32 = 1460;

/// A connection with SACK (RTT 10 ms) and ten segments in flight; returns the data and S0.
fn ten_in_flight(b: &mut Bench) -> (Conn, Vec<u8>, u32) {
    let (c, _, _) = passive_open(b, 80, 40000, PeerOpts { sack: true, ..PeerOpts::default() }, ms(10));
    let data = pattern(10 * MSS as usize);
    assert_eq!(b.host.tcp_send(c.h, &data).unwrap(), data.len());
    assert_eq!(b.flush().len(), 10);
    (c, data, c.iss + 1)
}

#[test]
fn a_lost_tail_is_probed_after_two_rtts_and_repaired_without_a_timeout() {
    let mut b = Bench::new(config());
    let (c, data, s0) = ten_in_flight(&mut b);
    let s = |k: u32| s0 + k * MSS;
    let seg =
        |k: u32, f: u8| c.h(f, s(k), PEER_ISS + 1, 65535).data(&data[(k * MSS) as usize..((k + 1) * MSS) as usize]);
    // S8 and S9 are lost; the ACK of S0..S7 comes one RTT later.
    b.now = b.now + ms(10);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, s(8))), vec![]);
    let acked_at = b.now;
    // Two RTTs later (not the 200 ms RTO): the probe resends the last segment.
    let (t, out) = b.next_output(secs(1)).unwrap();
    assert_eq!(t - acked_at, ms(20));
    assert_eq!(out, vec![seg(9, ACK | PSH)]);
    assert_eq!(b.counter(Counter::tcp_tlp_probes), 1);
    // The probe is SACKed above the hole: S8 is lost and resent at once.
    b.now = b.now + ms(10);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, s(8)).sack(&[(s(9), s(10))])), vec![seg(8, ACK)]);
    assert_eq!(b.counter(Counter::tcp_tlp_recoveries), 1);
    b.now = b.now + ms(10);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, s(10))), vec![]);
    let st = b.host.tcp_stats(c.h).unwrap();
    assert_eq!((st.timeouts, st.retransmits, st.fast_recoveries), (0, 2, 1));
    assert_eq!(b.counter(Counter::tcp_rto_fired), 0);
    assert_eq!(b.next_output(secs(5)), None);
}

#[test]
fn a_probe_that_repaired_the_only_loss_answers_with_a_congestion_response() {
    let mut b = Bench::new(config());
    let (c, _, s0) = ten_in_flight(&mut b);
    let s = |k: u32| s0 + k * MSS;
    // S8 is late, S9 lost: two segments in flight (with one, the PTO allows for a delayed
    // ACK and the RTO comes first).
    b.now = b.now + ms(10);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, s(8))), vec![]);
    let cwnd = b.host.tcp_stats(c.h).unwrap().cwnd;
    let (_, out) = b.next_output(secs(1)).unwrap();
    assert_eq!(out.iter().map(|x| x.seq()).collect::<Vec<_>>(), vec![s(9)]);
    // The probe and the late S8 arrive: everything is acknowledged, no D-SACK.
    b.now = b.now + ms(10);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, s(10))), vec![]);
    assert_eq!(b.counter(Counter::tcp_tlp_repairs), 1);
    let st = b.host.tcp_stats(c.h).unwrap();
    assert!(st.cwnd < cwnd, "cwnd {} -> {}", cwnd, st.cwnd);
    assert_eq!(st.timeouts, 0);
}

#[test]
fn a_probe_reported_as_a_duplicate_leaves_the_window_alone() {
    let mut b = Bench::new(config());
    let (c, _, s0) = ten_in_flight(&mut b);
    let s = |k: u32| s0 + k * MSS;
    b.now = b.now + ms(10);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, s(8))), vec![]);
    let cwnd = b.host.tcp_stats(c.h).unwrap().cwnd;
    b.next_output(secs(1)).unwrap();
    // S8 and S9 were only late: the probe reaches the peer second and comes back as a D-SACK.
    b.now = b.now + ms(10);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, s(10)).sack(&[(s(9), s(10))])), vec![]);
    assert_eq!(b.counter(Counter::tcp_dsacks_received), 1);
    assert_eq!(b.counter(Counter::tcp_tlp_repairs), 0);
    assert!(b.host.tcp_stats(c.h).unwrap().cwnd >= cwnd);
}

#[test]
fn without_sack_there_is_no_probe_and_the_rto_repairs_the_tail() {
    let mut b = Bench::new(config());
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(10));
    b.host.tcp_send(c.h, &pattern(3 * MSS as usize)).unwrap();
    assert_eq!(b.flush().len(), 3);
    let sent_at = b.now;
    let (t, out) = b.next_output(secs(5)).unwrap();
    assert_eq!((t - sent_at, out.len()), (ms(210), 1), "the RTO, not a probe");
    assert_eq!(b.counter(Counter::tcp_tlp_probes), 0);
}
