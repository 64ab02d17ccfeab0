//! Ranks in separate network namespaces, each on AF_PACKET on its own veth, joined by a
//! Linux bridge in a further namespace (the multi-machine placement, on one machine). Needs
//! root; without it the test says why (and fails under CI). Real clock; no timing asserted.

use collective::{AllreduceAlgo, Communicator, Config, Endpoint, ReduceOp, TreeAlgo};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;
use testbed::{netns_unavailable, Netns};

fn can_run() -> bool {
    match netns_unavailable() {
        None => true,
        Some(why) => panic!("NOT RUN: {why} (run `make test` as root)"),
    }
}

#[test]
fn every_main_operation_between_three_namespaces_over_af_packet_and_a_bridge() {
    if !can_run() {
        return;
    }
    let n = 3;
    let br = Netns::create("lrcb").unwrap();
    br.ip(&["link", "add", "br0", "type", "bridge"]).unwrap();
    br.ip(&["link", "set", "br0", "up"]).unwrap();
    let nss: Vec<Netns> = (0..n).map(|_| Netns::create("lrcr").unwrap()).collect();
    for (i, ns) in nss.iter().enumerate() {
        let (a, b) = (format!("lrc{i}a"), format!("lrc{i}b"));
        br.ip(&["link", "add", &a, "type", "veth", "peer", "name", &b]).unwrap();
        br.ip(&["link", "set", &a, "netns", ns.name()]).unwrap();
        br.ip(&["link", "set", &b, "master", "br0"]).unwrap();
        br.ip(&["link", "set", &b, "up"]).unwrap();
        ns.ip(&["link", "set", &a, "up"]).unwrap();
    }
    let ip = |k: usize| Ipv4Addr::new(10, 79, 0, k as u8 + 1);
    let addrs: Vec<SocketAddr> = (0..n).map(|k| SocketAddr::new(ip(k).into(), 7470)).collect();
    let handles: Vec<_> = (0..n)
        .map(|r| {
            let link = link::packet::create_in_netns(nss[r].name(), &format!("lrc{r}a"), 1500).unwrap();
            let addrs = addrs.clone();
            std::thread::spawn(move || {
                let stack = net::Stack::new(net::Config::host(&format!("{}/24", ip(r))), link).unwrap();
                let cfg = Config { timeout: Duration::from_secs(60), ..Config::default() };
                let mut c = Communicator::new(stack, Endpoint::new(r, addrs, cfg).unwrap()).unwrap();
                c.connect().unwrap();
                let failed = every_operation(&mut c);
                c.finalize().unwrap();
                failed
            })
        })
        .collect();
    for (r, h) in handles.into_iter().enumerate() {
        let failed = h.join().unwrap();
        assert!(failed.is_empty(), "rank {r}: wrong results of {failed:?}");
    }
}

const LEN: usize = 20_000;

/// Rank `k`'s data, which every rank can recompute.
fn data(k: usize) -> Vec<i64> {
    (0..LEN).map(|e| (e as i64 * 7919 + k as i64 * 104_729) % 1_000_003 - 500_000).collect()
}

/// Runs the main operations and returns the names of those whose result differs from the
/// reference computed here.
fn every_operation(c: &mut Communicator<link::packet::PacketLink>) -> Vec<String> {
    let (r, n) = (c.rank(), c.size());
    let xs: Vec<Vec<i64>> = (0..n).map(data).collect();
    let sum: Vec<i64> = (0..LEN).map(|e| xs.iter().map(|x| x[e]).sum()).collect();
    let mut failed = Vec::new();
    let mut check = |what: String, ok: bool| {
        if !ok {
            failed.push(what);
        }
    };
    for algo in [AllreduceAlgo::Ring, AllreduceAlgo::RecursiveDoubling, AllreduceAlgo::ReduceBcast] {
        let req = c.endpoint().iallreduce_with(&xs[r], ReduceOp::Sum, algo);
        check(format!("all-reduce {algo:?}"), c.wait(req).unwrap() == sum);
    }
    let f: Vec<f64> = xs[r].iter().map(|&v| v as f64 * 0.5).collect();
    let fmax: Vec<f64> = (0..LEN).map(|e| xs.iter().map(|x| x[e] as f64 * 0.5).fold(f64::MIN, f64::max)).collect();
    check("all-reduce f64 max".into(), c.allreduce(&f, ReduceOp::Max).unwrap() == fmax);
    for algo in [TreeAlgo::Flat, TreeAlgo::Tree, TreeAlgo::Chain] {
        let req = c.endpoint().ibcast_with(&xs[r], 2, algo).unwrap();
        check(format!("broadcast {algo:?}"), c.wait(req).unwrap() == xs[2]);
        let req = c.endpoint().ireduce_with(&xs[r], ReduceOp::Sum, 1, algo).unwrap();
        check(format!("reduce {algo:?}"), c.wait(req).unwrap() == if r == 1 { sum.clone() } else { Vec::new() });
    }
    let sc = c.scatter(if r == 0 { &xs[0][..300] } else { &[] }, 100, 0).unwrap();
    check("scatter".into(), sc == xs[0][100 * r..100 * r + 100]);
    let all: Vec<i64> = xs.iter().flat_map(|x| x[..100].to_vec()).collect();
    let g = c.gather(&xs[r][..100], 2).unwrap();
    check("gather".into(), g == if r == 2 { all.clone() } else { Vec::new() });
    check("all-gather".into(), c.allgather(&xs[r][..100]).unwrap() == all);
    let rs = c.reduce_scatter(&xs[r][..3000], ReduceOp::Sum).unwrap();
    check("reduce-scatter".into(), rs == sum[1000 * r..1000 * r + 1000]);
    let a2a = c.alltoall(&xs[r][..300]).unwrap();
    check("all-to-all".into(), a2a == (0..n).flat_map(|i| xs[i][100 * r..100 * r + 100].to_vec()).collect::<Vec<_>>());
    c.send((r + 1) % n, 3, &xs[r]).unwrap();
    check("send/recv".into(), c.recv::<i64>((r + n - 1) % n, 3, LEN).unwrap() == xs[(r + n - 1) % n]);
    c.barrier().unwrap();
    failed
}
