//! Ranks in separate network namespaces, each on AF_PACKET on its own veth, joined by a
//! Linux bridge in a further namespace (the multi-machine placement, on one machine). Needs
//! root; without it the test says why (and fails under CI). Real clock; no timing asserted.

use collective::{AllreduceAlgo, Communicator, Config, Endpoint, ReduceOp, TreeAlgo};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;
use testbed::{netns_unavailable, Netns};

fn can_run() -> bool {
    match netns_unavailable() {
        None => true,
        Some(why) => panic!("NOT RUN: {why} (run `make test` as root)"),
    }
}

#[test]
fn three_ranks_in_three_namespaces_over_af_packet_and_a_bridge() {
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
    let addrs: Vec<SocketAddrV4> = (0..n).map(|k| SocketAddrV4::new(ip(k), 7470)).collect();
    let handles: Vec<_> = (0..n)
        .map(|r| {
            let link = link::packet::create_in_netns(nss[r].name(), &format!("lrc{r}a"), 1500).unwrap();
            let addrs = addrs.clone();
            std::thread::spawn(move || {
                let stack = net::Stack::new(net::Config::host(&format!("{}/24", ip(r))), link).unwrap();
                let cfg = Config { timeout: Duration::from_secs(60), ..Config::default() };
                let mut c = Communicator::new(stack, Endpoint::new(r, addrs, cfg).unwrap()).unwrap();
                c.connect().unwrap();
                let xs: Vec<i64> = (0..20_000).map(|e| (e as i64) * (r as i64 + 1)).collect();
                let mut out = Vec::new();
                for algo in [AllreduceAlgo::Ring, AllreduceAlgo::RecursiveDoubling, AllreduceAlgo::ReduceBcast] {
                    let req = c.endpoint().iallreduce_with(&xs, ReduceOp::Sum, algo);
                    out.push(c.wait(req).unwrap());
                }
                let req = c.endpoint().ibcast_with(&xs[..100], 2, TreeAlgo::Tree).unwrap();
                out.push(c.wait(req).unwrap());
                out.push(c.alltoall(&[r as i64 * 10, r as i64 * 10 + 1, r as i64 * 10 + 2]).unwrap());
                c.barrier().unwrap();
                c.finalize().unwrap();
                out
            })
        })
        .collect();
    let results: Vec<Vec<Vec<i64>>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let sum: Vec<i64> = (0..20_000).map(|e| e as i64 * 6).collect();
    for (r, out) in results.iter().enumerate() {
        for (k, v) in out[..3].iter().enumerate() {
            assert!(v == &sum, "rank {r}, all-reduce #{k}");
        }
        assert_eq!(out[3], (0..100).map(|e| e as i64 * 3).collect::<Vec<_>>(), "rank {r} broadcast");
        assert_eq!(out[4], vec![r as i64, 10 + r as i64, 20 + r as i64], "rank {r} all-to-all");
    }
}
