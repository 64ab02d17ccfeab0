//! The shared-memory pipes between ranks of one machine ([`collective::pipe`]): three ranks
//! as threads of this process on a fabric with `Config::shm` set. The operations' messages
//! must go through the pipes (the fabric's TCP carries only the set-up), results must be
//! exact, and no pipe file may be left. No timing is asserted; the operation timeout only
//! bounds a broken run.

use collective::{
    fabric_addrs, fabric_host_config, fabric_link_config, Communicator, Config, Endpoint, ReduceOp, ShmFabric,
    Transport,
};
use link::Link;
use std::time::Duration;

const N: usize = 3;

/// What a rank reports: bytes it put on the fabric, then its all-reduce, broadcast, received
/// and all-gather results.
type Outcome = (u64, Vec<f64>, Vec<i32>, Vec<u8>, Vec<i64>);

/// Runs rank `r` of job `name`: large and small operations; returns the bytes its stack
/// put on the fabric and its results.
fn rank(name: &str, r: usize, shm: Option<String>) -> Outcome {
    let fab = ShmFabric::join(name, r, N, fabric_link_config(), Duration::from_secs(20)).unwrap();
    let stack = net::Stack::new(fabric_host_config(r, N).unwrap(), fab).unwrap();
    let cfg = Config { timeout: Duration::from_secs(60), shm, pipe_ring: 64 * 1024, ..Config::default() };
    let mut c = Communicator::new_with_binding(stack, Endpoint::new(r, fabric_addrs(N), cfg).unwrap(), false).unwrap();
    c.connect().unwrap();
    // 8 MiB all-reduce (ring), through rings of 64 KiB: many wrap-arounds.
    let x: Vec<f64> = (0..1 << 20).map(|i| (i % 1000) as f64 * (r + 1) as f64).collect();
    let sum = c.allreduce(&x, ReduceOp::Sum).unwrap();
    let b = c.bcast(&vec![r as i32 * 7 + 1; 300_000], 2).unwrap();
    // Point-to-point around the ring, 3 MiB each, and a zero-length message.
    let payload: Vec<u8> = (0..3 << 20).map(|i| (i * (r + 3) % 251) as u8).collect();
    let req = c.endpoint().isend((r + 1) % N, 9, &payload).unwrap();
    let got = c.recv::<u8>((r + N - 1) % N, 9, 3 << 20).unwrap();
    c.wait(req).unwrap();
    c.send((r + 1) % N, 10, &[] as &[u8]).unwrap();
    assert!(c.recv::<u8>((r + N - 1) % N, 10, 0).unwrap().is_empty());
    let g = c.allgather(&[r as i64, -(r as i64)]).unwrap();
    c.barrier().unwrap();
    let sent = c.stack().link().stats().tx_bytes;
    c.finalize().unwrap();
    (sent, sum, b, got, g)
}

fn run(tag: &str, transport: Transport) -> Vec<Outcome> {
    let name = format!("coll-pipes-{tag}-{}", std::process::id());
    let shm = transport.shm_job(true, Some(&name)).unwrap();
    let handles: Vec<_> = (0..N)
        .map(|r| {
            let (name, shm) = (name.clone(), shm.clone());
            std::thread::spawn(move || rank(&name, r, shm))
        })
        .collect();
    let out: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f.starts_with(&format!("linerate-{name}-")))
        .collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
    for (r, (_, sum, b, got, g)) in out.iter().enumerate() {
        assert!(sum.iter().enumerate().all(|(i, &v)| v == (i % 1000) as f64 * 6.0), "rank {r}: all-reduce");
        assert!(b.iter().all(|&v| v == 15) && b.len() == 300_000, "rank {r}: broadcast");
        let from = (r + N - 1) % N;
        assert!(got.iter().enumerate().all(|(i, &v)| v == (i * (from + 3) % 251) as u8), "rank {r}: recv");
        assert_eq!(g, &vec![0, 0, 1, -1, 2, -2], "rank {r}: all-gather");
    }
    out
}

#[test]
fn large_and_small_operations_go_through_the_pipes_exactly_and_leave_no_file() {
    let out = run("shm", Transport::Auto);
    for (r, (sent, ..)) in out.iter().enumerate() {
        // Each rank moves more than 10 MiB; the set-up over TCP is a few kilobytes.
        assert!(*sent < 256 * 1024, "rank {r} sent {sent} bytes over the fabric's TCP: the pipes were bypassed");
    }
}

#[test]
fn the_tcp_override_keeps_every_message_on_the_fabric_tcp() {
    let out = run("tcp", Transport::Tcp);
    for (r, (sent, ..)) in out.iter().enumerate() {
        assert!(*sent > 10 << 20, "rank {r} sent only {sent} bytes over TCP with transport=tcp");
    }
}
