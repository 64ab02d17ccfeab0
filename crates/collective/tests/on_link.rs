//! Ranks on real interfaces ([`LinkRank`]): three network namespaces, each joined by a veth
//! to a Linux bridge in a fourth, one rank per namespace on its veth end (AF_XDP, and once
//! AF_PACKET; once over IPv6), joined through rank 0's address alone. Results are checked exactly against a
//! reference computed here. Needs root; without it each test fails with `NOT RUN: reason`.
//! The namespaces (and with them the veths, the bridge and the XDP programs) are deleted
//! when the test ends, also on failure.

use collective::{CollectiveError, Config, LinkCommunicator, LinkRank, ReduceOp, Transport};
use std::time::Duration;
use testbed::{netns_unavailable, Netns};

const N: usize = 3;

fn can_run() -> bool {
    match netns_unavailable() {
        None => true,
        Some(why) => panic!("NOT RUN: {why} (run `make test` as root)"),
    }
}

/// `n` namespaces `lr-i22c-r-*`, each with veth `c<i>` whose peer `p<i>` is a port of bridge
/// `br0` in namespace `lr-i22c-br-*`. Each veth end also has a kernel address
/// `10.9.<subnet>.(101+i)`, which the XDP program must leave to the kernel.
struct Bridged {
    nss: Vec<Netns>,
    _br: Netns,
    subnet: u8,
}

impl Bridged {
    fn new(n: usize, subnet: u8) -> Bridged {
        let br = Netns::create("lr-i22c-br").unwrap();
        br.ip(&["link", "add", "br0", "type", "bridge"]).unwrap();
        br.ip(&["link", "set", "br0", "up"]).unwrap();
        let nss: Vec<Netns> = (0..n).map(|_| Netns::create("lr-i22c-r").unwrap()).collect();
        for (i, ns) in nss.iter().enumerate() {
            let (c, p) = (format!("c{i}"), format!("p{i}"));
            br.ip(&["link", "add", &p, "type", "veth", "peer", "name", &c, "netns", ns.name()]).unwrap();
            br.ip(&["link", "set", &p, "master", "br0"]).unwrap();
            br.ip(&["link", "set", &p, "up"]).unwrap();
            ns.ip(&["addr", "add", &format!("10.9.{subnet}.{}/24", 101 + i), "dev", &c]).unwrap();
            ns.ip(&["link", "set", &c, "up"]).unwrap();
        }
        Bridged { nss, _br: br, subnet }
    }

    /// Asserts that the bridge forwards between the veths: namespace 0's kernel pings every
    /// other namespace's kernel address.
    fn assert_bridge_forwards(&self) {
        for i in 1..self.nss.len() {
            let to = format!("10.9.{}.{}", self.subnet, 101 + i);
            let o = self.nss[0].run("ping", &["-c", "1", "-W", "3", &to]).unwrap();
            assert!(o.status.success(), "the bridge does not forward to {to}: {}", String::from_utf8_lossy(&o.stdout));
        }
    }

    /// Rank `r` on `kind:c<r>` in its namespace, at `10.9.<subnet>.(r+1)/24`, and with `ipv6`
    /// also at `fd09:<subnet>::(r+1)/64`, meeting the others at rank 0's IPv6 address.
    fn rank(&self, kind: &str, r: usize, ipv6: bool) -> LinkRank {
        let s = self.subnet;
        let (ip, root) = if ipv6 {
            (format!("10.9.{s}.{}/24,fd09:{s}::{}/64", r + 1, r + 1), format!("[fd09:{s}::1]:7470"))
        } else {
            (format!("10.9.{s}.{}/24", r + 1), format!("10.9.{s}.1"))
        };
        let mut lr = LinkRank::new(&format!("{kind}:c{r}"), &ip, &root).unwrap();
        lr.netns = Some(self.nss[r].name().to_string());
        lr
    }
}

const LEN: usize = 30_000;

/// Rank `k`'s data, which every rank can recompute.
fn data(k: usize, len: usize) -> Vec<i64> {
    (0..len).map(|e| (e as i64 * 7919 + k as i64 * 104_729) % 1_000_003 - 500_000).collect()
}

/// All-reduce (large: ring; small: recursive doubling), broadcast and all-gather; returns
/// the names of those whose result differs from the reference.
fn operations(c: &mut LinkCommunicator) -> Vec<&'static str> {
    let (r, n) = (c.rank(), c.size());
    let mut failed = Vec::new();
    for (what, len) in [("all-reduce (ring)", LEN), ("all-reduce (small)", 100)] {
        let sum: Vec<i64> = (0..len).map(|e| (0..n).map(|k| data(k, len)[e]).sum()).collect();
        if c.allreduce(&data(r, len), ReduceOp::Sum).unwrap() != sum {
            failed.push(what);
        }
    }
    let bc = c.bcast(&if r == 1 { data(1, LEN) } else { vec![0; LEN] }, 1).unwrap();
    if bc != data(1, LEN) {
        failed.push("broadcast");
    }
    let all: Vec<i64> = (0..n).flat_map(|k| data(k, 1000)).collect();
    if c.allgather(&data(r, 1000)).unwrap() != all {
        failed.push("all-gather");
    }
    failed
}

/// Runs the three ranks on `kind` links, one thread each, and checks every result; with
/// `ipv6` the ranks meet and exchange over IPv6.
fn three_ranks_on(kind: &'static str, subnet: u8, ipv6: bool) {
    let rig = Bridged::new(N, subnet);
    rig.assert_bridge_forwards();
    let handles: Vec<_> = (0..N)
        .map(|r| {
            let lr = rig.rank(kind, r, ipv6);
            std::thread::spawn(move || {
                // Set-up of three ranks at once on a loaded 2-core machine can take long: a generous limit.
                let cfg = Config {
                    timeout: Duration::from_secs(60),
                    connect_timeout: Duration::from_secs(60),
                    ..Config::default()
                };
                let mut c = lr.join(r, N, cfg, false).unwrap_or_else(|e| panic!("rank {r} on {kind}: {e}"));
                for j in 0..N {
                    let a = c.endpoint().peer_addr(j).expect("every rank's address is known");
                    assert_eq!(a.is_ipv6(), ipv6, "rank {r} reaches rank {j} at {a}");
                }
                let failed = operations(&mut c);
                c.finalize().unwrap();
                failed
            })
        })
        .collect();
    for (r, h) in handles.into_iter().enumerate() {
        let failed = h.join().unwrap();
        assert!(failed.is_empty(), "rank {r} on {kind}: wrong results of {failed:?}");
    }
    // The XDP programs passed the kernel's own traffic all along.
    rig.assert_bridge_forwards();
}

#[test]
fn three_ranks_on_af_xdp_through_a_bridge_compute_exact_results() {
    if !can_run() {
        return;
    }
    three_ranks_on("af_xdp", 22, false);
}

#[test]
fn three_ranks_on_af_xdp_meet_and_compute_over_ipv6() {
    if !can_run() {
        return;
    }
    three_ranks_on("af_xdp", 24, true);
}

#[test]
fn three_ranks_on_af_packet_through_a_bridge_compute_exact_results() {
    if !can_run() {
        return;
    }
    three_ranks_on("af_packet", 23, false);
    ranks_in_namespaces_of_one_machine_choose_the_pipes_from_their_host_names();
}

#[test]
fn a_rank_whose_root_does_not_answer_names_it() {
    if !can_run() {
        return;
    }
    let rig = Bridged::new(2, 24);
    let cfg = Config { connect_timeout: Duration::from_millis(1500), ..Config::default() };
    let e = rig.rank("af_packet", 1, false).join(1, 2, cfg, false).err().expect("no root: no mesh");
    assert!(matches!(e, CollectiveError::RootUnreachable { rank: 1, .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("the root 10.9.24.1:7470 did not answer within 1.5s"), "{msg}");
    let e = rig.rank("af_xdp", 1, false);
    let mut missing = e.clone();
    missing.link = "af_xdp:c9".parse().unwrap();
    let msg = missing.join(1, 2, Config::default(), false).err().unwrap().to_string();
    assert!(msg.starts_with("rank 1 cannot open af_xdp:c9:") && msg.contains("c9"), "{msg}");
}

#[test]
fn the_self_checking_rank_runs_on_af_xdp_from_the_launcher_variables_alone() {
    if !can_run() {
        return;
    }
    let rig = Bridged::new(N, 25);
    let ranks: Vec<_> = (0..N)
        .map(|r| {
            rig.nss[r]
                .command(env!("CARGO_BIN_EXE_lr-collective-rank"))
                .args(["--elems", "5000"])
                .env("LINERATE_RANK", r.to_string())
                .env("LINERATE_WORLD_SIZE", N.to_string())
                .env("LINERATE_LINK", format!("af_xdp:c{r}"))
                .env("LINERATE_IP", format!("10.9.25.{}/24", r + 1))
                .env("MASTER_ADDR", "10.9.25.1")
                .env_remove("LINERATE_FABRIC")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (r, p) in ranks.into_iter().enumerate() {
        let out = p.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains(&format!("RESULT rank={r} ok")),
            "rank {r}: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// What a rank of `ranks_in_namespaces_of_one_machine_choose_the_pipes_from_their_host_names`
/// reports: the operations that failed, its peers through pipes, the payload bytes its
/// endpoint sent and the bytes its link sent.
type HostOutcome = (Vec<&'static str>, u64, u64, u64);

/// Three ranks on AF_PACKET in three namespaces of this machine with `auto` transport: they
/// share the host name, so each chooses pipes to both peers (run after the AF_PACKET test
/// in the same test: two AF_PACKET rigs at once timed out setting up under load).
fn ranks_in_namespaces_of_one_machine_choose_the_pipes_from_their_host_names() {
    let rig = Bridged::new(N, 24);
    let job = format!("coll-hosts-{}", std::process::id());
    let handles: Vec<_> = (0..N)
        .map(|r| {
            let (lr, job) = (rig.rank("af_packet", r, false), job.clone());
            std::thread::spawn(move || -> HostOutcome {
                let mut cfg = Config {
                    timeout: Duration::from_secs(60),
                    connect_timeout: Duration::from_secs(60),
                    ..Config::default()
                };
                // auto on a link: the host name goes into the hello; all three share it.
                Transport::Auto.apply(&mut cfg, false, Some(&job)).unwrap();
                assert!(cfg.host.is_some(), "this machine has no host name");
                let mut c = lr.join(r, N, cfg, false).unwrap_or_else(|e| panic!("rank {r}: {e}"));
                let failed = operations(&mut c);
                let k = c.endpoint().counters().clone();
                let on_link = c.stack().link().stats().tx_bytes;
                c.finalize().unwrap();
                (failed, k.pipe_peers, k.bytes_sent, on_link)
            })
        })
        .collect();
    for (r, h) in handles.into_iter().enumerate() {
        let (failed, pipes, sent, on_link) = h.join().unwrap();
        assert!(failed.is_empty(), "rank {r}: wrong results of {failed:?}");
        assert_eq!(pipes, (N - 1) as u64, "rank {r}: peers through pipes");
        // The operations' payload went through the pipes: the link carried only the set-up.
        assert!(on_link < sent / 2, "rank {r}: {on_link} bytes on the link for {sent} bytes of messages");
    }
    let left: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&format!("linerate-{job}-")))
        .collect();
    assert!(left.is_empty(), "pipe files left: {left:?}");
}
