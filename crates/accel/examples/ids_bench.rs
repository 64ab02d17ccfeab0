//! IDS prefilter and prefix-matcher benchmark.
//!
//! `cargo run --release -p accel --example ids_bench [-- --mb 100 --rules PATH --prefixes PATH]`
//! (`--features hyperscan` adds the Hyperscan peer; without it only our figures print).
//!
//! `--cost N` runs only the full engine over the first N packets of the trace, inside
//! `engine_pass`, then the prefilter alone inside `prefilter_pass`, and exits: the callgrind
//! harness. Instructions per packet = `valgrind --tool=callgrind
//! --toggle-collect='*engine_pass*' ... --cost N` (or `'*prefilter_pass*'`) divided by N.
//!
//! Traffic: synthetic packets of 64..1460 bytes, half HTTP-like requests/responses, half
//! random bytes, with 1% carrying a synthesized attack for a random rule. Every figure is
//! measured in this run on this machine, and compared as a ratio.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use accel::ids::mpm::MpmScratch;
use accel::ids::synth::payload_for_rule;
use accel::ids::{fast_patterns, PacketMeta, Proto, RuleSet, Scratch, Vars};
use accel::prefix::PrefixSet;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const WORDS: &[&str] = &[
    "index", "images", "api", "v1", "login", "user", "search", "static", "js", "css", "account", "cart", "news",
    "video", "home", "about", "products", "id", "page", "lang", "en", "query", "session", "token", "data",
];

fn http_packet(r: &mut Rng, size: usize) -> Vec<u8> {
    let mut p = Vec::with_capacity(size + 64);
    if r.below(3) == 0 {
        p.extend_from_slice(b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/html; charset=utf-8\r\nConnection: keep-alive\r\n\r\n<html><body>");
    } else {
        p.extend_from_slice(if r.below(4) == 0 { b"POST /" } else { b"GET /" });
        for _ in 0..1 + r.below(4) {
            p.extend_from_slice(WORDS[r.below(WORDS.len() as u64) as usize].as_bytes());
            p.push(b'/');
        }
        p.extend_from_slice(
            format!("?id={}&q={} HTTP/1.1\r\n", r.below(100000), WORDS[r.below(25) as usize]).as_bytes(),
        );
        p.extend_from_slice(b"Host: www.example.com\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/120.0\r\nAccept: text/html,application/xhtml+xml\r\nAccept-Language: en-US,en;q=0.5\r\nCookie: sid=");
        p.extend_from_slice(format!("{:x}\r\n\r\n", r.next()).as_bytes());
    }
    while p.len() < size {
        p.extend_from_slice(WORDS[r.below(WORDS.len() as u64) as usize].as_bytes());
        p.push(if r.below(8) == 0 { b'\n' } else { b' ' });
    }
    p.truncate(size);
    p
}

fn traffic(total: usize, attacks: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = Vec::new();
    let mut n = 0usize;
    while n < total {
        let size = 64 + r.below(1460 - 64 + 1) as usize;
        let p = match r.below(100) {
            0 if !attacks.is_empty() => attacks[r.below(attacks.len() as u64) as usize].clone(),
            1..=50 => http_packet(&mut r, size),
            _ => (0..size).map(|_| r.next() as u8).collect(),
        };
        n += p.len();
        out.push(p);
    }
    out
}

fn gbps(bytes: usize, d: Duration) -> f64 {
    bytes as f64 * 8.0 / d.as_secs_f64() / 1e9
}

/// The meta every benchmark packet carries: TCP, client to server port 80, established.
const META: PacketMeta = PacketMeta {
    proto: Proto::Tcp,
    src: Ipv4Addr::new(192, 0, 2, 1),
    dst: Ipv4Addr::new(10, 0, 0, 1),
    src_port: 40000,
    dst_port: 80,
    to_server: Some(true),
    established: true,
};

/// The whole engine over `pkts`; returns the number of alerts (not inlined: callgrind's toggle).
#[inline(never)]
fn engine_pass(set: &RuleSet, pkts: &[Vec<u8>], scratch: &mut Scratch) -> u64 {
    let mut out = Vec::new();
    let mut n = 0u64;
    for p in pkts {
        out.clear();
        set.match_payload(&META, p, scratch, &mut out);
        n += out.len() as u64;
    }
    n
}

/// The prefilter alone over `pkts`; returns the distinct pattern hits (not inlined: callgrind's toggle).
#[inline(never)]
fn prefilter_pass(set: &RuleSet, pkts: &[Vec<u8>], ms: &mut MpmScratch) -> u64 {
    let pre = set.prefilter();
    let mut hits = 0u64;
    for p in pkts {
        pre.scan(p, ms, |_| hits += 1);
    }
    hits
}

/// Best of `reps` timings of `f`.
fn best(reps: usize, mut f: impl FnMut() -> u64) -> (Duration, u64) {
    let mut bestd = Duration::MAX;
    let mut v = 0;
    for _ in 0..reps {
        let t = Instant::now();
        v = f();
        bestd = bestd.min(t.elapsed());
    }
    (bestd, v)
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data");
    let rules = arg(&args, "--rules").map(PathBuf::from).unwrap_or_else(|| root.join("ids/snort3-community.rules"));
    let prefixes =
        arg(&args, "--prefixes").map(PathBuf::from).unwrap_or_else(|| root.join("firewall/drop-prefixes.txt"));
    let mb: usize = arg(&args, "--mb").and_then(|s| s.parse().ok()).unwrap_or(100);
    let reps: usize = arg(&args, "--reps").and_then(|s| s.parse().ok()).unwrap_or(3);

    let t = Instant::now();
    let (mut set, report) = match RuleSet::load(&rules, &Vars::default()) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("cannot load rules: {e}");
            std::process::exit(1);
        }
    };
    let load_time = t.elapsed();
    println!(
        "rules: {} loaded ({} fully supported) in {:.0} ms; {} distinct fast patterns",
        set.len(),
        report.fully_supported,
        load_time.as_secs_f64() * 1e3,
        report.distinct_fast_patterns
    );

    let attacks: Vec<Vec<u8>> = set.rules().filter_map(payload_for_rule).collect();
    let pkts = traffic(mb << 20, &attacks);
    let bytes: usize = pkts.iter().map(Vec::len).sum();
    println!(
        "traffic: {} packets, {:.1} MB (50% HTTP-like, 49% random, 1% planted attacks)\n",
        pkts.len(),
        bytes as f64 / 1e6
    );

    if let Some(n) = arg(&args, "--cost").and_then(|s| s.parse::<usize>().ok()) {
        let n = n.min(pkts.len());
        let mut scratch = Scratch::new();
        let alerts = engine_pass(&set, &pkts[..n], &mut scratch);
        let hits = prefilter_pass(&set, &pkts[..n], &mut MpmScratch::default());
        println!("cost run: {n} packets, {alerts} alerts, {hits} distinct pattern hits");
        return;
    }

    // Ours: the prefilter stage alone, producing the set of pattern ids per packet.
    let pre = set.prefilter();
    let mut ms = MpmScratch::default();
    let (d_ours, hits_ours) = best(reps, || prefilter_pass(&set, &pkts, &mut ms));
    println!(
        "{:<44} {:>8.2} Gbit/s  ({} distinct pattern hits)",
        "our prefilter (fast patterns)",
        gbps(bytes, d_ours),
        hits_ours
    );

    // Reference point: the aho-corasick crate's DFA on the same (case-folded) patterns.
    if let Ok(ac) = aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .build(pre.patterns())
    {
        let mut seen = vec![0u32; pre.pattern_count()];
        let mut epoch = 0u32;
        let (d_ac, hits_ac) = best(reps, || {
            let mut hits = 0u64;
            for p in &pkts {
                epoch += 1;
                for m in ac.find_overlapping_iter(p) {
                    let s = &mut seen[m.pattern().as_usize()];
                    if *s != epoch {
                        *s = epoch;
                        hits += 1;
                    }
                }
            }
            hits
        });
        println!(
            "{:<44} {:>8.2} Gbit/s  ({} distinct pattern hits)",
            "aho-corasick DFA, overlapping (reference)",
            gbps(bytes, d_ac),
            hits_ac
        );
    }

    // Ours: the whole engine (prefilter + port groups + full verification).
    let mut scratch = Scratch::new();
    let (d_full, alerts) = best(reps, || engine_pass(&set, &pkts, &mut scratch));
    println!(
        "{:<44} {:>8.2} Gbit/s  ({} alerts, to port 80)",
        "our full engine (match_payload)",
        gbps(bytes, d_full),
        alerts
    );

    hyperscan_peer(&mut set, &pkts, bytes, reps);

    // Prefix matcher.
    println!();
    match PrefixSet::load(&prefixes) {
        Ok(ps) => prefix_bench(&ps),
        Err(e) => println!("prefix benchmark skipped: {e}"),
    }
}

#[cfg(feature = "hyperscan")]
fn hyperscan_peer(set: &mut RuleSet, pkts: &[Vec<u8>], bytes: usize, reps: usize) {
    use accel::hs::HsLiterals;
    let mut uniq: Vec<(Vec<u8>, bool)> = fast_patterns(set).into_iter().map(|(_, p, nc)| (p, nc)).collect();
    uniq.sort();
    uniq.dedup();
    let mut hs = match HsLiterals::compile(&uniq, true) {
        Ok(h) => h,
        Err(e) => {
            println!("hyperscan: {e}");
            return;
        }
    };
    let mut seen = vec![0u32; uniq.len()];
    let mut epoch = 0u32;
    // Alternate Hyperscan, our prefilter and our whole engine with and without the filters
    // before verification, so that load from other processes hits all alike; medians.
    let mut ms = MpmScratch::default();
    let mut scratch = Scratch::new();
    let mut times: [Vec<Duration>; 4] = Default::default();
    let mut hits_hs = 0;
    for _ in 0..reps {
        let (d, h) = best(1, || {
            let mut hits = 0u64;
            for p in pkts {
                epoch += 1;
                let _ = hs.scan(p, &mut |id| {
                    let s = &mut seen[id as usize];
                    if *s != epoch {
                        *s = epoch;
                        hits += 1;
                    }
                });
            }
            hits
        });
        times[0].push(d);
        hits_hs = h;
        times[1].push(best(1, || prefilter_pass(set, pkts, &mut ms)).0);
        for (slot, on) in [(2, true), (3, false)] {
            set.set_filters(on);
            times[slot].push(best(1, || engine_pass(set, pkts, &mut scratch)).0);
        }
    }
    set.set_filters(true);
    let [d_hs, d_pre, d_on, d_off] = times.map(|mut v| {
        v.sort();
        v[v.len() / 2]
    });
    println!(
        "{:<44} {:>8.2} Gbit/s  ({} distinct pattern hits, {} patterns, SINGLEMATCH)",
        "hyperscan 5.4 (same patterns, same traffic)",
        gbps(bytes, d_hs),
        hits_hs,
        uniq.len()
    );
    for (name, d) in [
        ("our prefilter (fast patterns)", d_pre),
        ("our full engine (match_payload)", d_on),
        ("our full engine, filters off", d_off),
    ] {
        println!("{name:<44} {:>8.2} Gbit/s  (median of {reps}, alternated with hyperscan)", gbps(bytes, d));
    }
    let r = |a: Duration, b: Duration| b.as_secs_f64() / a.as_secs_f64();
    println!("\nratio our prefilter / hyperscan: {:.2}x", r(d_pre, d_hs));
    println!("ratio our full engine / hyperscan prefilter: {:.2}x", r(d_on, d_hs));
    println!("ratio our full engine, filters off / hyperscan prefilter: {:.2}x", r(d_off, d_hs));
    println!("ratio our full engine / our prefilter: {:.2}x", r(d_on, d_pre));
    println!("ratio filters on / off: {:.2}x", r(d_on, d_off));
    let pre = set.prefilter();

    // Same answers: every pattern Hyperscan reports is also reported by our (case-folded) prefilter.
    let folded: std::collections::HashMap<Vec<u8>, u32> =
        pre.patterns().iter().enumerate().map(|(i, p)| (p.clone(), i as u32)).collect();
    let mut missing = 0u64;
    for p in pkts {
        let mut ours = std::collections::HashSet::new();
        pre.scan(p, &mut ms, |id| {
            ours.insert(id);
        });
        let _ = hs.scan(p, &mut |id| {
            let key = uniq[id as usize].0.to_ascii_lowercase();
            if folded.get(&key).is_none_or(|f| !ours.contains(f)) {
                missing += 1;
            }
        });
    }
    println!("patterns hyperscan found that our prefilter missed: {missing}");
}

#[cfg(not(feature = "hyperscan"))]
fn hyperscan_peer(set: &mut RuleSet, _: &[Vec<u8>], _: usize, _: usize) {
    let n = fast_patterns(set).len();
    println!(
        "hyperscan peer not built ({n} fast patterns ready): run with --features hyperscan (needs libhyperscan-dev)"
    );
}

fn prefix_bench(ps: &PrefixSet) {
    let mut r = Rng(12345);
    // Half the probes inside listed prefixes, half random.
    let probes: Vec<Ipv4Addr> = (0..1_000_000)
        .map(|i| {
            if i % 2 == 0 {
                let p = ps.prefixes()[r.below(ps.len() as u64) as usize];
                Ipv4Addr::from(
                    p.first() | (r.next() as u32 & !(u32::MAX.checked_shl(32 - u32::from(p.len)).unwrap_or(0))),
                )
            } else {
                Ipv4Addr::from(r.next() as u32)
            }
        })
        .collect();
    let (d, hits) = best(3, || probes.iter().filter(|&&ip| ps.contains(ip)).count() as u64);
    let ours = probes.len() as f64 / d.as_secs_f64();
    let naive_probes = &probes[..20_000];
    let (dn, hn) = best(3, || {
        naive_probes.iter().filter(|&&ip| ps.prefixes().iter().any(|p| p.contains(u32::from(ip)))).count() as u64
    });
    let naive = naive_probes.len() as f64 / dn.as_secs_f64();
    let check = probes[..20_000].iter().filter(|&&ip| ps.contains(ip)).count() as u64;
    println!(
        "{:<44} {:>8.1} M lookups/s ({} of {} hit)",
        format!("prefix set ({} prefixes, {} intervals)", ps.len(), ps.interval_count()),
        ours / 1e6,
        hits,
        probes.len()
    );
    println!("{:<44} {:>8.2} M lookups/s (agrees: {})", "naive linear scan", naive / 1e6, hn == check);
    println!("ratio prefix set / linear scan: {:.0}x", ours / naive);
}
