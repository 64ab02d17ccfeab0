//! The unit program API, mirroring Rosebud's RPU firmware calls: a program receives packet
//! descriptors, inspects and modifies the packet in its slot, invokes its accelerators (plain
//! Rust objects it owns), and sends each packet to a port, the host or another unit, or drops
//! it; it can broadcast state updates, set a timer and trap to the host.

use std::any::Any;
use std::cell::Cell;

use link::Instant;

use crate::desc::{tags_offset, Desc, Dest, Source};
use crate::slots::{SlotMemory, SlotSpec};
use crate::spsc;
use crate::stats::UnitCounters;

/// A short broadcast state update: a write of `value` to `addr` of the semi-coherent memory
/// every unit sees, delivered to all units (the sender included) in the same order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// Global order: every unit sees messages in increasing `seq`.
    pub seq: u64,
    /// Who wrote it (`Source::Unit` or `Source::Host`).
    pub from: Source,
    /// Address (meaning is up to the programs).
    pub addr: u32,
    /// Value.
    pub value: u64,
}

/// A packet held by a program: a token for a slot of the unit (like a descriptor in firmware).
///
/// It cannot be copied. Give it back with [`Ctx::send`] (or [`Ctx::forward`],
/// [`Ctx::to_host`], [`Ctx::to_unit`], [`Ctx::discard`]); until then its slot stays taken, so
/// a program may keep packets (e.g. a reorder buffer). Tokens outlive neither a reclaim of
/// their slot nor a swap that reclaims it: using one then is counted as `stale_packets` and
/// does nothing.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a packet must be sent, dropped or kept"]
pub struct Packet {
    pub(crate) desc: Desc,
    pub(crate) gen: u32,
}

impl Packet {
    /// Frame length in bytes.
    pub fn len(&self) -> usize {
        self.desc.len as usize
    }

    /// True for an empty frame (never the case for received frames).
    pub fn is_empty(&self) -> bool {
        self.desc.len == 0
    }

    /// The ingress port ([`crate::HOST_PORT`] for host and loopback frames).
    pub fn port(&self) -> u16 {
        self.desc.port()
    }

    /// Where the frame came from.
    pub fn source(&self) -> Source {
        self.desc.src
    }

    /// The symmetric flow hash the load balancer computed.
    pub fn hash(&self) -> u32 {
        self.desc.hash
    }

    /// The slot holding the frame.
    pub fn slot(&self) -> u32 {
        self.desc.slot
    }
}

/// What the unit knows about one slot: whether the program holds it, the generation of its
/// token, the frame length. One entry per slot, so a token check touches one place.
#[derive(Debug, Clone, Copy, Default)]
struct SlotEntry {
    gen: u32,
    len: u32,
    held: bool,
}

/// Per-slot state the unit keeps to validate packet tokens.
#[derive(Debug)]
pub(crate) struct SlotTable {
    entries: Vec<SlotEntry>,
    pub held_count: usize,
}

impl SlotTable {
    pub(crate) fn new(count: usize) -> Self {
        SlotTable { entries: vec![SlotEntry::default(); count], held_count: 0 }
    }

    /// Number of slots.
    pub(crate) fn slots(&self) -> usize {
        self.entries.len()
    }

    /// True if the program holds slot `s`.
    pub(crate) fn held(&self, s: usize) -> bool {
        self.entries.get(s).is_some_and(|e| e.held)
    }

    /// The frame length recorded for slot `s` (0 for a slot out of range).
    pub(crate) fn len(&self, s: usize) -> u32 {
        self.entries.get(s).map_or(0, |e| e.len)
    }

    /// True if slot `s` is held under token generation `gen`.
    pub(crate) fn current(&self, s: usize, gen: u32) -> bool {
        self.entries.get(s).is_some_and(|e| e.held && e.gen == gen)
    }

    /// Take slot `d.slot` for a newly received descriptor; returns its token.
    #[inline]
    pub(crate) fn take(&mut self, d: Desc) -> Packet {
        let e = &mut self.entries[d.slot as usize];
        e.gen = e.gen.wrapping_add(1);
        if !e.held {
            e.held = true;
            self.held_count += 1;
        }
        e.len = d.len;
        Packet { desc: d, gen: e.gen }
    }

    /// True if `p` refers to a slot the program holds.
    #[inline]
    pub(crate) fn valid(&self, p: &Packet) -> bool {
        self.current(p.desc.slot as usize, p.gen)
    }

    /// Record a new frame length for held slot `s`.
    pub(crate) fn set_len(&mut self, s: usize, len: u32) {
        if let Some(e) = self.entries.get_mut(s) {
            e.len = len;
        }
    }

    /// Give back the slot of `p` if `p` is its current token (one lookup); false if stale.
    #[inline]
    pub(crate) fn release_current(&mut self, p: &Packet) -> bool {
        match self.entries.get_mut(p.desc.slot as usize) {
            Some(e) if e.held && e.gen == p.gen => {
                e.held = false;
                e.gen = e.gen.wrapping_add(1);
                self.held_count -= 1;
                true
            }
            _ => false,
        }
    }

    /// Give slot `s` back (the token becomes stale).
    #[inline]
    pub(crate) fn release(&mut self, s: usize) {
        if let Some(e) = self.entries.get_mut(s) {
            if e.held {
                e.held = false;
                self.held_count -= 1;
            }
            e.gen = e.gen.wrapping_add(1);
        }
    }
}

/// A trap a program raised while handling a packet.
#[derive(Debug)]
pub(crate) struct TrapRequest {
    pub reason: String,
    pub frame: Vec<u8>,
    pub desc: Desc,
}

/// The unit-side state a program reaches through its [`Ctx`].
pub(crate) struct Core {
    pub id: u16,
    pub n_units: u16,
    pub n_ports: u16,
    pub mem: std::sync::Arc<SlotMemory>,
    pub table: SlotTable,
    pub out: Vec<Desc>,
    pub outbox: spsc::Producer<Message>,
    pub counters: UnitCounters,
    pub stale: Cell<u64>,
    pub timer: Option<Instant>,
    pub trap: Option<TrapRequest>,
}

/// What a program can do while handling an event: reach its packets, send them on,
/// broadcast, set its timer, trap.
pub struct Ctx<'a> {
    pub(crate) core: &'a mut Core,
    pub(crate) now: Instant,
}

impl<'a> Ctx<'a> {
    /// This unit's number.
    pub fn unit_id(&self) -> usize {
        usize::from(self.core.id)
    }

    /// Number of units in the runtime.
    pub fn units(&self) -> usize {
        usize::from(self.core.n_units)
    }

    /// Number of ports.
    pub fn ports(&self) -> usize {
        usize::from(self.core.n_ports)
    }

    /// The current time (virtual in step mode).
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Bytes per slot: the largest a frame can grow to with [`Ctx::set_len`].
    pub fn slot_size(&self) -> usize {
        self.core.mem.size()
    }

    /// Packets this unit's program holds right now.
    pub fn held(&self) -> usize {
        self.core.table.held_count
    }

    /// The frame of `pkt` (empty for a stale token).
    pub fn data(&self, pkt: &Packet) -> &[u8] {
        if !self.core.table.valid(pkt) {
            self.core.stale.set(self.core.stale.get() + 1);
            return &[];
        }
        // SAFETY: the unit owns every slot its table marks held (it popped the descriptor and
        // has not pushed it back), and the shared borrow of `self` prevents `data_mut`.
        let slot = unsafe { self.core.mem.slot(pkt.desc.slot) };
        &slot[..pkt.len().min(slot.len())]
    }

    /// The frame of `pkt`, writable (empty for a stale token).
    pub fn data_mut(&mut self, pkt: &mut Packet) -> &mut [u8] {
        if !self.core.table.valid(pkt) {
            self.core.stale.set(self.core.stale.get() + 1);
            return &mut [];
        }
        let len = pkt.len();
        // SAFETY: as in `data`; the exclusive borrow of `self` prevents any other slice.
        let slot = unsafe { self.core.mem.slot_mut(pkt.desc.slot) };
        let n = len.min(slot.len());
        &mut slot[..n]
    }

    /// Change the frame length (1 ..= slot size); false if out of range or stale.
    /// Growing exposes whatever bytes the slot held before.
    pub fn set_len(&mut self, pkt: &mut Packet, len: usize) -> bool {
        if !self.core.table.valid(pkt) {
            self.core.stale.set(self.core.stale.get() + 1);
            return false;
        }
        if len == 0 || len > self.core.mem.size() {
            return false;
        }
        pkt.desc.len = len as u32;
        self.core.table.set_len(pkt.desc.slot as usize, len as u32);
        true
    }

    /// Hand `pkt` to its destination. Invalid destinations drop it (`bad_port`, `bad_unit`).
    #[inline]
    pub fn send(&mut self, pkt: Packet, dest: Dest) {
        if !self.core.table.release_current(&pkt) {
            self.core.counters.stale_packets += 1;
            return;
        }
        let dest = match dest {
            Dest::Port(p) if p >= self.core.n_ports => {
                self.core.counters.drops.add("bad_port", 1);
                Dest::Drop
            }
            Dest::Unit(u) if u >= self.core.n_units => {
                self.core.counters.drops.add("bad_unit", 1);
                Dest::Drop
            }
            d => d,
        };
        match dest {
            Dest::Port(_) => self.core.counters.to_port += 1,
            Dest::Host => self.core.counters.to_host += 1,
            Dest::Unit(_) => self.core.counters.to_unit += 1,
            Dest::Drop => {}
        }
        let mut d = pkt.desc;
        d.dest = dest;
        d.tags = 0;
        self.core.out.push(d);
    }

    fn push_out(&mut self, pkt: Packet, dest: Dest, tags: u16) {
        self.core.table.release(pkt.desc.slot as usize);
        let mut d = pkt.desc;
        d.dest = dest;
        d.tags = tags;
        self.core.out.push(d);
    }

    /// Send `pkt` out of `port`.
    #[inline]
    pub fn forward(&mut self, pkt: Packet, port: u16) {
        self.send(pkt, Dest::Port(port));
    }

    /// Drop `pkt`, counting it under `reason` (a short snake_case name).
    pub fn discard(&mut self, pkt: Packet, reason: &'static str) {
        if !self.core.table.valid(&pkt) {
            self.core.counters.stale_packets += 1;
            return;
        }
        self.core.counters.drops.add(reason, 1);
        self.push_out(pkt, Dest::Drop, 0);
    }

    /// Send `pkt` to the host with `tags` (e.g. rule ids), written after the frame in its slot
    /// like Rosebud appends rule ids; tags that do not fit are counted as `tags_truncated`.
    pub fn to_host(&mut self, pkt: Packet, tags: &[u32]) {
        if !self.core.table.valid(&pkt) {
            self.core.counters.stale_packets += 1;
            return;
        }
        let at = tags_offset(pkt.len());
        // SAFETY: the unit owns the held slot (see `data`); no other slice of it is alive.
        let slot = unsafe { self.core.mem.slot_mut(pkt.desc.slot) };
        let room = slot.len().saturating_sub(at) / 4;
        let n = tags.len().min(room).min(usize::from(u16::MAX));
        for (i, t) in tags[..n].iter().enumerate() {
            slot[at + 4 * i..at + 4 * i + 4].copy_from_slice(&t.to_le_bytes());
        }
        self.core.counters.tags_truncated += (tags.len() - n) as u64;
        self.core.counters.to_host += 1;
        self.push_out(pkt, Dest::Host, n as u16);
    }

    /// Send the whole packet to unit `unit` (loopback, for chains of units). The packet keeps
    /// its slot until the target unit has a free one; units that send to each other in a cycle
    /// can fill each other up and stall, so use loopback for chains (no cycles).
    pub fn to_unit(&mut self, pkt: Packet, unit: usize) {
        self.send(pkt, Dest::Unit(u16::try_from(unit).unwrap_or(u16::MAX)));
    }

    /// Broadcast a state update to every unit (this one too); false if the outbox is full
    /// (counted as `messages_full`).
    pub fn broadcast(&mut self, addr: u32, value: u64) -> bool {
        let m = Message { seq: 0, from: Source::Unit(self.core.id), addr, value };
        if self.core.outbox.push(m) {
            self.core.counters.messages_out += 1;
            true
        } else {
            self.core.counters.messages_full += 1;
            false
        }
    }

    /// Call the program's `on_timer` once `now >= at` (one timer per unit; replaces any other).
    pub fn set_timer(&mut self, at: Instant) {
        self.core.timer = Some(at);
    }

    /// Cancel the timer.
    pub fn clear_timer(&mut self) {
        self.core.timer = None;
    }

    /// Stop at a breakpoint: once the current callback returns, the unit hands a copy of `pkt`
    /// and a dump of its state to the host and waits until the host resumes it.
    pub fn trap(&mut self, pkt: &Packet, reason: &str) {
        let frame = self.data(pkt).to_vec();
        self.core.trap = Some(TrapRequest { reason: reason.to_string(), frame, desc: pkt.desc });
    }
}

/// The packets a unit received in one round, handed to [`Program::on_batch`] one by one.
///
/// [`Batch::next`] turns the next descriptor into a [`Packet`] (counting it as received);
/// it ends early once the program has raised a trap, so the unit can stop there.
pub struct Batch<'b> {
    descs: &'b [Desc],
    pos: &'b mut usize,
}

impl<'b> Batch<'b> {
    /// The packets `descs[*pos..]`; `*pos` follows the packets taken, so after a panic the
    /// unit knows the last one (`descs[*pos - 1]`).
    pub(crate) fn new(descs: &'b [Desc], pos: &'b mut usize) -> Self {
        Batch { descs, pos }
    }

    /// Packets left in the batch.
    pub fn remaining(&self) -> usize {
        self.descs.len().saturating_sub(*self.pos)
    }

    /// The next packet, or `None` when the batch is done or a trap is pending.
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self, ctx: &mut Ctx<'_>) -> Option<Packet> {
        if ctx.core.trap.is_some() {
            return None;
        }
        let d = *self.descs.get(*self.pos)?;
        *self.pos += 1;
        ctx.core.counters.rx_frames += 1;
        ctx.core.counters.rx_bytes += u64::from(d.len);
        Some(ctx.core.table.take(d))
    }
}

/// A unit program: the firmware of one processing unit.
///
/// Every callback runs on the unit's thread (or inside `Runtime::step`). A panic in a callback
/// is caught, counted (`program_panics`), and the packet being handled is dropped.
pub trait Program: Send {
    /// A short name for reports.
    fn name(&self) -> &str;

    /// The slots this unit announces to the LB (`None`: the runtime's default).
    fn slots(&self) -> Option<SlotSpec> {
        None
    }

    /// Called once before the first packet, and after a swap installs this program.
    fn on_start(&mut self, _ctx: &mut Ctx<'_>) {}

    /// A packet arrived.
    fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet);

    /// A batch of packets arrived. The default hands each to [`Program::on_packet`]; being
    /// instantiated for each program type, it calls `on_packet` directly (inlinable), so a
    /// batch costs one dynamic call, not one per packet. Overrides must take every packet
    /// with [`Batch::next`]; packets not taken wait for the next round.
    fn on_batch(&mut self, ctx: &mut Ctx<'_>, batch: &mut Batch<'_>) {
        while let Some(pkt) = batch.next(ctx) {
            self.on_packet(ctx, pkt);
        }
    }

    /// A broadcast message arrived (in the same global order on every unit).
    fn on_message(&mut self, _ctx: &mut Ctx<'_>, _msg: &Message) {}

    /// The timer set with [`Ctx::set_timer`] expired.
    fn on_timer(&mut self, _ctx: &mut Ctx<'_>) {}

    /// The host drains this unit: send on every packet the program keeps.
    fn on_flush(&mut self, _ctx: &mut Ctx<'_>) {}

    /// A description of the program's state for the host (breakpoints, `dump`).
    fn dump(&self) -> String {
        String::new()
    }

    /// Program-specific counters for the stats (appended to `out`).
    fn counters(&self, _out: &mut Vec<(&'static str, u64)>) {}

    /// Hand over state (including kept packets) to the program replacing this one. `None`
    /// means "nothing": the runtime then calls `on_flush` first so no packet is kept.
    fn handoff(&mut self) -> Option<Box<dyn Any + Send>> {
        None
    }

    /// Take over the state the previous program handed off (it may be of another type).
    fn adopt(&mut self, _ctx: &mut Ctx<'_>, _state: Box<dyn Any + Send>) {}

    /// Reconfigure in place (e.g. load new accelerator tables) while traffic flows.
    fn configure(&mut self, _ctx: &mut Ctx<'_>, _cfg: Box<dyn Any + Send>) -> Result<(), String> {
        Err(format!("program '{}' takes no configuration", self.name()))
    }
}
