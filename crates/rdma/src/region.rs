//! Memory regions: buffers a node registers so that peers may write into them by key.
//!
//! A key is `generation << 16 | slot + 1`: a slot reused after deregistration gets a new
//! generation, so a stale key never names the new buffer. Writes are checked against the
//! region's bounds before a byte moves.

use crate::wire::NackReason;

/// The key that names a registered region in remote writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegionKey(pub u32);

struct Slot {
    gen: u16,
    buf: Option<Box<[u8]>>,
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
    pub fn register(&mut self, buf: Box<[u8]>) -> Option<RegionKey> {
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

    /// Remove a region and give its buffer back.
    pub fn deregister(&mut self, key: RegionKey) -> Result<Box<[u8]>, NackReason> {
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
        let a = r.register(vec![0u8; 16].into_boxed_slice()).unwrap();
        let b = r.register(vec![0u8; 4].into_boxed_slice()).unwrap();
        assert!(r.register(vec![0u8; 1].into_boxed_slice()).is_none());
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
        let c = r.register(vec![0u8; 16].into_boxed_slice()).unwrap();
        assert_ne!(c, a);
        assert_eq!(c.0 & 0xffff, a.0 & 0xffff);
        assert_eq!(r.write(a.0, 0, &[9]), Err(NackReason::Deregistered));
        assert_eq!(r.get(c).unwrap(), &[0u8; 16]);
        // A generation from the future is unknown, not deregistered.
        assert_eq!(r.write(c.0 + 0x1_0000, 0, &[9]), Err(NackReason::UnknownKey));
        assert_eq!(r.len(), 2);
        assert_eq!(r.deregister(a), Err(NackReason::Deregistered));
    }
}
