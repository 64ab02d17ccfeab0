//! The UMEM: one anonymous, page-aligned mapping cut into chunks that the kernel and
//! linerate hand each other by address (an offset into the mapping).

use crate::LinkError;

/// The chunk size: one page, the largest the kernel accepts without huge pages.
pub const CHUNK: usize = 4096;

/// A page-aligned region of `chunks` chunks of [`CHUNK`] bytes.
pub struct Umem {
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone and freed once, in Drop.
unsafe impl Send for Umem {}
// SAFETY: Umem itself hands out only its base pointer and length; accesses through them are
// governed by chunk ownership (a chunk is the kernel's, the receive side's or the transmit side's).
unsafe impl Sync for Umem {}

impl Umem {
    /// Map `chunks` chunks, populated up front so the data path takes no page faults.
    pub fn new(chunks: usize) -> Result<Umem, LinkError> {
        let len = chunks * CHUNK;
        // SAFETY: a private anonymous mapping, no file or address hint.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(LinkError::last_os("mmap of the AF_XDP UMEM"));
        }
        Ok(Umem { base: base as *mut u8, len })
    }

    /// Start of the region.
    pub fn base(&self) -> *mut u8 {
        self.base
    }

    /// Length of the region in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: base/len is the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}
