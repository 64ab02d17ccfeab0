//! Links: the physical layer of linerate.
//!
//! A [`Link`] moves batches of Ethernet frames (without FCS) through preallocated buffers.
//! Drivers: an in-process pair ([`mem`]), a shared-memory ring between two processes
//! ([`shm`]), a Linux TAP device ([`tap`]), AF_PACKET on an interface ([`packet`]), AF_XDP on
//! an interface ([`af_xdp`], with linerate's own XDP steering program), a pcap
//! writer any link can be wrapped with and a replay ([`pcap`]; pcap and pcapng files are read
//! and written by [`capture`]), and an impairment wrapper ([`impair`]).
//!
//! The ring-backed drivers ([`mem`], [`shm`]) also lend their rings, so a stack neither copies
//! a frame in nor out: [`Link::rx_in_place`] hands each received frame where it lies, and
//! [`Link::tx_in_place`] lets the caller build the next frame straight in the transmit ring's
//! slot (handed over at the next `tx_batch`, in order before that call's frames).
//!
//! # Frames through an in-process pair
//!
//! ```
//! use link::{mem, FrameBatch, Instant, Link, LinkConfig};
//!
//! let (mut a, mut b) = mem::pair(LinkConfig::default().depth(64));
//! let mut tx = FrameBatch::new(32, a.max_frame());
//! for i in 0..3u8 {
//!     // false would mean the batch is full (or the frame too large): the frame is not in it.
//!     assert!(tx.push(&[i; 60]));
//! }
//! // tx_batch takes frames from the front of the batch; those it refuses stay for a retry.
//! let sent = a.tx_batch(Instant::ZERO, &mut tx)?;
//! assert_eq!(sent, 3);
//! assert!(tx.is_empty());
//!
//! let mut rx = FrameBatch::new(32, b.max_frame());
//! assert_eq!(b.rx_batch(Instant::ZERO, &mut rx)?, 3);
//! assert_eq!(rx.get(2), &[2u8; 60][..]);
//! assert_eq!(a.stats().tx_frames, 3);
//! # Ok::<(), link::LinkError>(())
//! ```

pub mod af_xdp;
pub mod batch;
pub mod capture;
pub mod config;
mod ifreq;
pub mod impair;
mod liveness;
pub mod mem;
pub mod netns;
pub mod packet;
pub mod pcap;
pub mod ring;
pub mod shm;
pub mod spec;
pub mod tap;
pub mod time;

pub use batch::FrameBatch;
pub use config::LinkConfig;
pub use time::Instant;

/// Largest frame any driver carries: a 9216-byte jumbo MTU plus the Ethernet header and one VLAN tag.
pub const MAX_FRAME: usize = 9216 + 18;

/// Errors a link driver reports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// An operating-system call failed.
    #[error("{op} failed: {source}")]
    Os {
        /// What was being done.
        op: &'static str,
        /// The error the kernel returned.
        #[source]
        source: std::io::Error,
    },
    /// The configuration asked for something the driver cannot do.
    #[error("invalid link configuration: {0}")]
    Config(String),
    /// The other end of the link has gone away.
    #[error("the link's peer has closed")]
    Closed,
    /// A capture file could not be read or written.
    #[error("pcap: {0}")]
    Pcap(String),
}

impl LinkError {
    /// Wrap the current `errno` for operation `op`.
    pub fn last_os(op: &'static str) -> Self {
        LinkError::Os { op, source: std::io::Error::last_os_error() }
    }
}

/// Counters every link keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Frames handed to the receiver.
    pub rx_frames: u64,
    /// Bytes handed to the receiver.
    pub rx_bytes: u64,
    /// Frames accepted for transmission.
    pub tx_frames: u64,
    /// Bytes accepted for transmission.
    pub tx_bytes: u64,
    /// Frames not sent because the transmit queue or ring was full.
    pub tx_dropped_full: u64,
    /// Frames dropped because they exceed the link's MTU or slot size.
    pub dropped_oversize: u64,
    /// Frames dropped on receive because the receive batch had no room.
    pub rx_dropped_no_room: u64,
    /// Frames the kernel dropped because the link's receive ring was full (AF_XDP: the
    /// application did not keep up).
    pub rx_ring_full: u64,
    /// Frames the kernel dropped because the link had lent it no free buffer (AF_XDP: an
    /// exhausted fill ring).
    pub rx_no_buffer: u64,
    /// Frames the kernel dropped for the link for other reasons than the two above (AF_XDP:
    /// too long for its buffers).
    pub rx_kernel_dropped: u64,
    /// Frames the impairment wrapper dropped on purpose (simulated loss).
    pub impair_lost: u64,
    /// Frames the impairment wrapper duplicated.
    pub impair_duplicated: u64,
    /// Frames the impairment wrapper delivered out of order.
    pub impair_reordered: u64,
    /// Frames the impairment wrapper dropped because its rate limiter's queue was full.
    pub impair_rate_dropped: u64,
}

impl LinkStats {
    /// Counters as (name, value) pairs, for tables and JSON.
    pub fn fields(&self) -> [(&'static str, u64); 14] {
        [
            ("rx_frames", self.rx_frames),
            ("rx_bytes", self.rx_bytes),
            ("tx_frames", self.tx_frames),
            ("tx_bytes", self.tx_bytes),
            ("tx_dropped_full", self.tx_dropped_full),
            ("dropped_oversize", self.dropped_oversize),
            ("rx_dropped_no_room", self.rx_dropped_no_room),
            ("rx_ring_full", self.rx_ring_full),
            ("rx_no_buffer", self.rx_no_buffer),
            ("rx_kernel_dropped", self.rx_kernel_dropped),
            ("impair_lost", self.impair_lost),
            ("impair_duplicated", self.impair_duplicated),
            ("impair_reordered", self.impair_reordered),
            ("impair_rate_dropped", self.impair_rate_dropped),
        ]
    }
}

/// A point-to-point carrier of Ethernet frames.
///
/// Both calls move whole batches and never block: `rx_batch` appends whatever frames are
/// ready (up to the batch's free capacity) and returns how many it appended; `tx_batch`
/// takes frames from the front of the batch, returns how many were accepted and removes
/// exactly those from the batch (frames left behind found the queue full and may be retried).
pub trait Link: Send {
    /// Largest frame (Ethernet header included, FCS excluded) this link carries.
    fn max_frame(&self) -> usize;
    /// Append ready frames to `batch`; returns the number appended.
    fn rx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError>;
    /// Send frames from the front of `batch`; returns the number sent and removes them from `batch`.
    #[must_use = "frames the link did not take stay in the batch: the count says how many went out"]
    fn tx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError>;
    /// The link's counters.
    fn stats(&self) -> LinkStats;
    /// A short name of the driver for reports ("mem", "shm", "tap", ...).
    fn kind(&self) -> &'static str;
    /// A file descriptor that becomes readable when frames arrive, for drivers that have one.
    fn raw_fd(&self) -> Option<i32> {
        None
    }
    /// Receive in place: a driver whose received frames lie in memory it can lend (the
    /// ring-backed links) hands each ready frame, up to `max`, to `f` where it lies, with its
    /// transmit side for what `f` sends back, instead of copying frames into a batch. `None`
    /// from drivers without such a path: use [`Link::rx_batch`]. Errors as `rx_batch`'s.
    fn rx_in_place(
        &mut self,
        _now: Instant,
        _max: usize,
        _f: &mut dyn FnMut(&mut dyn Link, &[u8]),
    ) -> Option<Result<usize, LinkError>> {
        None
    }
    /// Transmit in place: a driver whose transmit queue lies in memory it can lend (the
    /// ring-backed links) lets `build` write the next frame straight into its queue slot
    /// (`build` gets [`Link::max_frame`] bytes and returns the frame's length, 0 to abandon
    /// it), instead of the caller building it in a batch that is copied later. Frames built
    /// this way leave at the next [`Link::tx_batch`] call (an empty batch will do), before that
    /// call's own frames. `None` from drivers without such a path: use [`Link::tx_batch`].
    /// `Some(Ok(false))` when the queue is full, in which case `build` is not called, or when
    /// `build` abandoned the frame.
    fn tx_in_place(
        &mut self,
        _now: Instant,
        _build: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Option<Result<bool, LinkError>> {
        None
    }
}

impl<L: Link + ?Sized> Link for Box<L> {
    fn max_frame(&self) -> usize {
        (**self).max_frame()
    }
    fn rx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        (**self).rx_batch(now, batch)
    }
    fn tx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        (**self).tx_batch(now, batch)
    }
    fn stats(&self) -> LinkStats {
        (**self).stats()
    }
    fn kind(&self) -> &'static str {
        (**self).kind()
    }
    fn raw_fd(&self) -> Option<i32> {
        (**self).raw_fd()
    }
    fn rx_in_place(
        &mut self,
        now: Instant,
        max: usize,
        f: &mut dyn FnMut(&mut dyn Link, &[u8]),
    ) -> Option<Result<usize, LinkError>> {
        (**self).rx_in_place(now, max, f)
    }
    fn tx_in_place(
        &mut self,
        now: Instant,
        build: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Option<Result<bool, LinkError>> {
        (**self).tx_in_place(now, build)
    }
}
