//! Hyperscan (Intel's regex/literal matcher) through its C API: the benchmark peer of the IDS
//! prefilter. Built only with the `hyperscan` cargo feature; needs Debian's `libhyperscan-dev`
//! (5.x, `apt-get install libhyperscan-dev`). The default build never links it.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};
use std::ptr;

#[repr(C)]
struct HsDatabase {
    _p: [u8; 0],
}
#[repr(C)]
struct HsScratch {
    _p: [u8; 0],
}
#[repr(C)]
struct HsCompileError {
    message: *const c_char,
    expression: c_int,
}

type MatchHandler = unsafe extern "C" fn(c_uint, c_ulonglong, c_ulonglong, c_uint, *mut c_void) -> c_int;

#[link(name = "hs")]
extern "C" {
    fn hs_compile_lit_multi(
        expressions: *const *const c_char,
        flags: *const c_uint,
        ids: *const c_uint,
        lens: *const usize,
        elements: c_uint,
        mode: c_uint,
        platform: *const c_void,
        db: *mut *mut HsDatabase,
        error: *mut *mut HsCompileError,
    ) -> c_int;
    fn hs_free_database(db: *mut HsDatabase) -> c_int;
    fn hs_free_compile_error(e: *mut HsCompileError) -> c_int;
    fn hs_alloc_scratch(db: *const HsDatabase, scratch: *mut *mut HsScratch) -> c_int;
    fn hs_free_scratch(s: *mut HsScratch) -> c_int;
    fn hs_scan(
        db: *const HsDatabase,
        data: *const c_char,
        length: c_uint,
        flags: c_uint,
        scratch: *mut HsScratch,
        on_event: Option<MatchHandler>,
        context: *mut c_void,
    ) -> c_int;
}

const HS_MODE_BLOCK: c_uint = 1;
const HS_FLAG_CASELESS: c_uint = 1;
const HS_FLAG_SINGLEMATCH: c_uint = 8;

/// A compiled Hyperscan literal database with its scratch space (one per thread).
pub struct HsLiterals {
    db: *mut HsDatabase,
    scratch: *mut HsScratch,
}

// SAFETY: the database is immutable after compilation and may be shared; the scratch is only
// used through `&mut self`, so one thread at a time.
unsafe impl Send for HsLiterals {}

impl HsLiterals {
    /// Compiles literals `(bytes, nocase)`; pattern ids are list indices. With `single_match`,
    /// each pattern is reported at most once per scan (the prefilter's need).
    pub fn compile(patterns: &[(Vec<u8>, bool)], single_match: bool) -> Result<HsLiterals, String> {
        if patterns.is_empty() {
            return Err("no patterns".into());
        }
        let ptrs: Vec<*const c_char> = patterns.iter().map(|(p, _)| p.as_ptr() as *const c_char).collect();
        let lens: Vec<usize> = patterns.iter().map(|(p, _)| p.len()).collect();
        let ids: Vec<c_uint> = (0..patterns.len() as c_uint).collect();
        let flags: Vec<c_uint> = patterns
            .iter()
            .map(|(_, nc)| {
                (if *nc { HS_FLAG_CASELESS } else { 0 }) | (if single_match { HS_FLAG_SINGLEMATCH } else { 0 })
            })
            .collect();
        let mut db: *mut HsDatabase = ptr::null_mut();
        let mut err: *mut HsCompileError = ptr::null_mut();
        // SAFETY: all arrays have `patterns.len()` elements and outlive the call; the pattern
        // bytes are passed with explicit lengths (no NUL termination needed).
        let rc = unsafe {
            hs_compile_lit_multi(
                ptrs.as_ptr(),
                flags.as_ptr(),
                ids.as_ptr(),
                lens.as_ptr(),
                patterns.len() as c_uint,
                HS_MODE_BLOCK,
                ptr::null(),
                &mut db,
                &mut err,
            )
        };
        if rc != 0 {
            let msg = if err.is_null() {
                format!("hs_compile_lit_multi failed ({rc})")
            } else {
                // SAFETY: Hyperscan returned a valid error with a NUL-terminated message; we free it once.
                unsafe {
                    let m = CStr::from_ptr((*err).message).to_string_lossy().into_owned();
                    hs_free_compile_error(err);
                    m
                }
            };
            return Err(msg);
        }
        let mut scratch: *mut HsScratch = ptr::null_mut();
        // SAFETY: `db` is a valid database just compiled.
        let rc = unsafe { hs_alloc_scratch(db, &mut scratch) };
        if rc != 0 {
            // SAFETY: `db` is valid and freed once.
            unsafe { hs_free_database(db) };
            return Err(format!("hs_alloc_scratch failed ({rc})"));
        }
        Ok(HsLiterals { db, scratch })
    }

    /// Scans `data`, calling `hit(pattern id)` for every reported match.
    pub fn scan(&mut self, data: &[u8], hit: &mut dyn FnMut(u32)) -> Result<(), String> {
        unsafe extern "C" fn on_match(
            id: c_uint,
            _from: c_ulonglong,
            _to: c_ulonglong,
            _f: c_uint,
            ctx: *mut c_void,
        ) -> c_int {
            // SAFETY: `ctx` is the `&mut &mut dyn FnMut(u32)` passed to hs_scan below, alive for the call.
            let f = unsafe { &mut *(ctx as *mut &mut dyn FnMut(u32)) };
            f(id);
            0
        }
        let len = c_uint::try_from(data.len()).map_err(|_| "buffer larger than 4 GiB".to_string())?;
        let mut cb: &mut dyn FnMut(u32) = hit;
        // SAFETY: db and scratch are valid; data is valid for `len` bytes; the context pointer
        // refers to `cb`, which outlives the synchronous scan.
        let rc = unsafe {
            hs_scan(
                self.db,
                data.as_ptr() as *const c_char,
                len,
                0,
                self.scratch,
                Some(on_match),
                &mut cb as *mut &mut dyn FnMut(u32) as *mut c_void,
            )
        };
        if rc != 0 {
            return Err(format!("hs_scan failed ({rc})"));
        }
        Ok(())
    }
}

impl Drop for HsLiterals {
    fn drop(&mut self) {
        // SAFETY: both pointers came from Hyperscan and are freed exactly once.
        unsafe {
            hs_free_scratch(self.scratch);
            hs_free_database(self.db);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_literals_with_case_flags() {
        let mut hs = HsLiterals::compile(
            &[(b"abc".to_vec(), false), (b"XyZ".to_vec(), true), (b"\x00\x01".to_vec(), false)],
            true,
        )
        .unwrap();
        let mut got = Vec::new();
        hs.scan(b"..abc..xyz..ABC..\x00\x01", &mut |id| got.push(id)).unwrap();
        got.sort();
        assert_eq!(got, vec![0, 1, 2]);
    }
}
