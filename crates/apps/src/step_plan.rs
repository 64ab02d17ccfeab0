//! Which of a service's connections to step after a poll: the ones the stack reports active
//! (see `Stack::tcp_watch`), plus all of them at a periodic sweep that catches what only
//! time changes (deadlines, retries). With thousands of connections this replaces a walk
//! over every connection after every poll.

use link::{Instant, Link};
use net::{Stack, TcpHandle, TcpWatch};
use std::time::Duration;

/// How often every connection is stepped regardless of activity.
pub const SWEEP_EVERY: Duration = Duration::from_millis(10);

/// The plan of one service: its connections by session slot and its activity watcher.
#[derive(Default)]
pub struct StepPlan {
    watch: Option<TcpWatch>,
    /// No watcher could be had: always sweep.
    unwatched: bool,
    /// Per session slot: the connection bound there and its item index.
    by_slot: Vec<Option<(TcpHandle, usize)>>,
    last_sweep: Option<Instant>,
    active: Vec<TcpHandle>,
}

impl StepPlan {
    /// A plan with no connections yet (its watcher is made on first use).
    pub fn new() -> Self {
        StepPlan::default()
    }

    /// Connection `h` is the service's item `index` (replaces an earlier binding of `h`).
    pub fn bind(&mut self, h: TcpHandle, index: usize) {
        let slot = h.slot() as usize;
        if slot >= self.by_slot.len() {
            self.by_slot.resize(slot + 1, None);
        }
        self.by_slot[slot] = Some((h, index));
    }

    /// Forget connection `h`.
    pub fn unbind(&mut self, h: TcpHandle) {
        if let Some(e) = self.by_slot.get_mut(h.slot() as usize) {
            if e.is_some_and(|(b, _)| b == h) {
                *e = None;
            }
        }
    }

    /// Decide: returns true if every item is to be stepped (a sweep is due, or the stack has
    /// no watcher left for us); otherwise fills `out` with the indices of the active items.
    pub fn plan<L: Link>(&mut self, stack: &mut Stack<L>, out: &mut Vec<usize>) -> bool {
        out.clear();
        if self.watch.is_none() && !self.unwatched {
            match stack.tcp_watch() {
                Ok(w) => self.watch = Some(w),
                Err(_) => self.unwatched = true,
            }
        }
        let now = stack.now();
        let due = self.last_sweep.is_none_or(|t| now >= t + SWEEP_EVERY || now < t);
        if let Some(w) = self.watch {
            self.active.clear();
            stack.tcp_take_activity(w, &mut self.active);
        }
        if self.unwatched || due {
            self.last_sweep = Some(now);
            return true;
        }
        for h in &self.active {
            if let Some(Some((b, i))) = self.by_slot.get(h.slot() as usize) {
                if b == h {
                    out.push(*i);
                }
            }
        }
        false
    }
}
