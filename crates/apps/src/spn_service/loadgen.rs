//! A load generator for the SPN service: keeps a window of requests outstanding, cycling
//! through a pool of input vectors, and reports throughput and a latency histogram.

use super::client::{ClientError, SpnClient};
use super::histogram::LatencyHistogram;
use link::{Instant, Link};
use net::Stack;
use std::time::Duration;

/// Shape of the load.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Vectors per request.
    pub vectors_per_request: usize,
    /// Requests kept outstanding.
    pub window: usize,
    /// How long to send.
    pub duration: Duration,
    /// Ask for log-likelihoods.
    pub log: bool,
    /// A request unanswered for this long is counted lost.
    pub timeout: Duration,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            vectors_per_request: 64,
            window: 8,
            duration: Duration::from_secs(1),
            log: true,
            timeout: Duration::from_millis(200),
        }
    }
}

/// What a load run measured.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Requests sent.
    pub requests: u64,
    /// Requests answered (in order).
    pub answered: u64,
    /// Vectors answered with a value.
    pub vectors: u64,
    /// Answers that were error records.
    pub errors: u64,
    /// Requests lost or timed out.
    pub lost: u64,
    /// From the first request to the last answer.
    pub elapsed: Duration,
    /// Request round trips.
    pub latency: LatencyHistogram,
    /// Sum of all values received (a checksum).
    pub checksum: f64,
}

impl LoadReport {
    /// Vectors answered per second.
    pub fn vectors_per_sec(&self) -> f64 {
        self.vectors as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Run load from `client` on `stack` until `cfg.duration` has passed and every answer is in
/// (or timed out). `inputs` holds whole vectors to cycle through. `now()` reads the clock;
/// `between(now)` runs after each poll (to advance a peer in the same thread; may do nothing).
pub fn run_load<L: Link>(
    stack: &mut Stack<L>,
    client: &mut SpnClient,
    inputs: &[u8],
    vector_len: usize,
    cfg: &LoadConfig,
    mut now: impl FnMut() -> Instant,
    mut between: impl FnMut(Instant) -> Result<(), ClientError>,
) -> Result<LoadReport, ClientError> {
    let per = cfg.vectors_per_request.max(1);
    let pool = inputs.len() / vector_len.max(1);
    if pool < per {
        return Err(ClientError::Request(format!("{pool} input vectors are fewer than {per} per request")));
    }
    let mut report = LoadReport::default();
    let mut values = Vec::with_capacity(per);
    let mut next = 0usize;
    let start = now();
    let deadline = start + cfg.duration;
    let hard_stop = deadline + cfg.timeout * 2;
    let mut last = start;
    loop {
        let t = now();
        stack.poll(t)?;
        between(t)?;
        while let Some(reply) = client.poll_reply(stack, t, &mut values)? {
            report.answered += 1;
            if reply.status.is_err() {
                report.errors += 1;
            } else {
                report.vectors += reply.count as u64;
                report.latency.record(reply.latency);
            }
            report.checksum += values.iter().filter(|v| v.is_finite()).sum::<f64>();
            values.clear();
            last = t;
        }
        client.expire(t, cfg.timeout);
        let sending = t < deadline;
        while sending && client.outstanding() < cfg.window.max(1) {
            if next + per > pool {
                next = 0;
            }
            let batch = &inputs[next * vector_len..(next + per) * vector_len];
            if !client.send(stack, batch, None, cfg.log, t)? {
                break;
            }
            next += per;
            report.requests += 1;
        }
        stack.flush()?;
        if (!sending && client.outstanding() == 0) || t >= hard_stop {
            break;
        }
    }
    report.lost = client.counters.lost;
    report.elapsed = last - start;
    Ok(report)
}
