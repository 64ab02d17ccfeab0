//! A per-packet memo of yes/no verdicts indexed by a small integer (a distinct rule header, a
//! distinct content string): each verdict is computed at most once per packet, and starting
//! a new packet costs one increment, not a clear.

/// Verdicts stamped with the packet they were computed for.
#[derive(Debug, Clone, Default)]
pub struct Memo {
    epoch: u32,
    stamp: Vec<u32>,
    verdict: Vec<bool>,
}

impl Memo {
    /// Forgets every verdict (a new packet) and sizes the memo for `n` keys.
    pub fn begin(&mut self, n: usize) {
        if self.stamp.len() != n {
            self.stamp = vec![0; n];
            self.verdict = vec![false; n];
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.epoch = 1;
        }
    }

    /// The verdict for `key`, computing it with `f` if this packet has not yet (a key past
    /// the memo's size is computed every time).
    #[inline]
    pub fn get_or(&mut self, key: usize, f: impl FnOnce() -> bool) -> bool {
        match self.stamp.get_mut(key) {
            Some(s) if *s == self.epoch => self.verdict[key],
            Some(s) => {
                let v = f();
                *s = self.epoch;
                self.verdict[key] = v;
                v
            }
            None => f(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computes_once_per_packet() {
        let mut m = Memo::default();
        let mut calls = 0;
        m.begin(4);
        assert!(m.get_or(1, || {
            calls += 1;
            true
        }));
        assert!(m.get_or(1, || {
            calls += 1;
            false
        }));
        assert_eq!(calls, 1);
        m.begin(4);
        assert!(!m.get_or(1, || {
            calls += 1;
            false
        }));
        assert_eq!(calls, 2);
        assert!(m.get_or(7, || true) && !m.get_or(7, || false), "out of range: not memoised");
    }
}
