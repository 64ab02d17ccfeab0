//! Completions and the notification queues they are posted to.
//!
//! A queue is shared between the thread that polls the node and any thread that waits on
//! it: [`NotifyQueue::poll`] never blocks and returns `None` when empty (the paper's
//! "default value"); [`NotifyQueue::wait`] spins a bounded number of times, then parks on a
//! condition variable until a completion is posted or the timeout passes.

use crate::peer::Peer;
use crate::region::RegionKey;
use crate::wire::NackReason;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Bits of an op id that number the segment of a write; the rest is the write id.
pub const SEGMENT_BITS: u32 = 20;

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// Every byte was placed.
    Ok,
    /// The receiver refused it.
    Nacked(NackReason),
    /// A packet went unanswered after the configured number of tries.
    TimedOut,
    /// The local stack could not send it (no route, payload too large).
    SendFailed,
}

/// What a completion reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompletionKind {
    /// Sender side: a posted write has been acknowledged in full (or failed).
    Send,
    /// Receiver side: a registered op is complete, seen locally by the registration table.
    RecvRegistered,
    /// Receiver side: an unregistered op is complete, announced by the sender's Notify.
    RecvNotified,
}

/// One completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// Sender or receiver side, and how it was learned.
    pub kind: CompletionKind,
    /// The op id (write id << 20 | segment); for `Send`, the write id << 20.
    pub op_id: u64,
    /// The other node.
    pub peer: Peer,
    /// The (remote, for `Send`) region.
    pub key: RegionKey,
    /// Region offset of the first byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Outcome.
    pub status: Status,
    /// The op is one segment of a large write.
    pub segment: bool,
    /// The op is the last segment of a large write.
    pub last_segment: bool,
}

impl Completion {
    /// The write this completion belongs to.
    pub fn write_id(&self) -> u64 {
        self.op_id >> SEGMENT_BITS
    }

    /// The segment number within its write.
    pub fn segment_index(&self) -> u32 {
        (self.op_id & ((1 << SEGMENT_BITS) - 1)) as u32
    }
}

struct Inner {
    q: Mutex<Queue>,
    cv: Condvar,
    len: AtomicUsize,
}

/// The deque and the number of threads parked on it (changed only under the lock, so a
/// post that sees no sleeper can skip the wake-up system call without losing one).
#[derive(Default)]
struct Queue {
    items: VecDeque<Completion>,
    sleepers: usize,
}

/// A queue of completions; clones share the queue.
#[derive(Clone)]
pub struct NotifyQueue {
    inner: Arc<Inner>,
}

impl Default for NotifyQueue {
    fn default() -> Self {
        NotifyQueue::new()
    }
}

impl NotifyQueue {
    /// Spins of [`NotifyQueue::wait`] before it parks.
    pub const SPINS: u32 = 20_000;

    /// An empty queue.
    pub fn new() -> Self {
        NotifyQueue {
            inner: Arc::new(Inner { q: Mutex::new(Queue::default()), cv: Condvar::new(), len: AtomicUsize::new(0) }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A waiter that panicked cannot leave the deque inconsistent; keep going.
        self.inner.q.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Post a completion and wake a waiter (the wake-up costs a system call only when a
    /// thread is parked).
    pub fn post(&self, c: Completion) {
        let mut q = self.lock();
        q.items.push_back(c);
        self.inner.len.store(q.items.len(), Ordering::Release);
        let sleepers = q.sleepers;
        drop(q);
        if sleepers > 0 {
            self.inner.cv.notify_one();
        }
    }

    /// The oldest completion, or `None` at once when empty.
    pub fn poll(&self) -> Option<Completion> {
        if self.inner.len.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut q = self.lock();
        let c = q.items.pop_front();
        self.inner.len.store(q.items.len(), Ordering::Release);
        c
    }

    /// The oldest completion, waiting up to `timeout` for one: a bounded spin first, then
    /// the thread parks until a post wakes it. `None` if the timeout passed.
    pub fn wait(&self, timeout: Duration) -> Option<Completion> {
        for _ in 0..Self::SPINS {
            if let Some(c) = self.poll() {
                return Some(c);
            }
            std::hint::spin_loop();
        }
        let deadline = std::time::Instant::now() + timeout;
        let mut q = self.lock();
        loop {
            if let Some(c) = q.items.pop_front() {
                self.inner.len.store(q.items.len(), Ordering::Release);
                return Some(c);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return None;
            }
            q.sleepers += 1;
            q = self.inner.cv.wait_timeout(q, left).unwrap_or_else(|e| e.into_inner()).0;
            q.sleepers -= 1;
        }
    }

    /// Completions waiting.
    pub fn len(&self) -> usize {
        self.inner.len.load(Ordering::Acquire)
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::MacAddr;

    fn c(op: u64) -> Completion {
        Completion {
            kind: CompletionKind::RecvRegistered,
            op_id: op,
            peer: Peer::Eth(MacAddr([2, 0, 0, 0, 0, 1])),
            key: RegionKey(1),
            offset: 0,
            len: 1,
            status: Status::Ok,
            segment: false,
            last_segment: false,
        }
    }

    #[test]
    fn poll_is_fifo_and_empty_is_none() {
        let q = NotifyQueue::new();
        assert_eq!(q.poll(), None);
        q.post(c(1));
        q.post(c(2));
        assert_eq!(q.len(), 2);
        assert_eq!(q.poll().unwrap().op_id, 1);
        assert_eq!(q.wait(Duration::ZERO).unwrap().op_id, 2);
        assert_eq!(q.wait(Duration::ZERO), None);
        let x = c(5 << SEGMENT_BITS | 3);
        assert_eq!((x.write_id(), x.segment_index()), (5, 3));
    }

    #[test]
    fn wait_wakes_on_a_post_from_another_thread() {
        let q = NotifyQueue::new();
        let q2 = q.clone();
        let h = std::thread::spawn(move || q2.wait(Duration::from_secs(60)));
        // Whether the waiter is still spinning or already parked, the post reaches it.
        q.post(c(7));
        assert_eq!(h.join().unwrap().map(|c| c.op_id), Some(7));
        assert!(q.is_empty());
    }

    #[test]
    fn a_parked_waiter_is_woken_by_a_post() {
        let q = NotifyQueue::new();
        let q2 = q.clone();
        let h = std::thread::spawn(move || q2.wait(Duration::from_secs(600)));
        // Wait (bounded by count, not time) until the waiter has parked.
        let mut parked = false;
        for _ in 0..10_000_000 {
            if q.lock().sleepers == 1 {
                parked = true;
                break;
            }
            std::thread::yield_now();
        }
        assert!(parked, "the waiter never parked");
        q.post(c(9));
        assert_eq!(h.join().unwrap().map(|c| c.op_id), Some(9));
        assert_eq!(q.lock().sleepers, 0);
    }
}
