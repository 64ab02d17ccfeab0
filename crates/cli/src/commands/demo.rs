//! `linerate demo`: the tour. Every capability that exists so far, exercised on an in-process
//! testbed (virtual time) or the middlebox runtime, with a table of what was measured.

mod compute;
mod middlebox;
mod rdma;

use crate::output::{Cell, Table, Unit};
use apps::UdpEcho;
use link::impair::Impairment;
use net::{Config, Counter};
use sha2::{Digest, Sha256};
use std::net::SocketAddrV4;
use std::process::ExitCode;
use std::time::{Duration, Instant as WallClock};
use testbed::{HostId, HostOptions, Testbed, TestbedConfig};

/// Options of `linerate demo`.
#[derive(clap::Args)]
pub struct DemoArgs {
    /// Print the table as JSON.
    #[arg(long)]
    json: bool,
    /// Where to write the demo's packet capture.
    #[arg(long, default_value = "/tmp/linerate-demo.pcap")]
    pcap: std::path::PathBuf,
}

/// A row's outcome: (result, measured), or why the step failed.
/// What a demo step found: the check's result in words, and the figure it measured (a number
/// in its unit, or none) with what that figure is of.
pub(crate) struct Outcome {
    result: String,
    figure: Cell,
    of: String,
}

impl Outcome {
    /// A result with a measured figure `value` in `unit`, `of` saying what it measures.
    pub(crate) fn measured(result: impl Into<String>, value: f64, unit: Unit, of: impl Into<String>) -> Outcome {
        Outcome { result: result.into(), figure: Cell::Num(value, unit), of: of.into() }
    }

    /// A result with no figure (`of` may still say where to look).
    pub(crate) fn checked(result: impl Into<String>, of: impl Into<String>) -> Outcome {
        Outcome { result: result.into(), figure: Cell::Missing(String::new()), of: of.into() }
    }
}

/// One step of the tour.
pub(crate) type Step = Result<Outcome, String>;

/// A step of the tour.
type StepFn = Box<dyn Fn(&DemoArgs) -> Step>;

/// Run the tour.
pub fn run(a: DemoArgs) -> Result<ExitCode, String> {
    let mut t = Table::new(
        "linerate demo: in-process testbed (virtual time) and middlebox runtime",
        &["capability", "result", "measured", "of"],
    );
    let steps: Vec<(&str, StepFn)> = vec![
        ("ARP: gratuitous announce, request/reply, cache", Box::new(|_| arp_step())),
        ("ICMP echo: 1000 pings between two hosts", Box::new(|_| ping_step())),
        ("UDP echo: 10 MB in 1400-byte datagrams", Box::new(|_| udp_echo_step())),
        ("UDP over an impaired link (2% loss, 1% dup, 1% reorder)", Box::new(|_| impaired_step())),
        ("ICMP port unreachable for a closed UDP port", Box::new(|_| unreachable_step())),
        ("Raw Ethernet (EtherType 0x88b5): 10,000 frames", Box::new(|_| raw_step())),
        ("Robustness: 200,000 mutated frames into a host", Box::new(|_| robustness_step())),
        ("TCP: 20 MB over a link with 1% loss, 1% reorder, 0.5% dup", Box::new(|_| tcp_transfer_step())),
        ("TCP: 10,000 concurrent connections, data on each", Box::new(|_| tcp_many_step())),
        ("RDMA writes over an impaired link (2% loss, 1% dup, 5% reorder)", Box::new(|_| rdma::demo_impaired_step())),
        ("RDMA: 64 senders into one receiver", Box::new(|_| rdma::demo_many_step())),
        ("Middlebox: forwarding 400,000 64-byte frames", Box::new(|_| middlebox::forward_step())),
        ("Firewall: the data/ blacklist on 20,000 frames", Box::new(|_| middlebox::firewall_step())),
        ("IDS: the data/ community rules on generated traffic", Box::new(|_| middlebox::ids_step())),
        ("SPN: compile a generated model, evaluate, serve over UDP", Box::new(|_| compute::spn_step())),
        ("Collectives: all-reduce over 8 ranks", Box::new(|_| compute::allreduce_step())),
        ("K-Means: 4 ranks against a single-process run", Box::new(|_| compute::kmeans_step())),
        ("pcap capture of a host's traffic", Box::new(|a: &DemoArgs| pcap_step(&a.pcap))),
    ];
    let mut failed = 0;
    let mut narrow = Vec::new();
    for (name, step) in steps {
        if !a.json {
            eprintln!("demo: {name} ...");
        }
        match step(&a) {
            Ok(o) => {
                narrow.push((name, o.figure.render(), o.result.clone(), o.of.clone()));
                t.row(vec![Cell::from(name), Cell::Text(o.result), o.figure, Cell::Text(o.of)]);
            }
            Err(e) => {
                failed += 1;
                narrow.push((name, "FAILED".into(), e.clone(), String::new()));
                t.row(vec![
                    Cell::from(name),
                    Cell::Text(format!("FAILED: {e}")),
                    Cell::Missing(String::new()),
                    Cell::Text(String::new()),
                ]);
            }
        }
    }
    if a.json {
        t.print(true);
    } else {
        bench::out!("{}", narrow_text(t.title(), &narrow));
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Width of the demo's text (full rows are in `--json`).
const WIDTH: usize = 100;

/// The tour as narrow text: per step its name and figure on one line, then what it checked
/// and what the figure is, indented and wrapped within [`WIDTH`] columns.
fn narrow_text(title: &str, rows: &[(&str, String, String, String)]) -> String {
    let mut out = format!("{title}\n\n");
    for (name, figure, result, of) in rows {
        let pad = WIDTH.saturating_sub(name.chars().count() + figure.chars().count()).max(2);
        out += &format!("{name}{}{figure}\n", " ".repeat(pad));
        for text in [result.as_str(), of.as_str()].into_iter().filter(|s| !s.is_empty()) {
            let mut line = String::from("   ");
            for word in text.split_whitespace() {
                if line.chars().count() + 1 + word.chars().count() > WIDTH && !line.trim().is_empty() {
                    out += &format!("{line}\n");
                    line = String::from("   ");
                }
                line += " ";
                line += word;
            }
            out += &format!("{line}\n");
        }
    }
    out
}

fn testbed_with(n: usize) -> Result<(Testbed, Vec<HostId>), String> {
    let mut tb = Testbed::new(TestbedConfig::default());
    let ids =
        (1..=n).map(|i| tb.add_host(&format!("10.0.0.{i}/24")).map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
    Ok((tb, ids))
}

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

fn arp_step() -> Step {
    let (mut tb, h) = testbed_with(3)?;
    tb.run_for(Duration::from_millis(1)).map_err(err)?;
    let announced = (0..3).map(|i| tb.host_ref(h[i]).counters().get(Counter::arp_requests_sent)).sum::<u64>();
    let p = tb.host(h[0]).udp_bind(0).map_err(err)?;
    for i in 1..3 {
        let dst = SocketAddrV4::new(tb.host_ref(h[i]).ip(), 9);
        tb.host(h[0]).udp_send_to(p, dst, b"x").map_err(err)?;
    }
    let start = tb.now();
    let ok = tb.run_until(Duration::from_millis(10), |tb| tb.host_ref(h[0]).arp_entries().len() == 2).map_err(err)?;
    if !ok {
        return Err("addresses were not resolved".into());
    }
    Ok(Outcome::measured(
        format!("{announced} gratuitous ARPs; host 1 resolved 2 neighbours"),
        (tb.now() - start).as_secs_f64(),
        Unit::Seconds,
        "resolution, virtual time",
    ))
}

fn ping_step() -> Step {
    let (mut tb, h) = testbed_with(2)?;
    let dst = tb.host_ref(h[1]).ip();
    let wall = WallClock::now();
    let mut got = 0;
    for seq in 0..1000u16 {
        tb.host(h[0]).ping(dst, seq, 56).map_err(err)?;
        if tb.run_until(Duration::from_millis(50), |tb| tb.host(h[0]).ping_reply().is_some()).map_err(err)? {
            got += 1;
        }
    }
    let per = wall.elapsed().as_nanos() as f64 / 1000.0;
    if got != 1000 {
        return Err(format!("{got}/1000 replies"));
    }
    Ok(Outcome::measured("1000/1000 replies", per / 1e9, Unit::Seconds, "wall clock per simulated round trip"))
}

fn udp_echo_step() -> Step {
    let (mut tb, h) = testbed_with(2)?;
    let mut echo = UdpEcho::bind(tb.host(h[1]), 7).map_err(err)?;
    let dst = SocketAddrV4::new(tb.host_ref(h[1]).ip(), 7);
    let data: Vec<u8> = (0..10_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let (sent_hash, got_hash, wall) = echo_through(&mut tb, h[0], h[1], &mut echo, dst, &data)?;
    if sent_hash != got_hash {
        return Err("sha256 of the echoed data differs".into());
    }
    let rate = data.len() as f64 * 8.0 / wall.as_secs_f64();
    Ok(Outcome::measured(
        "sha256 of the 10 MB echoed back matches",
        rate,
        Unit::BitsPerSec,
        "wall clock, through two stacks and a switch",
    ))
}

/// Send `data` through the echo service in order, at most 256 datagrams in flight, and hash
/// what returns (datagrams are numbered so order is checked).
fn echo_through(
    tb: &mut Testbed,
    client: HostId,
    server: HostId,
    echo: &mut UdpEcho,
    dst: SocketAddrV4,
    data: &[u8],
) -> Result<(Vec<u8>, Vec<u8>, Duration), String> {
    let sock = tb.host(client).udp_bind(0).map_err(err)?;
    let chunks: Vec<&[u8]> = data.chunks(1400).collect();
    let (mut next, mut received) = (0usize, 0usize);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 2048];
    let wall = WallClock::now();
    let limit = tb.now() + Duration::from_secs(60);
    while received < chunks.len() {
        if tb.now() >= limit {
            return Err(format!("only {received}/{} datagrams came back", chunks.len()));
        }
        while next < chunks.len() && next - received < 256 {
            if !tb.host(client).udp_send_to(sock, dst, chunks[next]).map_err(err)? {
                break;
            }
            next += 1;
        }
        tb.step().map_err(err)?;
        echo.serve(tb.host(server)).map_err(err)?;
        while let Some((n, _)) = tb.host(client).udp_recv_from(sock, &mut buf).map_err(err)? {
            if buf[..n] != *chunks[received] {
                return Err(format!("datagram {received} came back changed or out of order"));
            }
            hasher.update(&buf[..n]);
            received += 1;
        }
    }
    Ok((Sha256::digest(data).to_vec(), hasher.finalize().to_vec(), wall.elapsed()))
}

fn impaired_step() -> Step {
    let mut tb = Testbed::new(TestbedConfig::default());
    let imp = Impairment {
        loss: 0.02,
        duplicate: 0.01,
        reorder: 0.01,
        delay: Duration::from_micros(50),
        seed: 7,
        ..Default::default()
    };
    let a = tb
        .add_host_with(Config::host("10.0.0.1/24"), HostOptions { impairment: Some(imp), ..Default::default() })
        .map_err(err)?;
    let b = tb.add_host("10.0.0.2/24").map_err(err)?;
    let rx = tb.host(b).udp_bind(9).map_err(err)?;
    let tx = tb.host(a).udp_bind(0).map_err(err)?;
    let dst = SocketAddrV4::new(tb.host_ref(b).ip(), 9);
    tb.run_for(Duration::from_millis(2)).map_err(err)?;
    let (mut seen, mut dups, mut reordered, mut last) = (vec![false; 10_000], 0, 0, 0u32);
    let mut buf = [0u8; 64];
    for i in 0..10_000u32 {
        tb.host(a).udp_send_to(tx, dst, &i.to_be_bytes()).map_err(err)?;
        tb.run_for(Duration::from_micros(20)).map_err(err)?;
        drain(&mut tb, b, rx, &mut buf, &mut seen, &mut dups, &mut reordered, &mut last)?;
    }
    tb.run_for(Duration::from_millis(5)).map_err(err)?;
    drain(&mut tb, b, rx, &mut buf, &mut seen, &mut dups, &mut reordered, &mut last)?;
    let delivered = seen.iter().filter(|s| **s).count();
    Ok(Outcome::measured(
        format!("{delivered}/10000 delivered, {dups} duplicates, {reordered} out of order"),
        1.0 - delivered as f64 / 10_000.0,
        Unit::Percent,
        "loss seen (2% configured, seeded)",
    ))
}

#[allow(clippy::too_many_arguments)]
fn drain(
    tb: &mut Testbed,
    b: HostId,
    rx: net::UdpHandle,
    buf: &mut [u8],
    seen: &mut [bool],
    dups: &mut u32,
    reordered: &mut u32,
    last: &mut u32,
) -> Result<(), String> {
    while let Some((n, _)) = tb.host(b).udp_recv_from(rx, buf).map_err(err)? {
        if n != 4 {
            return Err("unexpected datagram".into());
        }
        let i = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        if seen[i as usize] {
            *dups += 1;
        }
        seen[i as usize] = true;
        if i < *last {
            *reordered += 1;
        }
        *last = (*last).max(i);
    }
    Ok(())
}

fn unreachable_step() -> Step {
    let (mut tb, h) = testbed_with(2)?;
    let s = tb.host(h[0]).udp_bind(0).map_err(err)?;
    let dst = SocketAddrV4::new(tb.host_ref(h[1]).ip(), 4444);
    tb.host(h[0]).udp_send_to(s, dst, b"anyone?").map_err(err)?;
    let ok = tb
        .run_until(Duration::from_millis(10), |tb| tb.host_ref(h[0]).udp_icmp_errors(s).unwrap_or(0) == 1)
        .map_err(err)?;
    if !ok {
        return Err("no ICMP port unreachable came back".into());
    }
    Ok(Outcome::measured(
        "the sender's socket saw 1 ICMP port unreachable",
        1.0,
        Unit::Count,
        "rx_drop_udp_no_socket on the receiver",
    ))
}

fn raw_step() -> Step {
    let (mut tb, h) = testbed_with(2)?;
    let ra = tb.host(h[0]).raw_bind(0x88b5).map_err(err)?;
    let rb = tb.host(h[1]).raw_bind(0x88b5).map_err(err)?;
    let dst = tb.host_ref(h[1]).mac();
    let mut buf = [0u8; 1600];
    let mut got = 0u32;
    for i in 0..10_000u32 {
        let mut payload = [0u8; 64];
        payload[..4].copy_from_slice(&i.to_be_bytes());
        tb.host(h[0]).raw_send(ra, dst, &payload).map_err(err)?;
        if i % 32 == 31 {
            tb.run_for(Duration::from_micros(30)).map_err(err)?;
        }
        while let Some((n, _)) = tb.host(h[1]).raw_recv(rb, &mut buf).map_err(err)? {
            if n != 64 || buf[..4] != got.to_be_bytes() {
                return Err(format!("frame {got} changed or out of order"));
            }
            got += 1;
        }
    }
    tb.run_for(Duration::from_millis(1)).map_err(err)?;
    while tb.host(h[1]).raw_recv(rb, &mut buf).map_err(err)?.is_some() {
        got += 1;
    }
    if got != 10_000 {
        return Err(format!("{got}/10000 frames arrived"));
    }
    Ok(Outcome::checked("10000/10000 frames in order", ""))
}

fn robustness_step() -> Step {
    let mut tb = Testbed::new(TestbedConfig::default());
    let victim = tb.add_bench_host(Config::host("10.0.0.2/24")).map_err(err)?;
    let seeds = testbed::mutate::seed_frames();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut frame = Vec::with_capacity(2048);
    let wall = WallClock::now();
    for i in 0..200_000u32 {
        testbed::mutate::mutate(&seeds[i as usize % seeds.len()], &mut rng, &mut frame);
        tb.host(victim).inject(&frame).map_err(err)?;
        if i % 1024 == 0 {
            tb.bench_collect(victim).map_err(err)?;
            tb.step().map_err(err)?;
        }
    }
    let rate = 200_000.0 / wall.elapsed().as_secs_f64();
    let c = tb.host_ref(victim).counters().clone();
    c.rx_accounting().check()?;
    let mut reasons: Vec<_> = c.iter().filter(|(n, v)| n.starts_with(net::RX_DROP_PREFIX) && *v > 0).collect();
    reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
    Ok(Outcome::measured(
        format!(
            "every frame accounted for; {} drop reasons seen, top: {}",
            reasons.len(),
            reasons.first().map(|r| r.0).unwrap_or("-")
        ),
        rate,
        Unit::FramesPerSec,
        "through the receive path on one core",
    ))
}

fn pcap_step(path: &std::path::Path) -> Step {
    let mut tb = Testbed::new(TestbedConfig::default());
    let a = tb
        .add_host_with(
            Config::host("10.0.0.1/24"),
            HostOptions { pcap: Some(path.to_path_buf()), ..Default::default() },
        )
        .map_err(err)?;
    let b = tb.add_host("10.0.0.2/24").map_err(err)?;
    let dst = tb.host_ref(b).ip();
    for seq in 0..10 {
        tb.host(a).ping(dst, seq, 56).map_err(err)?;
        tb.run_for(Duration::from_micros(200)).map_err(err)?;
    }
    let s = tb.host(a).udp_bind(0).map_err(err)?;
    tb.host(a).udp_send_to(s, SocketAddrV4::new(dst, 53), b"query").map_err(err)?;
    tb.run_for(Duration::from_millis(1)).map_err(err)?;
    drop(tb);
    let frames = link::pcap::read_frames(path).map_err(err)?;
    Ok(Outcome::measured(
        format!("frames written to {}", path.display()),
        frames.len() as f64,
        Unit::Count,
        "frames captured; open the file with tshark or Wireshark",
    ))
}

fn tcp_testbed(imp: Option<Impairment>, sessions: usize) -> Result<(Testbed, HostId, HostId), String> {
    let mut tb = Testbed::new(TestbedConfig::default());
    let mut ids = vec![];
    for (i, ip) in ["10.0.0.1/24", "10.0.0.2/24"].iter().enumerate() {
        let mut cfg = Config::host(ip);
        cfg.tcp.max_sessions = sessions;
        cfg.ephemeral_first = 1024;
        if sessions > 1000 {
            cfg.tcp.tx_buffer = 4096;
            cfg.tcp.rx_buffer = 4096;
        }
        let opts = HostOptions { impairment: if i == 0 { imp } else { None }, ..Default::default() };
        ids.push(tb.add_host_with(cfg, opts).map_err(err)?);
    }
    Ok((tb, ids[0], ids[1]))
}

fn tcp_transfer_step() -> Step {
    let imp = Impairment {
        loss: 0.01,
        reorder: 0.01,
        duplicate: 0.005,
        delay: Duration::from_micros(100),
        seed: 11,
        ..Default::default()
    };
    let (mut tb, a, b) = tcp_testbed(Some(imp), 16)?;
    let l = tb.host(b).tcp_listen(5001, 8).map_err(err)?;
    let dst = SocketAddrV4::new(tb.host_ref(b).ip(), 5001);
    let c = tb.host(a).tcp_connect(dst).map_err(err)?;
    let mut server = None;
    tb.run_until(Duration::from_secs(5), |tb| {
        server = server.or_else(|| tb.host(b).tcp_accept(l));
        server.is_some()
    })
    .map_err(err)?;
    let s = server.ok_or("the connection was not accepted")?;
    let data: Vec<u8> = (0..20_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 9) as u8).collect();
    let wall = WallClock::now();
    tb.host(a).tcp_send_transfer(c, data.clone()).map_err(err)?;
    let mut hasher = Sha256::new();
    let mut got = 0usize;
    let mut buf = vec![0u8; 65536];
    let done = tb
        .run_until(Duration::from_secs(120), |tb| {
            while let Ok(net::Recv::Data(n)) = tb.host(b).tcp_recv(s, &mut buf) {
                hasher.update(&buf[..n]);
                got += n;
            }
            got == data.len()
        })
        .map_err(err)?;
    if !done {
        return Err(format!("{got} of {} bytes arrived", data.len()));
    }
    let secs = wall.elapsed().as_secs_f64();
    if hasher.finalize().as_slice() != Sha256::digest(&data).as_slice() {
        return Err("sha256 differs".into());
    }
    let st = tb.host_ref(a).tcp_stats(c).map_err(err)?;
    Ok(Outcome::measured(
        format!(
            "sha256 matches; {} retransmits, {} recoveries, {} timeouts; SACK {}, timestamps {}, window scale {}",
            st.retransmits,
            st.fast_recoveries,
            st.timeouts,
            if st.sack { "on" } else { "off" },
            if st.timestamps { "on" } else { "off" },
            match st.wscale {
                Some((ours, theirs)) => format!("{ours} (ours) and {theirs} (peer's)"),
                None => "off".to_string(),
            }
        ),
        data.len() as f64 * 8.0 / secs,
        Unit::BitsPerSec,
        "goodput, wall clock",
    ))
}

fn tcp_many_step() -> Step {
    const N: usize = 10_000;
    let (mut tb, a, b) = tcp_testbed(None, N + 16)?;
    let l = tb.host(b).tcp_listen(5001, N).map_err(err)?;
    let dst = SocketAddrV4::new(tb.host_ref(b).ip(), 5001);
    let wall = WallClock::now();
    let mut clients = Vec::with_capacity(N);
    let mut servers = Vec::with_capacity(N);
    let limit = tb.now() + Duration::from_secs(30);
    while servers.len() < N && tb.now() < limit {
        while clients.len() < N && clients.len() - servers.len() < 256 {
            clients.push(tb.host(a).tcp_connect(dst).map_err(err)?);
        }
        tb.step().map_err(err)?;
        while let Some(h) = tb.host(b).tcp_accept(l) {
            servers.push(h);
        }
    }
    let setup = wall.elapsed().as_secs_f64();
    if servers.len() < N {
        return Err(format!("{} of {N} connections established", servers.len()));
    }
    for (i, &c) in clients.iter().enumerate() {
        tb.host(a).tcp_send(c, &(i as u32).to_be_bytes()).map_err(err)?;
    }
    let mut buf = [0u8; 8];
    let mut pending: Vec<usize> = (0..N).collect();
    tb.run_until(Duration::from_secs(10), |tb| {
        pending.retain(|&j| !matches!(tb.host(b).tcp_recv(servers[j], &mut buf), Ok(net::Recv::Data(4))));
        pending.is_empty()
    })
    .map_err(err)?;
    if !pending.is_empty() {
        return Err(format!("{} connections did not deliver", pending.len()));
    }
    Ok(Outcome::measured(
        format!("{N}/{N} established and delivered"),
        N as f64 / setup,
        Unit::OpsPerSec,
        "connections set up (wall clock, both stacks on one core)",
    ))
}
