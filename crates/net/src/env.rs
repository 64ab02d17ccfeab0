//! What the receive and transmit paths of a stack share: the clock, the configuration and the
//! counters. The interface core owns one [`Env`] and lends it to the transmit path
//! ([`crate::egress::Egress`]) and the TCP engine's sink with each call.

use crate::counters::Counters;
use crate::Config;
use link::Instant;

/// The clock, configuration and counters of one stack.
#[derive(Debug)]
pub(crate) struct Env {
    /// The time of the current poll.
    pub now: Instant,
    /// The stack's configuration.
    pub cfg: Config,
    /// The stack's counters.
    pub counters: Counters,
}

impl Env {
    /// The environment of a stack with configuration `cfg`, at time zero, counters at zero.
    pub fn new(cfg: Config) -> Env {
        Env { now: Instant::ZERO, cfg, counters: Counters::default() }
    }
}
