//! Goodput under loss and reordering, in virtual time (exact, not timed).

mod tcp_path_util;

use net::CcAlgorithm;
use std::time::Duration;
use tcp_path_util::*;

#[test]
fn probe_figures() {
    for cc in [CcAlgorithm::NewReno, CcAlgorithm::Cubic] {
        for rtt_us in [100u64, 10_000] {
            for (p, mb) in [(0.001, 40u64), (0.01, 10), (0.05, 3)] {
                let rtt = Duration::from_micros(rtt_us);
                let path = Path { loss: p, cc, ..Path::ten_gig(rtt) };
                let t = std::time::Instant::now();
                let o = transfer(path, mb << 20, Duration::from_millis(100));
                let bound = mathis_bps(o.sender.mss as u32, rtt, p);
                eprintln!(
                    "{cc:?} rtt {rtt:?} p {p}: {:.3} Gbit/s = {:.2} of Mathis {:.3}; rto {} fr {} retx {} ({:?} real)",
                    o.goodput_bps() / 1e9,
                    o.goodput_bps() / bound,
                    bound / 1e9,
                    o.sender.timeouts,
                    o.sender.fast_recoveries,
                    o.sender.retransmits,
                    t.elapsed()
                );
            }
        }
    }
}

#[test]
fn probe_ramp() {
    for cc in [CcAlgorithm::NewReno, CcAlgorithm::Cubic] {
        let rtt = Duration::from_millis(10);
        let path = Path { cc, ..Path::ten_gig(rtt) };
        let t = std::time::Instant::now();
        let o = transfer(path, 1 << 30, rtt);
        let rates: Vec<f64> =
            o.progress.windows(2).map(|w| (w[1].1 - w[0].1) as f64 * 8.0 / rtt.as_secs_f64() / 1e9).collect();
        eprintln!(
            "{cc:?}: {:.2} Gbit/s overall, per RTT {:?} ({:?} real) {:?}",
            o.goodput_bps() / 1e9,
            &rates[..rates.len().min(60)],
            t.elapsed(),
            o.counters.iter().filter(|c| c.0.contains("grown")).collect::<Vec<_>>()
        );
    }
}
