//! Loss recovery, exact segments: fast retransmit on three duplicate ACKs and NewReno partial
//! ACKs (RFC 5681, 6582), SACK recovery of several holes (RFC 6675), and CUBIC (RFC 9438)
//! chosen per connection.

mod tcp_behaviour_util;

use net::{CcAlgorithm, Counter, TcpState};
use std::time::Duration;
use tcp_behaviour_util::*;

const MSS: u32 = 1460;

/// An established connection where the host sends ten full segments S0..S9 at once (its
/// initial window); returns the connection, the data and the sequence number of S0.
fn ten_segments_in_flight(b: &mut Bench, opts: PeerOpts) -> (Conn, Vec<u8>, u32) {
    let (c, _, _) = passive_open(b, 80, 40000, opts, ms(10));
    assert_eq!(b.host.tcp_stats(c.h).unwrap().cwnd, 10 * MSS, "IW = 10 segments (RFC 6928)");
    let data = pattern(10 * MSS as usize);
    assert_eq!(b.host.tcp_send(c.h, &data).unwrap(), data.len());
    let s0 = c.iss + 1;
    let out = b.flush();
    assert_eq!(out.len(), 10);
    for (k, seg) in out.iter().enumerate() {
        let flags = if k == 9 { ACK | PSH } else { ACK };
        let off = k * MSS as usize;
        assert_eq!(seg, &c.h(flags, s0 + off as u32, PEER_ISS + 1, 65535).data(&data[off..off + MSS as usize]));
    }
    (c, data, s0)
}

#[test]
fn three_duplicate_acks_trigger_fast_retransmit_and_newreno_handles_the_partial_ack() {
    let mut cfg = config();
    cfg.tcp.sack = false;
    let mut b = Bench::new(cfg);
    let (c, data, s0) = ten_segments_in_flight(&mut b, PeerOpts::default());
    let s = |k: u32| s0 + k * MSS;
    let seg = |k: u32, flags: u8| {
        c.h(flags, s(k), PEER_ISS + 1, 65535).data(&data[(k * MSS) as usize..((k + 1) * MSS) as usize])
    };
    let ack = |k: u32| c.p(ACK, PEER_ISS + 1, s(k));
    // S2 and S5 are lost. S0 and S1 arrive and are acknowledged.
    b.now = b.now + ms(10);
    assert_eq!(b.send(ack(1)), vec![]);
    assert_eq!(b.send(ack(2)), vec![]);
    // S3, S4: two duplicate ACKs, nothing yet.
    assert_eq!(b.send(ack(2)), vec![]);
    assert_eq!(b.send(ack(2)), vec![]);
    // S6: the third duplicate ACK retransmits S2 at once.
    assert_eq!(b.send(ack(2)), vec![seg(2, ACK)]);
    let st = b.host.tcp_stats(c.h).unwrap();
    // ssthresh = FlightSize / 2 = 8 segments / 2; cwnd = ssthresh + 3 MSS (RFC 5681 3.2).
    assert_eq!((st.ssthresh, st.cwnd, st.fast_recoveries), (4 * MSS, 7 * MSS, 1));
    // S7..S9: more duplicate ACKs inflate the window; there is no new data to send.
    for _ in 0..3 {
        assert_eq!(b.send(ack(2)), vec![]);
    }
    assert_eq!(b.host.tcp_stats(c.h).unwrap().cwnd, 10 * MSS);
    // The retransmitted S2 fills the first hole: the partial ACK (up to S5) retransmits S5 at
    // once (RFC 6582 3.2 step 5) and deflates the window by the amount acknowledged less 1 MSS.
    b.now = b.now + ms(10);
    assert_eq!(b.send(ack(5)), vec![seg(5, ACK)]);
    assert_eq!(b.host.tcp_stats(c.h).unwrap().cwnd, 10 * MSS - 3 * MSS + MSS);
    // The full ACK ends recovery with cwnd = ssthresh.
    b.now = b.now + ms(10);
    assert_eq!(b.send(ack(10)), vec![]);
    let st = b.host.tcp_stats(c.h).unwrap();
    assert_eq!((st.cwnd, st.ssthresh, st.retransmits, st.timeouts, st.fast_recoveries), (4 * MSS, 4 * MSS, 2, 0, 1));
    assert_eq!((b.counter(Counter::tcp_dup_acks), b.counter(Counter::tcp_fast_retransmits)), (6, 1));
    assert_eq!(b.host.tcp_send_pending(c.h).unwrap(), 0);
    assert_eq!(b.next_output(Duration::from_secs(10)), None, "no retransmission timeout follows");
}

#[test]
fn a_fast_retransmission_never_goes_beyond_the_peers_window() {
    let mut cfg = config();
    cfg.tcp.sack = false;
    let mut b = Bench::new(cfg);
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts { window: 1000, ..PeerOpts::default() }, ms(10));
    let d = pattern(3000);
    let x = c.iss + 1;
    // Four small writes fill the peer's 1000-byte window; 2000 more bytes wait.
    for k in 0..4 {
        b.host.tcp_send(c.h, &d[k * 250..(k + 1) * 250]).unwrap();
        assert_eq!(
            b.flush(),
            vec![c.h(ACK | PSH, x + 250 * k as u32, PEER_ISS + 1, 65535).data(&d[k * 250..(k + 1) * 250])]
        );
    }
    b.host.tcp_send(c.h, &d[1000..]).unwrap();
    assert_eq!(b.flush(), vec![]);
    // The first is lost. The fast retransmission repacketizes, but only what was sent before
    // and fits the window: [x, x + 1000), not a full MSS reaching into unsent data.
    let dup = c.p(ACK, PEER_ISS + 1, x);
    assert_eq!(b.send(dup.clone()), vec![]);
    assert_eq!(b.send(dup.clone()), vec![]);
    assert_eq!(b.send(dup), vec![c.h(ACK, x, PEER_ISS + 1, 65535).data(&d[..1000])]);
}

#[test]
fn duplicate_acks_with_data_or_a_window_change_do_not_count() {
    let mut cfg = config();
    cfg.tcp.sack = false;
    let mut b = Bench::new(cfg);
    let (c, _data, s0) = ten_segments_in_flight(&mut b, PeerOpts::default());
    let ack = c.p(ACK, PEER_ISS + 1, s0);
    assert_eq!(b.send(ack.clone()), vec![]);
    assert_eq!(b.send(ack.clone().data(b"x")), vec![], "carries data (the host's ACK is delayed)");
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 2, s0).win(60000)), vec![], "window update");
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 2, s0).win(60000)), vec![]);
    assert_eq!(b.counter(Counter::tcp_dup_acks), 2);
    assert_eq!(b.counter(Counter::tcp_fast_retransmits), 0);
}

#[test]
fn sack_recovery_resends_each_hole_once_as_rack_finds_it_paced_by_prr() {
    // RACK and PRR alone: no tail loss probe after the last flight (see `tcp_behaviour_tlp`).
    let mut cfg = config();
    cfg.tcp.tail_loss_probe = false;
    let mut b = Bench::new(cfg);
    let opts = PeerOpts { sack: true, ..PeerOpts::default() };
    let (c, data, s0) = ten_segments_in_flight(&mut b, opts);
    assert!(b.host.tcp_stats(c.h).unwrap().sack);
    let s = |k: u32| s0 + k * MSS;
    let seg = |k: u32| c.h(ACK, s(k), PEER_ISS + 1, 65535).data(&data[(k * MSS) as usize..((k + 1) * MSS) as usize]);
    // S0, S3 and S5 are lost; every other segment arrives and is SACKed (most recent block
    // first, RFC 2018). All ten went out at once, and every ACK comes one RTT (10 ms) later.
    let dup = |blocks: &[(u32, u32)]| c.p(ACK, PEER_ISS + 1, s(0)).sack(blocks);
    b.now = b.now + ms(10);
    // One or two segments SACKed and no reordering seen yet: S0 may still be reordered;
    // RACK waits a quarter of the minimum RTT (the reordering timer).
    assert_eq!(b.send(dup(&[(s(1), s(2))])), vec![]);
    assert_eq!(b.send(dup(&[(s(1), s(3))])), vec![]);
    // Three SACKed: no reordering window (RFC 8985 6.2 step 4); S0 and S3, both sent before
    // the delivered S4 one RTT ago, are lost. Recovery: ssthresh = FlightSize / 2, and PRR's
    // first ACK lets exactly the fast retransmit go (cwnd = pipe 5 + 1 segment).
    assert_eq!(b.send(dup(&[(s(4), s(5)), (s(1), s(3))])), vec![seg(0)]);
    let st = b.host.tcp_stats(c.h).unwrap();
    assert_eq!((st.ssthresh, st.cwnd), (5 * MSS, 6 * MSS));
    assert_eq!(b.counter(Counter::tcp_rack_lost), 2);
    // S6 delivered: S5 (sent before it) is lost too. Pipe is 4 (10 sent, 4 SACKed, S3 and S5
    // waiting), below ssthresh: PRR's slow-start bound lets one segment go, S3 first.
    assert_eq!(b.send(dup(&[(s(6), s(7)), (s(4), s(5)), (s(1), s(3))])), vec![seg(3)]);
    assert_eq!(b.send(dup(&[(s(6), s(8)), (s(4), s(5)), (s(1), s(3))])), vec![seg(5)]);
    // Every hole resent once: nothing SACKed is sent again, nothing twice.
    assert_eq!(b.send(dup(&[(s(6), s(9)), (s(4), s(5)), (s(1), s(3))])), vec![]);
    assert_eq!(b.send(dup(&[(s(6), s(10)), (s(4), s(5)), (s(1), s(3))])), vec![]);
    assert_eq!(b.counter(Counter::tcp_rack_lost), 3);
    // The retransmissions arrive: partial ACKs send nothing more; the ACK of the recovery
    // point ends recovery with cwnd = ssthresh.
    b.now = b.now + ms(10);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, s(3)).sack(&[(s(4), s(5)), (s(6), s(10))])), vec![]);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, s(5)).sack(&[(s(6), s(10))])), vec![]);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, s(10))), vec![]);
    let st = b.host.tcp_stats(c.h).unwrap();
    assert_eq!((st.retransmits, st.fast_recoveries, st.timeouts, st.cwnd), (3, 1, 0, 5 * MSS));
    // Out of recovery: new data is limited by cwnd alone (five segments).
    let more = pattern(20 * MSS as usize);
    b.host.tcp_send(c.h, &more).unwrap();
    let out = b.flush();
    assert_eq!(out.len(), 5);
    assert_eq!(out[0].seq(), s(10));
    assert_eq!(b.next_output(Duration::from_millis(100)), None);
}

#[test]
fn a_hole_inside_the_reordering_window_is_resent_only_when_the_reordering_timer_fires() {
    let mut cfg = config();
    cfg.tcp.tail_loss_probe = false;
    let mut b = Bench::new(cfg);
    let opts = PeerOpts { sack: true, ..PeerOpts::default() };
    let (c, data, s0) = ten_segments_in_flight(&mut b, opts);
    let s = |k: u32| s0 + k * MSS;
    let seg = |k: u32| c.h(ACK, s(k), PEER_ISS + 1, 65535).data(&data[(k * MSS) as usize..((k + 1) * MSS) as usize]);
    b.now = b.now + ms(10);
    // S1 SACKed, S0 missing: min_RTT is 10 ms, the window a quarter of it.
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, s(0)).sack(&[(s(1), s(2))])), vec![]);
    let sacked_at = b.now;
    let (t, out) = b.next_output(secs(1)).expect("the reordering timer resends S0");
    assert_eq!((t - sacked_at, out), (Duration::from_micros(2500), vec![seg(0)]));
    assert_eq!(b.counter(Counter::tcp_reorder_timeouts), 1);
    assert_eq!(b.counter(Counter::tcp_rto_fired), 0);
}
#[test]
fn sack_blocks_below_una_or_beyond_snd_max_are_ignored() {
    let mut b = Bench::new(config());
    let opts = PeerOpts { sack: true, ..PeerOpts::default() };
    let (c, _data, s0) = ten_segments_in_flight(&mut b, opts);
    let s = |k: u32| s0 + k * MSS;
    // Bogus blocks (beyond what was sent, or below SND.UNA) are no evidence of loss.
    for _ in 0..2 {
        assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, s(0)).sack(&[(s(10), s(14)), (s0 - 5000, s0 - 1000)])), vec![]);
    }
    assert_eq!(b.counter(Counter::tcp_fast_retransmits), 0);
    assert_eq!(b.host.tcp_stats(c.h).unwrap().cwnd, 10 * MSS);
}

#[test]
fn without_sack_a_single_loss_in_a_bulk_transfer_is_repaired_by_fast_retransmit() {
    let mut ca = host_config("10.0.0.1/24");
    ca.tcp.sack = false;
    let mut cb = host_config("10.0.0.2/24");
    cb.tcp.sack = false;
    let mut r = Relay::new(ca, cb);
    let (c, s) = relay_connect(&mut r, 5001);
    assert!(!r.a.tcp_stats(c).unwrap().sack);
    let mut seen = 0u32;
    r.drop = Box::new(move |dir, seg| {
        if dir == Dir::AtoB && !seg.payload.is_empty() {
            seen += 1;
            return seen == 200;
        }
        false
    });
    let data = pattern(2_000_000);
    let (mut sent, mut got) = (0, vec![]);
    assert!(r.run_until(Duration::from_secs(30), |r| {
        if sent < data.len() {
            sent += r.a.tcp_send(c, &data[sent..]).unwrap();
        }
        drain(&mut r.b, s, &mut got);
        got.len() == data.len()
    }));
    assert!(got == data);
    let st = r.a.tcp_stats(c).unwrap();
    assert_eq!((st.fast_recoveries, st.timeouts), (1, 0), "{st:?}");
    assert!(r.log.iter().filter(|l| l.dir == Dir::AtoB && l.dropped).count() == 1);
}

#[test]
fn cubic_is_chosen_per_connection_and_a_lossy_transfer_completes() {
    let mut r = Relay::pair();
    let (c1, s1) = relay_connect(&mut r, 5001);
    let (c2, _s2) = relay_connect(&mut r, 5002);

    r.a.tcp_set_cc(c1, CcAlgorithm::Cubic).unwrap();
    assert_eq!(r.a.tcp_stats(c1).unwrap().cc, CcAlgorithm::Cubic);
    assert_eq!(r.a.tcp_stats(c2).unwrap().cc, CcAlgorithm::NewReno, "the other connection keeps the default");
    // Drop some data segments a -> b on their first transmission (deterministic loss).
    let mut seen = 0u32;
    let mut dropped = std::collections::HashSet::new();
    r.drop = Box::new(move |dir, seg| {
        if dir != Dir::AtoB || seg.payload.is_empty() {
            return false;
        }
        seen += 1;
        if [300, 301, 900, 1500, 1502].contains(&seen) && dropped.insert(seg.seq()) {
            return true;
        }
        false
    });
    let data = pattern(4_000_000);
    let mut sent = 0;
    let mut got = Vec::new();
    let mut prev_cwnd = 0;
    let mut reductions = vec![];
    let mut recoveries = 0;
    let done = r.run_until(Duration::from_secs(60), |r| {
        if sent < data.len() {
            sent += r.a.tcp_send(c1, &data[sent..]).unwrap();
        }
        drain(&mut r.b, s1, &mut got);
        let st = r.a.tcp_stats(c1).unwrap();
        if st.fast_recoveries > recoveries {
            recoveries = st.fast_recoveries;
            reductions.push((prev_cwnd, st.ssthresh));
        }
        prev_cwnd = st.cwnd;
        got.len() == data.len()
    });
    assert!(done, "transfer incomplete: {} of {}", got.len(), data.len());
    assert!(got == data, "data corrupted");
    let st = r.a.tcp_stats(c1).unwrap();
    assert_eq!(st.timeouts, 0, "{st:?}");
    assert!(st.fast_recoveries >= 2, "{st:?}");
    // CUBIC's multiplicative decrease: ssthresh = 0.7 cwnd (RFC 9438 4.6), not a halving. The
    // window seen one step before may have grown by a few segments in the step of the loss.
    for (before, ssthresh) in reductions {
        let lo = (before as f64 * 0.7) as u32;
        let hi = ((before + 8 * st.mss as u32) as f64 * 0.7) as u32;
        assert!((lo..=hi).contains(&ssthresh), "cwnd {before} -> ssthresh {ssthresh}");
    }
    assert_eq!(r.a.tcp_state(c1).unwrap(), TcpState::Established);
}

#[test]
fn a_recovery_proved_spurious_by_d_sack_is_undone_and_the_reordering_threshold_doubles() {
    let mut b = Bench::new(config());
    let opts = PeerOpts { sack: true, ..PeerOpts::default() };
    let (c, data, s0) = ten_segments_in_flight(&mut b, opts);
    let s = |k: u32| s0 + k * MSS;
    let seg = |k: u32| c.h(ACK, s(k), PEER_ISS + 1, 65535).data(&data[(k * MSS) as usize..((k + 1) * MSS) as usize]);
    let cwnd_before = b.host.tcp_stats(c.h).unwrap().cwnd;
    // S0 is only late: S1..S3 are SACKed first, and the host starts a recovery.
    b.now = b.now + ms(10);
    b.send(c.p(ACK, PEER_ISS + 1, s(0)).sack(&[(s(1), s(2))]));
    b.send(c.p(ACK, PEER_ISS + 1, s(0)).sack(&[(s(1), s(3))]));
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, s(0)).sack(&[(s(1), s(4))])), vec![seg(0)]);
    assert!(b.host.tcp_stats(c.h).unwrap().cwnd < cwnd_before);
    // The late S0 and then its retransmission arrive: the peer reports the duplicate.
    b.now = b.now + ms(10);
    b.send(c.p(ACK, PEER_ISS + 1, s(10)).sack(&[(s(0), s(1))]));
    assert_eq!(b.counter(Counter::tcp_dsacks_received), 1);
    assert_eq!(b.counter(Counter::tcp_recoveries_undone), 1);
    assert!(b.host.tcp_stats(c.h).unwrap().cwnd >= cwnd_before, "cwnd restored");
    // The same reordering again: however many segments are SACKed above the hole, RACK now
    // waits the reordering window, widened by the D-SACK to 2 x min_RTT / 4 = 5 ms; the late
    // segment arriving inside it costs nothing.
    let more = pattern(10 * MSS as usize);
    b.host.tcp_send(c.h, &more).unwrap();
    assert_eq!(b.flush().len(), 10);
    let t = |k: u32| s(10) + k * MSS;
    b.now = b.now + ms(10);
    for k in 2..=10 {
        assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, t(0)).sack(&[(t(1), t(k))])), vec![], "{} SACKed", k - 1);
    }
    b.now = b.now + ms(4);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, t(10))), vec![]);
    assert_eq!(b.counter(Counter::tcp_rack_lost), 1, "only the first round's S0");
    assert_eq!(b.host.tcp_stats(c.h).unwrap().retransmits, 1);
    assert_eq!(b.next_output(secs(1)), None);
}

#[test]
fn prr_spreads_the_window_reduction_over_the_recovery_in_proportion_to_deliveries() {
    let mut cfg = config();
    cfg.tcp.tail_loss_probe = false;
    let mut b = Bench::new(cfg);
    let opts = PeerOpts { sack: true, ..PeerOpts::default() };
    let (c, _, s0) = ten_segments_in_flight(&mut b, opts);
    let s = |k: u32| s0 + k * MSS;
    // The first ten are acknowledged (slow start: cwnd 20), twenty more go out, and more
    // data waits behind them.
    b.host.tcp_send(c.h, &pattern(60 * MSS as usize)).unwrap();
    b.now = b.now + ms(10);
    let out = b.send(c.p(ACK, PEER_ISS + 1, s(10)));
    assert_eq!(out.len(), 20);
    assert_eq!(out[0].seq(), s(10));
    // S10 is lost; S11.. arrive one per ACK, each SACKed.
    b.now = b.now + ms(10);
    let ack = |k: u32| c.p(ACK, PEER_ISS + 1, s(10)).sack(&[(s(11), s(k + 1))]);
    assert_eq!(b.send(ack(11)), vec![]);
    assert_eq!(b.send(ack(12)), vec![]);
    // Third SACKed segment: S10 lost; recovery with ssthresh = 20 / 2 = 10 segments,
    // RecoverFS = the window before the reduction = 20 segments (Linux's prior_cwnd), and
    // pipe = 20 - 3 SACKed - 1 lost = 16 segments. Per ACK (RFC 6937 3.1, in
    // segments): while pipe > ssthresh, ceil(delivered x ssthresh / RecoverFS) - sent may
    // go; else min(ssthresh - pipe, max(delivered - sent, 1) + 1) (the slow-start reduction
    // bound); the first ACK lets at least the fast retransmit go.
    let (ssthresh, recover_fs, pipe_at_start) = (10u32, 20u32, 16u32);
    let mut sent_total = 0u32;
    let mut pattern_seen = vec![];
    for (delivered, k) in (13..30).enumerate() {
        let out = b.send(ack(k));
        let delivered = delivered as u32 + 1;
        // In the network before this ACK's sends (the pipe at the start counted the first
        // delivery already).
        let pipe = pipe_at_start + sent_total - (delivered - 1);
        let allowed = if pipe > ssthresh {
            (delivered * ssthresh).div_ceil(recover_fs) - sent_total
        } else {
            (ssthresh - pipe).min((delivered - sent_total).max(1) + 1)
        }
        .max(if sent_total == 0 { 1 } else { 0 });
        assert_eq!(out.len() as u32, allowed, "ACK of S{k} (delivered {delivered}, pipe {pipe}): {out:?}");
        if k == 13 {
            assert_eq!(out[0].seq(), s(10), "the fast retransmit first");
        }
        sent_total += out.len() as u32;
        pattern_seen.push(out.len());
    }
    // 17 segments delivered in the recovery round: 10 sent, ssthresh / RecoverFS of them
    // until pipe reached ssthresh, one at a time (no burst).
    assert_eq!(sent_total, 10, "{pattern_seen:?}");
    assert!(pattern_seen.iter().all(|&n| n <= 1), "{pattern_seen:?}");
    // The retransmission arrives: recovery ends with cwnd = ssthresh.
    b.now = b.now + ms(10);
    b.send(c.p(ACK, PEER_ISS + 1, s(30)));
    let st = b.host.tcp_stats(c.h).unwrap();
    assert_eq!((st.cwnd, st.ssthresh, st.fast_recoveries, st.timeouts), (ssthresh * MSS, ssthresh * MSS, 1, 0));
}

#[test]
fn after_a_timeout_a_short_hole_before_sacked_data_is_resent_not_held_as_a_silly_window() {
    let mut cfg = config();
    cfg.tcp.tail_loss_probe = false;
    let mut b = Bench::new(cfg);
    let opts = PeerOpts { sack: true, ..PeerOpts::default() };
    let (c, _, _) = passive_open(&mut b, 80, 40000, opts, ms(10));
    // Two writes: a 100-byte segment, then a full one.
    let data = pattern(100 + MSS as usize);
    b.host.tcp_send(c.h, &data[..100]).unwrap();
    b.host.tcp_send(c.h, &data[100..]).unwrap();
    let out = b.flush();
    assert_eq!(out.iter().map(|s| s.payload.len()).collect::<Vec<_>>(), vec![100, MSS as usize]);
    let (x0, x1) = (c.iss + 1, c.iss + 101);
    let small = c.h(ACK, x0, PEER_ISS + 1, 65535).data(&data[..100]);
    // The full segment is SACKed, the small one lost; RACK resends it after its reordering
    // window, and that copy is lost too.
    b.now = b.now + ms(10);
    b.send(c.p(ACK, PEER_ISS + 1, x0).sack(&[(x1, x1 + MSS)]));
    let (_, out) = b.next_output(secs(1)).expect("RACK's retransmission");
    assert_eq!(out, vec![small.clone()]);
    // The timeout resends it again: 100 bytes cut short by the SACKed data behind them are
    // a repair, not a silly window to hold back (before, they were held at every timeout and
    // the connection backed off forever).
    let (_, out) = b.next_output(secs(5)).expect("the timeout's retransmission");
    assert_eq!(out, vec![small]);
    assert_eq!(b.counter(Counter::tcp_rto_fired), 1);
    b.now = b.now + ms(10);
    assert_eq!(b.send(c.p(ACK, PEER_ISS + 1, x1 + MSS)), vec![]);
    assert_eq!(b.host.tcp_send_pending(c.h).unwrap(), 0);
}
