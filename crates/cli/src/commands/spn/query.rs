//! `linerate spn query`: a client of the SPN service on ordinary Linux sockets (the user's tool
//! on another machine, or in the namespace of `linerate spn serve --tap`). It reads input
//! vectors, sends them as request records (`apps::spn_service::record`) over UDP or TCP, and
//! prints one value per vector, in input order.

use super::{parse_inputs, to_u8_inputs};
use crate::bench_common::{check_secs, msg};
use crate::output::{print_all, Cell, Table, Unit};
use apps::spn_service::record::{decode_response, encode_request, response_len, response_value, Status, HEADER_LEN};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Largest UDP payload a request or response may have over IPv4: an Ethernet MTU of 1500 less
/// the IPv4 and UDP headers (what `linerate spn serve` accepts at its default MTU).
const MAX_DATAGRAM: usize = 1472;
/// The same over IPv6, whose header is 20 bytes longer (so no datagram needs fragments).
const MAX_DATAGRAM6: usize = MAX_DATAGRAM - 20;
/// Vectors per request over TCP by default.
const TCP_VECTORS: usize = 1024;
/// UDP requests kept outstanding at once.
const UDP_WINDOW: usize = 16;

/// Options of `linerate spn query`.
#[derive(clap::Args)]
pub struct QueryArgs {
    /// The service's address (or host name) and port.
    #[arg(long, value_name = "ADDR:PORT")]
    server: String,
    /// Send the requests as UDP datagrams (the default).
    #[arg(long, conflicts_with = "tcp")]
    udp: bool,
    /// Send the requests back to back on one TCP connection.
    #[arg(long)]
    tcp: bool,
    /// The model served (JSON or SPFlow text): the inputs are checked against its number of
    /// variables before anything is sent. Without it, the width of the first input row counts.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Input vectors ("-": standard input): CSV, one per line, 8-bit values, where an empty
    /// field, "nan" or "?" is a missing value (marginalised out); or a NumPy .npy array
    /// (n x inputs, uint8, int32/64 or float32/64, NaN missing).
    #[arg(long, default_value = "-", value_name = "FILE")]
    input: String,
    /// Ask for likelihoods instead of log-likelihoods.
    #[arg(long)]
    prob: bool,
    /// Vectors per request (default: as many as fit one 1472-byte datagram over UDP, 1024 over
    /// TCP).
    #[arg(long)]
    vectors: Option<usize>,
    /// How long to wait for an answer before resending it (UDP) or giving up (TCP) (a
    /// duration: 1s, 200ms; a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::duration::parse_duration)]
    timeout: Duration,
    /// Times a UDP request is resent before giving up.
    #[arg(long, default_value_t = 5)]
    retries: u32,
    /// Print JSON (`{"tables": [...]}` like every command): the values, a row per vector in
    /// input order (log-likelihoods unless --prob; -inf as null), and a table of the
    /// exchange's figures (requests, resends, rate, latency percentiles).
    #[arg(long)]
    json: bool,
    /// Print the rate (vectors/s) and latency percentiles on stderr (always in --json).
    #[arg(long)]
    stats: bool,
}

/// The vectors to send, as the service carries them.
struct Batch {
    /// 8-bit values, `vars` per vector.
    bytes: Vec<u8>,
    /// One flag per value: missing.
    missing: Vec<bool>,
    /// Values per vector.
    vars: usize,
}

impl Batch {
    /// Vectors in the batch.
    fn len(&self) -> usize {
        self.bytes.len() / self.vars
    }

    /// Request record `id` for vectors `range` (with missing-masks if the batch has any).
    fn request(&self, id: u32, range: std::ops::Range<usize>, log: bool) -> Result<Vec<u8>, String> {
        let (v, mlen) = (self.vars, self.vars.div_ceil(8));
        let masks = self.missing.iter().any(|m| *m).then(|| {
            let mut m = vec![0u8; range.len() * mlen];
            for (i, row) in range.clone().enumerate() {
                for (j, miss) in self.missing[row * v..(row + 1) * v].iter().enumerate() {
                    if *miss {
                        m[i * mlen + j / 8] |= 1 << (j % 8);
                    }
                }
            }
            m
        });
        let mut out = Vec::new();
        encode_request(id, v, &self.bytes[range.start * v..range.end * v], masks.as_deref(), log, &mut out)?;
        Ok(out)
    }

    /// Bytes one vector takes in a request.
    fn bytes_per_vector(&self) -> usize {
        self.vars + if self.missing.iter().any(|m| *m) { self.vars.div_ceil(8) } else { 0 }
    }
}

/// What an exchange produced.
struct Exchange {
    /// One value per vector, in input order.
    values: Vec<f64>,
    /// Requests sent, counting resends.
    sent: u64,
    /// Requests resent after a timeout (UDP).
    resent: u64,
    /// Per request: from its first send to its answer.
    latency: apps::spn_service::LatencyHistogram,
}

/// Run `linerate spn query`.
pub fn run(a: QueryArgs) -> Result<ExitCode, String> {
    let timeout = check_secs(a.timeout)?;
    if timeout.is_zero() {
        return Err("--timeout must be more than 0 seconds".into());
    }
    let server = resolve(&a.server)?;
    let batch = read_batch(&a)?;
    let tcp = a.tcp;
    let per = match a.vectors {
        Some(0) => return Err("--vectors must be at least 1".into()),
        Some(n) => n.min(usize::from(u16::MAX)),
        None if tcp => TCP_VECTORS,
        None => udp_vectors(batch.bytes_per_vector(), max_datagram(server)),
    };
    if !tcp && per == 0 {
        return Err(format!(
            "one vector of {} inputs does not fit a {}-byte datagram: use --tcp",
            batch.vars,
            max_datagram(server)
        ));
    }
    let chunks: Vec<std::ops::Range<usize>> =
        (0..batch.len()).step_by(per).map(|s| s..(s + per).min(batch.len())).collect();
    let requests: Vec<Vec<u8>> = chunks
        .iter()
        .enumerate()
        .map(|(i, r)| batch.request(i as u32, r.clone(), !a.prob))
        .collect::<Result<_, _>>()?;
    let start = Instant::now();
    let ex = if tcp {
        tcp_exchange(server, &requests, &chunks, timeout)?
    } else {
        udp_exchange(server, &requests, &chunks, timeout, a.retries)?
    };
    let secs = start.elapsed().as_secs_f64();
    print_values(&a, server, &ex, requests.len(), secs).map(|_| ExitCode::SUCCESS)
}

/// The address of `server` (ADDR:PORT or HOST:PORT), IPv4 first.
fn resolve(server: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<SocketAddr> = server
        .to_socket_addrs()
        .map_err(|e| format!("--server {server}: not ADDR:PORT or a known HOST:PORT ({e})"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("--server {server}: no address"))
}

/// The largest UDP payload to send to `server` unfragmented on a 1500-byte MTU.
fn max_datagram(server: SocketAddr) -> usize {
    if server.is_ipv4() {
        MAX_DATAGRAM
    } else {
        MAX_DATAGRAM6
    }
}

/// Most vectors of `bytes_per_vector` request bytes one UDP request of at most `max_datagram`
/// bytes may carry (its answer must fit a datagram too).
fn udp_vectors(bytes_per_vector: usize, max_datagram: usize) -> usize {
    let room = max_datagram - HEADER_LEN;
    (room / 8).min(room / bytes_per_vector.max(1))
}

/// Read the --input file (or standard input) as 8-bit vectors: CSV, or .npy (by its magic).
fn read_batch(a: &QueryArgs) -> Result<Batch, String> {
    let (bytes, what) = if a.input == "-" {
        let mut b = Vec::new();
        std::io::stdin().read_to_end(&mut b).map_err(|e| format!("standard input: {e}"))?;
        (b, "standard input".to_string())
    } else {
        (std::fs::read(&a.input).map_err(|e| format!("{}: {e}", a.input))?, a.input.clone())
    };
    let model_vars = match &a.model {
        Some(p) => Some(spn::load(p).map_err(|e| e.to_string())?.num_vars()),
        None => None,
    };
    let (rows, vars) = if bytes.starts_with(b"\x93NUMPY") {
        let (rows, vars) = super::npy::parse(&bytes, &what)?;
        if let Some(m) = model_vars.filter(|m| *m != vars) {
            return Err(format!("{what}: {vars} values per vector, but the model has {m} inputs"));
        }
        (rows, vars)
    } else {
        let text = std::str::from_utf8(&bytes).map_err(|_| format!("{what}: neither CSV text nor a .npy file"))?;
        let vars = match model_vars {
            Some(m) => m,
            None => first_row_width(text).ok_or_else(|| format!("{what}: no input vectors"))?,
        };
        (parse_inputs(text.as_bytes(), vars, &what)?, vars)
    };
    if rows.is_empty() {
        return Err(format!("{what}: no input vectors"));
    }
    let (bytes, missing) = to_u8_inputs(&rows, &what)?;
    Ok(Batch { bytes, missing, vars })
}

/// Values in the first data line of CSV `text` (the rules of [`parse_inputs`]).
fn first_row_width(text: &str) -> Option<usize> {
    let t = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#'))?;
    Some(if t.contains(',') { t.split(',').count() } else { t.split_whitespace().count() })
}

/// Check a response record against the request it should answer and return its values.
fn check_answer(rec: &[u8], id: u32, want: usize) -> Result<Vec<f64>, String> {
    let r = decode_response(rec).map_err(|e| format!("request {id}: {e}"))?;
    if let Err(code) = r.status {
        let why = Status::from_code(code).map_or("unknown status", Status::describe);
        return Err(format!("request {id}: the service answered with error {code} ({why})"));
    }
    if usize::from(r.count) != want {
        return Err(format!("request {id}: {} values came back for {want} vectors", r.count));
    }
    Ok((0..want).map(|i| response_value(rec, i)).collect())
}

/// Send every request as a datagram, at most [`UDP_WINDOW`] outstanding, resending any not
/// answered within `timeout` up to `retries` times; answers are matched by request id.
fn udp_exchange(
    server: SocketAddr,
    requests: &[Vec<u8>],
    chunks: &[std::ops::Range<usize>],
    timeout: Duration,
    retries: u32,
) -> Result<Exchange, String> {
    let bind: SocketAddr = if server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().map_err(msg)?;
    let sock = UdpSocket::bind(bind).map_err(|e| format!("cannot open a UDP socket: {e}"))?;
    sock.connect(server).map_err(|e| format!("{server}: {e}"))?;
    sock.set_read_timeout(Some(Duration::from_millis(20))).map_err(msg)?;
    let total: usize = chunks.iter().map(|c| c.len()).sum();
    let mut answers: Vec<Option<Vec<f64>>> = vec![None; requests.len()];
    // Per request: when it was last sent and how many times; when it was first sent.
    let mut sent_at: Vec<Option<(Instant, u32)>> = vec![None; requests.len()];
    let mut first_sent: Vec<Option<Instant>> = vec![None; requests.len()];
    let mut latency = apps::spn_service::LatencyHistogram::default();
    let (mut next, mut done, mut sent, mut resent) = (0usize, 0usize, 0u64, 0u64);
    let mut buf = vec![0u8; 65536];
    while done < requests.len() {
        let now = Instant::now();
        for (i, s) in sent_at.iter_mut().enumerate().take(next) {
            match s {
                Some((at, n)) if answers[i].is_none() && now - *at >= timeout => {
                    if *n > retries {
                        return Err(format!(
                            "no answer from {server} (UDP) to request {i} after {n} tries: is the service running there?"
                        ));
                    }
                    send_datagram(&sock, &requests[i], server)?;
                    *s = Some((now, *n + 1));
                    sent += 1;
                    resent += 1;
                }
                _ => {}
            }
        }
        while next < requests.len() && next < done + UDP_WINDOW {
            send_datagram(&sock, &requests[next], server)?;
            sent_at[next] = Some((now, 1));
            first_sent[next] = Some(Instant::now());
            sent += 1;
            next += 1;
        }
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(format!("{server} refused the request (no UDP service on that port)"))
            }
            Err(e) => return Err(format!("{server}: {e}")),
        };
        let Some(id) = response_id(&buf[..n]) else { continue };
        let i = id as usize;
        if i >= requests.len() || answers[i].is_some() {
            continue; // a duplicate or a late answer to a resent request
        }
        answers[i] = Some(check_answer(&buf[..n], id, chunks[i].len())?);
        if let Some(t) = first_sent[i] {
            latency.record(t.elapsed());
        }
        done += 1;
    }
    let values: Vec<f64> = answers.into_iter().flatten().flatten().collect();
    debug_assert_eq!(values.len(), total);
    Ok(Exchange { values, sent, resent, latency })
}

/// Send one datagram.
fn send_datagram(sock: &UdpSocket, rec: &[u8], server: SocketAddr) -> Result<(), String> {
    match sock.send(rec) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            Err(format!("{server} refused the request (no UDP service on that port)"))
        }
        Err(e) => Err(format!("cannot send to {server}: {e}")),
    }
}

/// The request id of a response record, if `rec` is one.
fn response_id(rec: &[u8]) -> Option<u32> {
    response_len(rec)?;
    Some(u32::from_le_bytes([rec[12], rec[13], rec[14], rec[15]]))
}

/// Send every request back to back on one connection (a writer thread) and read the answers,
/// which come in request order.
fn tcp_exchange(
    server: SocketAddr,
    requests: &[Vec<u8>],
    chunks: &[std::ops::Range<usize>],
    timeout: Duration,
) -> Result<Exchange, String> {
    let mut stream =
        TcpStream::connect_timeout(&server, timeout).map_err(|e| format!("cannot connect to {server}: {e}"))?;
    stream.set_nodelay(true).map_err(msg)?;
    stream.set_read_timeout(Some(timeout)).map_err(msg)?;
    stream.set_write_timeout(Some(timeout)).map_err(msg)?;
    let mut writer = stream.try_clone().map_err(msg)?;
    // The writer sends request by request and notes when each was handed to the socket.
    let (sent_tx, sent_rx) = std::sync::mpsc::channel::<Instant>();
    let owned: Vec<Vec<u8>> = requests.to_vec();
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        for r in &owned {
            writer.write_all(r)?;
            let _ = sent_tx.send(Instant::now());
        }
        Ok(())
    });
    let mut latency = apps::spn_service::LatencyHistogram::default();
    let mut values = Vec::with_capacity(chunks.iter().map(|c| c.len()).sum());
    let mut rec = vec![0u8; HEADER_LEN];
    for (i, c) in chunks.iter().enumerate() {
        rec.resize(HEADER_LEN, 0);
        read_exact(&mut stream, &mut rec, server, timeout)?;
        let len = response_len(&rec)
            .ok_or_else(|| format!("{server} sent something other than a response record (request {i})"))?;
        rec.resize(len, 0);
        read_exact(&mut stream, &mut rec[HEADER_LEN..], server, timeout)?;
        let id = response_id(&rec).unwrap_or(u32::MAX);
        if id != i as u32 {
            return Err(format!("{server} answered request {id} where request {i} was due"));
        }
        values.extend(check_answer(&rec, id, c.len())?);
        // Answers come in request order: this one's send time is the next noted.
        if let Ok(t) = sent_rx.recv_timeout(timeout) {
            latency.record(t.elapsed());
        }
    }
    let _ = stream.shutdown(std::net::Shutdown::Both);
    match sender.join() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("sending to {server}: {e}")),
        Err(_) => return Err("the sending thread failed".into()),
    }
    Ok(Exchange { values, sent: requests.len() as u64, resent: 0, latency })
}

/// Fill `buf` from the stream, with errors that say what happened.
fn read_exact(s: &mut TcpStream, buf: &mut [u8], server: SocketAddr, timeout: Duration) -> Result<(), String> {
    s.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => format!("{server} closed the connection before answering everything"),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            format!("{server} sent nothing for {timeout:?}")
        }
        _ => format!("receiving from {server}: {e}"),
    })
}

/// The exchange's figures as a one-row table.
fn exchange_table(tcp: bool, server: SocketAddr, ex: &Exchange, requests: usize, secs: f64) -> Table {
    let mut t = Table::new(
        &format!("spn query exchange with {server}"),
        &[
            "server",
            "transport",
            "vectors",
            "requests",
            "datagrams sent",
            "resent",
            "seconds",
            "rate",
            "latency p50",
            "latency p99",
            "latency max",
        ],
    );
    let secs_of = |ns: u64| Cell::nanos(ns as f64);
    t.row(vec![
        Cell::from(server.to_string()),
        Cell::from(if tcp { "tcp" } else { "udp" }),
        Cell::count_u64(ex.values.len() as u64),
        Cell::count_u64(requests as u64),
        if tcp { Cell::Missing("TCP: a stream, not datagrams".into()) } else { Cell::count_u64(ex.sent) },
        Cell::count_u64(ex.resent),
        Cell::secs(secs),
        Cell::Num(ex.values.len() as f64 / secs.max(1e-9), Unit::OpsPerSec),
        secs_of(ex.latency.percentile_ns(50.0)),
        secs_of(ex.latency.percentile_ns(99.0)),
        secs_of(ex.latency.min_max_ns().1),
    ]);
    t
}

/// Print the values: one per line (full precision), or JSON.
fn print_values(a: &QueryArgs, server: SocketAddr, ex: &Exchange, requests: usize, secs: f64) -> Result<(), String> {
    if a.json {
        let values = super::values_table("spn query", a.prob, &ex.values);
        print_all(&[&values, &exchange_table(a.tcp, server, ex, requests, secs)], true);
        return Ok(());
    }
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    {
        for v in &ex.values {
            writeln!(w, "{v:?}").map_err(msg)?;
        }
        if a.stats {
            eprintln!(
                "{} vectors in {requests} requests, {secs:.3} s: {:.0} vectors/s; latency p50 {:.1} us, p99 {:.1} us, max {:.1} us{}",
                ex.values.len(),
                ex.values.len() as f64 / secs.max(1e-9),
                ex.latency.percentile_ns(50.0) as f64 / 1e3,
                ex.latency.percentile_ns(99.0) as f64 / 1e3,
                ex.latency.min_max_ns().1 as f64 / 1e3,
                if a.tcp { String::new() } else { format!("; {} resent", ex.resent) }
            );
        }
    }
    w.flush().map_err(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_packing() {
        let b = Batch { bytes: vec![1, 2, 3, 4, 5, 6], missing: vec![false, true, false, false, false, true], vars: 3 };
        let rec = b.request(5, 1..2, true).unwrap();
        // Header, one vector, one mask byte with bit 2 set (its third value is missing).
        assert_eq!(rec.len(), 16 + 3 + 1);
        assert_eq!(&rec[16..19], &[4, 5, 6]);
        assert_eq!(rec[19], 0b100);
        assert_eq!(b.bytes_per_vector(), 4);
        assert_eq!(udp_vectors(4, MAX_DATAGRAM), 182);
        assert_eq!(udp_vectors(100, MAX_DATAGRAM), 14);
        assert_eq!(udp_vectors(2000, MAX_DATAGRAM), 0);
        assert_eq!(udp_vectors(4, MAX_DATAGRAM6), 179);
        assert_eq!(udp_vectors(100, MAX_DATAGRAM6), 14);
        assert_eq!(first_row_width("# c\n\n1,2,,4\n"), Some(4));
        assert_eq!(first_row_width("1 2 3\n"), Some(3));
    }

    #[test]
    fn answers_are_checked() {
        use apps::spn_service::record::{emit_response_header, RequestHeader, FLAG_LOG};
        let h = RequestHeader { flags: FLAG_LOG, count: 1, vector_len: 3, id: 4 };
        let mut rec = vec![0u8; 24];
        emit_response_header(&h, Status::Ok, &mut rec);
        rec[16..].copy_from_slice(&(-2.5f64).to_le_bytes());
        assert_eq!(check_answer(&rec, 4, 1).unwrap(), vec![-2.5]);
        assert!(check_answer(&rec, 4, 2).unwrap_err().contains("1 values came back for 2"));
        emit_response_header(&h, Status::WrongVectorLength, &mut rec);
        let e = check_answer(&rec[..16], 4, 1).unwrap_err();
        assert!(e.contains("error 3 (vector length differs"), "{e}");
    }
}
