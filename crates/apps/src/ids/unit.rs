//! The IDS unit program (Rosebud case study 1, software-reorder variant): TCP flows are
//! reassembled per direction (bounded reorder buffers hold out-of-order segments in their
//! slots), every stream is matched against the Snort rules as it grows, and a packet that
//! completes a match goes to the host tagged with the rule ids; safe packets are forwarded.
//!
//! Matching semantics: at every in-order segment boundary of a direction, the rules are
//! evaluated on the stream bytes received so far (up to `stream_cap`, then a sliding window),
//! with the current packet's header fields; data in a SYN (TCP Fast Open) is the start of its
//! direction's stream. Each (sid, flow) is reported once. A direction is
//! matched in full only once it is *armed* (a fast pattern occurred in its bytes, it looks like
//! HTTP, or rules without a fast pattern apply to its ports); before that, only the new bytes
//! go through the prefilter. By the prefilter's contract this skips no match.
//!
//! Incremental: each segment's new bytes are scanned once (with the longest pattern's length
//! minus one bytes before them, so a pattern that straddles segments is found), and the
//! direction keeps the set of fast patterns present in its buffer
//! ([`accel::ids::StreamPatterns`]; rebuilt when the window slides or the rules change). The
//! full evaluation takes that set instead of scanning the whole buffer again
//! ([`RuleSet::match_stream`]): the same alerts as the whole-buffer evaluation
//! (`tests/ids_stream.rs` checks it), without a scan that grew with the flow's length.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use accel::ids::http::looks_like_http;
use accel::ids::mpm::MpmScratch;
use accel::ids::prefilter::ProtoClass;
use accel::ids::{FlowBits, HeaderFields, Matches, PacketMeta, Proto, RuleSet, Scratch};
use link::Instant;
use middlebox::parse::{parse, Ipv4Info};
use middlebox::programs::Forwarder;
use middlebox::{Ctx, Packet, Program, SlotSpec};
use wire::flags;

use super::flow::{seq_diff, Direction, FlowKey, FlowTable};
use super::rules::IdsRules;

/// Settings of an IDS unit. Plain data with defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdsConfig {
    /// Slots the unit announces.
    pub slots: SlotSpec,
    /// Flows the unit tracks at most.
    pub max_flows: usize,
    /// Stream bytes kept per direction before the window slides.
    pub stream_cap: usize,
    /// Bytes kept when the window slides.
    pub stream_keep: usize,
    /// Out-of-order segments held per direction (Rosebud: 8).
    pub reorder_per_flow: usize,
    /// Out-of-order segments held per unit (at most half of its slots, as in Rosebud).
    pub reorder_total: usize,
    /// A gap not filled within this time is skipped.
    pub reorder_timeout: Duration,
    /// Flows idle this long are forgotten.
    pub flow_timeout: Duration,
    /// Period of the housekeeping timer.
    pub tick: Duration,
    /// Treat flows first seen mid-stream as established (their first sender is the client).
    pub midstream: bool,
}

impl Default for IdsConfig {
    fn default() -> Self {
        IdsConfig {
            slots: SlotSpec::new(64, 9216 + 256),
            max_flows: 65536,
            stream_cap: 16384,
            stream_keep: 4096,
            reorder_per_flow: 8,
            reorder_total: 32,
            reorder_timeout: Duration::from_millis(200),
            flow_timeout: Duration::from_secs(30),
            tick: Duration::from_millis(5),
            midstream: true,
        }
    }
}

/// Counters of an IDS unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdsCounters {
    /// Packets inspected.
    pub packets: u64,
    /// TCP segments.
    pub tcp: u64,
    /// UDP, ICMP and other IPv4 packets (matched one by one).
    pub other_ip: u64,
    /// Non-IPv4 frames (forwarded).
    pub non_ipv4: u64,
    /// Non-first IPv4 fragments (forwarded without inspection).
    pub fragments: u64,
    /// Packets sent to the host with rule ids.
    pub alert_packets: u64,
    /// (sid, flow) pairs reported.
    pub alerts: u64,
    /// Rule evaluations on a whole stream buffer.
    pub evaluations: u64,
    /// Stream directions armed (a fast pattern of an applicable rule occurred, or HTTP).
    pub armed: u64,
    /// Segments held out of order.
    pub held: u64,
    /// Held segments released in order.
    pub released: u64,
    /// Segments sent to the host unverified because the reorder buffers were full.
    pub reorder_overflow: u64,
    /// Gaps skipped after `reorder_timeout` (or on flush).
    pub gaps_skipped: u64,
    /// Segments with nothing new (retransmissions).
    pub retransmits: u64,
    /// Stream windows that slid at `stream_cap`.
    pub slides: u64,
    /// Flows created.
    pub flows: u64,
    /// Flows forgotten after `flow_timeout`, a RST, or both FINs.
    pub flows_closed: u64,
    /// Packets matched without flow state because the flow table was full.
    pub table_full: u64,
    /// Partial rules that matched (not reported; candidates for a complete inspector).
    pub approximate: u64,
}

/// A segment waiting in a reorder buffer, with what is needed to process it later.
#[derive(Debug)]
pub(crate) struct HeldSeg {
    pkt: Packet,
    off: usize,
    len: usize,
    fin: bool,
    hdr: HeaderFields,
    since: Instant,
}

/// What the IDS keeps per TCP flow.
#[derive(Debug)]
pub(crate) struct IdsFlow {
    dirs: [Direction<HeldSeg>; 2],
    client: Option<usize>,
    syn: bool,
    synack: bool,
    reported: Vec<u32>,
    bits: FlowBits,
    /// Flowbits of the always-check subset (a separate rule set).
    abits: FlowBits,
    always: [bool; 2],
    last: Instant,
}

/// State handed from one IDS program to its replacement on a swap.
pub(crate) struct Handoff {
    flows: FlowTable<IdsFlow>,
    held_total: usize,
    held_flows: Vec<u32>,
    counters: IdsCounters,
}

/// A segment being processed.
struct Seg {
    pkt: Packet,
    seq: u32,
    off: usize,
    len: usize,
    fin: bool,
    hdr: HeaderFields,
}

/// The IDS program of one unit.
pub struct IdsUnit {
    rules: IdsRules,
    cfg: IdsConfig,
    flows: FlowTable<IdsFlow>,
    held_total: usize,
    scratch: Scratch,
    /// Scratch of the always-check subset: sized for its rules, so switching between the
    /// two sets does not reallocate and clear the per-rule tables.
    ascratch: Scratch,
    mpm: MpmScratch,
    matches: Matches,
    other_bits: FlowBits,
    out: Forwarder,
    c: IdsCounters,
    new_sids: Vec<u32>,
    ticking: bool,
    /// Flows that may hold segments (checked when gaps time out).
    held_flows: Vec<u32>,
    /// Last sweep for idle flows.
    last_sweep: Instant,
}

fn header_fields(frame: &[u8], l3: usize, ip: &Ipv4Info) -> HeaderFields {
    let b = |i: usize| frame.get(l3 + i).copied().unwrap_or(0);
    HeaderFields {
        ttl: Some(b(8)),
        ip_id: Some(u16::from_be_bytes([b(4), b(5)])),
        ip_proto: Some(ip.proto),
        frag_bits: Some(b(6) >> 5),
        tcp_flags: ip.tcp.map(|t| t.flags),
        seq: ip.tcp.map(|t| t.seq),
        ack: ip.tcp.map(|t| t.ack),
        icmp_type: (ip.proto == 1).then(|| frame.get(ip.payload.start).copied()).flatten(),
        icmp_code: (ip.proto == 1).then(|| frame.get(ip.payload.start + 1).copied()).flatten(),
        icmp_id: None,
        icmp_seq: None,
    }
}

impl IdsUnit {
    /// An IDS unit matching `rules`.
    pub fn new(rules: IdsRules, cfg: IdsConfig) -> Self {
        IdsUnit {
            rules,
            flows: FlowTable::new(cfg.max_flows),
            cfg,
            held_total: 0,
            scratch: Scratch::new(),
            ascratch: Scratch::new(),
            mpm: MpmScratch::default(),
            matches: Matches::default(),
            other_bits: FlowBits::new(),
            out: Forwarder::cross(),
            c: IdsCounters::default(),
            new_sids: Vec::new(),
            ticking: false,
            held_flows: Vec::new(),
            last_sweep: Instant::ZERO,
        }
    }

    /// The counters.
    pub fn stats(&self) -> IdsCounters {
        self.c
    }

    fn forward(&self, ctx: &mut Ctx<'_>, pkt: Packet) {
        let port = self.out.out_port(pkt.port(), ctx.ports());
        ctx.forward(pkt, port);
    }

    /// Send `pkt` to the host if `new_sids` holds anything, else forward it.
    fn verdict(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        if self.new_sids.is_empty() {
            self.forward(ctx, pkt);
        } else {
            self.c.alert_packets += 1;
            self.c.alerts += self.new_sids.len() as u64;
            ctx.to_host(pkt, &self.new_sids);
        }
    }

    /// UDP, ICMP and other protocols: match the packet alone.
    fn other(&mut self, ctx: &mut Ctx<'_>, pkt: Packet, l3: usize, ip: Ipv4Info) {
        self.c.other_ip += 1;
        let proto = match ip.proto {
            17 => Proto::Udp,
            1 => Proto::Icmp,
            6 => Proto::Tcp,
            p => Proto::Other(p),
        };
        let (sp, dp) = ip.ports.unwrap_or((0, 0));
        let meta = PacketMeta {
            proto,
            src: ip.src,
            dst: ip.dst,
            src_port: sp,
            dst_port: dp,
            to_server: None,
            established: true,
        };
        let frame = ctx.data(&pkt);
        let hdr = header_fields(frame, l3, &ip);
        let payload = frame.get(ip.payload.clone()).unwrap_or(&[]);
        self.other_bits.clear();
        self.rules.full.match_packet(&meta, &hdr, payload, &mut self.other_bits, &mut self.scratch, &mut self.matches);
        self.c.evaluations += 1;
        self.c.approximate += self.matches.approximate.len() as u64;
        self.new_sids.clear();
        self.new_sids.extend_from_slice(&self.matches.confirmed);
        self.verdict(ctx, pkt);
    }

    fn tcp(&mut self, ctx: &mut Ctx<'_>, pkt: Packet, l3: usize, ip: Ipv4Info) {
        self.c.tcp += 1;
        let now = ctx.now();
        let Some(t) = ip.tcp else { return self.forward(ctx, pkt) };
        let (sp, dp) = ip.ports.unwrap_or((0, 0));
        let (key, dir) = FlowKey::of(ip.src, sp, ip.dst, dp, 6);
        let len = ip.payload.len();
        let syn = t.flags & flags::SYN != 0;
        let fin = t.flags & flags::FIN != 0;
        let rst = t.flags & flags::RST != 0;
        // Pure ACKs and RSTs of unknown flows create no state.
        let fid = if len > 0 || syn || fin {
            let rules = &self.rules.full;
            let created = &mut self.c.flows;
            self.flows.find_or_insert(key, || {
                *created += 1;
                let mut always = [false; 2];
                for (d, a) in always.iter_mut().enumerate() {
                    let (s, p) = if d == 0 { (key.lo.1, key.hi.1) } else { (key.hi.1, key.lo.1) };
                    rules.prefilter().always(ProtoClass::Tcp, s, p, |l| *a |= !l.is_empty());
                }
                IdsFlow {
                    dirs: [Direction::default(), Direction::default()],
                    client: None,
                    syn: false,
                    synack: false,
                    reported: Vec::new(),
                    bits: FlowBits::new(),
                    abits: FlowBits::new(),
                    always,
                    last: now,
                }
            })
        } else {
            self.flows.find(&key)
        };
        let Some(fid) = fid else {
            if len > 0 {
                // Table full: inspect the segment alone.
                self.c.table_full += 1;
                return self.other(ctx, pkt, l3, ip);
            }
            return self.forward(ctx, pkt);
        };
        let hdr = header_fields(ctx.data(&pkt), l3, &ip);
        let Some(f) = self.flows.get_mut(fid) else { return self.forward(ctx, pkt) };
        f.last = now;
        if syn {
            // The SYN's data (TCP Fast Open; attack captures) starts at ISN + 1. A SYN
            // repeating data already taken (a retransmission) keeps the stream where it is;
            // any other SYN starts the direction afresh.
            let first = t.seq.wrapping_add(1);
            let d = &mut f.dirs[dir];
            let repeat = d.next.is_some_and(|n| (0..=len as i64).contains(&i64::from(seq_diff(n, first))));
            if !repeat {
                d.next = Some(first);
            }
            if t.flags & flags::ACK == 0 {
                f.syn = true;
                f.client = Some(dir);
            } else {
                f.synack = true;
                f.client.get_or_insert(1 - dir);
            }
            if len == 0 && !fin {
                return self.forward(ctx, pkt);
            }
            let seg = Seg { pkt, seq: first, off: ip.payload.start, len, fin, hdr };
            self.accept(ctx, fid, dir, seg);
            self.release(ctx, fid, dir);
            return self.maybe_close(ctx, fid);
        }
        if rst {
            self.forward(ctx, pkt);
            return self.close(ctx, fid);
        }
        if len == 0 && !fin {
            return self.forward(ctx, pkt);
        }
        if f.client.is_none() {
            f.client = Some(dir);
        }
        let d = &mut f.dirs[dir];
        let next = *d.next.get_or_insert(t.seq);
        let seg = Seg { pkt, seq: t.seq, off: ip.payload.start, len, fin, hdr };
        if seq_diff(t.seq, next) > 0 {
            if d.held.len() < self.cfg.reorder_per_flow && self.held_total < self.cfg.reorder_total {
                d.hold(t.seq, HeldSeg { pkt: seg.pkt, off: seg.off, len, fin, hdr, since: now });
                self.held_total += 1;
                if !self.held_flows.contains(&fid) {
                    self.held_flows.push(fid);
                }
                self.c.held += 1;
                if !self.ticking {
                    self.ticking = true;
                    ctx.set_timer(now + self.cfg.tick);
                }
            } else {
                // Out of reorder buffers: the host inspects it (Rosebud's fallback).
                self.c.reorder_overflow += 1;
                ctx.to_host(seg.pkt, &[]);
            }
            return;
        }
        self.accept(ctx, fid, dir, seg);
        self.release(ctx, fid, dir);
        self.maybe_close(ctx, fid);
    }

    /// Process held segments of `dir` that are now in order.
    fn release(&mut self, ctx: &mut Ctx<'_>, fid: u32, dir: usize) {
        loop {
            let Some(f) = self.flows.get_mut(fid) else { return };
            let Some((seq, h)) = f.dirs[dir].take_ready() else { return };
            self.held_total -= 1;
            self.c.released += 1;
            self.accept(ctx, fid, dir, Seg { pkt: h.pkt, seq, off: h.off, len: h.len, fin: h.fin, hdr: h.hdr });
        }
    }

    /// An in-order (or overlapping) segment: append its new bytes and match.
    fn accept(&mut self, ctx: &mut Ctx<'_>, fid: u32, dir: usize, seg: Seg) {
        let Some((&key, _)) = self.flows.entry(fid) else { return self.forward(ctx, seg.pkt) };
        let cfg = self.cfg;
        let Some(f) = self.flows.get_mut(fid) else { return self.forward(ctx, seg.pkt) };
        let IdsFlow { dirs, client, syn, synack, reported, bits, abits, always, .. } = f;
        let d = &mut dirs[dir];
        let next = d.next.unwrap_or(seg.seq);
        let skip = seq_diff(next, seg.seq).max(0) as usize;
        let fin_new = seg.fin && !d.fin && skip <= seg.len;
        if skip >= seg.len && !fin_new {
            self.c.retransmits += 1;
            return self.forward(ctx, seg.pkt);
        }
        let new_len = seg.len.saturating_sub(skip);
        d.next = Some(next.wrapping_add(new_len as u32 + u32::from(fin_new)));
        d.fin |= fin_new;
        self.new_sids.clear();
        if new_len > 0 {
            let frame = ctx.data(&seg.pkt);
            let bytes = frame.get(seg.off + skip..seg.off + seg.len).unwrap_or(&[]);
            let (at, slid) = d.append(bytes, cfg.stream_cap, cfg.stream_keep);
            self.c.slides += u64::from(slid);
            let (src, dst) = if dir == 0 { (key.lo, key.hi) } else { (key.hi, key.lo) };
            // Only the new bytes are scanned (the whole window again after it slid); a
            // direction arms on a fast pattern of a rule that could apply to it.
            let rules = &self.rules;
            let pre = rules.full.prefilter();
            let Direction { buf, pats, armed, .. } = d;
            let was_armed = *armed;
            let mut hit = false;
            pats.extend(pre, buf, if slid { 0 } else { at }, &mut self.mpm, |p| {
                hit = hit || (!was_armed && pre.rules_of(p).iter().any(|&r| rules.may_apply_tcp(r, src, dst)));
            });
            if !was_armed {
                d.armed = hit || looks_like_http(&d.buf);
                self.c.armed += u64::from(d.armed);
            }
            if d.armed || always[dir] {
                let established = (*syn && *synack) || (cfg.midstream && !*syn);
                let meta = PacketMeta {
                    proto: Proto::Tcp,
                    src: src.0,
                    dst: dst.0,
                    src_port: src.1,
                    dst_port: dst.1,
                    to_server: client.map(|c| c == dir),
                    established,
                };
                // Unarmed: only rules without a fast pattern can match (see `rules`).
                let (hdr, m) = (&seg.hdr, &mut self.matches);
                match (d.armed, self.rules.always.as_deref()) {
                    (false, Some(sub)) => sub.match_packet(&meta, hdr, &d.buf, abits, &mut self.ascratch, m),
                    _ => self.rules.full.match_stream(&meta, hdr, &d.buf, d.pats.ids(), bits, &mut self.scratch, m),
                }
                self.c.evaluations += 1;
                self.c.approximate += self.matches.approximate.len() as u64;
                for &sid in &self.matches.confirmed {
                    if !reported.contains(&sid) {
                        reported.push(sid);
                        self.new_sids.push(sid);
                    }
                }
            }
        }
        self.verdict(ctx, seg.pkt);
    }

    /// Forget a flow after both FINs (when nothing is held).
    fn maybe_close(&mut self, ctx: &mut Ctx<'_>, fid: u32) {
        let done = self.flows.get_mut(fid).is_some_and(|f| f.dirs.iter().all(|d| d.fin && d.held.is_empty()));
        if done {
            self.close(ctx, fid);
        }
    }

    /// Forget a flow, forwarding whatever it holds.
    fn close(&mut self, ctx: &mut Ctx<'_>, fid: u32) {
        if let Some((_, f)) = self.flows.remove(fid) {
            self.c.flows_closed += 1;
            for d in f.dirs {
                for (_, h) in d.held {
                    self.held_total -= 1;
                    self.forward(ctx, h.pkt);
                }
            }
        }
    }

    /// Find every stream's fast patterns again (pattern ids belong to one rule set).
    fn rescan_streams(&mut self) {
        let pre = self.rules.full.prefilter();
        for fid in self.flows.indices() {
            if let Some(f) = self.flows.get_mut(fid) {
                for d in &mut f.dirs {
                    d.pats.extend(pre, &d.buf, 0, &mut self.mpm, |_| {});
                }
            }
        }
    }

    /// Skip the gap before the first held segment of every direction for which `due` says so.
    fn skip_gaps(&mut self, ctx: &mut Ctx<'_>, due: impl Fn(&HeldSeg) -> bool) {
        for fid in std::mem::take(&mut self.held_flows) {
            for dir in 0..2 {
                let Some(f) = self.flows.get_mut(fid) else { continue };
                let d = &mut f.dirs[dir];
                let Some((seq, h)) = d.held.first() else { continue };
                if !due(h) {
                    continue;
                }
                // The stream is discontinuous from here: start a new buffer at the held segment.
                d.next = Some(*seq);
                d.buf.clear();
                d.pats.clear();
                d.armed = false;
                self.c.gaps_skipped += 1;
                self.release(ctx, fid, dir);
            }
            self.maybe_close(ctx, fid);
            let holds = self.flows.get_mut(fid).is_some_and(|f| f.dirs.iter().any(|d| !d.held.is_empty()));
            if holds && !self.held_flows.contains(&fid) {
                self.held_flows.push(fid);
            }
        }
    }
}

impl Program for IdsUnit {
    fn name(&self) -> &str {
        "ids"
    }

    fn slots(&self) -> Option<SlotSpec> {
        Some(self.cfg.slots)
    }

    fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        self.c.packets += 1;
        let h = match parse(ctx.data(&pkt)) {
            Ok(h) => h,
            Err(e) => return ctx.discard(pkt, e.reason()),
        };
        let Some(ip) = h.ipv4 else {
            self.c.non_ipv4 += 1;
            return self.forward(ctx, pkt);
        };
        if ip.fragment && ip.ports.is_none() {
            self.c.fragments += 1;
            return self.forward(ctx, pkt);
        }
        if ip.proto == 6 && !ip.fragment {
            self.tcp(ctx, pkt, h.l3, ip)
        } else {
            self.other(ctx, pkt, h.l3, ip)
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx<'_>) {
        let now = ctx.now();
        let timeout = self.cfg.reorder_timeout;
        if self.held_total > 0 {
            self.skip_gaps(ctx, |h| now.saturating_since(h.since) >= timeout);
        }
        let idle = self.cfg.flow_timeout;
        if now.saturating_since(self.last_sweep) >= idle / 4 {
            self.last_sweep = now;
            for fid in self.flows.indices() {
                let stale = self.flows.get_mut(fid).is_some_and(|f| now.saturating_since(f.last) >= idle);
                if stale {
                    self.close(ctx, fid);
                }
            }
        }
        if self.held_total > 0 || !self.flows.is_empty() {
            ctx.set_timer(now + self.cfg.tick);
        } else {
            self.ticking = false;
        }
    }

    fn on_flush(&mut self, ctx: &mut Ctx<'_>) {
        while self.held_total > 0 {
            let before = self.held_total;
            self.skip_gaps(ctx, |_| true);
            if self.held_total == before {
                break;
            }
        }
    }

    fn counters(&self, out: &mut Vec<(&'static str, u64)>) {
        let c = &self.c;
        out.extend([
            ("packets", c.packets),
            ("tcp", c.tcp),
            ("other_ip", c.other_ip),
            ("non_ipv4", c.non_ipv4),
            ("fragments", c.fragments),
            ("alert_packets", c.alert_packets),
            ("alerts", c.alerts),
            ("evaluations", c.evaluations),
            ("armed", c.armed),
            ("held", c.held),
            ("released", c.released),
            ("reorder_overflow", c.reorder_overflow),
            ("gaps_skipped", c.gaps_skipped),
            ("retransmits", c.retransmits),
            ("slides", c.slides),
            ("flows", c.flows),
            ("flows_closed", c.flows_closed),
            ("table_full", c.table_full),
            ("approximate", c.approximate),
        ]);
    }

    fn dump(&self) -> String {
        format!(
            "{} rules; {} flows; {} segments held; {:?}",
            self.rules.full.len(),
            self.flows.len(),
            self.held_total,
            self.c
        )
    }

    fn handoff(&mut self) -> Option<Box<dyn Any + Send>> {
        let flows = std::mem::replace(&mut self.flows, FlowTable::new(0));
        let held_flows = std::mem::take(&mut self.held_flows);
        Some(Box::new(Handoff { flows, held_total: self.held_total, held_flows, counters: self.c }))
    }

    fn adopt(&mut self, ctx: &mut Ctx<'_>, state: Box<dyn Any + Send>) {
        if let Ok(h) = state.downcast::<Handoff>() {
            self.flows = h.flows;
            self.held_total = h.held_total;
            self.held_flows = h.held_flows;
            self.c = h.counters;
            self.rescan_streams();
            if self.held_total > 0 || !self.flows.is_empty() {
                self.ticking = true;
                ctx.set_timer(ctx.now() + self.cfg.tick);
            }
        }
    }

    /// Accepts new rules: `IdsRules`, `Arc<RuleSet>` or `RuleSet`.
    fn configure(&mut self, _ctx: &mut Ctx<'_>, cfg: Box<dyn Any + Send>) -> Result<(), String> {
        let rules = match cfg.downcast::<IdsRules>() {
            Ok(r) => *r,
            Err(c) => match c.downcast::<Arc<RuleSet>>() {
                Ok(s) => IdsRules::new(*s),
                Err(c) => match c.downcast::<RuleSet>() {
                    Ok(s) => IdsRules::new(Arc::new(*s)),
                    Err(_) => return Err("the IDS takes IdsRules, a RuleSet or an Arc<RuleSet>".into()),
                },
            },
        };
        self.rules = rules;
        self.rescan_streams();
        Ok(())
    }
}
