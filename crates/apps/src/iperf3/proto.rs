//! The iperf3 wire protocol (as spoken by iperf 3.x): the one-byte test states of the control
//! connection, the 37-byte cookie, JSON messages framed by a 4-byte big-endian length, the
//! parameters the client sends, the results both sides exchange, the UDP stream handshake
//! and the header of every UDP data packet.

use serde_json::{json, Map, Value};

/// The port iperf3 listens on by default.
pub const DEFAULT_PORT: u16 = 5201;
/// Length of the cookie that starts the control connection and every TCP data connection:
/// 36 printable characters and a NUL.
pub const COOKIE_LEN: usize = 37;
/// Characters a cookie is made of.
const COOKIE_CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";
/// iperf3's default block of a TCP test (bytes per write).
pub const DEFAULT_TCP_LEN: usize = 128 * 1024;
/// iperf3's default UDP rate, bits per second per stream.
pub const DEFAULT_UDP_RATE: u64 = 1_000_000;
/// The datagram (4 bytes, host order on the sender: little-endian here) a client sends to open
/// a UDP stream.
pub const UDP_CONNECT_MSG: u32 = 0x3637_3839;
/// The server's answer to [`UDP_CONNECT_MSG`].
pub const UDP_CONNECT_REPLY: u32 = 0x3938_3736;
/// The answer of servers before 3.11.
pub const LEGACY_UDP_CONNECT_REPLY: u32 = 987_654_321;
/// Largest JSON message accepted (iperf3's results of many streams stay far below).
pub const MAX_JSON: usize = 4 << 20;
/// Longest UDP block iperf3 allows.
pub const MAX_UDP_LEN: usize = 65_507;

/// The test states, sent as one signed byte on the control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// The streams are set up; the test is about to start.
    TestStart,
    /// Data flows.
    TestRunning,
    /// The client ends the test.
    TestEnd,
    /// The server asks for the client's parameters.
    ParamExchange,
    /// The server asks the client to open the data streams.
    CreateStreams,
    /// The server gives up the test.
    ServerTerminate,
    /// The client gives up the test.
    ClientTerminate,
    /// Both sides send their results (client first).
    ExchangeResults,
    /// The client may print its results.
    DisplayResults,
    /// The client is done.
    IperfDone,
    /// The server is busy (or the cookie was wrong).
    AccessDenied,
    /// The server failed; two 32-bit big-endian error numbers follow.
    ServerError,
}

impl State {
    /// The byte on the wire.
    pub fn byte(self) -> u8 {
        let v: i8 = match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::TestEnd => 4,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfDone => 16,
            State::AccessDenied => -1,
            State::ServerError => -2,
        };
        v as u8
    }

    /// The state a byte names, if any.
    pub fn from_byte(b: u8) -> Option<State> {
        Some(match b as i8 {
            1 => State::TestStart,
            2 => State::TestRunning,
            4 => State::TestEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            16 => State::IperfDone,
            -1 => State::AccessDenied,
            -2 => State::ServerError,
            _ => return None,
        })
    }
}

/// A fresh random cookie: 36 characters of iperf3's alphabet and a NUL.
pub fn make_cookie() -> [u8; COOKIE_LEN] {
    use std::hash::{BuildHasher, Hasher};
    let mut c = [0u8; COOKIE_LEN];
    let mut bits = 0u64;
    for (i, b) in c.iter_mut().take(COOKIE_LEN - 1).enumerate() {
        if i % 12 == 0 {
            // Each RandomState is seeded from the OS's randomness and a per-process counter.
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(i);
            bits = h.finish();
        }
        *b = COOKIE_CHARS[(bits & 31) as usize];
        bits >>= 5;
    }
    c
}

/// True if `c` has a cookie's shape: printable ASCII ending in a NUL.
pub fn is_cookie(c: &[u8]) -> bool {
    c.len() == COOKIE_LEN && c[COOKIE_LEN - 1] == 0 && c[..COOKIE_LEN - 1].iter().all(|b| b.is_ascii_graphic())
}

/// A JSON message as it goes on the wire: 4-byte big-endian length, then the text.
pub fn frame_json(v: &Value) -> Vec<u8> {
    let text = v.to_string();
    let mut out = Vec::with_capacity(4 + text.len());
    out.extend_from_slice(&(text.len() as u32).to_be_bytes());
    out.extend_from_slice(text.as_bytes());
    out
}

/// The transport of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    /// TCP streams.
    Tcp,
    /// UDP streams.
    Udp,
}

/// The test parameters the client sends in PARAM_EXCHANGE (those this implementation uses).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// TCP or UDP.
    pub protocol: Protocol,
    /// Seconds to run (0 when the test is bounded by bytes or blocks).
    pub time: u64,
    /// Bytes to send in all (0: unbounded).
    pub bytes: u64,
    /// Blocks to send in all (0: unbounded).
    pub blocks: u64,
    /// Seconds at the start the client leaves out of its figures.
    pub omit: u64,
    /// Streams (per direction).
    pub parallel: usize,
    /// The server sends.
    pub reverse: bool,
    /// Both send.
    pub bidirectional: bool,
    /// Bytes per write (TCP) or per datagram (UDP).
    pub len: usize,
    /// Target rate per stream, bits per second (0: unlimited).
    pub rate: u64,
    /// UDP sequence numbers are 64-bit.
    pub udp_counters_64bit: bool,
    /// The client wants the server's report in the results.
    pub get_server_output: bool,
}

impl Params {
    /// Parameters of a test of `protocol` with iperf3's defaults otherwise (10 s, 1 stream).
    pub fn new(protocol: Protocol) -> Params {
        Params {
            protocol,
            time: 10,
            bytes: 0,
            blocks: 0,
            omit: 0,
            parallel: 1,
            reverse: false,
            bidirectional: false,
            len: if protocol == Protocol::Tcp { DEFAULT_TCP_LEN } else { 1448 },
            rate: if protocol == Protocol::Udp { DEFAULT_UDP_RATE } else { 0 },
            udp_counters_64bit: false,
            get_server_output: false,
        }
    }

    /// Read the client's parameters; one sentence on what is wrong or unsupported.
    pub fn from_json(v: &Value) -> Result<Params, String> {
        let o = v.as_object().ok_or("the parameters are not a JSON object")?;
        let protocol = if o.contains_key("udp") {
            Protocol::Udp
        } else if o.contains_key("tcp") {
            Protocol::Tcp
        } else {
            return Err("the parameters ask for neither TCP nor UDP (SCTP is not supported)".into());
        };
        let num = |k: &str| -> Result<u64, String> {
            match o.get(k) {
                None => Ok(0),
                Some(v) => v
                    .as_u64()
                    .or_else(|| v.as_f64().filter(|f| *f >= 0.0 && f.is_finite()).map(|f| f as u64))
                    .ok_or_else(|| format!("parameter \"{k}\" is not a non-negative number: {v}")),
            }
        };
        let mut p = Params::new(protocol);
        p.time = num("time")?;
        p.bytes = num("num")?;
        p.blocks = num("blockcount")?;
        p.omit = num("omit")?;
        p.parallel = num("parallel")?.max(1) as usize;
        p.reverse = o.contains_key("reverse");
        p.bidirectional = o.contains_key("bidirectional");
        if o.contains_key("len") {
            p.len = num("len")? as usize;
        }
        if o.contains_key("bandwidth") {
            p.rate = num("bandwidth")?;
        }
        p.udp_counters_64bit = o.contains_key("udp_counters_64bit");
        p.get_server_output = o.contains_key("get_server_output");
        if p.parallel > 128 {
            return Err(format!("{} parallel streams is more than the 128 this server takes", p.parallel));
        }
        let (min_len, max_len) = match protocol {
            Protocol::Udp => (udp_header_len(p.udp_counters_64bit), MAX_UDP_LEN),
            Protocol::Tcp => (1, 1 << 20),
        };
        if p.len < min_len || p.len > max_len {
            return Err(format!("block length {} is outside {min_len}..={max_len}", p.len));
        }
        Ok(p)
    }

    /// The parameters as the client sends them.
    pub fn to_json(&self, client_version: &str) -> Value {
        let mut o = Map::new();
        let key = if self.protocol == Protocol::Tcp { "tcp" } else { "udp" };
        o.insert(key.into(), Value::Bool(true));
        o.insert("omit".into(), json!(self.omit));
        o.insert("time".into(), json!(self.time));
        o.insert("num".into(), json!(self.bytes));
        o.insert("blockcount".into(), json!(self.blocks));
        o.insert("parallel".into(), json!(self.parallel));
        if self.reverse {
            o.insert("reverse".into(), Value::Bool(true));
        }
        if self.bidirectional {
            o.insert("bidirectional".into(), Value::Bool(true));
        }
        o.insert("len".into(), json!(self.len));
        if self.rate > 0 {
            o.insert("bandwidth".into(), json!(self.rate));
        }
        o.insert("pacing_timer".into(), json!(1000));
        if self.udp_counters_64bit {
            o.insert("udp_counters_64bit".into(), json!(1));
        }
        o.insert("client_version".into(), json!(client_version));
        Value::Object(o)
    }
}

/// One stream's figures in the results exchange.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StreamResult {
    /// The stream's id (1, 3, 4, 5, … in the order the streams were opened).
    pub id: u32,
    /// Bytes this side sent (as sender) or received (as receiver).
    pub bytes: u64,
    /// TCP retransmissions (-1: not known or not the sender).
    pub retransmits: i64,
    /// UDP jitter, seconds (receiver).
    pub jitter: f64,
    /// UDP packets lost (receiver).
    pub errors: i64,
    /// UDP packets sent, or the highest sequence number received.
    pub packets: i64,
    /// Seconds from the start of the test to the stream's start (0).
    pub start_time: f64,
    /// Seconds from the stream's start to its end.
    pub end_time: f64,
}

/// The results one side sends in EXCHANGE_RESULTS.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Results {
    /// CPU use of the process over the test, percent: total, user, system.
    pub cpu_util: [f64; 3],
    /// 1 if the sender reports TCP retransmissions, 0 if not, -1 from a pure receiver.
    pub sender_has_retransmits: i64,
    /// Per stream.
    pub streams: Vec<StreamResult>,
    /// The server's own report, when the client asked for it.
    pub server_output_text: Option<String>,
}

impl Results {
    /// The results as JSON.
    pub fn to_json(&self) -> Value {
        let streams: Vec<Value> = self
            .streams
            .iter()
            .map(|s| {
                json!({
                    "id": s.id, "bytes": s.bytes, "retransmits": s.retransmits, "jitter": s.jitter,
                    "errors": s.errors, "packets": s.packets, "start_time": s.start_time, "end_time": s.end_time,
                })
            })
            .collect();
        let mut v = json!({
            "cpu_util_total": self.cpu_util[0], "cpu_util_user": self.cpu_util[1],
            "cpu_util_system": self.cpu_util[2], "sender_has_retransmits": self.sender_has_retransmits,
            "streams": streams,
        });
        if let Some(t) = &self.server_output_text {
            v["server_output_text"] = json!(t);
        }
        v
    }

    /// Read the peer's results; one sentence on what is missing.
    pub fn from_json(v: &Value) -> Result<Results, String> {
        let f = |o: &Value, k: &str| o.get(k).and_then(Value::as_f64).ok_or_else(|| format!("results lack \"{k}\""));
        let i = |o: &Value, k: &str| o.get(k).and_then(as_int).ok_or_else(|| format!("results lack \"{k}\""));
        let mut r = Results {
            cpu_util: [f(v, "cpu_util_total")?, f(v, "cpu_util_user")?, f(v, "cpu_util_system")?],
            sender_has_retransmits: i(v, "sender_has_retransmits")?,
            streams: Vec::new(),
            server_output_text: v.get("server_output_text").and_then(Value::as_str).map(String::from),
        };
        for s in v.get("streams").and_then(Value::as_array).ok_or("results lack \"streams\"")? {
            r.streams.push(StreamResult {
                id: i(s, "id")? as u32,
                bytes: i(s, "bytes")?.max(0) as u64,
                retransmits: i(s, "retransmits")?,
                jitter: f(s, "jitter")?,
                errors: i(s, "errors")?,
                packets: i(s, "packets")?,
                start_time: f(s, "start_time").unwrap_or(0.0),
                end_time: f(s, "end_time").unwrap_or(0.0),
            });
        }
        Ok(r)
    }
}

/// An integer of the results. iperf 3.12 writes -1 as 18446744073709551615 (its JSON library
/// prints the two's complement as unsigned), so large unsigned values wrap back to negative.
fn as_int(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_u64().map(|u| u as i64))
        .or_else(|| v.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
}

/// The id of the stream opened `index`-th (from 0): iperf3 numbers them 1, 3, 4, 5, ….
pub fn stream_id(index: usize) -> u32 {
    if index == 0 {
        1
    } else {
        index as u32 + 2
    }
}

/// Length of the UDP data header: seconds, microseconds, sequence number.
pub fn udp_header_len(counters_64bit: bool) -> usize {
    if counters_64bit {
        16
    } else {
        12
    }
}

/// Write the UDP data header (all fields big-endian) at the start of `buf`.
pub fn write_udp_header(buf: &mut [u8], sec: u32, usec: u32, seq: u64, counters_64bit: bool) {
    buf[0..4].copy_from_slice(&sec.to_be_bytes());
    buf[4..8].copy_from_slice(&usec.to_be_bytes());
    if counters_64bit {
        buf[8..16].copy_from_slice(&seq.to_be_bytes());
    } else {
        buf[8..12].copy_from_slice(&(seq as u32).to_be_bytes());
    }
}

/// Read the UDP data header: (seconds, microseconds, sequence number), None if too short.
pub fn read_udp_header(buf: &[u8], counters_64bit: bool) -> Option<(u32, u32, u64)> {
    if buf.len() < udp_header_len(counters_64bit) {
        return None;
    }
    let u32_at = |i: usize| u32::from_be_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
    let seq =
        if counters_64bit { u64::from_be_bytes(buf[8..16].try_into().unwrap_or_default()) } else { u32_at(8) as u64 };
    Some((u32_at(0), u32_at(4), seq))
}

/// True if a 4-byte datagram is one of the UDP handshake words `word` (in either byte order).
pub fn is_udp_word(data: &[u8], word: u32) -> bool {
    data.len() == 4 && (data == word.to_le_bytes() || data == word.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_denied_is_ff() {
        assert_eq!(State::AccessDenied.byte(), 0xff);
        assert_eq!(State::ServerError.byte(), 0xfe);
        for b in 0..=255u8 {
            if let Some(s) = State::from_byte(b) {
                assert_eq!(s.byte(), b);
            }
        }
        assert_eq!(State::from_byte(3), None);
    }

    #[test]
    fn cookies_have_the_shape_and_differ() {
        let (a, b) = (make_cookie(), make_cookie());
        assert!(is_cookie(&a) && is_cookie(&b));
        assert_ne!(a, b);
        assert!(a[..36].iter().all(|c| COOKIE_CHARS.contains(c)));
    }

    #[test]
    fn params_round_trip_and_reject_nonsense() {
        let mut p = Params::new(Protocol::Udp);
        (p.time, p.parallel, p.reverse, p.rate, p.len) = (3, 4, true, 5_000_000, 1400);
        assert_eq!(Params::from_json(&p.to_json("3.12")).unwrap(), p);
        assert!(Params::from_json(&json!({"sctp": true})).is_err());
        assert!(Params::from_json(&json!({"udp": true, "len": 4})).is_err());
        assert!(Params::from_json(&json!({"tcp": true, "parallel": 1000})).is_err());
    }

    #[test]
    fn results_round_trip() {
        let r = Results {
            cpu_util: [1.0, 0.5, 0.5],
            sender_has_retransmits: 1,
            streams: vec![StreamResult { id: 3, bytes: 1 << 40, retransmits: 2, end_time: 2.0, ..Default::default() }],
            server_output_text: None,
        };
        assert_eq!(Results::from_json(&r.to_json()).unwrap(), r);
        // As iperf 3.12 writes -1.
        let mut v = r.to_json();
        v["sender_has_retransmits"] = json!(u64::MAX);
        assert_eq!(Results::from_json(&v).unwrap().sender_has_retransmits, -1);
    }

    #[test]
    fn udp_header_and_words() {
        let mut b = [0u8; 16];
        write_udp_header(&mut b, 7, 8, 1 << 33, true);
        assert_eq!(read_udp_header(&b, true), Some((7, 8, 1 << 33)));
        write_udp_header(&mut b, 7, 8, 9, false);
        assert_eq!(read_udp_header(&b[..12], false), Some((7, 8, 9)));
        assert!(is_udp_word(&UDP_CONNECT_MSG.to_le_bytes(), UDP_CONNECT_MSG));
        assert_eq!(&UDP_CONNECT_REPLY.to_le_bytes(), b"6789");
        assert_eq!([stream_id(0), stream_id(1), stream_id(2)], [1, 3, 4]);
    }
}
