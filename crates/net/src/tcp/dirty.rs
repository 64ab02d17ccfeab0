//! The sessions that have something to send, in the order they asked: each once, however
//! often it is marked before the next flush.

use std::collections::VecDeque;

/// A queue of session ids with a flag per session so that a session is queued at most once.
#[derive(Debug)]
pub(crate) struct DirtyQueue {
    queue: VecDeque<u32>,
    queued: Vec<bool>,
}

impl DirtyQueue {
    /// An empty queue for `sessions` sessions.
    pub(crate) fn new(sessions: usize) -> Self {
        DirtyQueue { queue: VecDeque::with_capacity(64), queued: vec![false; sessions] }
    }

    /// Note that `sid` has something to send.
    #[inline]
    pub(crate) fn mark(&mut self, sid: u32) {
        let queued = &mut self.queued[sid as usize];
        if !*queued {
            *queued = true;
            self.queue.push_back(sid);
        }
    }

    /// The next session, its flag cleared (it may be marked again while it sends).
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<u32> {
        let sid = self.queue.pop_front()?;
        self.queued[sid as usize] = false;
        Some(sid)
    }

    /// Sessions queued.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::DirtyQueue;

    #[test]
    fn a_session_marked_twice_is_queued_once_and_may_be_marked_again_once_popped() {
        let mut q = DirtyQueue::new(4);
        q.mark(2);
        q.mark(1);
        q.mark(2);
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop(), Some(2));
        q.mark(2);
        assert_eq!((q.pop(), q.pop(), q.pop()), (Some(1), Some(2), None));
    }
}
