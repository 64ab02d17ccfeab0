//! The distributor: Rosebud's packet distribution subsystem and load balancer in one thread.
//!
//! It owns the ports and every unit's free-slot list. Each step it
//! 1. takes the descriptors units sent back and moves their frames out (to a port's transmit
//!    batch, to the host queue, or into another unit for loopback), freeing the slots;
//! 2. places frames from ports and from the host into free slots of the units the policy
//!    chooses (a frame whose unit has no free slot waits: back-pressure, counted as a stall);
//! 3. hands the port transmit batches to the links;
//! 4. fans broadcast messages out to every unit in one global order.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use link::{FrameBatch, Instant, Link, LinkError, MAX_FRAME};

use crate::control::{lock, DistCmd, DrainReport, HostPacket, PacketMeta, Shared};
use crate::desc::{stamp_of, tags_offset, Desc, Dest, Source, HOST_PORT};
use crate::hash::flow_hash;
use crate::policy::{PacketInfo, Policy, UnitView};
use crate::program::Message;
use crate::slots::SlotMemory;
use crate::spsc;
use crate::stats::{HostStats, PortStats, UnitLbCounters};

/// Messages the distributor keeps before it stops taking more from the outboxes.
const MSG_BACKLOG: usize = 1024;

/// A port: a link with its receive and transmit batches.
pub(crate) struct PortState {
    pub link: Box<dyn Link>,
    rx: FrameBatch,
    rx_pos: usize,
    rx_closed: bool,
    tx: FrameBatch,
    tx_closed: bool,
    pending: VecDeque<(u16, Desc)>,
    stats: PortStats,
}

impl PortState {
    pub(crate) fn new(link: Box<dyn Link>, batch: usize) -> Self {
        let slot = link.max_frame().clamp(64, MAX_FRAME);
        let kind = link.kind();
        PortState {
            link,
            rx: FrameBatch::new(batch, slot),
            rx_pos: 0,
            rx_closed: false,
            tx: FrameBatch::new(batch, slot),
            tx_closed: false,
            pending: VecDeque::new(),
            stats: PortStats { kind, ..PortStats::default() },
        }
    }
}

/// The distributor's ends of one unit's queues and its free slots.
pub(crate) struct UnitPort {
    mem: Arc<SlotMemory>,
    free: Vec<u32>,
    rx: spsc::Producer<Desc>,
    staged: Vec<Desc>,
    tx: spsc::Consumer<Desc>,
    inbox: spsc::Producer<Message>,
    outbox: spsc::Consumer<Message>,
    loop_pending: VecDeque<(u16, Desc)>,
    counters: UnitLbCounters,
}

impl UnitPort {
    pub(crate) fn new(
        mem: Arc<SlotMemory>,
        rx: spsc::Producer<Desc>,
        tx: spsc::Consumer<Desc>,
        inbox: spsc::Producer<Message>,
        outbox: spsc::Consumer<Message>,
    ) -> Self {
        let n = mem.count() as u32;
        UnitPort {
            mem,
            // Pop from the end: slot 0 first.
            free: (0..n).rev().collect(),
            rx,
            staged: Vec::with_capacity(n as usize),
            tx,
            inbox,
            outbox,
            loop_pending: VecDeque::new(),
            counters: UnitLbCounters { enabled: true, ..UnitLbCounters::default() },
        }
    }
}

/// What became of a frame offered to the load balancer.
enum Offer {
    /// Copied into a slot; its descriptor is staged.
    Placed,
    /// Dropped for this reason (counted by the caller).
    Dropped(&'static str),
    /// Not taken now (its unit is full, or the policy holds it): it waits.
    Wait,
}

/// The load-balancing state: units, their free slots, the policy.
struct Lb {
    units: Vec<UnitPort>,
    free: Vec<u32>,
    slots: Vec<u32>,
    enabled: Vec<bool>,
    policy: Box<dyn Policy>,
}

impl Lb {
    /// Copy `frame` into a free slot of unit `u` and stage its descriptor. The caller checked
    /// that `u` has a free slot and the frame fits.
    #[inline]
    fn place(&mut self, u: usize, frame: &[u8], stamp: u64, src: Source, hash: u32) {
        let up = &mut self.units[u];
        let Some(slot) = up.free.pop() else { return };
        self.free[u] -= 1;
        // SAFETY: the slot came off the free list, so no unit holds it: the distributor owns it
        // until the descriptor is published on the unit's queue.
        let mem = unsafe { up.mem.slot_mut(slot) };
        mem[..frame.len()].copy_from_slice(frame);
        up.staged.push(Desc { slot, len: frame.len() as u32, hash, src, dest: Dest::Drop, tags: 0, stamp });
        up.counters.placed += 1;
        // `occupancy` itself is filled in when the counters are published.
        up.counters.max_occupancy = up.counters.max_occupancy.max(self.slots[u] - self.free[u]);
    }

    /// Return slot `slot` to unit `u`'s free list.
    fn free_slot(&mut self, u: usize, slot: u32) {
        self.units[u].free.push(slot);
        self.free[u] += 1;
    }

    /// Publish staged descriptors on the units' queues.
    fn flush_staged(&mut self) {
        for up in &mut self.units {
            if !up.staged.is_empty() {
                let n = up.rx.push_slice(&up.staged);
                up.staged.drain(..n);
            }
        }
    }

    /// Choose a unit for a frame and place it. Oversize frames and frames the policy sends to
    /// a unit that does not exist are dropped; the caller counts the reason.
    // Always inlined: once per frame, and a call costs a large register save and restore.
    #[inline(always)]
    fn offer(&mut self, frame: &[u8], stamp: u64, port: u16, src: Source) -> Offer {
        let hash = flow_hash(frame);
        let info = PacketInfo { port, hash, frame };
        let view = UnitView { free: &self.free, slots: &self.slots, enabled: &self.enabled };
        let Some(u) = self.policy.choose(&info, &view) else { return Offer::Wait };
        let Some(up) = self.units.get_mut(u) else { return Offer::Dropped("bad_unit") };
        if frame.len() > up.mem.size() {
            return Offer::Dropped("oversize");
        }
        if self.free[u] == 0 {
            up.counters.stalls += 1;
            return Offer::Wait;
        }
        self.place(u, frame, stamp, src, hash);
        Offer::Placed
    }

    fn occupancy(&self) -> u64 {
        self.slots.iter().zip(&self.free).map(|(s, f)| u64::from(s - f)).sum()
    }
}

/// The distributor thread's state.
pub(crate) struct Distributor {
    pub ports: Vec<PortState>,
    lb: Lb,
    host_pending: VecDeque<(u16, Desc)>,
    host_in: VecDeque<(u16, Vec<u8>)>,
    host: HostStats,
    out_buf: Vec<Desc>,
    msg_pending: VecDeque<Message>,
    msg_buf: Vec<Message>,
    seq: u64,
    drains: Vec<(usize, std::time::Instant, mpsc::Sender<DrainReport>)>,
    shared: Arc<Shared>,
    steps: u64,
    publish_every: Duration,
    last_publish: Option<Instant>,
    quiet: bool,
}

impl Distributor {
    pub(crate) fn new(
        ports: Vec<PortState>,
        units: Vec<UnitPort>,
        policy: Box<dyn Policy>,
        shared: Arc<Shared>,
        publish_every: Duration,
    ) -> Self {
        let slots: Vec<u32> = units.iter().map(|u| u.mem.count() as u32).collect();
        let n = units.len();
        let max_slots = slots.iter().copied().max().unwrap_or(1) as usize;
        Distributor {
            ports,
            lb: Lb { free: slots.clone(), slots, enabled: vec![true; n], units, policy },
            host_pending: VecDeque::new(),
            host_in: VecDeque::new(),
            host: HostStats::default(),
            out_buf: Vec::with_capacity(max_slots),
            msg_pending: VecDeque::new(),
            msg_buf: Vec::with_capacity(64),
            seq: 0,
            drains: Vec::new(),
            shared,
            steps: 0,
            publish_every,
            last_publish: None,
            quiet: false,
        }
    }

    /// One round of distribution. Returns the number of frames and messages moved.
    pub(crate) fn step(&mut self, now: Instant) -> usize {
        if self.shared.dist_cmds.pending() {
            self.commands();
        }
        self.steps += 1;
        let mut work = 0;
        work += self.egress();
        work += self.loopback();
        let placed = self.ingress(now);
        work += placed;
        self.lb.flush_staged();
        work += self.transmit(now);
        work += self.fan_out();
        self.check_drains();
        self.quiet = placed == 0
            && self.lb.occupancy() == 0
            && self.host_in.is_empty()
            && self.ports.iter().all(|p| p.tx.is_empty() && p.rx_pos == p.rx.len())
            && self.msg_pending.is_empty();
        self.publish(now, false);
        work
    }

    fn commands(&mut self) {
        for c in self.shared.dist_cmds.take_all() {
            match c {
                DistCmd::Enable { unit, on } => self.set_enabled(unit, on),
                DistCmd::Drain { unit, requested, reply } => {
                    self.set_enabled(unit, false);
                    self.drains.push((unit, requested, reply));
                }
                DistCmd::Policy(p) => {
                    self.lb.policy = p;
                    self.lb.policy.enabled_changed(&self.lb.enabled);
                }
            }
        }
    }

    fn set_enabled(&mut self, unit: usize, on: bool) {
        if unit < self.lb.enabled.len() && self.lb.enabled[unit] != on {
            self.lb.enabled[unit] = on;
            self.lb.units[unit].counters.enabled = on;
            self.lb.policy.enabled_changed(&self.lb.enabled);
        }
    }

    fn check_drains(&mut self) {
        let lb = &self.lb;
        self.drains.retain(|(u, requested, reply)| {
            if lb.slots[*u] == lb.free[*u] {
                let _ = reply.send(DrainReport { unit: *u, elapsed: requested.elapsed() });
                false
            } else {
                true
            }
        });
    }

    /// Move frames units are done with to their destinations; free their slots.
    fn egress(&mut self) -> usize {
        let mut work = 0;
        // Waiting frames first, so each destination keeps its order.
        for p in 0..self.ports.len() {
            work += self.service_port_pending(p);
        }
        work += self.service_host_pending();
        for u in 0..self.lb.units.len() {
            self.out_buf.clear();
            let cap = self.out_buf.capacity().max(1);
            let n = self.lb.units[u].tx.pop_into(&mut self.out_buf, cap);
            work += n;
            for i in 0..n {
                let d = self.out_buf[i];
                self.route(u as u16, d);
            }
        }
        work
    }

    #[inline]
    fn route(&mut self, u: u16, d: Desc) {
        let ui = usize::from(u);
        match d.dest {
            Dest::Drop => self.lb.free_slot(ui, d.slot),
            Dest::Port(p) => {
                let pi = usize::from(p);
                if pi >= self.ports.len() {
                    self.lb.units[ui].counters.drops.add("bad_port", 1);
                    self.lb.free_slot(ui, d.slot);
                } else if !self.ports[pi].pending.is_empty() || !self.try_tx(pi, u, d) {
                    self.ports[pi].pending.push_back((u, d));
                }
            }
            Dest::Host => {
                if !self.host_pending.is_empty() || !self.try_host(u, d) {
                    self.host_pending.push_back((u, d));
                }
            }
            Dest::Unit(v) => {
                if usize::from(v) >= self.lb.units.len() {
                    self.lb.units[ui].counters.drops.add("bad_unit", 1);
                    self.lb.free_slot(ui, d.slot);
                } else {
                    self.lb.units[usize::from(v)].loop_pending.push_back((u, d));
                }
            }
        }
    }

    /// Copy a frame into port `p`'s transmit batch; false if the batch is full.
    // As `Lb::offer`: once per frame.
    #[inline(always)]
    fn try_tx(&mut self, p: usize, u: u16, d: Desc) -> bool {
        let ui = usize::from(u);
        let port = &mut self.ports[p];
        if port.tx_closed {
            port.stats.drops.add("port_closed", 1);
            self.lb.free_slot(ui, d.slot);
            return true;
        }
        if port.tx.is_full() {
            return false;
        }
        let up = &mut self.lb.units[ui];
        // SAFETY: the unit pushed this descriptor back, so it no longer touches the slot; it
        // stays ours until we put it on the free list below.
        let slot = unsafe { up.mem.slot(d.slot) };
        let frame = &slot[..(d.len as usize).min(slot.len())];
        let pushed = if d.stamp == 0 { port.tx.push(frame) } else { port.tx.push_stamped(frame, d.stamp) };
        if pushed {
            up.counters.tx_frames += 1;
            up.counters.tx_bytes += frame.len() as u64;
        } else {
            port.stats.drops.add("oversize", 1);
        }
        self.lb.free_slot(ui, d.slot);
        true
    }

    fn service_port_pending(&mut self, p: usize) -> usize {
        let mut n = 0;
        while let Some(&(u, d)) = self.ports[p].pending.front() {
            if !self.try_tx(p, u, d) {
                break;
            }
            self.ports[p].pending.pop_front();
            n += 1;
        }
        n
    }

    /// Deliver a frame to the host queue; false if it is full.
    fn try_host(&mut self, u: u16, d: Desc) -> bool {
        let ui = usize::from(u);
        let mut q = lock(&self.shared.host_out);
        if q.len() >= self.shared.host_out_cap {
            self.host.stalls += 1;
            return false;
        }
        let up = &mut self.lb.units[ui];
        // SAFETY: as in `try_tx`: the unit handed the slot back.
        let slot = unsafe { up.mem.slot(d.slot) };
        let len = (d.len as usize).min(slot.len());
        let at = tags_offset(len);
        let tags = (0..usize::from(d.tags))
            .filter_map(|i| slot.get(at + 4 * i..at + 4 * i + 4))
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        q.push_back(HostPacket {
            meta: PacketMeta { unit: ui, source: d.src, hash: d.hash, slot: d.slot, stamp: stamp_of(&d) },
            frame: slot[..len].to_vec(),
            tags,
        });
        drop(q);
        up.counters.host_frames += 1;
        self.host.delivered += 1;
        self.lb.free_slot(ui, d.slot);
        true
    }

    fn service_host_pending(&mut self) -> usize {
        let mut n = 0;
        while let Some(&(u, d)) = self.host_pending.front() {
            if !self.try_host(u, d) {
                break;
            }
            self.host_pending.pop_front();
            n += 1;
        }
        n
    }

    /// Copy frames units sent to other units into free slots of those units.
    fn loopback(&mut self) -> usize {
        let mut n = 0;
        for v in 0..self.lb.units.len() {
            while self.lb.free[v] > 0 {
                let Some((u, d)) = self.lb.units[v].loop_pending.pop_front() else { break };
                let ui = usize::from(u);
                let src_mem = self.lb.units[ui].mem.clone();
                // SAFETY: unit `u` handed this slot back; the distributor owns it until freed.
                let slot = unsafe { src_mem.slot(d.slot) };
                let frame = &slot[..(d.len as usize).min(slot.len())];
                if frame.len() > self.lb.units[v].mem.size() {
                    self.lb.units[ui].counters.drops.add("oversize", 1);
                } else {
                    self.lb.place(v, frame, d.stamp, Source::Unit(u), d.hash);
                    self.lb.units[ui].counters.loop_out += 1;
                    self.lb.units[v].counters.loop_in += 1;
                }
                self.lb.free_slot(ui, d.slot);
                n += 1;
            }
        }
        n
    }

    /// Place frames from the host and the ports into units. Returns frames placed.
    fn ingress(&mut self, now: Instant) -> usize {
        let mut placed = 0;
        if self.shared.host_in_flag.load(Ordering::Acquire) {
            self.shared.host_in_flag.store(false, Ordering::Relaxed);
            self.host_in.extend(lock(&self.shared.host_in).drain(..));
        }
        while let Some((port, frame)) = self.host_in.front() {
            let src = if *port == HOST_PORT { Source::Host } else { Source::Port(*port) };
            // A host frame the LB drops (oversize, bad unit) is taken off the queue like a
            // placed one, as before; the host's own counters have no drop reasons.
            if let Offer::Wait = self.lb.offer(frame, 0, *port, src) {
                break;
            }
            self.host_in.pop_front();
            self.host.injected += 1;
            placed += 1;
        }
        for (pi, port) in self.ports.iter_mut().enumerate() {
            if port.rx_pos == port.rx.len() && !port.rx_closed {
                port.rx.clear();
                port.rx_pos = 0;
                match port.link.rx_batch(now, &mut port.rx) {
                    Ok(_) => {}
                    Err(LinkError::Closed) => port.rx_closed = true,
                    Err(_) => port.stats.drops.add("link_rx_error", 1),
                }
            }
            let (pn, src) = (pi as u16, Source::Port(pi as u16));
            while port.rx_pos < port.rx.len() {
                let frame = port.rx.get(port.rx_pos);
                let stamp = port.rx.stamp(port.rx_pos).unwrap_or(0);
                match self.lb.offer(frame, stamp, pn, src) {
                    Offer::Placed => {
                        port.stats.rx_frames += 1;
                        port.stats.rx_bytes += frame.len() as u64;
                        placed += 1;
                    }
                    Offer::Dropped(reason) => port.stats.drops.add(reason, 1),
                    Offer::Wait => {
                        port.stats.stalls += 1;
                        break;
                    }
                }
                port.rx_pos += 1;
            }
        }
        placed
    }

    /// Hand the transmit batches to the links.
    fn transmit(&mut self, now: Instant) -> usize {
        let mut sent = 0;
        for port in &mut self.ports {
            if port.tx.is_empty() {
                continue;
            }
            let lens = port.tx.bytes() as u64;
            let before = port.tx.len();
            match port.link.tx_batch(now, &mut port.tx) {
                Ok(n) => {
                    let left = port.tx.bytes() as u64;
                    port.stats.tx_frames += n as u64;
                    port.stats.tx_bytes += lens - left;
                    sent += n;
                    if !port.tx.is_empty() {
                        port.stats.tx_stalls += 1;
                    }
                }
                Err(LinkError::Closed) => {
                    port.stats.drops.add("port_closed", before as u64);
                    port.tx.clear();
                    port.tx_closed = true;
                }
                Err(_) => {
                    port.stats.drops.add("link_tx_error", before as u64);
                    port.tx.clear();
                }
            }
        }
        sent
    }

    /// Broadcast messages: every unit gets every message, all in the same order.
    fn fan_out(&mut self) -> usize {
        if self.msg_pending.len() < MSG_BACKLOG {
            for u in 0..self.lb.units.len() {
                self.msg_buf.clear();
                self.lb.units[u].outbox.pop_into(&mut self.msg_buf, 64);
                for m in self.msg_buf.drain(..) {
                    self.seq += 1;
                    self.msg_pending.push_back(Message { seq: self.seq, ..m });
                }
            }
            if self.shared.host_msgs_flag.load(Ordering::Acquire) {
                self.shared.host_msgs_flag.store(false, Ordering::Relaxed);
                for (addr, value) in lock(&self.shared.host_msgs).drain(..) {
                    self.seq += 1;
                    self.msg_pending.push_back(Message { seq: self.seq, from: Source::Host, addr, value });
                }
            }
        }
        if self.msg_pending.is_empty() {
            return 0;
        }
        let room = self.lb.units.iter_mut().map(|u| u.inbox.free()).min().unwrap_or(0);
        let k = room.min(self.msg_pending.len());
        if k == 0 {
            return 0;
        }
        self.msg_buf.clear();
        self.msg_buf.extend(self.msg_pending.drain(..k));
        for up in &mut self.lb.units {
            // Takes all `k`: every inbox had at least `room >= k` free slots.
            let n = up.inbox.push_slice(&self.msg_buf);
            debug_assert_eq!(n, k, "an inbox took fewer control messages than it had room for");
        }
        self.host.broadcasts += k as u64;
        k
    }

    /// Publish counters (always when `force`, else at most every `publish_every`).
    pub(crate) fn publish(&mut self, now: Instant, force: bool) {
        if !force {
            if let Some(last) = self.last_publish {
                if now.saturating_since(last) < self.publish_every {
                    return;
                }
            }
        }
        self.last_publish = Some(now);
        {
            let mut d = lock(&self.shared.dist);
            d.policy.clear();
            d.policy.push_str(self.lb.policy.name());
            d.ports.resize_with(self.ports.len(), PortStats::default);
            for (dst, p) in d.ports.iter_mut().zip(&self.ports) {
                dst.clone_from(&p.stats);
                dst.link = p.link.stats();
            }
            d.units.resize_with(self.lb.units.len(), UnitLbCounters::default);
            for (i, (dst, u)) in d.units.iter_mut().zip(&mut self.lb.units).enumerate() {
                u.counters.occupancy = self.lb.slots[i] - self.lb.free[i];
                dst.clone_from(&u.counters);
            }
            d.slots.clear();
            d.slots.extend(self.lb.units.iter().map(|u| (u.mem.count() as u32, u.mem.size() as u32)));
            d.host = self.host.clone();
            d.steps = self.steps;
            d.quiet = self.quiet;
        }
        self.shared.dist_epoch.fetch_add(1, Ordering::Release);
    }

    /// Frames waiting anywhere inside the distributor or the units.
    pub(crate) fn in_flight(&self) -> u64 {
        self.lb.occupancy()
            + self.host_in.len() as u64
            + self.ports.iter().map(|p| (p.rx.len() - p.rx_pos + p.tx.len()) as u64).sum::<u64>()
    }
}
