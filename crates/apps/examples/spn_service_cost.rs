//! The SPN service's work per vector against the evaluator's, measured without a clock: a
//! client and the service on two stacks joined by an in-process link, stepped on one thread in
//! virtual time, on a LearnSPN-shaped model. Three functions hold the work to count:
//!
//! - `server_step`: one poll of the server's stack, [`SpnService::serve`] and the flush of its
//!   answers (receiving, parsing, evaluating, encoding, sending);
//! - `evaluator_alone`: [`Evaluator::eval_u8`] on the same vectors in one call (full batches);
//! - `evaluator_per_request`: the same vectors one request at a time (a partial batch each,
//!   as the service evaluated before it gathered queued requests).
//!
//! ```text
//! cargo build --release -p apps --example spn_service_cost
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/s.cg --collect-atstart=no \
//!   --toggle-collect='spn_service_cost::server_step' --toggle-collect='spn_service_cost::evaluator_alone' \
//!   --toggle-collect='spn_service_cost::evaluator_per_request' \
//!   target/release/examples/spn_service_cost udp 10 200
//! callgrind_annotate --inclusive=yes /tmp/s.cg | grep spn_service_cost::
//! # each figure divided by the vectors printed; service/evaluator = alone / server_step
//! ```
//!
//! `spn_service_cost udp|tcp VARS REQUESTS [VECTORS [WINDOW]]`: REQUESTS requests of VECTORS
//! vectors each (default: as many as fit a 1,500-byte datagram) with WINDOW outstanding
//! (default 8, as `linerate spn bench`); the service evaluates inline (no workers). The run
//! checks every answer against the evaluator, to the bit, and fails otherwise.

use apps::spn_service::{SpnClient, SpnService, SpnServiceConfig, Transport};
use link::mem::{pair, MemLink};
use link::{Instant, LinkConfig};
use net::{Config, Stack};
use spn::generate::sample_u8;
use spn::{CompiledSpn, Evaluator, GeneratorConfig, Missing, Output};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// IP MTU of the link.
const MTU: usize = 1500;
/// Virtual time per step.
const TICK: Duration = Duration::from_micros(10);

/// One step of the server: poll its stack, serve, flush the answers.
#[inline(never)]
fn server_step(stack: &mut Stack<MemLink>, service: &mut SpnService, now: Instant) -> Result<(), String> {
    stack.poll(now).map_err(|e| e.to_string())?;
    service.serve(stack).map_err(|e| e.to_string())?;
    stack.flush().map_err(|e| e.to_string())?;
    Ok(())
}

/// Every vector in one call.
#[inline(never)]
fn evaluator_alone(ev: &mut Evaluator, inputs: &[u8], out: &mut [f64]) {
    ev.eval_u8(inputs, Missing::None, out, Output::LogLikelihood).expect("evaluate");
}

/// The vectors `per` at a time.
#[inline(never)]
fn evaluator_per_request(ev: &mut Evaluator, inputs: &[u8], out: &mut [f64], per: usize) {
    let nv = ev.model().num_vars();
    for (i, o) in inputs.chunks(per * nv).zip(out.chunks_mut(per)) {
        ev.eval_u8(i, Missing::None, o, Output::LogLikelihood).expect("evaluate");
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spn_service_cost: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).and_then(|s| s.parse::<usize>().ok());
    let transport = args.get(1).map_or("udp", |s| s.as_str());
    let (vars, requests) = (arg(2).unwrap_or(10), arg(3).unwrap_or(200));
    let model = spn::generate(&GeneratorConfig::learnspn(vars, 1)).map_err(|e| e.to_string())?;
    let compiled = CompiledSpn::new(model).map_err(|e| e.to_string())?;

    let (la, lb) = pair(LinkConfig::default().mtu(MTU));
    let mut cs = Stack::new(Config::host("10.0.0.1/24").mtu(MTU), la).map_err(|e| e.to_string())?;
    let mut ss = Stack::new(Config::host("10.0.0.2/24").mtu(MTU), lb).map_err(|e| e.to_string())?;
    let server = "10.0.0.2:5005".parse().map_err(|e: std::net::AddrParseError| e.to_string())?;
    let cfg = SpnServiceConfig::default();
    let (service, client) = match transport {
        "tcp" => {
            (SpnService::bind_tcp(&mut ss, 5005, Arc::clone(&compiled), cfg), SpnClient::tcp(&mut cs, server, vars))
        }
        "udp" => {
            (SpnService::bind_udp(&mut ss, 5005, Arc::clone(&compiled), cfg), SpnClient::udp(&mut cs, server, vars))
        }
        other => return Err(format!("transport {other:?}: expected udp or tcp")),
    };
    let (mut service, mut client) = (service.map_err(|e| e.to_string())?, client.map_err(|e| e.to_string())?);
    let per = arg(4).unwrap_or_else(|| client.max_vectors(MTU, false)).clamp(1, client.max_vectors(MTU, false));
    let window = arg(5).unwrap_or(8).max(1);
    let n = requests * per;
    let (inputs, _) = sample_u8(compiled.spn(), n, 0.0, 2);

    let mut now = Instant::ZERO;
    let mut values = Vec::with_capacity(n);
    let (mut sent, mut answered, mut steps) = (0, 0, 0u64);
    if let Transport::Tcp(h) = client.transport() {
        while cs.tcp_connect_result(h).map_err(|e| e.to_string())?.is_none() && steps < 1000 {
            now = now + TICK;
            cs.poll(now).map_err(|e| e.to_string())?;
            server_step(&mut ss, &mut service, now)?;
            steps += 1;
        }
    }
    while answered < requests {
        steps += 1;
        if steps > 1_000_000 {
            return Err(format!("only {answered} of {requests} requests answered"));
        }
        now = now + TICK;
        while sent < requests && sent - answered < window {
            let v = &inputs[sent * per * vars..(sent + 1) * per * vars];
            if !client.send(&mut cs, v, None, true, now).map_err(|e| e.to_string())? {
                break;
            }
            sent += 1;
        }
        cs.flush().map_err(|e| e.to_string())?;
        cs.poll(now).map_err(|e| e.to_string())?;
        server_step(&mut ss, &mut service, now)?;
        cs.poll(now).map_err(|e| e.to_string())?;
        while client.poll_reply(&mut cs, now, &mut values).map_err(|e| e.to_string())?.is_some() {
            answered += 1;
        }
    }

    let mut ev = Evaluator::new(Arc::clone(&compiled));
    let mut alone = vec![0.0; n];
    evaluator_alone(&mut ev, &inputs, &mut alone);
    let mut each = vec![0.0; n];
    evaluator_per_request(&mut ev, &inputs, &mut each, per);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    if bits(&values) != bits(&alone) || bits(&each) != bits(&alone) {
        return Err("the service's answers differ from the evaluator's".into());
    }
    let c = service.counters();
    println!(
        "{transport}, {vars} inputs ({} nodes, {} lanes): {requests} requests x {per} vectors = {n} vectors, window {window}; {} evaluations, {steps} steps",
        compiled.spn().stats().nodes,
        ev.lanes(),
        c.evaluations,
    );
    Ok(())
}
