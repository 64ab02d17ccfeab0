//! `linerate ping`: ICMP echo from a linerate host, to the Linux stack through a TAP device in
//! a namespace of its own (`--via tap`, needs root) or to a second linerate host on an
//! in-process link (`--via mem`), on real time.

use crate::output::{fmt_us, Table};
use crate::runloop::now;
use link::{mem, Link, LinkConfig};
use net::{Config, PingReply, Stack};
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
    /// Milliseconds between requests.
    #[arg(short = 'i', long, default_value_t = 10)]
    interval_ms: u64,
    /// ICMP payload bytes (at least 8).
    #[arg(short = 's', long, default_value_t = 56)]
    size: usize,
    /// Milliseconds to wait for the last reply.
    #[arg(long, default_value_t = 1000)]
    timeout_ms: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Run `linerate ping`.
pub fn run(a: PingArgs) -> Result<ExitCode, String> {
    let ours = Config::host("10.77.0.2/24");
    let replies = if a.via == "tap" {
        let mut setup = testbed::TapSetup::create("lr-ping", "10.77.0.1/24", ours, None).map_err(|e| e.to_string())?;
        let target = setup.linux_ip;
        ping_loop::<_, Box<dyn Link>>(&mut setup.stack, None, target, &a)?
    } else {
        let (la, lb) = mem::pair(LinkConfig::default());
        let mut me = Stack::new(ours, la).map_err(|e| e.to_string())?;
        let mut peer = Stack::new(Config::host("10.77.0.1/24"), lb).map_err(|e| e.to_string())?;
        let target = peer.ip();
        ping_loop(&mut me, Some(&mut peer), target, &a)?
    };
    let mut t = Table::new(&format!("ping via {}", a.via), &["seq", "from", "bytes", "ttl", "rtt"]);
    for r in &replies {
        t.row(vec![
            r.seq.to_string(),
            r.from.to_string(),
            r.len.to_string(),
            r.ttl.to_string(),
            fmt_us(r.rtt.as_nanos() as f64),
        ]);
    }
    let mut rtts: Vec<u128> = replies.iter().map(|r| r.rtt.as_nanos()).collect();
    rtts.sort_unstable();
    let summary = if rtts.is_empty() {
        "no reply".to_string()
    } else {
        let avg = rtts.iter().sum::<u128>() as f64 / rtts.len() as f64;
        format!(
            "min {} / median {} / avg {} / max {}",
            fmt_us(rtts[0] as f64),
            fmt_us(rtts[rtts.len() / 2] as f64),
            fmt_us(avg),
            fmt_us(*rtts.last().unwrap_or(&0) as f64)
        )
    };
    t.row(vec![format!("{}/{} replies", replies.len(), a.count), String::new(), String::new(), String::new(), summary]);
    t.print(a.json);
    Ok(if replies.len() == a.count as usize { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn ping_loop<A: Link, B: Link>(
    me: &mut Stack<A>,
    mut peer: Option<&mut Stack<B>>,
    target: std::net::Ipv4Addr,
    a: &PingArgs,
) -> Result<Vec<PingReply>, String> {
    let start = now();
    let interval = Duration::from_millis(a.interval_ms);
    let end_limit = start + interval * a.count as u32 + Duration::from_millis(a.timeout_ms);
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
