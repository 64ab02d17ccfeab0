//! Memory regions: buffers a node registers so that peers may write into them by key.
//!
//! A key is `generation << 16 | slot + 1`: a slot reused after deregistration gets a new
//! generation, so a stale key never names the new buffer. Writes are checked against the
//! region's bounds before a byte moves.
//!
//! A region's memory is either owned by the node ([`RegionMem::Owned`], given to
//! [`Regions::register`]) or the caller's ([`RegionMem::External`], for registering memory in
//! place, such as a numpy array from Python: writes land in it directly).

use crate::wire::NackReason;
use std::ptr::NonNull;

/// Memory the caller lends to a node as a region, kept alive by an owner object.
pub struct ExternalMem {
    ptr: NonNull<u8>,
    len: usize,
    /// Whatever keeps the memory alive and in place (dropped when the region is).
    owner: Box<dyn std::any::Any + Send>,
}

// SAFETY: the memory is only reached through the region table, which hands out `&`/`&mut`
// borrows tied to the table's own borrows; `ExternalMem::new`'s contract makes the memory
// valid from any thread for as long as the owner lives.
unsafe impl Send for ExternalMem {}

impl ExternalMem {
    /// Memory of `len` bytes at `ptr`, kept alive by `owner`.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` bytes, and stay so (not freed, not
    /// moved) until `owner` is dropped. Nothing else may write the memory while it is
    /// registered (readers see writes as they land, as with any RDMA region).
    pub unsafe fn new(ptr: NonNull<u8>, len: usize, owner: Box<dyn std::any::Any + Send>) -> ExternalMem {
        ExternalMem { ptr, len, owner }
    }

    /// Give up the memory: its owner, to be downcast by whoever registered it.
    pub fn into_owner(self) -> Box<dyn std::any::Any + Send> {
        self.owner
    }
}

/// The memory of one region.
pub enum RegionMem {
    /// A buffer the node owns.
    Owned(Box<[u8]>),
    /// The caller's memory, registered in place.
    External(ExternalMem),
}

impl std::ops::Deref for RegionMem {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            RegionMem::Owned(b) => b,
            // SAFETY: valid for `len` bytes while the owner lives (ExternalMem::new).
            RegionMem::External(e) => unsafe { std::slice::from_raw_parts(e.ptr.as_ptr(), e.len) },
        }
    }
}

impl std::ops::DerefMut for RegionMem {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            RegionMem::Owned(b) => b,
            // SAFETY: as above; `&mut self` makes this the only borrow through the table.
            RegionMem::External(e) => unsafe { std::slice::from_raw_parts_mut(e.ptr.as_ptr(), e.len) },
        }
    }
}

impl RegionMem {
    /// The bytes as an owned buffer: the buffer itself, or a copy of external memory
    /// (whose owner is then dropped).
    pub fn into_boxed(self) -> Box<[u8]> {
        match self {
            RegionMem::Owned(b) => b,
            ext @ RegionMem::External(_) => ext.to_vec().into_boxed_slice(),
        }
    }
}

/// The key that names a registered region in remote writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegionKey(pub u32);

struct Slot {
    gen: u16,
    buf: Option<RegionMem>,
}

/// The regions of one node.
pub struct Regions {
    slots: Vec<Slot>,
    max: usize,
}

impl Regions {
    /// A table for at most `max` regions at once (at most 65535).
    pub fn new(max: usize) -> Self {
        Regions { slots: Vec::new(), max: max.clamp(1, 0xffff) }
    }

    /// Register `buf`; returns its key, or `None` when `max` regions are registered.
    pub fn register(&mut self, buf: RegionMem) -> Option<RegionKey> {
        let i = match self.slots.iter().position(|s| s.buf.is_none()) {
            Some(i) => i,
            None if self.slots.len() < self.max => {
                self.slots.push(Slot { gen: 0, buf: None });
                self.slots.len() - 1
            }
            None => return None,
        };
        let s = &mut self.slots[i];
        s.gen = s.gen.wrapping_add(1).max(1);
        s.buf = Some(buf);
        Some(RegionKey(u32::from(s.gen) << 16 | (i as u32 + 1)))
    }

    fn locate(&self, key: u32) -> Result<usize, NackReason> {
        let i = (key & 0xffff) as usize;
        let gen = (key >> 16) as u16;
        if i == 0 || i > self.slots.len() || gen == 0 {
            return Err(NackReason::UnknownKey);
        }
        let s = &self.slots[i - 1];
        if s.buf.is_some() && s.gen == gen {
            Ok(i - 1)
        } else if gen <= s.gen {
            Err(NackReason::Deregistered)
        } else {
            Err(NackReason::UnknownKey)
        }
    }

    /// Remove a region and give its memory back.
    pub fn deregister(&mut self, key: RegionKey) -> Result<RegionMem, NackReason> {
        let i = self.locate(key.0)?;
        self.slots[i].buf.take().ok_or(NackReason::Deregistered)
    }

    /// The bytes of a registered region.
    pub fn get(&self, key: RegionKey) -> Option<&[u8]> {
        self.locate(key.0).ok().and_then(|i| self.slots[i].buf.as_deref())
    }

    /// The bytes of a registered region, mutable (local use by the owner).
    pub fn get_mut(&mut self, key: RegionKey) -> Option<&mut [u8]> {
        match self.locate(key.0) {
            Ok(i) => self.slots[i].buf.as_deref_mut(),
            Err(_) => None,
        }
    }

    /// Check that `len` bytes at `offset` lie inside region `key`.
    pub fn check(&self, key: u32, offset: u64, len: u64) -> Result<(), NackReason> {
        let i = self.locate(key)?;
        let size = self.slots[i].buf.as_ref().map_or(0, |b| b.len() as u64);
        match offset.checked_add(len) {
            Some(end) if end <= size => Ok(()),
            _ => Err(NackReason::OutOfBounds),
        }
    }

    /// Copy `data` to `offset` in region `key`, after the same checks as [`Regions::check`].
    pub fn write(&mut self, key: u32, offset: u64, data: &[u8]) -> Result<(), NackReason> {
        self.check(key, offset, data.len() as u64)?;
        let i = self.locate(key)?;
        let buf = self.slots[i].buf.as_deref_mut().ok_or(NackReason::Deregistered)?;
        // check() proved offset + len <= buf.len(), so the conversions and slice are in range.
        let at = offset as usize;
        buf[at..at + data.len()].copy_from_slice(data);
        Ok(())
    }

    /// Regions registered now.
    pub fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.buf.is_some()).count()
    }

    /// True when no region is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_write_bounds_and_stale_keys() {
        let mut r = Regions::new(2);
        let owned = |n: usize| RegionMem::Owned(vec![0u8; n].into_boxed_slice());
        let a = r.register(owned(16)).unwrap();
        let b = r.register(owned(4)).unwrap();
        assert!(r.register(owned(1)).is_none());
        assert_ne!(a, b);
        r.write(a.0, 14, &[1, 2]).unwrap();
        assert_eq!(&r.get(a).unwrap()[12..], &[0, 0, 1, 2]);
        assert_eq!(r.write(a.0, 15, &[1, 2]), Err(NackReason::OutOfBounds));
        assert_eq!(r.write(a.0, u64::MAX, &[1]), Err(NackReason::OutOfBounds));
        assert_eq!(r.check(a.0, 16, 0), Ok(()));
        assert_eq!(r.write(0, 0, &[1]), Err(NackReason::UnknownKey));
        assert_eq!(r.write(0x0001_0009, 0, &[1]), Err(NackReason::UnknownKey));
        let back = r.deregister(a).unwrap();
        assert_eq!(&back[12..], &[0, 0, 1, 2]);
        assert_eq!(r.write(a.0, 0, &[9]), Err(NackReason::Deregistered));
        assert!(r.get(a).is_none());
        // The slot is reused under a new generation; the old key stays dead.
        let c = r.register(owned(16)).unwrap();
        assert_ne!(c, a);
        assert_eq!(c.0 & 0xffff, a.0 & 0xffff);
        assert_eq!(r.write(a.0, 0, &[9]), Err(NackReason::Deregistered));
        assert_eq!(r.get(c).unwrap(), &[0u8; 16]);
        // A generation from the future is unknown, not deregistered.
        assert_eq!(r.write(c.0 + 0x1_0000, 0, &[9]), Err(NackReason::UnknownKey));
        assert_eq!(r.len(), 2);
        assert!(matches!(r.deregister(a), Err(NackReason::Deregistered)));
    }

    #[test]
    fn external_memory_is_written_in_place_and_kept_alive() {
        let mut mem = vec![0u8; 8].into_boxed_slice();
        let ptr = std::ptr::NonNull::new(mem.as_mut_ptr()).unwrap();
        // SAFETY: the box is the owner: it lives (unmoved on the heap) as long as the region.
        let ext = unsafe { ExternalMem::new(ptr, 8, Box::new(mem)) };
        let mut r = Regions::new(1);
        let k = r.register(RegionMem::External(ext)).unwrap();
        r.write(k.0, 6, &[7, 8]).unwrap();
        assert_eq!(r.write(k.0, 7, &[1, 2]), Err(NackReason::OutOfBounds));
        assert_eq!(r.get(k).unwrap(), &[0, 0, 0, 0, 0, 0, 7, 8]);
        let back = r.deregister(k).ok().unwrap();
        // SAFETY: the region is gone; the owner still holds the bytes written in place.
        assert_eq!(unsafe { std::slice::from_raw_parts(ptr.as_ptr(), 8) }, &[0, 0, 0, 0, 0, 0, 7, 8]);
        assert_eq!(&back.into_boxed()[..], &[0, 0, 0, 0, 0, 0, 7, 8]);
    }
}
