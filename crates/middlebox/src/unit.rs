//! A processing unit: a program, its slot memory and its queues, stepped by its own thread
//! (or by `Runtime::step`). It pops descriptors, runs the program on them, and pushes the
//! descriptors the program sends on back to the distributor.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use link::Instant;

use crate::control::{lock, Breakpoint, PacketMeta, SwapReport, Trap, UnitCmd, UnitDump, UnitShared};
use crate::desc::{Desc, Dest};
use crate::program::{Batch, Core, Ctx, Message, Packet, Program, SlotTable};
use crate::slots::SlotMemory;
use crate::spsc;
use crate::stats::{UnitCounters, UnitState};

/// The unit's ends of its queues, made by the runtime builder.
pub(crate) struct UnitQueues {
    pub rx: spsc::Consumer<Desc>,
    pub tx: spsc::Producer<Desc>,
    pub inbox: spsc::Consumer<Message>,
    pub outbox: spsc::Producer<Message>,
}

/// One processing unit.
pub(crate) struct Unit {
    program: Box<dyn Program>,
    core: Core,
    rx: spsc::Consumer<Desc>,
    rx_buf: Vec<Desc>,
    rx_pos: usize,
    tx: spsc::Producer<Desc>,
    inbox: spsc::Consumer<Message>,
    msg_buf: Vec<Message>,
    state: UnitState,
    started: bool,
    stopped_at: Option<Packet>,
    breakpoint: Option<Breakpoint>,
    shared: Arc<crate::control::Shared>,
    batch: usize,
    publish_every: Duration,
    last_publish: Option<Instant>,
    prog_counters: Vec<(&'static str, u64)>,
}

fn panic_text(e: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = e.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = e.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".into()
    }
}

impl Unit {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        id: u16,
        n_units: u16,
        n_ports: u16,
        program: Box<dyn Program>,
        mem: Arc<SlotMemory>,
        q: UnitQueues,
        shared: Arc<crate::control::Shared>,
        batch: usize,
        publish_every: Duration,
    ) -> Self {
        let slots = mem.count();
        Unit {
            program,
            core: Core {
                id,
                n_units,
                n_ports,
                mem,
                table: SlotTable::new(slots),
                out: Vec::with_capacity(slots),
                outbox: q.outbox,
                counters: UnitCounters::default(),
                stale: Cell::new(0),
                timer: None,
                trap: None,
            },
            rx: q.rx,
            rx_buf: Vec::with_capacity(batch),
            rx_pos: 0,
            tx: q.tx,
            inbox: q.inbox,
            msg_buf: Vec::with_capacity(64),
            state: UnitState::Running,
            started: false,
            stopped_at: None,
            breakpoint: None,
            shared,
            batch: batch.max(1),
            publish_every,
            last_publish: None,
            prog_counters: Vec::new(),
        }
    }

    fn my_shared(&self) -> &UnitShared {
        &self.shared.units[usize::from(self.core.id)]
    }

    /// Run a program callback, catching a panic; returns false if it panicked.
    fn guarded(&mut self, now: Instant, f: impl FnOnce(&mut dyn Program, &mut Ctx<'_>)) -> Result<(), String> {
        let program = &mut *self.program;
        let mut ctx = Ctx { core: &mut self.core, now };
        let r = catch_unwind(AssertUnwindSafe(|| f(program, &mut ctx)));
        r.map_err(|e| {
            self.core.counters.program_panics += 1;
            panic_text(&*e)
        })
    }

    /// One round: commands, messages, timer, a batch of packets. Returns the work done.
    pub(crate) fn step(&mut self, now: Instant) -> usize {
        if self.my_shared().cmds.pending() {
            self.commands(now);
        }
        if !self.started {
            self.started = true;
            if let Err(e) = self.guarded(now, |p, c| p.on_start(c)) {
                self.panic_trap(now, None, &e);
            }
        }
        let mut work = 0;
        if self.state == UnitState::Running {
            work += self.messages(now);
            work += self.fire_timer(now);
            if let Some(pkt) = self.stopped_at.take() {
                work += 1;
                self.deliver(now, pkt);
            }
            work += self.packets(now);
        }
        self.flush_out();
        if work > 0 {
            self.core.counters.busy_steps += 1;
        } else {
            self.core.counters.idle_steps += 1;
        }
        self.publish(now, false);
        work
    }

    fn messages(&mut self, now: Instant) -> usize {
        self.msg_buf.clear();
        let n = self.inbox.pop_into(&mut self.msg_buf, 64);
        for i in 0..n {
            let m = self.msg_buf[i];
            self.core.counters.messages_in += 1;
            if let Err(e) = self.guarded(now, |p, c| p.on_message(c, &m)) {
                self.panic_trap(now, None, &e);
            }
        }
        n
    }

    fn fire_timer(&mut self, now: Instant) -> usize {
        match self.core.timer {
            Some(t) if now >= t => {
                self.core.timer = None;
                self.core.counters.timer_fires += 1;
                if let Err(e) = self.guarded(now, |p, c| p.on_timer(c)) {
                    self.panic_trap(now, None, &e);
                }
                1
            }
            _ => 0,
        }
    }

    fn packets(&mut self, now: Instant) -> usize {
        if self.rx_pos == self.rx_buf.len() {
            self.rx_buf.clear();
            self.rx_pos = 0;
            self.rx.pop_into(&mut self.rx_buf, self.batch);
        }
        let mut n = 0;
        while self.rx_pos < self.rx_buf.len() && self.state == UnitState::Running {
            if self.breakpoint.is_some() {
                n += 1;
                if !self.one_packet(now) {
                    break;
                }
            } else {
                let took = self.run_batch(now);
                n += took;
                if took == 0 {
                    // The program's `on_batch` took nothing: the packets wait for the next round.
                    break;
                }
            }
        }
        n
    }

    /// The fast path: hand the rest of the received batch to the program under one unwind
    /// guard (no breakpoint is set). Stops after a packet that panicked or raised a trap;
    /// returns the packets handed over.
    fn run_batch(&mut self, now: Instant) -> usize {
        let start = self.rx_pos;
        let program = &mut *self.program;
        let (buf, pos) = (&self.rx_buf, &mut self.rx_pos);
        let mut ctx = Ctx { core: &mut self.core, now };
        let r = catch_unwind(AssertUnwindSafe(|| {
            program.on_batch(&mut ctx, &mut Batch::new(buf, pos));
        }));
        if let Err(e) = r {
            self.core.counters.program_panics += 1;
            // The packet being handled is the last one taken. Its slot entered this batch
            // free at the distributor, so if the program still holds it, it holds it under
            // the token it was just given: take it back.
            let last = self.rx_pos.checked_sub(1).filter(|&i| i >= start).map(|i| self.rx_buf[i]);
            if let Some(desc) = last {
                if self.core.table.held(desc.slot as usize) {
                    self.reclaim(desc.slot as usize, desc, "program_panic");
                }
            }
            self.panic_trap(now, last, &panic_text(&*e));
        }
        self.take_trap(now);
        self.rx_pos - start
    }

    /// The slow path (a breakpoint is set): one packet, checked against the breakpoint first.
    /// Returns false if the unit stopped at the breakpoint.
    fn one_packet(&mut self, now: Instant) -> bool {
        let d = self.rx_buf[self.rx_pos];
        self.rx_pos += 1;
        self.core.counters.rx_frames += 1;
        self.core.counters.rx_bytes += u64::from(d.len);
        let pkt = self.core.table.take(d);
        if self.hits_breakpoint(&pkt) {
            let frame = Ctx { core: &mut self.core, now }.data(&pkt).to_vec();
            self.raise_trap(now, "breakpoint".into(), frame, Some(d));
            self.state = UnitState::Trapped;
            self.stopped_at = Some(pkt);
            return false;
        }
        self.deliver(now, pkt);
        true
    }

    fn hits_breakpoint(&mut self, pkt: &Packet) -> bool {
        let meta = self.meta(&pkt.desc);
        // SAFETY: the unit holds this slot (just taken from its queue) and no other slice of
        // it is alive during the call.
        let slot = unsafe { self.core.mem.slot(pkt.desc.slot) };
        let frame = &slot[..pkt.len().min(slot.len())];
        match self.breakpoint.as_mut() {
            Some(bp) => catch_unwind(AssertUnwindSafe(|| bp(&meta, frame))).unwrap_or(false),
            None => false,
        }
    }

    fn meta(&self, d: &Desc) -> PacketMeta {
        PacketMeta {
            unit: usize::from(self.core.id),
            source: d.src,
            hash: d.hash,
            slot: d.slot,
            stamp: crate::desc::stamp_of(d),
        }
    }

    /// Hand a packet to the program; reclaim it if the program panicked; honour a trap.
    fn deliver(&mut self, now: Instant, pkt: Packet) {
        let (slot, gen, desc) = (pkt.desc.slot as usize, pkt.gen, pkt.desc);
        if let Err(e) = self.guarded(now, |p, c| p.on_packet(c, pkt)) {
            if self.core.table.current(slot, gen) {
                self.reclaim(slot, desc, "program_panic");
            }
            self.panic_trap(now, Some(desc), &e);
        }
        self.take_trap(now);
    }

    /// Honour a trap the program raised: hand it to the host and stop.
    fn take_trap(&mut self, now: Instant) {
        if let Some(t) = self.core.trap.take() {
            self.raise_trap(now, t.reason, t.frame, Some(t.desc));
            self.state = UnitState::Trapped;
        }
    }

    /// Take a slot back from the program and drop its packet, counted under `reason`.
    fn reclaim(&mut self, slot: usize, mut desc: Desc, reason: &'static str) {
        self.core.table.release(slot);
        self.core.counters.drops.add(reason, 1);
        desc.dest = Dest::Drop;
        desc.tags = 0;
        self.core.out.push(desc);
    }

    fn panic_trap(&mut self, now: Instant, desc: Option<Desc>, msg: &str) {
        self.raise_trap(now, format!("program panicked: {msg}"), Vec::new(), desc);
    }

    fn raise_trap(&mut self, now: Instant, reason: String, frame: Vec<u8>, desc: Option<Desc>) {
        self.core.counters.traps += 1;
        let meta = match desc {
            Some(d) => self.meta(&d),
            None => PacketMeta {
                unit: usize::from(self.core.id),
                source: crate::Source::Host,
                hash: 0,
                slot: u32::MAX,
                stamp: None,
            },
        };
        let dump = self.dump(now);
        lock(&self.shared.traps).push_back(Trap { reason, frame, meta, dump });
    }

    fn flush_out(&mut self) {
        // Any counted stale accesses through `Ctx::data`.
        let stale = self.core.stale.replace(0);
        self.core.counters.stale_packets += stale;
        if self.core.out.is_empty() {
            return;
        }
        let n = self.tx.push_slice(&self.core.out);
        self.core.out.drain(..n);
    }

    fn dump(&self, _now: Instant) -> UnitDump {
        let t = &self.core.table;
        let held = (0..t.slots())
            .filter(|&s| t.held(s))
            .map(|s| {
                // SAFETY: the unit holds slot `s` (its table says so) and only reads it here.
                let slot = unsafe { self.core.mem.slot(s as u32) };
                (s as u32, slot[..(t.len(s) as usize).min(slot.len())].to_vec())
            })
            .collect();
        UnitDump {
            unit: usize::from(self.core.id),
            program: self.program.name().to_string(),
            state: self.state,
            held,
            program_state: self.program.dump(),
            counters: self.core.counters.clone(),
            timer_ns: self.core.timer.map(|t| t.as_nanos()),
        }
    }

    fn commands(&mut self, now: Instant) {
        let cmds = self.my_shared().cmds.take_all();
        for c in cmds {
            match c {
                UnitCmd::Pause => {
                    if self.state == UnitState::Running {
                        self.state = UnitState::Paused;
                    }
                }
                UnitCmd::Resume => self.state = UnitState::Running,
                UnitCmd::Flush => {
                    if let Err(e) = self.guarded(now, |p, c| p.on_flush(c)) {
                        self.panic_trap(now, None, &e);
                    }
                }
                UnitCmd::Swap { program, requested, reply } => {
                    let report = self.swap(now, program, requested);
                    let _ = reply.send(report);
                }
                UnitCmd::Dump { reply } => {
                    let _ = reply.send(self.dump(now));
                }
                UnitCmd::Configure { cfg, reply } => {
                    let mut out = Err("the program panicked".to_string());
                    if let Err(e) = self.guarded(now, |p, c| out = p.configure(c, cfg)) {
                        self.panic_trap(now, None, &e);
                    }
                    let _ = reply.send(out);
                }
                UnitCmd::Breakpoint(bp) => self.breakpoint = bp,
            }
        }
        self.publish(now, true);
    }

    /// Replace the program between two packets; queued packets wait in the slots meanwhile.
    fn swap(&mut self, now: Instant, new: Box<dyn Program>, requested: std::time::Instant) -> SwapReport {
        let t0 = std::time::Instant::now();
        let mut state = None;
        if let Err(e) = self.guarded(now, |p, _| state = p.handoff()) {
            self.panic_trap(now, None, &e);
        }
        if state.is_none() {
            // Nothing handed over: the old program must let go of what it keeps.
            if let Err(e) = self.guarded(now, |p, c| p.on_flush(c)) {
                self.panic_trap(now, None, &e);
            }
            let stopped = self.stopped_at.as_ref().map(|p| p.desc.slot as usize);
            for s in 0..self.core.table.slots() {
                if self.core.table.held(s) && Some(s) != stopped {
                    let desc = self.reclaim_desc(s);
                    self.reclaim(s, desc, "swap_leaked");
                }
            }
            // A packet stopped at a breakpoint stays with the unit, not the program.
        }
        let held = self.core.table.held_count;
        let old = std::mem::replace(&mut self.program, new);
        if let Some(st) = state {
            if let Err(e) = self.guarded(now, |p, c| p.adopt(c, st)) {
                self.panic_trap(now, None, &e);
            }
        }
        if let Err(e) = self.guarded(now, |p, c| p.on_start(c)) {
            self.panic_trap(now, None, &e);
        }
        self.started = true;
        self.core.counters.swaps += 1;
        let t1 = std::time::Instant::now();
        SwapReport { unit: usize::from(self.core.id), pause: t1 - t0, latency: t1 - requested, held, old }
    }

    /// A descriptor for a held slot being reclaimed.
    fn reclaim_desc(&self, s: usize) -> Desc {
        Desc {
            slot: s as u32,
            len: self.core.table.len(s),
            hash: 0,
            src: crate::Source::Host,
            dest: Dest::Drop,
            tags: 0,
            stamp: 0,
        }
    }

    /// Publish counters for the host (always when `force`, else at most every `publish_every`).
    pub(crate) fn publish(&mut self, now: Instant, force: bool) {
        if !force {
            if let Some(last) = self.last_publish {
                if now.saturating_since(last) < self.publish_every {
                    return;
                }
            }
        }
        self.last_publish = Some(now);
        self.prog_counters.clear();
        self.program.counters(&mut self.prog_counters);
        let mut p = lock(&self.my_shared().published);
        p.program.clear();
        p.program.push_str(self.program.name());
        p.state = self.state;
        p.held = self.core.table.held_count as u32;
        p.counters.clone_from(&self.core.counters);
        p.program_counters.clone_from(&self.prog_counters);
    }
}
