//! `linerate ping`: ICMP echo from a linerate host, to the Linux stack through a TAP device in
//! a namespace of its own (`--via tap`, needs root) or to a second linerate host on an
//! in-process link (`--via mem`), on real time.

use crate::duration::parse_duration;
use crate::output::{Cell, Table};
use crate::runloop::now;
use link::{mem, Link, LinkConfig};
use net::{Config, PingReply, Stack};
use std::net::{IpAddr, Ipv6Addr};
use std::process::ExitCode;
use std::time::Duration;

/// Options of `linerate ping`.
#[derive(clap::Args)]
pub struct PingArgs {
    /// Where the peer is: `tap` (the Linux kernel through a TAP device) or `mem` (a linerate host).
    #[arg(long, default_value = "tap", value_parser = ["tap", "mem"])]
    via: String,
    /// Number of echo requests.
    #[arg(short = 'c', long, default_value_t = 10)]
    count: u16,
    /// Time between requests (a duration: 10ms, 1s; a bare number is seconds, as for Linux ping).
    #[arg(value_name = "DURATION", short = 'i', long, default_value = "10ms", value_parser = parse_duration)]
    interval: Duration,
    /// ICMP payload bytes (at least 8).
    #[arg(short = 's', long, default_value_t = 56)]
    size: usize,
    /// How long to wait for the last reply (a duration; a bare number is seconds).
    #[arg(value_name = "DURATION", short = 'W', long, default_value = "1s", value_parser = parse_duration)]
    timeout: Duration,
    /// Ping over IPv6 (the host fd77::2/64, the peer fd77::1/64; no duplicate address
    /// detection: the link is the command's alone).
    #[arg(short = '6', long = "ipv6")]
    ipv6: bool,
    /// Print JSON: one row per reply (rtt in seconds), the summary apart.
    #[arg(long)]
    json: bool,
}

/// Run `linerate ping`.
pub fn run(a: PingArgs) -> Result<ExitCode, String> {
    let ours = host_config("10.77.0.2/24", "fd77::2/64", a.ipv6)?;
    let replies = if a.via == "tap" {
        let mut setup = testbed::TapSetup::create("lr-ping", "10.77.0.1/24", ours, None).map_err(|e| e.to_string())?;
        let target = if a.ipv6 {
            let dev = testbed::tap::TAP_IFNAME;
            setup.ns.ip(&["-6", "addr", "add", "fd77::1/64", "dev", dev, "nodad"]).map_err(|e| e.to_string())?;
            IpAddr::V6(LINUX6)
        } else {
            IpAddr::V4(setup.linux_ip)
        };
        ping_loop::<_, Box<dyn Link>>(&mut setup.stack, None, target, &a)?
    } else {
        let (la, lb) = mem::pair(LinkConfig::default());
        let mut me = Stack::new(ours, la).map_err(|e| e.to_string())?;
        let peer_cfg = host_config("10.77.0.1/24", "fd77::1/64", a.ipv6)?;
        let mut peer = Stack::new(peer_cfg, lb).map_err(|e| e.to_string())?;
        let target = if a.ipv6 { IpAddr::V6(LINUX6) } else { IpAddr::V4(peer.ip()) };
        ping_loop(&mut me, Some(&mut peer), target, &a)?
    };
    let mut t = Table::new(&format!("ping via {}", a.via), &["seq", "from", "bytes", "ttl", "rtt"]);
    for r in &replies {
        t.row(vec![
            Cell::count(r.seq),
            Cell::Text(r.from.to_string()),
            Cell::bytes(r.len as u64),
            Cell::count(r.ttl),
            Cell::secs(r.rtt.as_secs_f64()),
        ]);
    }
    let mut rtts: Vec<f64> = replies.iter().map(|r| r.rtt.as_secs_f64()).collect();
    rtts.sort_by(f64::total_cmp);
    t.summary("transmitted", Cell::count(a.count));
    t.summary("replies", Cell::count(replies.len() as f64));
    if !rtts.is_empty() {
        let avg = rtts.iter().sum::<f64>() / rtts.len() as f64;
        t.summary("rtt min", Cell::secs(rtts[0]));
        t.summary("rtt median", Cell::secs(rtts[rtts.len() / 2]));
        t.summary("rtt avg", Cell::secs(avg));
        t.summary("rtt max", Cell::secs(rtts[rtts.len() - 1]));
    }
    t.print(a.json);
    Ok(if replies.len() == a.count as usize { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The peer's IPv6 address with `-6`.
const LINUX6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 1);

/// A host at `v4`, and with `ipv6` also at `v6` (no duplicate address detection).
fn host_config(v4: &str, v6: &str, ipv6: bool) -> Result<Config, String> {
    let mut c = Config::host(v4);
    if ipv6 {
        c = c.ipv6_addr(v6).map_err(|e| e.to_string())?;
        c.ipv6.ndp.dad_transmits = 0;
    }
    Ok(c)
}

fn ping_loop<A: Link, B: Link>(
    me: &mut Stack<A>,
    mut peer: Option<&mut Stack<B>>,
    target: IpAddr,
    a: &PingArgs,
) -> Result<Vec<PingReply>, String> {
    let start = now();
    let interval = a.interval;
    let end_limit = start + interval * a.count as u32 + a.timeout;
    let mut sent = 0u16;
    let mut replies = Vec::new();
    let mut next_send = start;
    loop {
        let t = now();
        me.poll(t).map_err(|e| e.to_string())?;
        if sent < a.count && t >= next_send {
            me.ping(target, sent, a.size).map_err(|e| e.to_string())?;
            me.flush().map_err(|e| e.to_string())?;
            sent += 1;
            next_send = t + interval;
        }
        if let Some(p) = peer.as_deref_mut() {
            p.poll(t).map_err(|e| e.to_string())?;
        }
        while let Some(r) = me.ping_reply() {
            replies.push(r);
        }
        if replies.len() >= a.count as usize || t >= end_limit {
            break;
        }
        std::hint::spin_loop();
    }
    Ok(replies)
}
