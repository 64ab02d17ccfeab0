//! One rank per thread, each owning and polling its own stack on the real clock: the same
//! endpoint code as the virtual-time tests, driven by `Communicator`. No timing is asserted;
//! the operation timeout only bounds a broken run.

use collective::{Communicator, Config, Endpoint, ReduceOp};
use link::{mem, LinkConfig};
use std::net::SocketAddr;
use std::time::Duration;

#[test]
fn two_threads_run_the_collectives_over_their_own_stacks() {
    let (la, lb) = mem::pair(LinkConfig::default());
    let addrs: Vec<SocketAddr> = vec!["10.1.0.1:7470".parse().unwrap(), "10.1.0.2:7470".parse().unwrap()];
    let cfg = Config { timeout: Duration::from_secs(60), ..Config::default() };
    let links = vec![la, lb];
    let handles: Vec<_> = links
        .into_iter()
        .enumerate()
        .map(|(r, l)| {
            let (addrs, cfg) = (addrs.clone(), cfg.clone());
            std::thread::spawn(move || {
                let stack = net::Stack::new(net::Config::host(&format!("{}/24", addrs[r].ip())), l).unwrap();
                let mut c = Communicator::new(stack, Endpoint::new(r, addrs, cfg).unwrap()).unwrap();
                c.connect().unwrap();
                let data: Vec<f64> = (0..10_000).map(|i| (i * (r + 1)) as f64).collect();
                let sum = c.allreduce(&data, ReduceOp::Sum).unwrap();
                let b = c.bcast(&[r as i32 + 10; 5], 1).unwrap();
                let g = c.allgather(&[r as i64]).unwrap();
                if r == 0 {
                    c.send(1, 3, &[7.5f32, 8.5]).unwrap();
                } else {
                    assert_eq!(c.recv::<f32>(0, 3, 2).unwrap(), vec![7.5, 8.5]);
                }
                c.barrier().unwrap();
                c.finalize().unwrap();
                (sum, b, g)
            })
        })
        .collect();
    for h in handles {
        let (sum, b, g) = h.join().unwrap();
        assert!(sum.iter().enumerate().all(|(i, &v)| v == (3 * i) as f64));
        assert_eq!(b, vec![11; 5]);
        assert_eq!(g, vec![0, 1]);
    }
}
