//! The host channel: commands to units and to the load balancer, replies, counters, packets
//! to and from the host, and traps. A [`Control`] is a cheap, cloneable handle that works the
//! same whether the runtime runs on threads or is stepped by hand.

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::desc::Source;
use crate::policy::Policy;
use crate::program::Program;
use crate::stats::{HostStats, PortStats, RuntimeStats, UnitCounters, UnitLbCounters, UnitState, UnitStats};
use crate::MiddleboxError;

/// A host-installed breakpoint condition, evaluated by the unit before its program sees a packet.
pub type Breakpoint = Box<dyn FnMut(&PacketMeta, &[u8]) -> bool + Send>;

/// Facts about a packet handed to the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketMeta {
    /// The unit that handled it.
    pub unit: usize,
    /// Where it came from.
    pub source: Source,
    /// Its flow hash.
    pub hash: u32,
    /// Its slot in the unit.
    pub slot: u32,
    /// When it was captured (nanoseconds since the Unix epoch), if its input port said so (a
    /// pcap replay does).
    pub stamp: Option<u64>,
}

/// A packet a unit sent to the host, with the tags its program attached (e.g. rule ids).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPacket {
    /// Who handled it and where it came from.
    pub meta: PacketMeta,
    /// The frame.
    pub frame: Vec<u8>,
    /// The tags.
    pub tags: Vec<u32>,
}

/// A unit stopped at a breakpoint (or a caught panic, which does not stop the unit).
#[derive(Debug, Clone)]
pub struct Trap {
    /// Why.
    pub reason: String,
    /// The packet it stopped at (empty for traps without a packet).
    pub frame: Vec<u8>,
    /// Facts about the packet.
    pub meta: PacketMeta,
    /// The unit's state at the trap.
    pub dump: UnitDump,
}

/// A unit's state, as the host reads it (like dumping an RPU's memory).
#[derive(Debug, Clone, Default)]
pub struct UnitDump {
    /// Unit number.
    pub unit: usize,
    /// Program name.
    pub program: String,
    /// Processing state.
    pub state: UnitState,
    /// Packets the program holds: (slot, frame).
    pub held: Vec<(u32, Vec<u8>)>,
    /// The program's own description of its state.
    pub program_state: String,
    /// The unit's counters.
    pub counters: UnitCounters,
    /// The timer, in nanoseconds of the runtime's clock.
    pub timer_ns: Option<u64>,
}

/// The outcome of swapping a unit's program.
pub struct SwapReport {
    /// Unit number.
    pub unit: usize,
    /// How long the unit did not process packets (handoff, adopt, start).
    pub pause: Duration,
    /// From the request to the new program's start.
    pub latency: Duration,
    /// Packets the unit held across the swap.
    pub held: usize,
    /// The program that was replaced (drop it on the host's time, not the unit's).
    pub old: Box<dyn Program>,
}

impl fmt::Debug for SwapReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SwapReport")
            .field("unit", &self.unit)
            .field("pause", &self.pause)
            .field("latency", &self.latency)
            .field("held", &self.held)
            .field("old", &self.old.name())
            .finish()
    }
}

/// The outcome of draining a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainReport {
    /// Unit number.
    pub unit: usize,
    /// From the request until the unit held no slot.
    pub elapsed: Duration,
}

/// A reply that arrives later (the unit or LB handles the command on its next step).
#[derive(Debug)]
pub struct Pending<T> {
    rx: mpsc::Receiver<T>,
}

impl<T> Pending<T> {
    /// The reply if it has arrived.
    pub fn try_take(&self) -> Option<T> {
        self.rx.try_recv().ok()
    }

    /// Wait up to `timeout` for the reply (only useful when the runtime runs on threads).
    pub fn wait(&self, timeout: Duration) -> Result<T, MiddleboxError> {
        self.rx.recv_timeout(timeout).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => MiddleboxError::Timeout(format!("no reply within {timeout:?}")),
            mpsc::RecvTimeoutError::Disconnected => MiddleboxError::Stopped,
        })
    }
}

fn pending<T>() -> (mpsc::Sender<T>, Pending<T>) {
    let (tx, rx) = mpsc::channel();
    (tx, Pending { rx })
}

/// Commands a unit handles at the start of its next step.
pub(crate) enum UnitCmd {
    Pause,
    Resume,
    Flush,
    Swap { program: Box<dyn Program>, requested: std::time::Instant, reply: mpsc::Sender<SwapReport> },
    Dump { reply: mpsc::Sender<UnitDump> },
    Configure { cfg: Box<dyn Any + Send>, reply: mpsc::Sender<Result<(), String>> },
    Breakpoint(Option<Breakpoint>),
}

/// Commands the distributor handles at the start of its next step.
pub(crate) enum DistCmd {
    Enable { unit: usize, on: bool },
    Drain { unit: usize, requested: std::time::Instant, reply: mpsc::Sender<DrainReport> },
    Policy(Box<dyn Policy>),
}

/// A command queue with a cheap "anything there?" flag for the polling side.
pub(crate) struct CmdQueue<T> {
    flag: AtomicBool,
    q: Mutex<VecDeque<T>>,
}

impl<T> CmdQueue<T> {
    fn new() -> Self {
        CmdQueue { flag: AtomicBool::new(false), q: Mutex::new(VecDeque::new()) }
    }

    pub(crate) fn push(&self, c: T) {
        lock(&self.q).push_back(c);
        self.flag.store(true, Ordering::Release);
    }

    /// True if a command may be waiting (one relaxed load on the fast path).
    pub(crate) fn pending(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    pub(crate) fn take_all(&self) -> VecDeque<T> {
        self.flag.store(false, Ordering::Relaxed);
        std::mem::take(&mut *lock(&self.q))
    }
}

/// Lock a mutex, recovering the data if a thread panicked while holding it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a unit publishes about itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct UnitPublished {
    pub program: String,
    pub state: UnitState,
    pub held: u32,
    pub counters: UnitCounters,
    pub program_counters: Vec<(&'static str, u64)>,
}

/// What the distributor publishes.
#[derive(Debug, Clone, Default)]
pub(crate) struct DistPublished {
    pub policy: String,
    pub ports: Vec<PortStats>,
    pub units: Vec<UnitLbCounters>,
    pub slots: Vec<(u32, u32)>,
    pub host: HostStats,
    pub steps: u64,
    /// True when the last step found no frame anywhere and no slot taken.
    pub quiet: bool,
}

pub(crate) struct UnitShared {
    pub cmds: CmdQueue<UnitCmd>,
    pub published: Mutex<UnitPublished>,
}

/// Everything the host side shares with the distributor and the units.
pub(crate) struct Shared {
    pub units: Vec<UnitShared>,
    pub dist_cmds: CmdQueue<DistCmd>,
    pub dist: Mutex<DistPublished>,
    /// Publication counter of the distributor (bumped every publish).
    pub dist_epoch: AtomicU64,
    pub host_out: Mutex<VecDeque<HostPacket>>,
    pub host_out_cap: usize,
    pub host_in: Mutex<VecDeque<(u16, Vec<u8>)>>,
    pub host_in_flag: AtomicBool,
    pub host_msgs: Mutex<VecDeque<(u32, u64)>>,
    pub host_msgs_flag: AtomicBool,
    pub traps: Mutex<VecDeque<Trap>>,
    pub stop: AtomicBool,
}

impl Shared {
    pub(crate) fn new(units: usize, host_out_cap: usize) -> Self {
        Shared {
            units: (0..units)
                .map(|_| UnitShared { cmds: CmdQueue::new(), published: Mutex::new(UnitPublished::default()) })
                .collect(),
            dist_cmds: CmdQueue::new(),
            dist: Mutex::new(DistPublished::default()),
            dist_epoch: AtomicU64::new(0),
            host_out: Mutex::new(VecDeque::new()),
            host_out_cap,
            host_in: Mutex::new(VecDeque::new()),
            host_in_flag: AtomicBool::new(false),
            host_msgs: Mutex::new(VecDeque::new()),
            host_msgs_flag: AtomicBool::new(false),
            traps: Mutex::new(VecDeque::new()),
            stop: AtomicBool::new(false),
        }
    }
}

/// The host's handle on a runtime: counters, unit control, the host packet channel, traps.
#[derive(Clone)]
pub struct Control {
    pub(crate) shared: Arc<Shared>,
}

impl Control {
    /// Number of units.
    pub fn units(&self) -> usize {
        self.shared.units.len()
    }

    fn unit(&self, u: usize) -> Result<&UnitShared, MiddleboxError> {
        self.shared
            .units
            .get(u)
            .ok_or_else(|| MiddleboxError::Config(format!("there is no unit {u} (the runtime has {})", self.units())))
    }

    /// A snapshot of every counter (as last published; exact after a step or a stop).
    pub fn stats(&self) -> RuntimeStats {
        let d = lock(&self.shared.dist).clone();
        let units = self
            .shared
            .units
            .iter()
            .enumerate()
            .map(|(i, u)| {
                let p = lock(&u.published).clone();
                let (slots, slot_size) = d.slots.get(i).copied().unwrap_or((0, 0));
                UnitStats {
                    program: p.program,
                    state: p.state,
                    slots,
                    slot_size,
                    held: p.held,
                    unit: p.counters,
                    lb: d.units.get(i).cloned().unwrap_or_default(),
                    program_counters: p.program_counters,
                }
            })
            .collect();
        RuntimeStats { policy: d.policy, ports: d.ports, units, host: d.host, steps: d.steps }
    }

    /// Stop unit `u` from processing packets (they wait in its queue; the LB keeps filling it).
    pub fn pause(&self, u: usize) -> Result<(), MiddleboxError> {
        self.unit(u)?.cmds.push(UnitCmd::Pause);
        Ok(())
    }

    /// Let a paused or trapped unit go on.
    pub fn resume(&self, u: usize) -> Result<(), MiddleboxError> {
        self.unit(u)?.cmds.push(UnitCmd::Resume);
        Ok(())
    }

    /// Ask unit `u`'s program to send on every packet it keeps (`Program::on_flush`).
    pub fn flush(&self, u: usize) -> Result<(), MiddleboxError> {
        self.unit(u)?.cmds.push(UnitCmd::Flush);
        Ok(())
    }

    /// Let the LB send new frames to unit `u` (`on`) or not.
    pub fn enable(&self, u: usize, on: bool) -> Result<(), MiddleboxError> {
        self.unit(u)?;
        self.shared.dist_cmds.push(DistCmd::Enable { unit: u, on });
        Ok(())
    }

    /// Drain unit `u`: the LB stops sending to it, its program flushes what it keeps, and the
    /// reply comes once it holds no slot. The unit stays disabled until [`Control::enable`].
    pub fn drain(&self, u: usize) -> Result<Pending<DrainReport>, MiddleboxError> {
        self.unit(u)?;
        let (reply, p) = pending();
        self.shared.dist_cmds.push(DistCmd::Drain { unit: u, requested: std::time::Instant::now(), reply });
        self.flush(u)?;
        Ok(p)
    }

    /// Replace unit `u`'s program between two packets, without stopping the LB: frames keep
    /// queueing in the unit's slots, so none is lost and none overtakes another of its flow.
    /// State (and kept packets) move over through `Program::handoff` / `Program::adopt`.
    pub fn swap(&self, u: usize, program: Box<dyn Program>) -> Result<Pending<SwapReport>, MiddleboxError> {
        let (reply, p) = pending();
        self.unit(u)?.cmds.push(UnitCmd::Swap { program, requested: std::time::Instant::now(), reply });
        Ok(p)
    }

    /// Rosebud's way, for threaded runtimes: drain unit `u`, swap its program, enable it again.
    /// Returns (drain report, swap report). Frames of the unit's flows go to other units
    /// meanwhile, so with a flow-hash policy a flow may be reordered across the switch.
    pub fn swap_drained(
        &self,
        u: usize,
        program: Box<dyn Program>,
        timeout: Duration,
    ) -> Result<(DrainReport, SwapReport), MiddleboxError> {
        let d = self.drain(u)?.wait(timeout);
        let d = match d {
            Ok(d) => d,
            Err(e) => {
                self.enable(u, true)?;
                return Err(e);
            }
        };
        let s = self.swap(u, program)?.wait(timeout);
        self.enable(u, true)?;
        Ok((d, s?))
    }

    /// Reconfigure unit `u`'s program in place (e.g. new accelerator tables).
    pub fn configure(&self, u: usize, cfg: Box<dyn Any + Send>) -> Result<Pending<Result<(), String>>, MiddleboxError> {
        let (reply, p) = pending();
        self.unit(u)?.cmds.push(UnitCmd::Configure { cfg, reply });
        Ok(p)
    }

    /// Dump unit `u`'s state.
    pub fn dump(&self, u: usize) -> Result<Pending<UnitDump>, MiddleboxError> {
        let (reply, p) = pending();
        self.unit(u)?.cmds.push(UnitCmd::Dump { reply });
        Ok(p)
    }

    /// Install (or with `None` remove) a breakpoint on unit `u`: when it returns true for a
    /// packet, the unit stops before its program sees the packet and hands both to the host.
    pub fn set_breakpoint(&self, u: usize, bp: Option<Breakpoint>) -> Result<(), MiddleboxError> {
        self.unit(u)?.cmds.push(UnitCmd::Breakpoint(bp));
        Ok(())
    }

    /// Replace the load-balancing policy.
    pub fn set_policy(&self, p: Box<dyn Policy>) {
        self.shared.dist_cmds.push(DistCmd::Policy(p));
    }

    /// Take the next packet the units sent to the host.
    pub fn host_recv(&self) -> Option<HostPacket> {
        lock(&self.shared.host_out).pop_front()
    }

    /// Take every packet waiting for the host.
    pub fn host_recv_all(&self) -> Vec<HostPacket> {
        lock(&self.shared.host_out).drain(..).collect()
    }

    /// Inject a frame from the host, as if received on `port` (use [`crate::HOST_PORT`] for
    /// "from the host"); it goes through the load balancer.
    pub fn inject(&self, port: u16, frame: &[u8]) {
        lock(&self.shared.host_in).push_back((port, frame.to_vec()));
        self.shared.host_in_flag.store(true, Ordering::Release);
    }

    /// Broadcast a state update from the host to every unit.
    pub fn broadcast(&self, addr: u32, value: u64) {
        lock(&self.shared.host_msgs).push_back((addr, value));
        self.shared.host_msgs_flag.store(true, Ordering::Release);
    }

    /// Take the next trap report.
    pub fn trap(&self) -> Option<Trap> {
        lock(&self.shared.traps).pop_front()
    }

    /// True when the distributor's last published step saw no frame anywhere and every slot
    /// was free.
    pub fn is_quiet(&self) -> bool {
        lock(&self.shared.dist).quiet
    }

    /// Wait (threaded runtimes) until the middlebox is quiet over two consecutive
    /// publications of the distributor.
    pub fn wait_quiet(&self, timeout: Duration) -> Result<(), MiddleboxError> {
        let start = std::time::Instant::now();
        let mut seen: Option<u64> = None;
        loop {
            let epoch = self.shared.dist_epoch.load(Ordering::Acquire);
            if self.is_quiet() {
                match seen {
                    Some(e) if epoch > e => return Ok(()),
                    Some(_) => {}
                    None => seen = Some(epoch),
                }
            } else {
                seen = None;
            }
            if start.elapsed() > timeout {
                return Err(MiddleboxError::Timeout(format!("the middlebox did not become quiet within {timeout:?}")));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}
