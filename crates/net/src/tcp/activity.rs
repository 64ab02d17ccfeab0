//! Connection activity for applications with many connections (an epoll-like readiness
//! list): each watcher gets, once per connection, the connections where something happened
//! since it last looked — a segment processed (data, window or ACK that freed send space,
//! FIN, handshake done) or the connection ended — so a service steps those instead of
//! walking every open connection.

/// One watcher's list of active sessions, each listed once until taken.
#[derive(Debug, Default)]
struct Watcher {
    list: Vec<u32>,
    listed: Vec<bool>,
}

/// All watchers of one engine.
#[derive(Debug, Default)]
pub struct Activity {
    watchers: Vec<Watcher>,
}

/// Most watchers one stack supports.
pub const MAX_WATCHERS: usize = 16;

impl Activity {
    /// Add a watcher for `sessions` session ids; returns its index, or None when
    /// [`MAX_WATCHERS`] are in use.
    pub fn add(&mut self, sessions: usize) -> Option<usize> {
        if self.watchers.len() >= MAX_WATCHERS {
            return None;
        }
        self.watchers.push(Watcher { list: Vec::with_capacity(64), listed: vec![false; sessions] });
        Some(self.watchers.len() - 1)
    }

    /// Note activity on session `sid` for every watcher.
    #[inline]
    pub fn mark(&mut self, sid: u32) {
        for w in &mut self.watchers {
            if let Some(f) = w.listed.get_mut(sid as usize) {
                if !*f {
                    *f = true;
                    w.list.push(sid);
                }
            }
        }
    }

    /// Move watcher `w`'s active sessions into `out` (appended) and clear its list.
    pub fn take(&mut self, w: usize, out: &mut Vec<u32>) {
        if let Some(w) = self.watchers.get_mut(w) {
            for &sid in &w.list {
                w.listed[sid as usize] = false;
            }
            out.append(&mut w.list);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_watcher_sees_each_active_session_once_until_it_takes_them() {
        let mut a = Activity::default();
        let (w0, w1) = (a.add(8).unwrap(), a.add(8).unwrap());
        a.mark(3);
        a.mark(5);
        a.mark(3);
        a.mark(99); // out of range: ignored
        let mut out = Vec::new();
        a.take(w0, &mut out);
        assert_eq!(out, vec![3, 5]);
        out.clear();
        a.take(w0, &mut out);
        assert!(out.is_empty());
        a.mark(5);
        a.take(w1, &mut out);
        assert_eq!(out, vec![3, 5], "the other watcher still had both, once each");
        out.clear();
        a.take(w0, &mut out);
        assert_eq!(out, vec![5]);
    }

    #[test]
    fn the_number_of_watchers_is_bounded() {
        let mut a = Activity::default();
        for _ in 0..MAX_WATCHERS {
            assert!(a.add(4).is_some());
        }
        assert_eq!(a.add(4), None);
    }
}
