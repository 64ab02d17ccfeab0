//! Bootstrap through rank 0: ranks that know only the rendezvous address build the mesh.

use collective::{AllreduceAlgo, Config, ReduceOp};

#[test]
fn bootstrap_through_rank_0_builds_the_mesh_from_one_known_address() {
    // Five ranks at scattered addresses and ports; each knows only rank 0's address.
    let n = 5;
    let mut tb = testbed::Testbed::default();
    let ips = ["10.0.0.77", "10.0.0.3", "10.0.0.150", "10.0.0.9", "10.0.0.42"];
    let ids: Vec<_> = ips.iter().map(|ip| tb.add_host(&format!("{ip}/24")).unwrap()).collect();
    let root: std::net::SocketAddr = "10.0.0.77:9100".parse().unwrap();
    let mut eps: Vec<_> = (0..n)
        .map(|r| {
            let cfg = Config { port: 9200 + r as u16, ..Config::default() };
            collective::Endpoint::bootstrap(r, n, root, cfg).unwrap()
        })
        .collect();
    let mut steps = 0;
    while eps.iter().any(|e| e.mesh_state().unwrap() != collective::MeshState::Ready) {
        let now = tb.now();
        tb.step().unwrap();
        for (r, ep) in eps.iter_mut().enumerate() {
            ep.progress(tb.host(ids[r]), now).unwrap();
        }
        steps += 1;
        assert!(steps < 100_000, "mesh not up: {:?}", eps.iter().map(|e| e.unconnected()).collect::<Vec<_>>());
    }
    let reqs: Vec<_> =
        (0..n).map(|r| (r, eps[r].iallreduce_with(&[r as i64 + 1], ReduceOp::Prod, AllreduceAlgo::Ring))).collect();
    let mut done = vec![None; n];
    while done.iter().any(|d| d.is_none()) {
        let now = tb.now();
        tb.step().unwrap();
        for (r, ep) in eps.iter_mut().enumerate() {
            ep.progress(tb.host(ids[r]), now).unwrap();
            if done[r].is_none() {
                done[r] = ep.test(&reqs[r].1).unwrap();
            }
        }
        steps += 1;
        assert!(steps < 200_000);
    }
    assert!(done.iter().all(|d| d.as_deref() == Some(&[120i64][..])));
    assert!(eps.iter().all(|e| e.counters().protocol_errors == 0));
}
