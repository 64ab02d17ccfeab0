//! Private big-endian field accessors shared by the header views.
//!
//! These index directly: callers only use them on offsets that `new_checked`
//! (or an emitter's explicit length check) has proven to be in range.

use crate::addr::MacAddr;
use std::net::Ipv4Addr;

/// Reads a big-endian u16 at `off`.
#[inline]
pub(crate) fn get_u16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}

/// Reads a big-endian u32 at `off`.
#[inline]
pub(crate) fn get_u32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// Writes a big-endian u16 at `off`.
#[inline]
pub(crate) fn set_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_be_bytes());
}

/// Writes a big-endian u32 at `off`.
#[inline]
pub(crate) fn set_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_be_bytes());
}

/// Reads an IPv4 address at `off`.
#[inline]
pub(crate) fn get_ipv4(b: &[u8], off: usize) -> Ipv4Addr {
    Ipv4Addr::new(b[off], b[off + 1], b[off + 2], b[off + 3])
}

/// Writes an IPv4 address at `off`.
#[inline]
pub(crate) fn set_ipv4(b: &mut [u8], off: usize, a: Ipv4Addr) {
    b[off..off + 4].copy_from_slice(&a.octets());
}

/// Reads a MAC address at `off`.
#[inline]
pub(crate) fn get_mac(b: &[u8], off: usize) -> MacAddr {
    let bytes: [u8; 6] = b[off..off + 6].try_into().expect("a slice of six bytes");
    MacAddr(bytes)
}

/// Writes a MAC address at `off`.
#[inline]
pub(crate) fn set_mac(b: &mut [u8], off: usize, m: MacAddr) {
    b[off..off + 6].copy_from_slice(&m.0);
}
