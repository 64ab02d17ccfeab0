//! Algorithms as schedules: each operation is compiled, per rank, into a list of steps.
//!
//! A step first posts all its sends (taking the bytes from the input or the work buffer as
//! they are at that moment), then waits until every message it receives has arrived, and only
//! then applies its receives and local copies **in the listed order**. So the order in which
//! partial results are combined is fixed by the schedule, never by arrival times, and repeated
//! runs give identical bits. The orders, per algorithm (`r` a rank, `n` ranks, `op` the
//! reduction, all operators commutative bit for bit):
//!
//! - flat reduce (EasyNet's all-to-one) at the root: `((x0 op x1) op x2) ... op x(n-1)`, in
//!   rank order;
//! - tree reduce (binary tree on ranks relative to the root, `v = (r - root) mod n`, children
//!   `2v+1`, `2v+2`): each node computes `(own op child1) op child2`, then sends to its parent;
//! - ring reduce-scatter / all-reduce: the chunk that ends at rank `c` is accumulated along
//!   the ring starting at rank `c+1`: `((x(c+1) op x(c+2)) op ...) op x(c)`;
//! - chain reduce (ranks relative to the root in a line, pipelined in segments): rank `v`
//!   computes `own op (what v+1 sent)`, so the root holds `x0 op (x1 op (... op x(n-1)))`
//!   in relative ranks;
//! - recursive doubling: with `p` the largest power of two `<= n` and `e = n - p`, ranks
//!   `2i+1 < 2e` first take `x(2i) op x(2i+1)`; then the `p` survivors combine with the partner
//!   at distance 1, 2, 4, ... (by survivor index), both partners computing the same value.
//!
//! The message of a send is matched to a receive by (operation sequence number, protocol
//! step, sender), first in, first out per sender.

use std::ops::Range;

/// Which buffer a send reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buf {
    /// The caller's data, unchanged during the operation.
    Input,
    /// The operation's working buffer (which holds the result at the end).
    Work,
}

/// How received or local bytes enter the work buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Overwrite.
    Copy,
    /// `work = work op bytes`.
    Reduce,
}

/// One action of a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send `buf[range]` to `peer` with protocol step `wire`.
    Send {
        /// Destination rank.
        peer: usize,
        /// Source buffer.
        buf: Buf,
        /// Byte range of the source.
        range: Range<usize>,
        /// Protocol step carried in the header.
        wire: u32,
    },
    /// Receive a message of exactly `range.len()` bytes from `peer` into `work[range]`.
    Recv {
        /// Source rank.
        peer: usize,
        /// Byte range of the work buffer.
        range: Range<usize>,
        /// Copy or reduce.
        mode: Mode,
        /// Protocol step expected in the header.
        wire: u32,
    },
    /// Move `input[from]` into `work[to]`.
    Local {
        /// Byte range of the input.
        from: Range<usize>,
        /// Byte range of the work buffer.
        to: Range<usize>,
        /// Copy or reduce.
        mode: Mode,
    },
}

/// A step: sends at its start, then receives and local moves in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Step {
    /// The actions.
    pub actions: Vec<Action>,
}

/// How the work buffer starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Init {
    /// A copy of the input.
    Input,
    /// Zeros of this many bytes.
    Zeros(usize),
}

/// One rank's part of an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Initial content of the work buffer.
    pub init: Init,
    /// The bytes of the work buffer that are the result.
    pub result: Range<usize>,
}

/// Offset added to the protocol steps of the second phase of a composed algorithm.
const PHASE2: u32 = 1 << 20;

impl Schedule {
    /// Whether any step reads the input buffer (a send from it or a local move); if none
    /// does, an [`Init::Input`] work buffer can take the input over instead of copying it.
    pub fn reads_input(&self) -> bool {
        self.steps.iter().flat_map(|s| &s.actions).any(|a| match a {
            Action::Send { buf, .. } => *buf == Buf::Input,
            Action::Local { .. } => true,
            Action::Recv { .. } => false,
        })
    }

    /// Whether the first thing done to a work buffer of `len` bytes is a receive that
    /// copies one message over all of it (nothing sends from the work buffer before): then
    /// an [`Init::Zeros`] buffer need not be zeroed, the message becomes it.
    pub fn first_recv_fills(&self, len: usize) -> bool {
        let Some(first) = self.steps.first() else { return false };
        let mut acts = first.actions.iter().filter(|a| !matches!(a, Action::Send { buf: Buf::Input, .. }));
        matches!(acts.next(), Some(Action::Recv { range, mode: Mode::Copy, .. }) if range.start == 0 && range.end == len)
    }

    fn new(init: Init, result: Range<usize>) -> Schedule {
        Schedule { steps: Vec::new(), init, result }
    }

    fn step(&mut self, actions: Vec<Action>) {
        self.steps.push(Step { actions });
    }

    /// `self` then `next` on the same work buffer (the init of `next` is ignored); the
    /// protocol steps of `next` are shifted so the phases cannot be confused.
    fn then(mut self, next: Schedule) -> Schedule {
        for mut s in next.steps {
            for a in &mut s.actions {
                if let Action::Send { wire, .. } | Action::Recv { wire, .. } = a {
                    *wire += PHASE2;
                }
            }
            self.steps.push(s);
        }
        self.result = next.result;
        self
    }

    /// Ranks this schedule sends to or receives from in step `i`.
    pub fn recv_peers(&self, i: usize) -> Vec<usize> {
        let mut v: Vec<usize> = self.steps.get(i).map_or(Vec::new(), |s| {
            s.actions
                .iter()
                .filter_map(|a| if let Action::Recv { peer, .. } = a { Some(*peer) } else { None })
                .collect()
        });
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Splits `elems` elements into `n` nearly equal parts; returns the byte range of part `i`.
pub fn part(elems: usize, n: usize, i: usize, esize: usize) -> Range<usize> {
    let (q, r) = (elems / n, elems % n);
    let start = i * q + i.min(r);
    let len = q + usize::from(i < r);
    start * esize..(start + len) * esize
}

fn send(peer: usize, buf: Buf, range: Range<usize>, wire: u32) -> Action {
    Action::Send { peer, buf, range, wire }
}

fn recv(peer: usize, range: Range<usize>, mode: Mode, wire: u32) -> Action {
    Action::Recv { peer, range, mode, wire }
}

/// Broadcast of `len` bytes, root sending to every rank directly (EasyNet's one-to-all;
/// the stack interleaves the connections).
pub fn bcast_flat(r: usize, n: usize, root: usize, len: usize) -> Schedule {
    if r == root {
        let mut s = Schedule::new(Init::Input, 0..len);
        s.step((0..n).filter(|&p| p != root).map(|p| send(p, Buf::Work, 0..len, 0)).collect());
        s
    } else {
        let mut s = Schedule::new(Init::Zeros(len), 0..len);
        s.step(vec![recv(root, 0..len, Mode::Copy, 0)]);
        s
    }
}

fn rel(r: usize, n: usize, root: usize) -> usize {
    (r + n - root) % n
}

fn abs(v: usize, n: usize, root: usize) -> usize {
    (v + root) % n
}

fn tree_children(v: usize, n: usize) -> Vec<usize> {
    [2 * v + 1, 2 * v + 2].into_iter().filter(|&c| c < n).collect()
}

/// Broadcast of `len` bytes down a binary tree rooted at `root`.
pub fn bcast_tree(r: usize, n: usize, root: usize, len: usize) -> Schedule {
    let v = rel(r, n, root);
    let mut s = if v == 0 { Schedule::new(Init::Input, 0..len) } else { Schedule::new(Init::Zeros(len), 0..len) };
    if v != 0 {
        s.step(vec![recv(abs((v - 1) / 2, n, root), 0..len, Mode::Copy, 0)]);
    }
    let kids: Vec<Action> =
        tree_children(v, n).into_iter().map(|c| send(abs(c, n, root), Buf::Work, 0..len, 0)).collect();
    if !kids.is_empty() {
        s.step(kids);
    }
    s
}

/// Byte ranges of the segments of a pipelined chain: `seg` bytes each (at least one
/// element, rounded down to whole elements), the last one shorter.
fn segments(len: usize, seg: usize, esize: usize) -> Vec<Range<usize>> {
    let esize = esize.max(1);
    let seg = (seg / esize).max(1) * esize;
    let mut v: Vec<Range<usize>> = (0..len).step_by(seg).map(|a| a..(a + seg).min(len)).collect();
    if v.is_empty() {
        v.push(0..0);
    }
    v
}

/// Broadcast of `len` bytes down a chain of ranks (relative to the root), pipelined in
/// segments of `seg` bytes: each rank forwards a segment as soon as it has it.
pub fn bcast_chain(r: usize, n: usize, root: usize, len: usize, seg: usize) -> Schedule {
    let v = rel(r, n, root);
    let segs = segments(len, seg, 1);
    let mut s = if v == 0 { Schedule::new(Init::Input, 0..len) } else { Schedule::new(Init::Zeros(len), 0..len) };
    let next = (v + 1 < n).then(|| abs(v + 1, n, root));
    let prev = abs(v.wrapping_sub(1), n, root);
    if v == 0 {
        if let Some(next) = next {
            s.step(segs.iter().enumerate().map(|(k, g)| send(next, Buf::Work, g.clone(), k as u32)).collect());
        }
        return s;
    }
    for (k, g) in segs.iter().enumerate() {
        s.step(vec![recv(prev, g.clone(), Mode::Copy, k as u32)]);
        if let Some(next) = next {
            s.step(vec![send(next, Buf::Work, g.clone(), k as u32)]);
        }
    }
    s
}

/// Reduce of `len` bytes (elements of `esize` bytes) to `root` up a chain, pipelined in
/// segments of about `seg` bytes.
pub fn reduce_chain(r: usize, n: usize, root: usize, len: usize, esize: usize, seg: usize) -> Schedule {
    let v = rel(r, n, root);
    let segs = segments(len, seg, esize);
    let result = if v == 0 { 0..len } else { 0..0 };
    let mut s = Schedule::new(Init::Input, result);
    let from = (v + 1 < n).then(|| abs(v + 1, n, root));
    let to = (v > 0).then(|| abs(v - 1, n, root));
    match (from, to) {
        (None, Some(to)) => {
            s.step(segs.iter().enumerate().map(|(k, g)| send(to, Buf::Input, g.clone(), k as u32)).collect());
        }
        (Some(from), to) => {
            for (k, g) in segs.iter().enumerate() {
                s.step(vec![recv(from, g.clone(), Mode::Reduce, k as u32)]);
                if let Some(to) = to {
                    s.step(vec![send(to, Buf::Work, g.clone(), k as u32)]);
                }
            }
        }
        (None, None) => {}
    }
    s
}

/// Reduce of `len` bytes to `root`, every rank sending to the root (EasyNet's all-to-one);
/// the root combines in rank order.
pub fn reduce_flat(r: usize, n: usize, root: usize, len: usize) -> Schedule {
    if r != root {
        let mut s = Schedule::new(Init::Zeros(0), 0..0);
        s.step(vec![send(root, Buf::Input, 0..len, 0)]);
        return s;
    }
    let mut s = Schedule::new(Init::Zeros(len), 0..len);
    let acts = (0..n)
        .map(|p| {
            let mode = if p == 0 { Mode::Copy } else { Mode::Reduce };
            if p == root {
                Action::Local { from: 0..len, to: 0..len, mode }
            } else {
                recv(p, 0..len, mode, 0)
            }
        })
        .collect();
    s.step(acts);
    s
}

/// Reduce of `len` bytes to `root` up a binary tree (own value, then children in order).
/// Ranks other than the root end with a partial result, which is not theirs to use.
pub fn reduce_tree(r: usize, n: usize, root: usize, len: usize) -> Schedule {
    let v = rel(r, n, root);
    let result = if v == 0 { 0..len } else { 0..0 };
    let mut s = Schedule::new(Init::Input, result);
    let kids: Vec<Action> =
        tree_children(v, n).into_iter().map(|c| recv(abs(c, n, root), 0..len, Mode::Reduce, 0)).collect();
    if !kids.is_empty() {
        s.step(kids);
    }
    if v != 0 {
        s.step(vec![send(abs((v - 1) / 2, n, root), Buf::Work, 0..len, 0)]);
    }
    s
}

/// All-reduce as EasyNet does it: flat reduce to rank 0, then flat broadcast.
pub fn allreduce_reduce_bcast(r: usize, n: usize, len: usize) -> Schedule {
    let mut first = reduce_flat(r, n, 0, len);
    first.init = Init::Zeros(len);
    first.then(bcast_flat(r, n, 0, len))
}

/// Most segments a ring step splits its chunk into (the protocol step of segment `j` of
/// ring step `k` is `k * RING_SEGMENTS + j`); larger chunks get larger segments.
const RING_SEGMENTS: usize = 1024;

/// One ring step: chunk `out` goes to `next` and chunk `inc` comes from `prev`, both in
/// segments of about `seg` bytes, so that each received segment is reduced or copied while
/// the following ones are still on their way.
#[allow(clippy::too_many_arguments)]
fn ring_step(
    s: &mut Schedule,
    next: usize,
    prev: usize,
    out: Range<usize>,
    inc: Range<usize>,
    mode: Mode,
    wire0: u32,
    seg: usize,
    esize: usize,
) {
    let split = |g: Range<usize>| {
        let seg = seg.max(g.len().div_ceil(RING_SEGMENTS));
        segments(g.len(), seg, esize).into_iter().map(move |x| g.start + x.start..g.start + x.end)
    };
    let mut acts: Vec<Action> =
        split(out).enumerate().map(|(j, g)| send(next, Buf::Work, g, wire0 + j as u32)).collect();
    acts.extend(split(inc).enumerate().map(|(j, g)| recv(prev, g, mode, wire0 + j as u32)));
    s.step(acts);
}

/// Ring reduce-scatter of `elems` elements (chunk `c` ends complete at rank `c`), without
/// the initial copy: the work buffer must start as the input. Chunks travel in segments of
/// about `seg` bytes ([`ring_step`]).
fn ring_reduce_scatter(s: &mut Schedule, r: usize, n: usize, elems: usize, esize: usize, seg: usize) {
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    for k in 0..n.saturating_sub(1) {
        let out = (r + 2 * n - k - 1) % n;
        let inc = (r + 2 * n - k - 2) % n;
        let (o, i) = (part(elems, n, out, esize), part(elems, n, inc, esize));
        ring_step(s, next, prev, o, i, Mode::Reduce, (k * RING_SEGMENTS) as u32, seg, esize);
    }
}

/// Ring all-gather where rank `r` holds chunk `r` complete in the work buffer, in segments
/// of about `seg` bytes.
#[allow(clippy::too_many_arguments)]
fn ring_allgather(s: &mut Schedule, r: usize, n: usize, elems: usize, esize: usize, wire0: u32, seg: usize) {
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    for k in 0..n.saturating_sub(1) {
        let out = (r + n - k) % n;
        let inc = (r + 2 * n - k - 1) % n;
        let (o, i) = (part(elems, n, out, esize), part(elems, n, inc, esize));
        ring_step(s, next, prev, o, i, Mode::Copy, wire0 + (k * RING_SEGMENTS) as u32, seg, esize);
    }
}

/// All-reduce of `elems` elements: ring reduce-scatter, then ring all-gather, every chunk
/// pipelined in segments of about `seg` bytes (reduction and transfer overlap).
pub fn allreduce_ring(r: usize, n: usize, elems: usize, esize: usize, seg: usize) -> Schedule {
    let mut s = Schedule::new(Init::Input, 0..elems * esize);
    ring_reduce_scatter(&mut s, r, n, elems, esize, seg);
    ring_allgather(&mut s, r, n, elems, esize, PHASE2, seg);
    s
}

/// All-reduce of `len` bytes by recursive doubling (with a fold-in of the ranks beyond the
/// largest power of two).
pub fn allreduce_doubling(r: usize, n: usize, len: usize) -> Schedule {
    let mut s = Schedule::new(Init::Input, 0..len);
    let p = if n == 0 { 0 } else { 1usize << (usize::BITS - 1 - n.leading_zeros()) };
    let extra = n - p;
    // Survivor index of rank r, or None if it folds into r + 1.
    let survivor = if r < 2 * extra {
        if r % 2 == 1 {
            Some(r / 2)
        } else {
            None
        }
    } else {
        Some(r - extra)
    };
    let rank_of = |i: usize| if i < extra { 2 * i + 1 } else { i + extra };
    match survivor {
        None => {
            s.step(vec![send(r + 1, Buf::Input, 0..len, 0)]);
            s.step(vec![recv(r + 1, 0..len, Mode::Copy, PHASE2)]);
        }
        Some(i) => {
            if r < 2 * extra {
                s.step(vec![recv(r - 1, 0..len, Mode::Reduce, 0)]);
            }
            let mut mask = 1;
            let mut k = 1u32;
            while mask < p {
                let partner = rank_of(i ^ mask);
                s.step(vec![send(partner, Buf::Work, 0..len, k), recv(partner, 0..len, Mode::Reduce, k)]);
                mask <<= 1;
                k += 1;
            }
            if r < 2 * extra {
                s.step(vec![send(r - 1, Buf::Work, 0..len, PHASE2)]);
            }
        }
    }
    s
}

/// Scatter: the root's input is `n` chunks of `chunk` bytes; rank `i` gets chunk `i`.
pub fn scatter(r: usize, n: usize, root: usize, chunk: usize) -> Schedule {
    let mut s = Schedule::new(Init::Zeros(chunk), 0..chunk);
    if r == root {
        let mut acts: Vec<Action> =
            (0..n).filter(|&p| p != root).map(|p| send(p, Buf::Input, p * chunk..(p + 1) * chunk, 0)).collect();
        acts.push(Action::Local { from: root * chunk..(root + 1) * chunk, to: 0..chunk, mode: Mode::Copy });
        s.step(acts);
    } else {
        s.step(vec![recv(root, 0..chunk, Mode::Copy, 0)]);
    }
    s
}

/// Gather: every rank's `chunk` bytes end at the root, in rank order.
pub fn gather(r: usize, n: usize, root: usize, chunk: usize) -> Schedule {
    if r != root {
        let mut s = Schedule::new(Init::Zeros(0), 0..0);
        s.step(vec![send(root, Buf::Input, 0..chunk, 0)]);
        return s;
    }
    let mut s = Schedule::new(Init::Zeros(n * chunk), 0..n * chunk);
    let acts = (0..n)
        .map(|p| {
            let to = p * chunk..(p + 1) * chunk;
            if p == root {
                Action::Local { from: 0..chunk, to, mode: Mode::Copy }
            } else {
                recv(p, to, Mode::Copy, 0)
            }
        })
        .collect();
    s.step(acts);
    s
}

/// All-gather by a ring: every rank ends with all `n` chunks in rank order; each chunk
/// travels in segments of about `seg` bytes, copied in as they arrive while the next travel.
pub fn allgather(r: usize, n: usize, chunk: usize, seg: usize) -> Schedule {
    let mut s = Schedule::new(Init::Zeros(n * chunk), 0..n * chunk);
    s.step(vec![Action::Local { from: 0..chunk, to: r * chunk..(r + 1) * chunk, mode: Mode::Copy }]);
    ring_allgather(&mut s, r, n, n * chunk, 1, 0, seg);
    s
}

/// Reduce-scatter by a ring: the input is `n` chunks of `elems` elements; rank `i` ends
/// with chunk `i` reduced over all ranks. Chunks travel in segments of about `seg` bytes,
/// each reduced as it arrives while the next travel.
pub fn reduce_scatter(r: usize, n: usize, elems: usize, esize: usize, seg: usize) -> Schedule {
    let chunk = elems * esize;
    let mut s = Schedule::new(Init::Input, r * chunk..(r + 1) * chunk);
    ring_reduce_scatter(&mut s, r, n, n * elems, esize, seg);
    s
}

/// All-to-all: chunk `j` of rank `i`'s input becomes chunk `i` of rank `j`'s result.
pub fn alltoall(r: usize, n: usize, chunk: usize) -> Schedule {
    let mut s = Schedule::new(Init::Zeros(n * chunk), 0..n * chunk);
    let mut acts: Vec<Action> =
        (0..n).filter(|&p| p != r).map(|p| send(p, Buf::Input, p * chunk..(p + 1) * chunk, 0)).collect();
    for p in 0..n {
        let to = p * chunk..(p + 1) * chunk;
        if p == r {
            acts.push(Action::Local { from: to.clone(), to, mode: Mode::Copy });
        } else {
            acts.push(recv(p, to, Mode::Copy, 0));
        }
    }
    s.step(acts);
    s
}

/// Barrier by dissemination: in round `k` send to `r + 2^k` and wait for `r - 2^k`.
pub fn barrier(r: usize, n: usize) -> Schedule {
    let mut s = Schedule::new(Init::Zeros(0), 0..0);
    let mut d = 1;
    let mut k = 0u32;
    while d < n {
        s.step(vec![send((r + d) % n, Buf::Work, 0..0, k), recv((r + n - d) % n, 0..0, Mode::Copy, k)]);
        d <<= 1;
        k += 1;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_first_receive_over_the_whole_buffer_fills_it() {
        // A flat broadcast's non-root receives everything at once; the root does not.
        assert!(bcast_flat(1, 3, 0, 64).first_recv_fills(64));
        assert!(!bcast_flat(0, 3, 0, 64).first_recv_fills(64));
        // A chain receives in segments; gather's root holds its own part first.
        assert!(!bcast_chain(1, 3, 0, 64, 16).first_recv_fills(64));
        assert!(!gather(0, 3, 0, 8).first_recv_fills(24));
        // Recursive doubling reduces into its own data.
        assert!(!allreduce_doubling(0, 2, 64).first_recv_fills(64));
    }

    #[test]
    fn parts_cover_everything_in_order() {
        for n in 1..9 {
            for elems in 0..20 {
                let mut at = 0;
                for i in 0..n {
                    let p = part(elems, n, i, 4);
                    assert_eq!(p.start, at);
                    at = p.end;
                }
                assert_eq!(at, elems * 4);
            }
        }
    }

    #[test]
    fn every_send_has_a_matching_receive() {
        // For each algorithm and rank count, the multiset of (from, to, wire, len) sends
        // equals that of receives, so no rank waits for a message nobody sends.
        type Build = fn(usize, usize) -> Schedule;
        let algos: Vec<(&str, Build)> = vec![
            ("bcast_flat", |r, n| bcast_flat(r, n, n / 2, 12)),
            ("bcast_tree", |r, n| bcast_tree(r, n, n - 1, 12)),
            ("bcast_chain", |r, n| bcast_chain(r, n, n / 3, 12, 5)),
            ("reduce_chain", |r, n| reduce_chain(r, n, n / 3, 12, 4, 5)),
            ("reduce_flat", |r, n| reduce_flat(r, n, n / 2, 12)),
            ("reduce_tree", |r, n| reduce_tree(r, n, n / 2, 12)),
            ("ar_rb", |r, n| allreduce_reduce_bcast(r, n, 12)),
            ("ar_ring", |r, n| allreduce_ring(r, n, 5, 4, 8)),
            ("ar_ring_segments", |r, n| allreduce_ring(r, n, 37, 4, 8)),
            ("ar_rd", |r, n| allreduce_doubling(r, n, 12)),
            ("scatter", |r, n| scatter(r, n, 0, 8)),
            ("gather", |r, n| gather(r, n, n - 1, 8)),
            ("allgather", |r, n| allgather(r, n, 8, 2)),
            ("reduce_scatter", |r, n| reduce_scatter(r, n, 3, 4, 4)),
            ("allgather_segments", |r, n| allgather(r, n, 37, 8)),
            ("reduce_scatter_segments", |r, n| reduce_scatter(r, n, 37, 4, 8)),
            ("alltoall", |r, n| alltoall(r, n, 8)),
            ("barrier", barrier),
        ];
        for (name, f) in algos {
            for n in 1..10 {
                let mut sends = Vec::new();
                let mut recvs = Vec::new();
                for r in 0..n {
                    for st in f(r, n).steps {
                        for a in st.actions {
                            match a {
                                Action::Send { peer, range, wire, .. } => sends.push((r, peer, wire, range.len())),
                                Action::Recv { peer, range, wire, .. } => recvs.push((peer, r, wire, range.len())),
                                Action::Local { .. } => {}
                            }
                        }
                    }
                }
                sends.sort_unstable();
                recvs.sort_unstable();
                assert_eq!(sends, recvs, "{name} on {n} ranks");
                assert!(sends.iter().all(|s| s.0 != s.1), "{name}: send to self");
            }
        }
    }
}
