//! The demo's network-attached compute rows, each on the in-process testbed (virtual time):
//! the SPN service answering a client host (checked against the local evaluator), an
//! all-reduce over 8 ranks (checked against the exact sum) and K-Means over 4 ranks (checked
//! against a single-process run, bit for bit).

use super::{Outcome, Step};
use crate::output::Unit;
use accel::kmeans::{covertype_like, lloyd, Shape, COVERTYPE_D};
use apps::kmeans::{share, DistKmeans};
use apps::spn_service::{SpnClient, SpnService, SpnServiceConfig};
use collective::{Config, Element, Endpoint, MeshState, ReduceOp, Request};
use spn::{CompiledSpn, Evaluator, GeneratorConfig, Missing, Output};
use std::net::{SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};
use testbed::{HostId, Testbed};

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// A generated NIPS-like model (10 inputs) is compiled and evaluated locally, then served over
/// UDP on one testbed host and queried by another: every answer must equal the local value.
pub(crate) fn spn_step() -> Step {
    const ROWS: usize = 20_000;
    let model = spn::generate(&GeneratorConfig::nips(10, 4)).map_err(err)?;
    let nodes = model.stats().nodes;
    let (bytes, missing) = spn::generate::sample_u8(&model, ROWS, 0.05, 5);
    let compiled = CompiledSpn::new(model).map_err(err)?;
    let nv = compiled.spn().num_vars();
    let mut ev = Evaluator::new(compiled.clone());
    let mut want = vec![0.0; ROWS];
    let (wall, mut passes) = (Instant::now(), 0u32);
    while passes == 0 || wall.elapsed() < Duration::from_millis(300) {
        ev.eval_u8(&bytes, Missing::Flags(&missing), &mut want, Output::LogLikelihood).map_err(err)?;
        passes += 1;
    }
    let rate = f64::from(passes) * ROWS as f64 / wall.elapsed().as_secs_f64();
    if let Some(v) = want.iter().find(|v| !(v.is_finite() && **v < 0.0)) {
        return Err(format!("the evaluator gave a log-likelihood of {v}"));
    }
    let mlen = nv.div_ceil(8);
    let mut masks = vec![0u8; ROWS * mlen];
    for (i, _) in missing.iter().enumerate().filter(|(_, m)| **m) {
        let (row, v) = (i / nv, i % nv);
        masks[row * mlen + v / 8] |= 1 << (v % 8);
    }
    let got = serve_on_testbed(&compiled, &bytes, &masks, nv)?;
    let worst = got.iter().zip(&want).map(|(g, w)| (g - w).abs() / w.abs().max(1e-300)).fold(0.0, f64::max);
    if got.len() != ROWS || worst > 1e-12 {
        return Err(format!("{} answers for {ROWS} vectors, largest relative difference {worst:e}", got.len()));
    }
    Ok(Outcome::measured(
        format!(
            "{nodes}-node model compiled; {ROWS} vectors (5% values missing) served over UDP between two hosts equal the local evaluator"
        ),
        rate,
        Unit::OpsPerSec,
        "vectors evaluated per second on one core (local evaluator)",
    ))
}

/// Serve `model` on UDP on one host of a testbed and evaluate `bytes` (with `masks`) from
/// another, eight requests in flight; the answers in order.
fn serve_on_testbed(
    model: &std::sync::Arc<CompiledSpn>,
    bytes: &[u8],
    masks: &[u8],
    nv: usize,
) -> Result<Vec<f64>, String> {
    let mut tb = Testbed::default();
    let (a, b) = (tb.add_host("10.0.0.1/24").map_err(err)?, tb.add_host("10.0.0.2/24").map_err(err)?);
    let mut service =
        SpnService::bind_udp(tb.host(b), 5005, model.clone(), SpnServiceConfig::default()).map_err(err)?;
    let server = SocketAddrV4::new(tb.host_ref(b).ip(), 5005);
    let mut client = SpnClient::udp(tb.host(a), server, nv).map_err(err)?;
    let per = client.max_vectors(tb.host_ref(a).config().mtu, true);
    let (rows, mlen) = (bytes.len() / nv, nv.div_ceil(8));
    let (mut next, mut values) = (0usize, Vec::with_capacity(rows));
    let limit = tb.now() + Duration::from_secs(10);
    while values.len() < rows {
        if tb.now() >= limit || client.counters.lost > 0 {
            return Err(format!("{} of {rows} answers, {} requests lost", values.len(), client.counters.lost));
        }
        while next < rows && client.outstanding() < 8 {
            let end = (next + per).min(rows);
            let now = tb.now();
            let sent = client
                .send(tb.host(a), &bytes[next * nv..end * nv], Some(&masks[next * mlen..end * mlen]), true, now)
                .map_err(err)?;
            if !sent {
                break;
            }
            next = end;
        }
        tb.step().map_err(err)?;
        service.serve(tb.host(b)).map_err(err)?;
        let now = tb.now();
        while let Some(r) = client.poll_reply(tb.host(a), now, &mut values).map_err(err)? {
            if let Err(code) = r.status {
                return Err(format!("request {} was answered with error {code}", r.id));
            }
        }
    }
    Ok(values)
}

/// `n` ranks on a testbed, with their endpoints' mesh of TCP connections up.
struct World {
    tb: Testbed,
    ids: Vec<HostId>,
    eps: Vec<Endpoint>,
}

impl World {
    fn new(n: usize) -> Result<World, String> {
        let mut tb = Testbed::default();
        let ids: Vec<HostId> =
            (0..n).map(|i| tb.add_host(&format!("10.0.0.{}/24", i + 1)).map_err(err)).collect::<Result<_, _>>()?;
        let addrs: Vec<SocketAddr> = ids.iter().map(|&h| SocketAddr::new(tb.host_ref(h).ip().into(), 7470)).collect();
        let eps = (0..n)
            .map(|r| Endpoint::new(r, addrs.clone(), Config::default()).map_err(err))
            .collect::<Result<_, _>>()?;
        let mut w = World { tb, ids, eps };
        let limit = w.tb.now() + Duration::from_secs(10);
        while w
            .eps
            .iter()
            .map(|e| e.mesh_state().map_err(err))
            .collect::<Result<Vec<_>, _>>()?
            .iter()
            .any(|s| *s != MeshState::Ready)
        {
            if w.tb.now() >= limit {
                return Err(format!("the mesh of {n} ranks did not come up"));
            }
            w.step()?;
        }
        Ok(w)
    }

    /// One step of virtual time: every stack, then every endpoint.
    fn step(&mut self) -> Result<(), String> {
        let now = self.tb.now();
        self.tb.step().map_err(err)?;
        for (ep, &id) in self.eps.iter_mut().zip(&self.ids) {
            ep.progress(self.tb.host(id), now).map_err(err)?;
        }
        Ok(())
    }

    /// Run one request per rank to its end (within 30 s of virtual time).
    fn finish<T: Element>(&mut self, reqs: &[Request<T>]) -> Result<Vec<Vec<T>>, String> {
        let mut out: Vec<Option<Vec<T>>> = (0..reqs.len()).map(|_| None).collect();
        let limit = self.tb.now() + Duration::from_secs(30);
        loop {
            for (r, req) in reqs.iter().enumerate() {
                if out[r].is_none() {
                    out[r] = self.eps[r].test(req).map_err(|e| format!("rank {r}: {e}"))?;
                }
            }
            if out.iter().all(Option::is_some) {
                return Ok(out.into_iter().flatten().collect());
            }
            if self.tb.now() >= limit {
                return Err("the operation did not finish within 30 s of virtual time".into());
            }
            self.step()?;
        }
    }
}

/// An all-reduce (sum) of 1 MiB of f64 per rank over 8 ranks; every rank must hold the exact
/// sum (integer-valued data, so exact in any order).
pub(crate) fn allreduce_step() -> Step {
    const RANKS: usize = 8;
    const LEN: usize = 131_072;
    let mut w = World::new(RANKS)?;
    let data = |r: usize| -> Vec<f64> { (0..LEN).map(|i| ((i % 977) * (r + 1)) as f64).collect() };
    let (wall, start) = (Instant::now(), w.tb.now());
    let reqs: Vec<Request<f64>> =
        (0..RANKS).map(|r| w.eps[r].iallreduce(&data(r), ReduceOp::Sum).map_err(err)).collect::<Result<_, _>>()?;
    let results = w.finish(&reqs)?;
    let (virt, secs) = (w.tb.now() - start, wall.elapsed().as_secs_f64());
    let factor = (RANKS * (RANKS + 1) / 2) as f64;
    for (r, v) in results.iter().enumerate() {
        if v.len() != LEN || v.iter().enumerate().any(|(i, x)| *x != (i % 977) as f64 * factor) {
            return Err(format!("rank {r} holds a wrong sum"));
        }
    }
    Ok(Outcome::measured(
        format!(
            "{RANKS} ranks × 1 MiB of f64 (TCP mesh): every rank holds the exact sum ({:.0} ms of wall clock for all {RANKS} stacks on one core)",
            secs * 1e3
        ),
        virt.as_secs_f64(),
        Unit::Seconds,
        "virtual time of the all-reduce",
    ))
}

/// Distributed K-Means (Covertype-shaped data, k = 7) over 4 ranks for up to 10 iterations;
/// centres, labels and iteration count must equal a single-process run bit for bit.
pub(crate) fn kmeans_step() -> Step {
    const RANKS: usize = 4;
    const N: usize = 12_000;
    let shape = Shape { d: COVERTYPE_D, k: 7 };
    let data = covertype_like(N, 8);
    let stride = N / shape.k;
    let init: Vec<f32> =
        (0..shape.k).flat_map(|j| data[j * stride * shape.d..(j * stride + 1) * shape.d].to_vec()).collect();
    let single = lloyd(shape, &data, &init, 10, 0.0).map_err(err)?;
    let mut w = World::new(RANKS)?;
    let mut kms: Vec<DistKmeans> = (0..RANKS)
        .map(|r| {
            let s = share(N, RANKS, r);
            DistKmeans::new(shape, data[s.start * shape.d..s.end * shape.d].to_vec(), &init).map_err(err)
        })
        .collect::<Result<_, _>>()?;
    let wall = Instant::now();
    for _ in 0..10 {
        let reqs: Vec<Request<f64>> =
            kms.iter_mut().zip(w.eps.iter_mut()).map(|(k, ep)| k.start(ep).map_err(err)).collect::<Result<_, _>>()?;
        let sums = w.finish(&reqs)?;
        let shifts: Vec<f64> =
            kms.iter_mut().zip(&sums).map(|(k, s)| k.finish(s).map_err(err)).collect::<Result<_, _>>()?;
        if shifts[0] <= 0.0 {
            break;
        }
    }
    let secs = wall.elapsed().as_secs_f64();
    let iters = kms[0].iterations;
    let labels: Vec<u32> = kms.iter().flat_map(|k| k.labels().to_vec()).collect();
    let bits = |c: &[f32]| c.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let same_centres = kms.iter().all(|k| bits(k.centres()) == bits(&single.centres));
    if iters != single.iterations || labels != single.labels || !same_centres {
        return Err(format!(
            "{iters} iterations (single process: {}); labels {}; centres {}",
            single.iterations,
            if labels == single.labels { "equal" } else { "differ" },
            if same_centres { "equal" } else { "differ" }
        ));
    }
    Ok(Outcome::measured(
        format!(
            "{N} samples × {} features, k = {}, {RANKS} ranks, {iters} iterations: centres and labels equal a single-process run bit for bit",
            shape.d, shape.k
        ),
        secs / iters.max(1) as f64,
        Unit::Seconds,
        "wall clock per iteration (all ranks on one core)",
    ))
}
