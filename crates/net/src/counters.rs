//! Named counters of a stack: what it received and sent, and every drop by reason.

use wire::WireError;

/// Defines `pub enum Counter` with one variant per name (each with its doc), `Counter::ALL`
/// in order and `Counter::name`: the counter set of a stack, and of the layers above it that
/// count the same way (`rdma`). The first item is the enum's own doc.
#[macro_export]
macro_rules! define_counters {
    ($(#[doc = $enum_doc:literal])* ; $($(#[doc = $doc:literal])* $name:ident),* $(,)?) => {
        $(#[doc = $enum_doc])*
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(usize)]
        #[non_exhaustive]
        pub enum Counter {
            $($(#[doc = $doc])* $name),*
        }

        impl Counter {
            /// Every counter, in display order.
            pub const ALL: &'static [Counter] = &[$(Counter::$name),*];

            /// The counter's snake_case name (used by the CLI, Python and JSON).
            pub fn name(self) -> &'static str {
                match self {
                    $(Counter::$name => stringify!($name)),*
                }
            }
        }
    };
}

define_counters! {
    /// One counter of a [`Stack`](crate::Stack), in three families that never overlap:
    ///
    /// - per received frame, exactly one verdict: `rx_delivered` or one `rx_drop_*` reason,
    ///   so that `rx_frames = rx_delivered + Σ rx_drop_*` holds at every instant between
    ///   two polls ([`RxAccounting`]); a fragment stored for reassembly is delivered (to
    ///   the reassembler) and also counted as `ipv4_frags_queued`;
    /// - per datagram of reassembly: `ipv4_reasm_started` datagrams end as
    ///   `ipv4_reassembled`, `ipv4_reasm_timeout`, `ipv4_reasm_evicted` or
    ///   `ipv4_reasm_overlap`, or are still in progress;
    /// - on the transmit side, `tx_drop_*`: what the stack meant to send and did not.
    ///
    /// Everything else counts events (`tcp_*`, `icmp_*`, ...) and is outside both sums.
    ;
    /// Frames received from the link.
    rx_frames,
    /// Bytes received from the link.
    rx_bytes,
    /// Received frames that were processed (not dropped): with the `rx_drop_*` counters
    /// this accounts for every received frame.
    rx_delivered,
    /// Frames handed to the link.
    tx_frames,
    /// Bytes handed to the link.
    tx_bytes,
    /// ARP requests sent (including gratuitous ARP).
    arp_requests_sent,
    /// ARP replies sent.
    arp_replies_sent,
    /// ARP cache entries learned or refreshed.
    arp_learned,
    /// ICMP echo requests answered.
    icmp_echo_replied,
    /// ICMP echo replies received for our pings.
    icmp_echo_reply_received,
    /// ICMP destination-unreachable messages sent.
    icmp_unreachable_sent,
    /// ICMP parameter-problem messages sent (about malformed IPv4 options).
    icmp_param_problems_sent,
    /// ICMP error messages received.
    icmp_errors_received,
    /// UDP datagrams delivered to a socket.
    udp_rx_datagrams,
    /// UDP datagrams sent.
    udp_tx_datagrams,
    /// UDP binds refused because `Config::udp_max_sockets` sockets were bound.
    udp_bind_refused,
    /// Raw Ethernet frames delivered to a raw socket.
    raw_rx_frames,
    /// Raw Ethernet frames sent.
    raw_tx_frames,
    /// TCP segments received (checksum and header valid).
    tcp_rx_segments,
    /// TCP segments sent.
    tcp_tx_segments,
    /// TCP segments retransmitted by fast retransmit or SACK recovery.
    tcp_retransmits,
    /// Fast-retransmit / recovery episodes.
    tcp_fast_retransmits,
    /// Retransmission timeouts.
    tcp_rto_fired,
    /// Connections given up after too many retransmissions.
    tcp_timeouts_fatal,
    /// Zero-window probes sent.
    tcp_window_probes,
    /// Connections reset because the peer kept its window closed longer than
    /// `TcpConfig::zero_window_limit`.
    tcp_zero_window_aborts,
    /// Resets sent.
    tcp_resets_sent,
    /// Resets accepted.
    tcp_resets_received,
    /// Challenge ACKs sent (RFC 5961), counted when the ACK left.
    tcp_challenge_acks,
    /// SYNs accepted by a listener.
    tcp_passive_opens,
    /// Passive connections established.
    tcp_established_passive,
    /// Active connections established.
    tcp_active_opens,
    /// Duplicate ACKs received.
    tcp_dup_acks,
    /// Tail loss probes sent (RFC 8985 section 7).
    tcp_tlp_probes,
    /// Recoveries started because a loss probe was SACKed above holes.
    tcp_tlp_recoveries,
    /// Loss probes that repaired a lost segment (answered with a congestion response).
    tcp_tlp_repairs,
    /// D-SACK blocks received: the peer got a segment twice (RFC 2883).
    tcp_dsacks_received,
    /// Fast recoveries undone: D-SACKs showed every retransmission was a duplicate.
    tcp_recoveries_undone,
    /// Out-of-order segments stored for reassembly.
    tcp_out_of_order,
    /// SYN-ACKs sent with a SYN cookie (the half-open queue was full, RFC 4987 3.6).
    tcp_syncookies_sent,
    /// Connections opened by an ACK that carried a valid SYN cookie.
    tcp_syncookies_accepted,
    /// Sessions in TIME-WAIT given up early to make room for a new session.
    tcp_time_wait_reclaimed,
    /// New connections accepted on a 4-tuple still in TIME-WAIT (RFC 6191).
    tcp_time_wait_reused,
    /// ACKs sent with a D-SACK block (RFC 2883) reporting a duplicate segment.
    tcp_dsacks_sent,
    /// Segments RACK marked lost (RFC 8985): a segment sent later was delivered and more
    /// than an RTT plus the reordering window passed.
    tcp_rack_lost,
    /// RACK reordering timers that fired.
    tcp_reorder_timeouts,
    /// Retransmission timeouts found spurious by timestamps and undone (Eifel, RFC 3522/4015).
    tcp_spurious_rtos,
    /// Received segments trimmed at the right edge of the window we offered (RFC 9293
    /// 3.10.7.4).
    tcp_rx_trimmed,
    /// Receive buffers grown to twice what the peer delivered in a round trip (auto-tuning).
    tcp_rx_buffer_grown,
    /// Send buffers grown to follow the congestion window.
    tcp_tx_buffer_grown,
    /// Sends refused (0 bytes taken) because TCP's memory budget is at its limit.
    tcp_mem_send_refused,
    /// Path MTU lowered by an ICMP "fragmentation needed" message (RFC 1191).
    icmp_pmtu_updates,
    /// IPv4 fragments stored for reassembly (a received frame's verdict).
    ipv4_frags_queued,
    /// IPv4 datagrams reassembled from fragments.
    ipv4_reassembled,
    /// IPv4 datagrams whose first-arriving fragment was stored (reassembly begun).
    ipv4_reasm_started,
    /// IPv4 datagrams in reassembly discarded because a fragment overlapped another.
    ipv4_reasm_overlap,
    /// IPv4 datagrams we sent in fragments.
    ipv4_fragmented_sent,
    /// IPv4 fragments we sent.
    ipv4_frags_sent,
    /// ICMPv6 echo requests answered.
    icmpv6_echo_replied,
    /// ICMPv6 error messages received (Packet Too Big included).
    icmpv6_errors_received,
    /// ICMPv6 error messages sent (parameter problems, unreachables).
    icmpv6_errors_sent,
    /// Neighbor Solicitations sent (resolution, probes, duplicate address detection).
    ndp_solicits_sent,
    /// Neighbor Advertisements sent (answers, and announcements after DAD).
    ndp_adverts_sent,
    /// Addresses of ours that passed duplicate address detection.
    ndp_dad_succeeded,
    /// Addresses of ours another node turned out to use (never used).
    ndp_dad_failed,
    /// Router Advertisements taken in.
    ndp_router_adverts_accepted,
    /// IPv6 fragments stored for reassembly (a received frame's verdict).
    ipv6_frags_queued,
    /// IPv6 datagrams reassembled from fragments.
    ipv6_reassembled,
    /// IPv6 datagrams whose first-arriving fragment was stored (reassembly begun).
    ipv6_reasm_started,
    /// IPv6 datagrams in reassembly discarded because a fragment overlapped another.
    ipv6_reasm_overlap,
    /// IPv6 datagrams we sent in fragments.
    ipv6_fragmented_sent,
    /// IPv6 fragments we sent.
    ipv6_frags_sent,
    /// Frame shorter than an Ethernet header or with an incomplete VLAN tag.
    rx_drop_eth_truncated,
    /// Frame addressed to another MAC address.
    rx_drop_eth_not_for_us,
    /// Frame whose source MAC is multicast/broadcast (never valid).
    rx_drop_eth_bad_src,
    /// EtherType nobody handles.
    rx_drop_eth_unknown_ethertype,
    /// ARP packet truncated.
    rx_drop_arp_truncated,
    /// ARP for a hardware/protocol pair other than Ethernet/IPv4.
    rx_drop_arp_unsupported,
    /// ARP with an opcode other than request/reply.
    rx_drop_arp_bad_op,
    /// ARP whose target is not our address (not learned from).
    rx_drop_arp_not_for_us,
    /// ARP claiming our own IP address from another MAC (address conflict).
    rx_drop_arp_conflict,
    /// IPv4 packet shorter than its header.
    rx_drop_ipv4_truncated,
    /// IP version field is not 4.
    rx_drop_ipv4_bad_version,
    /// IPv4 header length field invalid.
    rx_drop_ipv4_bad_header_len,
    /// IPv4 total length field invalid.
    rx_drop_ipv4_bad_total_len,
    /// IPv4 header checksum wrong.
    rx_drop_ipv4_bad_checksum,
    /// IPv4 options malformed (a length of 0 or 1 or past the header, a bad pointer, a
    /// repeated option): answered with ICMP parameter problem, rate-limited, as Linux does.
    rx_drop_ipv4_bad_options,
    /// IPv4 packet with a loose or strict source route option, exhausted or not (Linux
    /// drops these with `accept_source_route=0`, its default).
    rx_drop_ipv4_source_route,
    /// IPv4 fragment malformed: empty, MF set with a length not a multiple of 8, or ending
    /// beyond 65,535 bytes.
    rx_drop_ipv4_frag_malformed,
    /// IPv4 fragment too small for the transport header, or starting inside it (RFC 1858).
    rx_drop_ipv4_frag_tiny,
    /// IPv4 fragment that repeats one already held.
    rx_drop_ipv4_frag_duplicate,
    /// IPv4 fragment overlapping another of its datagram, or of a datagram discarded for
    /// that (the whole datagram is dropped, as RFC 5722 says).
    rx_drop_ipv4_frag_overlap,
    /// IPv4 packet addressed to another host.
    rx_drop_ipv4_not_for_us,
    /// IPv4 source address that can never be a sender (RFC 1122 3.2.1.3, RFC 1812 5.3.7):
    /// 0.0.0.0/8, 127.0.0.0/8, multicast, 240.0.0.0/4, a broadcast address, our own.
    rx_drop_ipv4_martian_src,
    /// IPv4 destination that is never valid on a link (0.0.0.0/8, 127.0.0.0/8, 240.0.0.0/4
    /// other than the limited broadcast).
    rx_drop_ipv4_martian_dst,
    /// IPv4 packet from an off-link source with no gateway configured: nothing could be sent
    /// back to it.
    rx_drop_ipv4_no_route,
    /// A frame whose processing failed while sending a reply (counted, never an error out of
    /// `poll`).
    rx_drop_reply_failed,
    /// IPv4 protocol nobody handles (answered with ICMP protocol unreachable).
    rx_drop_ipv4_unknown_protocol,
    /// TCP segment shorter than its header, bad data offset, zero port, or to a broadcast address.
    rx_drop_tcp_malformed,
    /// TCP checksum wrong.
    rx_drop_tcp_bad_checksum,
    /// TCP options malformed.
    rx_drop_tcp_bad_options,
    /// TCP segment for no connection and no listener (answered with RST unless it was one).
    rx_drop_tcp_no_session,
    /// TCP segment to a broadcast address.
    rx_drop_tcp_broadcast,
    /// TCP segment with SYN and FIN (or SYN and RST) together.
    rx_drop_tcp_syn_fin,
    /// Segment to a listening port with neither SYN, ACK nor RST (RFC 9293 3.10.7.2: drop).
    rx_drop_tcp_listen_no_syn,
    /// ACK to a listening port whose SYN cookie did not verify (answered with RST).
    rx_drop_tcp_bad_cookie,
    /// SYN dropped: the listener's backlog (half-open plus unaccepted) is full.
    rx_drop_tcp_backlog_full,
    /// SYN dropped: the session table is full.
    rx_drop_tcp_table_full,
    /// ACK not matching what we sent in SYN-SENT (answered with RST unless it was one).
    rx_drop_tcp_bad_ack,
    /// ACK in SYN-RECEIVED for something we never sent (answered with RST).
    rx_drop_tcp_unacceptable_ack,
    /// RST without acceptable ACK in SYN-SENT.
    rx_drop_tcp_rst_ignored,
    /// Segment without ACK in a synchronized state.
    rx_drop_tcp_no_ack,
    /// Segment failing PAWS (old timestamp).
    rx_drop_tcp_paws,
    /// Segment outside the receive window (answered with an ACK).
    rx_drop_tcp_out_of_window,
    /// Retransmitted SYN in SYN-RECEIVED (the SYN-ACK is repeated).
    rx_drop_tcp_duplicate_syn,
    /// SYN on a synchronized connection (RFC 5961 challenge ACK).
    rx_drop_tcp_syn_challenged,
    /// RST in the window but not at the expected sequence (RFC 5961 challenge ACK).
    rx_drop_tcp_rst_challenged,
    /// ACK for data never sent.
    rx_drop_tcp_ack_unsent,
    /// ACK older than the largest window (RFC 5961 challenge ACK).
    rx_drop_tcp_ack_too_old,
    /// Data after the peer's FIN or after we stopped receiving.
    rx_drop_tcp_data_after_fin,
    /// Data beyond the receive buffer.
    rx_drop_tcp_rx_buffer_full,
    /// Data for a connection whose receive ring has no storage while TCP's memory budget is
    /// at its limit (the peer sends it again).
    rx_drop_tcp_mem_limit,
    /// Out-of-order data needing more reassembly ranges than kept.
    rx_drop_tcp_ooo_full,
    /// ICMP message truncated.
    rx_drop_icmp_truncated,
    /// ICMP checksum wrong.
    rx_drop_icmp_bad_checksum,
    /// ICMP echo request to a broadcast address (not answered, like Linux by default).
    rx_drop_icmp_broadcast_echo,
    /// ICMP echo reply matching no ping of ours.
    rx_drop_icmp_unmatched_reply,
    /// ICMP type this host ignores.
    rx_drop_icmp_unhandled_type,
    /// UDP datagram truncated or with a bad length field.
    rx_drop_udp_truncated,
    /// UDP checksum wrong.
    rx_drop_udp_bad_checksum,
    /// UDP datagram to a port with no socket (answered with ICMP port unreachable).
    rx_drop_udp_no_socket,
    /// UDP datagram dropped because the socket's receive queue was full.
    rx_drop_udp_rx_queue_full,
    /// UDP datagram dropped because its socket's queue could not grow under the stack's
    /// memory budget (see `tcp::memory`).
    rx_drop_udp_mem_limit,
    /// Raw frame dropped because the raw socket's receive queue was full.
    rx_drop_raw_rx_queue_full,
    /// IPv6 packet shorter than its header or its payload length.
    rx_drop_ipv6_truncated,
    /// IPv6 EtherType with an IP version other than 6.
    rx_drop_ipv6_bad_version,
    /// IPv6 jumbogram (payload length 0 with hop-by-hop options, RFC 2675): not supported.
    rx_drop_ipv6_jumbogram,
    /// IPv6 source that can never send: multicast, loopback, one of our addresses, or unspecified outside duplicate address detection.
    rx_drop_ipv6_martian_src,
    /// IPv6 packet to an address or group that is not ours.
    rx_drop_ipv6_not_for_us,
    /// IPv6 extension header or option running past the packet.
    rx_drop_ipv6_ext_truncated,
    /// IPv6 extension-header chain beyond the limits (headers, options, bytes).
    rx_drop_ipv6_ext_too_long,
    /// IPv6 hop-by-hop header anywhere but first (answered with a parameter problem).
    rx_drop_ipv6_ext_misplaced_hop_by_hop,
    /// Malformed IPv6 option, or over 7 bytes of padding in a row.
    rx_drop_ipv6_ext_bad_option,
    /// Unknown IPv6 option whose type says to discard the packet.
    rx_drop_ipv6_ext_unknown_option,
    /// IPv6 routing header with segments left (type 0 is deprecated, RFC 5095; a host does not forward).
    rx_drop_ipv6_ext_routing_header,
    /// First IPv6 fragment without the whole header chain (RFC 7112).
    rx_drop_ipv6_ext_incomplete_first_fragment,
    /// IPv6 fragment that is empty, not a multiple of 8 bytes with more to come, or ends
    /// beyond 65,535 bytes.
    rx_drop_ipv6_frag_malformed,
    /// IPv6 fragment too small to hold the upper-layer header, or one rewriting it.
    rx_drop_ipv6_frag_tiny,
    /// IPv6 fragment received twice (dropped alone).
    rx_drop_ipv6_frag_duplicate,
    /// IPv6 fragment overlapping another of its datagram: the datagram is discarded (RFC 5722).
    rx_drop_ipv6_frag_overlap,
    /// IPv6 packet with no upper layer (next header 59).
    rx_drop_ipv6_no_next_header,
    /// IPv6 packet of an upper-layer protocol nobody handles (answered with a parameter problem).
    rx_drop_ipv6_unknown_next_header,
    /// ICMPv6 message shorter than its header.
    rx_drop_icmpv6_truncated,
    /// ICMPv6 checksum wrong.
    rx_drop_icmpv6_bad_checksum,
    /// ICMPv6 echo reply that answers no ping of ours.
    rx_drop_icmpv6_unmatched_reply,
    /// ICMPv6 informational message of a type nobody handles.
    rx_drop_icmpv6_unhandled_type,
    /// Neighbor Discovery message that is too short or has a non-zero code.
    rx_drop_ndp_invalid,
    /// Neighbor Discovery message whose hop limit is not 255 (it crossed a router).
    rx_drop_ndp_hop_limit,
    /// Neighbor Discovery message from a source its type does not allow.
    rx_drop_ndp_bad_source,
    /// Neighbor Discovery message with a multicast target.
    rx_drop_ndp_multicast_target,
    /// Neighbor Discovery option of length 0, past the message, or too short.
    rx_drop_ndp_bad_option,
    /// Neighbor Solicitation for an address that is not ours.
    rx_drop_ndp_not_for_us,
    /// Neighbor Solicitation for an address of ours still under duplicate address detection (RFC 4862 5.4.3).
    rx_drop_ndp_tentative_target,
    /// Neighbor Advertisement from another node claiming one of our addresses.
    rx_drop_ndp_conflict,
    /// Neighbor Advertisement for a neighbour we are not resolving or caching (RFC 4861 7.2.5).
    rx_drop_ndp_advert_no_entry,
    /// Router Solicitation: hosts ignore them.
    rx_drop_ndp_router_solicit,
    /// Redirect: not followed.
    rx_drop_ndp_redirect,
    /// Router Advertisement while `accept_ra` is off.
    rx_drop_ndp_ra_ignored,
    /// Router Advertisement from a new router while `max_routers` are known.
    rx_drop_ndp_router_table_full,
    /// UDP datagram over IPv6 with checksum 0, which IPv6 does not allow (RFC 8200 8.1).
    rx_drop_udp6_zero_checksum,
    // Not a received frame's verdict: reassembly's per-datagram outcomes, the transmit side
    // and the link.
    /// Reassembly given up: the datagram was not complete within the timeout.
    ipv4_reasm_timeout,
    /// Reassembly given up to make room (memory or datagram limits).
    ipv4_reasm_evicted,
    /// IPv6 reassembly given up: the datagram was not complete within the timeout.
    ipv6_reasm_timeout,
    /// IPv6 reassembly given up to make room.
    ipv6_reasm_evicted,
    /// Outgoing datagram larger than the path MTU with fragmentation forbidden.
    tx_drop_too_big,
    /// ICMP error not sent because of rate limiting.
    tx_drop_icmp_rate_limited,
    /// Outgoing packet dropped: its next hop's MAC address could not be resolved.
    tx_drop_arp_unresolved,
    /// Outgoing packet dropped: too many packets already waiting for ARP resolution.
    tx_drop_arp_pending_full,
    /// Outgoing IPv6 packet dropped: no source address or no route for its destination.
    tx_drop_ipv6_no_route,
    /// Outgoing IPv6 packet dropped: its next hop did not answer Neighbor Solicitations.
    tx_drop_ndp_unresolved,
    /// Outgoing IPv6 packet dropped: too many packets already waiting for resolution.
    tx_drop_ndp_pending_full,
    /// Outgoing frame dropped because the link's transmit queue stayed full.
    tx_drop_link_full,
    /// Challenge ACKs (RFC 5961) not sent: over the rate limit, or one already waiting to
    /// go out on the same connection. With `tcp_challenge_acks` (those sent) this counts
    /// every segment that called for a challenge.
    tcp_challenge_acks_suppressed,
    /// Link receive errors (not frames: nothing was received).
    link_rx_errors,
}

/// The counter values of one stack, indexed by [`Counter`].
#[derive(Debug, Clone)]
pub struct Counters {
    values: [u64; Counter::ALL.len()],
}

impl Default for Counters {
    fn default() -> Self {
        Counters { values: [0; Counter::ALL.len()] }
    }
}

impl Counters {
    /// Add one to `c`.
    #[inline]
    pub fn bump(&mut self, c: Counter) {
        self.values[c as usize] += 1;
    }

    /// Add `n` to `c`.
    #[inline]
    pub fn add(&mut self, c: Counter, n: u64) {
        self.values[c as usize] += n;
    }

    /// The value of `c`.
    pub fn get(&self, c: Counter) -> u64 {
        self.values[c as usize]
    }

    /// The value of the counter called `name`, if such a counter exists.
    pub fn by_name(&self, name: &str) -> Option<u64> {
        Counter::ALL.iter().find(|c| c.name() == name).map(|&c| self.get(c))
    }

    /// All counters as (name, value), in display order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Counter::ALL.iter().map(move |&c| (c.name(), self.get(c)))
    }

    /// Total of the `rx_drop_*` counters: with `rx_delivered` these add up to `rx_frames`
    /// (every received frame is accounted for exactly once).
    pub fn rx_drops(&self) -> u64 {
        self.iter().filter(|(n, _)| n.starts_with(RX_DROP_PREFIX)).map(|(_, v)| v).sum()
    }

    /// Total of the `tx_drop_*` counters: what the stack meant to send and did not.
    pub fn tx_drops(&self) -> u64 {
        self.iter().filter(|(n, _)| n.starts_with(TX_DROP_PREFIX)).map(|(_, v)| v).sum()
    }

    /// Total of all drops, receive and transmit side.
    pub fn total_drops(&self) -> u64 {
        self.rx_drops() + self.tx_drops()
    }

    /// The receive accounting of these counters.
    pub fn rx_accounting(&self) -> RxAccounting {
        RxAccounting::from_named(self.iter())
    }
}

/// Prefix of the receive verdicts other than `rx_delivered`.
pub const RX_DROP_PREFIX: &str = "rx_drop_";
/// Prefix of the transmit-side drops.
pub const TX_DROP_PREFIX: &str = "tx_drop_";

/// The receive accounting identity, `rx_frames = rx_delivered + Σ rx_drop_*`, read from
/// counters by name (a stack's, or the ones `linerate stats` and `tap --json` print).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxAccounting {
    /// `rx_frames`.
    pub frames: u64,
    /// `rx_delivered`.
    pub delivered: u64,
    /// The sum of the `rx_drop_*` counters.
    pub dropped: u64,
}

impl RxAccounting {
    /// Sum counters given by name; names outside the identity are ignored.
    pub fn from_named<S: AsRef<str>>(counters: impl IntoIterator<Item = (S, u64)>) -> Self {
        let mut a = RxAccounting::default();
        for (name, v) in counters {
            match name.as_ref() {
                "rx_frames" => a.frames += v,
                "rx_delivered" => a.delivered += v,
                n if n.starts_with(RX_DROP_PREFIX) => a.dropped += v,
                _ => {}
            }
        }
        a
    }

    /// Frames not accounted for: `rx_frames − rx_delivered − Σ rx_drop_*` (zero when the
    /// identity holds; negative if a frame got two verdicts).
    pub fn unaccounted(&self) -> i128 {
        i128::from(self.frames) - i128::from(self.delivered) - i128::from(self.dropped)
    }

    /// True if every received frame has exactly one verdict.
    pub fn holds(&self) -> bool {
        self.unaccounted() == 0
    }

    /// `Ok` if the identity holds, else an error naming the three sums.
    pub fn check(&self) -> Result<(), String> {
        if self.holds() {
            Ok(())
        } else {
            Err(format!("receive accounting broken: {self}"))
        }
    }
}

impl std::fmt::Display for RxAccounting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rx_frames {} = rx_delivered {} + rx_drop_* {} ({})",
            self.frames,
            self.delivered,
            self.dropped,
            match self.unaccounted() {
                0 => "holds".to_string(),
                n => format!("{n:+} unaccounted"),
            }
        )
    }
}

/// The drop counter for an IPv4 header that failed to parse.
pub(crate) fn ipv4_drop_reason(e: WireError) -> Counter {
    match e {
        WireError::BadVersion => Counter::rx_drop_ipv4_bad_version,
        WireError::BadHeaderLen => Counter::rx_drop_ipv4_bad_header_len,
        WireError::BadTotalLen | WireError::BadLength => Counter::rx_drop_ipv4_bad_total_len,
        WireError::BadChecksum => Counter::rx_drop_ipv4_bad_checksum,
        _ => Counter::rx_drop_ipv4_truncated,
    }
}

/// The drop counter for an ARP packet that failed to parse.
pub(crate) fn arp_drop_reason(e: WireError) -> Counter {
    match e {
        WireError::Unsupported => Counter::rx_drop_arp_unsupported,
        _ => Counter::rx_drop_arp_truncated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lookup_works() {
        let mut names: Vec<_> = Counter::ALL.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Counter::ALL.len());
        let mut c = Counters::default();
        c.bump(Counter::rx_drop_udp_no_socket);
        c.add(Counter::rx_frames, 3);
        assert_eq!(c.by_name("rx_drop_udp_no_socket"), Some(1));
        assert_eq!(c.by_name("rx_frames"), Some(3));
        assert_eq!(c.by_name("nope"), None);
        assert_eq!(c.total_drops(), 1);
        c.bump(Counter::tx_drop_arp_unresolved);
        c.bump(Counter::ipv4_reasm_evicted);
        assert_eq!((c.rx_drops(), c.tx_drops(), c.total_drops()), (1, 1, 2));
        c.add(Counter::rx_delivered, 2);
        assert!(c.rx_accounting().holds(), "{}", c.rx_accounting());
        c.bump(Counter::rx_drop_eth_truncated);
        assert_eq!(c.rx_accounting().unaccounted(), -1);
        assert!(c.rx_accounting().check().unwrap_err().contains("-1 unaccounted"));
    }

    #[test]
    fn every_drop_is_in_exactly_one_family() {
        for c in Counter::ALL {
            let n = c.name();
            let families = [n.starts_with(RX_DROP_PREFIX), n.starts_with(TX_DROP_PREFIX)];
            assert!(!n.starts_with("drop_"), "{n}: a drop is rx_drop_* or tx_drop_*");
            assert!(families.iter().filter(|f| **f).count() <= 1, "{n}");
        }
    }
}
