//! Building a middlebox and running it: step by step on one thread (deterministic, for tests)
//! or with the distributor and every unit on threads of their own, busy-polling.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use link::{Instant, Link};

use crate::control::{Control, Shared};
use crate::desc::Desc;
use crate::distributor::{Distributor, PortState, UnitPort};
use crate::policy::{Policy, RoundRobin};
use crate::program::{Message, Program};
use crate::slots::{SlotMemory, SlotSpec};
use crate::spsc;
use crate::stats::RuntimeStats;
use crate::unit::{Unit, UnitQueues};
use crate::MiddleboxError;

/// Most units a runtime can have.
pub const MAX_UNITS: usize = 64;
/// Most ports a runtime can have.
pub const MAX_PORTS: usize = 64;

/// How a thread waits when it finds nothing to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdlePolicy {
    /// Idle rounds spent spinning before yielding the CPU.
    pub spin: u32,
    /// Further idle rounds spent yielding before sleeping.
    pub yields: u32,
    /// Sleep per idle round after that (zero: never sleep).
    pub sleep: Duration,
}

impl Default for IdlePolicy {
    fn default() -> Self {
        IdlePolicy { spin: 256, yields: 4096, sleep: Duration::from_micros(50) }
    }
}

impl IdlePolicy {
    /// Spin and yield forever, never sleep (lowest latency; for benchmarks).
    pub fn busy() -> Self {
        IdlePolicy { spin: 64, yields: u32::MAX, sleep: Duration::ZERO }
    }
}

/// Tracks idle rounds of one thread.
struct Idler {
    policy: IdlePolicy,
    idle: u32,
}

impl Idler {
    fn after(&mut self, worked: bool) {
        if worked {
            self.idle = 0;
            return;
        }
        self.idle = self.idle.saturating_add(1);
        if self.idle < self.policy.spin {
            std::hint::spin_loop();
        } else if self.idle - self.policy.spin < self.policy.yields || self.policy.sleep.is_zero() {
            std::thread::yield_now();
        } else {
            std::thread::sleep(self.policy.sleep);
        }
    }
}

/// Runtime-wide settings. Plain data with defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Frames per port batch and descriptors per unit batch.
    pub batch: usize,
    /// Slots of units whose program announces none.
    pub slots: SlotSpec,
    /// Packets the host queue holds before units' host-bound packets wait.
    pub host_queue: usize,
    /// How often threads publish counters (step mode publishes every step).
    pub stats_interval: Duration,
    /// How threads wait when idle.
    pub idle: IdlePolicy,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            batch: 32,
            slots: SlotSpec::default(),
            host_queue: 65536,
            stats_interval: Duration::from_millis(1),
            idle: IdlePolicy::default(),
        }
    }
}

/// Assembles ports, units and a policy into a [`Runtime`].
pub struct Builder {
    cfg: RuntimeConfig,
    ports: Vec<Box<dyn Link>>,
    units: Vec<Box<dyn Program>>,
    policy: Option<Box<dyn Policy>>,
}

impl Builder {
    /// A builder with `cfg`.
    pub fn new(cfg: RuntimeConfig) -> Self {
        Builder { cfg, ports: Vec::new(), units: Vec::new(), policy: None }
    }

    /// Add a port; ports are numbered from 0 in the order added.
    pub fn port(mut self, link: impl Link + 'static) -> Self {
        self.ports.push(Box::new(link));
        self
    }

    /// Add a boxed port.
    pub fn port_boxed(mut self, link: Box<dyn Link>) -> Self {
        self.ports.push(link);
        self
    }

    /// Add a unit running `program`; units are numbered from 0 in the order added.
    pub fn unit(mut self, program: impl Program + 'static) -> Self {
        self.units.push(Box::new(program));
        self
    }

    /// Add a unit running a boxed program.
    pub fn unit_boxed(mut self, program: Box<dyn Program>) -> Self {
        self.units.push(program);
        self
    }

    /// Use `policy` (default: round robin).
    pub fn policy(mut self, policy: impl Policy + 'static) -> Self {
        self.policy = Some(Box::new(policy));
        self
    }

    /// Use a boxed policy.
    pub fn policy_boxed(mut self, policy: Box<dyn Policy>) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Allocate slot memories and queues and wire everything up.
    pub fn build(self) -> Result<Runtime, MiddleboxError> {
        let cfg = self.cfg;
        if cfg.batch == 0 || cfg.batch > 1024 {
            return Err(MiddleboxError::Config(format!("batch {} is outside 1..=1024", cfg.batch)));
        }
        if self.units.is_empty() || self.units.len() > MAX_UNITS {
            return Err(MiddleboxError::Config(format!(
                "a middlebox needs 1..={MAX_UNITS} units, got {}",
                self.units.len()
            )));
        }
        if self.ports.len() > MAX_PORTS {
            return Err(MiddleboxError::Config(format!("at most {MAX_PORTS} ports, got {}", self.ports.len())));
        }
        let n_units = self.units.len();
        let shared = Arc::new(Shared::new(n_units, cfg.host_queue.max(1)));
        let mut unit_ports = Vec::new();
        let mut units = Vec::new();
        for (i, program) in self.units.into_iter().enumerate() {
            let spec = program.slots().unwrap_or(cfg.slots);
            let mem = Arc::new(
                SlotMemory::new(spec)
                    .map_err(|e| MiddleboxError::Config(format!("unit {i} ({}): {e}", program.name())))?,
            );
            let (rx_p, rx_c) = spsc::channel::<Desc>(spec.count);
            let (tx_p, tx_c) = spsc::channel::<Desc>(spec.count);
            let (in_p, in_c) = spsc::channel::<Message>(1024);
            let (out_p, out_c) = spsc::channel::<Message>(256);
            unit_ports.push(UnitPort::new(mem.clone(), rx_p, tx_c, in_p, out_c));
            units.push(Unit::new(
                i as u16,
                n_units as u16,
                self.ports.len() as u16,
                program,
                mem,
                UnitQueues { rx: rx_c, tx: tx_p, inbox: in_c, outbox: out_p },
                shared.clone(),
                cfg.batch,
                cfg.stats_interval,
            ));
        }
        let ports = self.ports.into_iter().map(|l| PortState::new(l, cfg.batch)).collect();
        let mut policy = self.policy.unwrap_or_else(|| Box::new(RoundRobin::new()));
        policy.enabled_changed(&vec![true; n_units]);
        let dist = Distributor::new(ports, unit_ports, policy, shared.clone(), cfg.stats_interval);
        let mut rt = Runtime { dist, units, control: Control { shared }, cfg };
        rt.publish_all(Instant::ZERO);
        Ok(rt)
    }
}

/// A middlebox: ports -> load balancer -> units -> ports or host.
///
/// Drive it with [`Runtime::step`] (one thread, deterministic) or [`Runtime::start`] (threads).
pub struct Runtime {
    dist: Distributor,
    units: Vec<Unit>,
    control: Control,
    cfg: RuntimeConfig,
}

impl Runtime {
    /// A builder with the default configuration.
    pub fn builder() -> Builder {
        Builder::new(RuntimeConfig::default())
    }

    /// A builder with `cfg`.
    pub fn builder_with(cfg: RuntimeConfig) -> Builder {
        Builder::new(cfg)
    }

    /// The host's control handle.
    pub fn control(&self) -> Control {
        self.control.clone()
    }

    /// One deterministic round on the caller's thread: the distributor, then every unit in
    /// order, then the distributor again (so frames a unit finished leave in the same step).
    /// Counters are published every step. Returns the work done.
    pub fn step(&mut self, now: Instant) -> usize {
        let mut work = self.dist.step(now);
        for u in &mut self.units {
            work += u.step(now);
            u.publish(now, true);
        }
        work += self.dist.step(now);
        self.dist.publish(now, true);
        work
    }

    /// Step until a round does no work and nothing is inside (or `max_steps` rounds);
    /// returns true if it became quiet.
    pub fn run_until_quiet(&mut self, now: Instant, max_steps: usize) -> bool {
        for _ in 0..max_steps {
            let w = self.step(now);
            if w == 0 && self.dist.in_flight() == 0 {
                return true;
            }
        }
        false
    }

    /// Frames inside the middlebox (held in slots or waiting in port batches).
    pub fn in_flight(&self) -> u64 {
        self.dist.in_flight()
    }

    /// Every counter, freshly published.
    pub fn stats(&mut self) -> RuntimeStats {
        self.publish_all(Instant::ZERO);
        self.control.stats()
    }

    fn publish_all(&mut self, now: Instant) {
        self.dist.publish(now, true);
        for u in &mut self.units {
            u.publish(now, true);
        }
    }

    /// Number of ports.
    pub fn ports(&self) -> usize {
        self.dist.ports.len()
    }

    /// Port `i`'s link.
    pub fn port(&self, i: usize) -> Option<&dyn Link> {
        self.dist.ports.get(i).map(|p| &*p.link)
    }

    /// Port `i`'s link, mutable (e.g. to feed a test link between steps).
    pub fn port_mut(&mut self, i: usize) -> Option<&mut Box<dyn Link>> {
        self.dist.ports.get_mut(i).map(|p| &mut p.link)
    }

    /// Take the ports back, dropping the rest of the runtime.
    pub fn into_ports(self) -> Vec<Box<dyn Link>> {
        self.dist.ports.into_iter().map(|p| p.link).collect()
    }

    /// Run the distributor and each unit on a thread of its own until [`Running::stop`].
    pub fn start(self) -> Result<Running, MiddleboxError> {
        let Runtime { mut dist, units, control, cfg } = self;
        control.shared.stop.store(false, Ordering::Release);
        let mut unit_threads = Vec::new();
        for (i, mut u) in units.into_iter().enumerate() {
            let shared = control.shared.clone();
            let idle = cfg.idle;
            let h = std::thread::Builder::new()
                .name(format!("mb-unit{i}"))
                .spawn(move || {
                    let mut idler = Idler { policy: idle, idle: 0 };
                    while !shared.stop.load(Ordering::Acquire) {
                        let w = u.step(Instant::now());
                        idler.after(w > 0);
                    }
                    u.publish(Instant::now(), true);
                    u
                })
                .map_err(|e| MiddleboxError::Thread(format!("cannot start unit {i}: {e}")))?;
            unit_threads.push(h);
        }
        let shared = control.shared.clone();
        let idle = cfg.idle;
        let dist_thread = std::thread::Builder::new()
            .name("mb-lb".into())
            .spawn(move || {
                let mut idler = Idler { policy: idle, idle: 0 };
                while !shared.stop.load(Ordering::Acquire) {
                    let w = dist.step(Instant::now());
                    idler.after(w > 0);
                }
                dist.publish(Instant::now(), true);
                dist
            })
            .map_err(|e| MiddleboxError::Thread(format!("cannot start the distributor: {e}")));
        let dist_thread = match dist_thread {
            Ok(t) => t,
            Err(e) => {
                control.shared.stop.store(true, Ordering::Release);
                for t in unit_threads {
                    let _ = t.join();
                }
                return Err(e);
            }
        };
        Ok(Running { dist: Some(dist_thread), units: unit_threads, control, cfg })
    }
}

/// A runtime whose distributor and units run on threads.
pub struct Running {
    dist: Option<JoinHandle<Distributor>>,
    units: Vec<JoinHandle<Unit>>,
    control: Control,
    cfg: RuntimeConfig,
}

impl Running {
    /// The host's control handle.
    pub fn control(&self) -> Control {
        self.control.clone()
    }

    /// Stop every thread and get the runtime back (its ports, counters, and unit state intact),
    /// e.g. to read final counters or to step it further.
    pub fn stop(mut self) -> Result<Runtime, MiddleboxError> {
        self.control.shared.stop.store(true, Ordering::Release);
        let dist = self.dist.take().map(|t| t.join());
        let units: Vec<_> = std::mem::take(&mut self.units).into_iter().map(|t| t.join()).collect();
        let dist = match dist {
            Some(Ok(d)) => d,
            _ => return Err(MiddleboxError::Thread("the distributor thread panicked".into())),
        };
        let mut us = Vec::new();
        for (i, u) in units.into_iter().enumerate() {
            us.push(u.map_err(|_| MiddleboxError::Thread(format!("unit {i}'s thread panicked")))?);
        }
        let mut rt = Runtime { dist, units: us, control: self.control.clone(), cfg: self.cfg };
        rt.publish_all(Instant::now());
        Ok(rt)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.control.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.dist.take() {
            let _ = t.join();
        }
        for t in self.units.drain(..) {
            let _ = t.join();
        }
    }
}
