//! Helpers of the engine's unit tests: an engine with one connection to a scripted peer,
//! driven through a recording sink (see `sink::recorder`), with no stack or link around it.

use super::config::TcpConfig;
use super::engine::TcpEngine;
use super::sink::recorder::{Recorder, LOCAL, PEER};
use super::TcpState;
use std::net::SocketAddrV4;
use wire::tcp::flags::{ACK, SYN};
use wire::{TcpOptions, TcpRepr};

/// Our port.
pub const PORT: u16 = 40_000;
/// The peer's port.
pub const PEER_PORT: u16 = 80;
/// The peer's initial sequence number.
pub const PEER_ISS: u32 = 0xfff0_0000;
/// Our MSS, and the one the peer announces.
pub const MSS: u16 = 1460;

/// An engine with the default configuration, no timestamps (segments are simpler to write).
pub fn engine() -> TcpEngine {
    engine_with(TcpConfig::default())
}

/// An engine with `cfg`, timestamps off.
pub fn engine_with(cfg: TcpConfig) -> TcpEngine {
    TcpEngine::new(TcpConfig { timestamps: false, ..cfg }, LOCAL, 1500, PORT)
}

/// A segment from the peer: header fields, options and payload, with a valid checksum.
pub fn from_peer(seq: u32, ack: u32, flags: u8, window: u16, options: TcpOptions, payload: &[u8]) -> Vec<u8> {
    let repr = TcpRepr { src_port: PEER_PORT, dst_port: PORT, seq, ack, flags, window, urgent: 0, options };
    let hl = repr.header_len();
    let mut buf = vec![0u8; hl + payload.len()];
    buf[hl..].copy_from_slice(payload);
    repr.emit(&mut buf, PEER, LOCAL, payload.len()).expect("segment fits");
    buf
}

/// One connection, established by an active open; the peer agreed to SACK and window
/// scaling (shift 7) and offers `peer_window` (scaled). Returns the session and our ISS + 1.
pub fn established(e: &mut TcpEngine, out: &mut Recorder, peer_window: u16) -> (u32, u32) {
    let sid = e.connect(LOCAL.into(), PORT, SocketAddrV4::new(PEER, PEER_PORT).into(), out.now).expect("connect");
    let syn = flush(e, out);
    assert_eq!(syn.len(), 1);
    let iss = syn[0].0.seq;
    let options = TcpOptions { mss: Some(MSS), window_scale: Some(7), sack_permitted: true, ..TcpOptions::default() };
    // The window of a SYN is never scaled (RFC 7323 2.2): the scaled one follows in an ACK.
    let syn_ack = from_peer(PEER_ISS, iss.wrapping_add(1), SYN | ACK, 65535, options, &[]);
    assert_eq!(e.on_segment(out, PEER, LOCAL, &syn_ack), Ok(()));
    assert_eq!(e.row(sid).state(), TcpState::Established);
    flush(e, out);
    let update = from_peer(PEER_ISS + 1, iss.wrapping_add(1), ACK, peer_window, TcpOptions::default(), &[]);
    assert_eq!(e.on_segment(out, PEER, LOCAL, &update), Ok(()));
    assert_eq!(e.row(sid).stats().snd_wnd, u32::from(peer_window) << 7);
    (sid, iss.wrapping_add(1))
}

/// Let every session with something to send send it; the segments that went.
pub fn flush(e: &mut TcpEngine, out: &mut Recorder) -> Vec<(TcpRepr, Vec<u8>)> {
    let now = out.now;
    e.flush_dirty(out, now);
    out.take()
}

/// Queue `data` on session `sid` as the application does (`Stack::tcp_send`) and mark it to
/// send; the bytes queued.
pub fn queue(e: &mut TcpEngine, sid: u32, data: &[u8]) -> usize {
    let (mut tcb, mut ctx) = e.tcb(sid);
    let n = tcb.enqueue(&mut ctx, data).expect("the memory budget allows the ring");
    e.mark_dirty(sid);
    n
}
