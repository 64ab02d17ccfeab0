//! linerate's XDP steering program, assembled here from its source below (no compiler, no
//! prebuilt object): frames for the stack go to the AF_XDP socket of the queue they arrived
//! on; every other frame passes on to the kernel, so the machine's own traffic is never taken.
//!
//! What "for the stack" means is [`Steer`]: all frames (a middlebox owning the port), or
//! IPv4 packets to one of the host's addresses and ARP whose target is one of them, and IPv6
//! packets to one of its IPv6 addresses or to the solicited-node group of one (where
//! Neighbor Solicitations for it go). Frames of other EtherTypes (LLDP, VLAN-tagged),
//! broadcasts and other multicasts (IPv6's all-nodes group: router advertisements stay the
//! kernel's), other addresses and anything too short to hold the headers pass to the kernel.
//! A queue with no socket in the map also passes.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Which frames the program hands to linerate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Steer {
    /// Every frame of the interface (a middlebox or a bump in the wire).
    All,
    /// A host's frames: IPv4 to `ipv4` and ARP asking for or answering them; IPv6 to `ipv6`
    /// and to their solicited-node groups.
    Host {
        /// The host's IPv4 addresses.
        ipv4: Vec<Ipv4Addr>,
        /// The host's IPv6 addresses (its link-local one included).
        ipv6: Vec<Ipv6Addr>,
    },
}

impl Steer {
    /// A host with IPv4 addresses only.
    pub fn ipv4(addrs: Vec<Ipv4Addr>) -> Steer {
        Steer::Host { ipv4: addrs, ipv6: Vec::new() }
    }
}

/// Registers of the BPF machine used below.
const R0: u8 = 0;
const R1: u8 = 1;
const R2: u8 = 2;
const R3: u8 = 3;
const R4: u8 = 4;
const R5: u8 = 5;
const R6: u8 = 6;
const R7: u8 = 7;
const R8: u8 = 8;
const R9: u8 = 9;

const XDP_PASS: i32 = 2;
const HELPER_REDIRECT_MAP: i32 = 51;
/// `struct xdp_md` field offsets.
const MD_DATA: i16 = 0;
const MD_DATA_END: i16 = 4;
const MD_RX_QUEUE_INDEX: i16 = 16;

/// Jump targets of the program.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Ipv4,
    Arp,
    Ipv6,
    Redirect,
    Pass,
}

/// A tiny assembler: instructions, and jumps whose offsets are filled in at the end.
struct Asm {
    insns: Vec<u64>,
    jumps: Vec<(usize, Label)>,
    labels: Vec<(Label, usize)>,
}

fn encode(op: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    u64::from(op)
        | u64::from(dst & 0xf) << 8
        | u64::from(src & 0xf) << 12
        | u64::from(off as u16) << 16
        | u64::from(imm as u32) << 32
}

impl Asm {
    fn new() -> Asm {
        Asm { insns: Vec::new(), jumps: Vec::new(), labels: Vec::new() }
    }
    fn emit(&mut self, op: u8, dst: u8, src: u8, off: i16, imm: i32) {
        self.insns.push(encode(op, dst, src, off, imm));
    }
    fn label(&mut self, l: Label) {
        self.labels.push((l, self.insns.len()));
    }
    fn jump(&mut self, op: u8, dst: u8, src: u8, imm: i32, to: Label) {
        self.jumps.push((self.insns.len(), to));
        self.emit(op, dst, src, 0, imm);
    }
    /// `dst = *(u32 *)(src + off)`.
    fn ldx_w(&mut self, dst: u8, src: u8, off: i16) {
        self.emit(0x61, dst, src, off, 0);
    }
    /// `dst = *(u16 *)(src + off)`.
    fn ldx_h(&mut self, dst: u8, src: u8, off: i16) {
        self.emit(0x69, dst, src, off, 0);
    }
    /// `dst = src` (64-bit).
    fn mov_reg(&mut self, dst: u8, src: u8) {
        self.emit(0xbf, dst, src, 0, 0);
    }
    /// `dst = imm` (64-bit).
    fn mov_imm(&mut self, dst: u8, imm: i32) {
        self.emit(0xb7, dst, 0, 0, imm);
    }
    /// `dst += imm` (64-bit).
    fn add_imm(&mut self, dst: u8, imm: i32) {
        self.emit(0x07, dst, 0, 0, imm);
    }
    /// `goto to if dst > src` (64-bit, unsigned).
    fn jgt_reg(&mut self, dst: u8, src: u8, to: Label) {
        self.jump(0x2d, dst, src, 0, to);
    }
    /// `goto to if (u32)dst == imm`.
    fn jeq32_imm(&mut self, dst: u8, imm: u32, to: Label) {
        self.jump(0x16, dst, 0, imm as i32, to);
    }
    /// `if (u32)dst != imm, skip the next `skip` instructions`.
    fn jne32_imm_skip(&mut self, dst: u8, imm: u32, skip: i16) {
        self.emit(0x56, dst, 0, skip, imm as i32);
    }
    fn ja(&mut self, to: Label) {
        self.jump(0x05, 0, 0, 0, to);
    }
    /// `dst = (u32)*(u16 *)(src + off) | (u32)*(u16 *)(src + off + 2) << 16`: a 32-bit field at
    /// an offset only 2-aligned, read as two aligned halves (`tmp` is clobbered).
    fn ldx_w_2aligned(&mut self, dst: u8, tmp: u8, src: u8, off: i16) {
        self.ldx_h(dst, src, off);
        self.ldx_h(tmp, src, off + 2);
        self.emit(0x67, tmp, 0, 0, 16); // tmp <<= 16
        self.emit(0x4f, dst, tmp, 0, 0); // dst |= tmp
    }
    /// `r0 = imm; exit`.
    fn ret(&mut self, imm: i32) {
        self.mov_imm(R0, imm);
        self.emit(0x95, 0, 0, 0, 0);
    }
    /// Goto `to` unless the packet holds at least `len` bytes from `data` (`r2`); uses `r5`.
    fn need(&mut self, len: i32, to: Label) {
        self.mov_reg(R5, R2);
        self.add_imm(R5, len);
        self.jgt_reg(R5, R3, to);
    }
    fn finish(mut self) -> Vec<u64> {
        for &(at, to) in &self.jumps {
            let target = self.labels.iter().find(|(l, _)| *l == to).map(|&(_, i)| i).expect("label defined");
            let off = (target as i64 - at as i64 - 1) as i16;
            self.insns[at] = (self.insns[at] & !(0xffff << 16)) | u64::from(off as u16) << 16;
        }
        self.insns
    }
}

/// The address as the program compares it: the four bytes in network order read as a
/// little-endian 32-bit word (the BPF machine's loads are host-endian; x86 and arm64 are little).
fn wire_word(a: Ipv4Addr) -> u32 {
    u32::from_le_bytes(a.octets())
}

/// An IPv6 address as four such words.
fn wire_words6(a: Ipv6Addr) -> [u32; 4] {
    let o = a.octets();
    std::array::from_fn(|i| u32::from_le_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]]))
}

/// The solicited-node multicast group of `a` (RFC 4291 2.7.1): ff02::1:ff and its last 24 bits.
pub fn solicited_node(a: Ipv6Addr) -> Ipv6Addr {
    let o = a.octets();
    Ipv6Addr::from([0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, o[13], o[14], o[15]])
}

/// IPv6 destinations the program takes for `ipv6`: each address and its solicited-node
/// group, once each.
fn ipv6_targets(ipv6: &[Ipv6Addr]) -> Vec<Ipv6Addr> {
    let mut t: Vec<Ipv6Addr> = Vec::new();
    for &a in ipv6 {
        for x in [a, solicited_node(a)] {
            if !t.contains(&x) {
                t.push(x);
            }
        }
    }
    t
}

/// The program for `steer`, redirecting to the socket map whose descriptor is `map_fd`.
pub fn steering_program(steer: &Steer, map_fd: i32) -> Vec<u64> {
    let mut a = Asm::new();
    a.ldx_w(R4, R1, MD_RX_QUEUE_INDEX);
    if let Steer::Host { ipv4, ipv6 } = steer {
        let ethertype = |t: u16| u32::from(u16::from_le_bytes(t.to_be_bytes()));
        a.ldx_w(R2, R1, MD_DATA);
        a.ldx_w(R3, R1, MD_DATA_END);
        a.need(14, Label::Pass);
        a.ldx_h(R0, R2, 12);
        a.jeq32_imm(R0, ethertype(0x0800), Label::Ipv4);
        a.jeq32_imm(R0, ethertype(0x0806), Label::Arp);
        if !ipv6.is_empty() {
            a.jeq32_imm(R0, ethertype(0x86dd), Label::Ipv6);
        }
        a.ja(Label::Pass);
        for (label, need, field) in [(Label::Ipv4, 34, 30), (Label::Arp, 42, 38)] {
            // IPv4 destination at 14 + 16; ARP target protocol address at 14 + 24.
            a.label(label);
            a.need(need, Label::Pass);
            a.ldx_w_2aligned(R0, R5, R2, field);
            for &addr in ipv4 {
                a.jeq32_imm(R0, wire_word(addr), Label::Redirect);
            }
            a.ja(Label::Pass);
        }
        if !ipv6.is_empty() {
            // IPv6 destination at 14 + 24, 16 bytes, read as four words into r6..r9.
            a.label(Label::Ipv6);
            a.need(54, Label::Pass);
            for (i, reg) in [R6, R7, R8, R9].into_iter().enumerate() {
                a.ldx_w_2aligned(reg, R5, R2, 38 + 4 * i as i16);
            }
            for target in ipv6_targets(ipv6) {
                let w = wire_words6(target);
                // Any of the first three words differing skips to the next target.
                a.jne32_imm_skip(R6, w[0], 3);
                a.jne32_imm_skip(R7, w[1], 2);
                a.jne32_imm_skip(R8, w[2], 1);
                a.jeq32_imm(R9, w[3], Label::Redirect);
            }
            a.ja(Label::Pass);
        }
    }
    a.label(Label::Redirect);
    // r1 = the map (a two-slot load of its descriptor, marked as a map reference), r2 = queue.
    a.emit(0x18, R1, 1, 0, map_fd);
    a.emit(0, 0, 0, 0, 0);
    a.mov_reg(R2, R4);
    a.mov_imm(R3, XDP_PASS); // what to do when the queue has no socket
    a.emit(0x85, 0, 0, 0, HELPER_REDIRECT_MAP);
    a.emit(0x95, 0, 0, 0, 0);
    // The verifier refuses unreachable instructions: the pass branch only where a jump goes.
    if a.jumps.iter().any(|&(_, l)| l == Label::Pass) {
        a.label(Label::Pass);
        a.ret(XDP_PASS);
    }
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_land_on_their_labels() {
        let v6: Ipv6Addr = "fd77::2".parse().unwrap();
        let p = steering_program(&Steer::Host { ipv4: vec![Ipv4Addr::new(10, 0, 0, 2)], ipv6: vec![v6] }, 7);
        // Every jump's target lies inside the program and the last instruction is an exit.
        for (i, insn) in p.iter().enumerate() {
            let op = (*insn & 0xff) as u8;
            if matches!(op, 0x05 | 0x16 | 0x2d | 0x56) {
                let off = ((*insn >> 16) & 0xffff) as u16 as i16;
                let target = i as i64 + 1 + i64::from(off);
                assert!(target > i as i64 && (target as usize) < p.len(), "jump at {i} to {target}");
            }
        }
        assert_eq!(p.last().map(|i| i & 0xff), Some(0x95));
        let all = steering_program(&Steer::All, 7);
        assert_eq!(all.len(), 7);
    }

    #[test]
    fn addresses_are_compared_as_the_wire_holds_them() {
        assert_eq!(wire_word(Ipv4Addr::new(10, 0, 0, 2)), 0x0200_000a);
        let p = steering_program(&Steer::ipv4(vec![Ipv4Addr::new(192, 168, 1, 200)]), 3);
        assert!(p.iter().any(|i| (i >> 32) as u32 == 0xc801_a8c0 && (i & 0xff) == 0x16));
        assert_eq!(wire_words6("fd77::2".parse().unwrap()), [0x0000_77fd, 0, 0, 0x0200_0000]);
    }

    #[test]
    fn ipv6_targets_are_the_addresses_and_their_solicited_node_groups() {
        let a: Ipv6Addr = "fd77::1:2".parse().unwrap();
        let ll: Ipv6Addr = "fe80::ff:fe01:2".parse().unwrap();
        let t = ipv6_targets(&[a, ll]);
        let g: Ipv6Addr = "ff02::1:ff01:2".parse().unwrap();
        // Both share their last 24 bits, so one group serves both.
        assert_eq!(t, vec![a, g, ll]);
        assert_eq!(
            solicited_node("fe80::1234:5678".parse().unwrap()),
            "ff02::1:ff34:5678".parse::<Ipv6Addr>().unwrap()
        );
    }
}
