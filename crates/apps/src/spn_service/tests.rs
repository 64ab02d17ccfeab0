//! Service tests on an in-process link pair: order, exactly-once answers, values equal to
//! direct evaluation, malformed requests, workers, raw Ethernet, and the load generator.

use super::record::{encode_request, Status};
use super::*;
use link::mem::{pair, MemLink};
use link::{Instant, LinkConfig};
use net::{Config, Stack};
use spn::generate::sample_u8;
use spn::{CompiledSpn, Evaluator, GeneratorConfig, Missing, Output};
use std::sync::Arc;
use std::time::Duration;

const PORT: u16 = 5005;

struct Bench {
    client_stack: Stack<MemLink>,
    server_stack: Stack<MemLink>,
    service: SpnService,
    client: SpnClient,
    model: Arc<CompiledSpn>,
    now: Instant,
}

fn model(vars: usize) -> Arc<CompiledSpn> {
    CompiledSpn::new(
        spn::generate(&GeneratorConfig { num_vars: vars, target_nodes: 60 * vars, seed: 4, ..Default::default() })
            .unwrap(),
    )
    .unwrap()
}

/// Which transport a test bench uses.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Udp,
    Raw,
    Tcp,
}

fn bench(vars: usize, cfg: SpnServiceConfig, kind: Kind) -> Bench {
    bench_mtu(vars, cfg, kind, 1500)
}

fn bench_mtu(vars: usize, cfg: SpnServiceConfig, kind: Kind, mtu: usize) -> Bench {
    let (la, lb) = pair(LinkConfig::default().mtu(mtu));
    let mut client_stack = Stack::new(Config::host("10.0.0.1/24").mtu(mtu), la).unwrap();
    let mut server_stack = Stack::new(Config::host("10.0.0.2/24").mtu(mtu), lb).unwrap();
    let model = model(vars);
    let server = "10.0.0.2:5005".parse().unwrap();
    let (service, client) = match kind {
        Kind::Raw => {
            let s = SpnService::bind_raw(&mut server_stack, SPN_ETHERTYPE, model.clone(), cfg).unwrap();
            let mac = server_stack.mac();
            (s, SpnClient::raw(&mut client_stack, SPN_ETHERTYPE, mac, vars).unwrap())
        }
        Kind::Udp => {
            let s = SpnService::bind_udp(&mut server_stack, PORT, model.clone(), cfg).unwrap();
            (s, SpnClient::udp(&mut client_stack, server, vars).unwrap())
        }
        Kind::Tcp => {
            let s = SpnService::bind_tcp(&mut server_stack, PORT, model.clone(), cfg).unwrap();
            (s, SpnClient::tcp(&mut client_stack, server, vars).unwrap())
        }
    };
    let mut b = Bench { client_stack, server_stack, service, client, model, now: Instant::ZERO };
    if let Transport::Tcp(h) = b.client.transport() {
        while b.client_stack.tcp_connect_result(h).unwrap().is_none() {
            b.pump(1);
        }
    }
    b
}

impl Bench {
    /// Poll both sides (busy-waiting on workers in real time) until `n` replies arrived or
    /// 5 s of real time passed; returns the replies and their values.
    fn collect(&mut self, n: usize) -> (Vec<Reply>, Vec<f64>) {
        let (mut replies, mut values) = (Vec::new(), Vec::new());
        let start = std::time::Instant::now();
        while replies.len() < n && start.elapsed() < Duration::from_secs(5) {
            self.now = self.now + Duration::from_micros(10);
            self.client_stack.poll(self.now).unwrap();
            self.server_stack.poll(self.now).unwrap();
            self.service.serve(&mut self.server_stack).unwrap();
            self.server_stack.flush().unwrap();
            while let Some(r) = self.client.poll_reply(&mut self.client_stack, self.now, &mut values).unwrap() {
                replies.push(r);
            }
        }
        (replies, values)
    }

    /// Poll both sides `steps` times, discarding replies.
    fn pump(&mut self, steps: usize) {
        let mut values = Vec::new();
        for _ in 0..steps {
            self.now = self.now + Duration::from_micros(10);
            self.client_stack.poll(self.now).unwrap();
            self.server_stack.poll(self.now).unwrap();
            self.service.serve(&mut self.server_stack).unwrap();
            self.server_stack.flush().unwrap();
            while self.client.poll_reply(&mut self.client_stack, self.now, &mut values).unwrap().is_some() {}
        }
    }

    fn send(&mut self, vectors: &[u8], masks: Option<&[u8]>, log: bool) {
        assert!(self.client.send(&mut self.client_stack, vectors, masks, log, self.now).unwrap());
        self.client_stack.flush().unwrap();
    }

    fn send_record(&mut self, rec: &[u8], id: u32) {
        assert!(self.client.send_raw_record(&mut self.client_stack, rec, id, self.now).unwrap());
        self.client_stack.flush().unwrap();
    }

    fn direct(&self, vectors: &[u8], masks: Option<&[u8]>, output: Output) -> Vec<f64> {
        let n = vectors.len() / self.model.num_vars();
        let mut out = vec![0.0; n];
        let missing = masks.map_or(Missing::None, Missing::Bits);
        Evaluator::new(self.model.clone()).eval_u8(vectors, missing, &mut out, output).unwrap();
        out
    }
}

/// Requests of 1..=40 vectors, some with masks, some asking for likelihoods.
fn requests(vars: usize, n: usize) -> Vec<Request> {
    let spn =
        spn::generate(&GeneratorConfig { num_vars: vars, target_nodes: 60 * vars, seed: 4, ..Default::default() })
            .unwrap();
    let (bytes, _) = sample_u8(&spn, 40 * n, 0.0, 8);
    (0..n)
        .map(|i| {
            let count = 1 + (i * 7) % 40;
            let v = bytes[i * 40 * vars..(i * 40 + count) * vars].to_vec();
            let masks =
                (i % 3 == 0).then(|| (0..count * vars.div_ceil(8)).map(|k| (k * 37 + i) as u8 & 0x55).collect());
            (v, masks, i % 2 == 0)
        })
        .collect()
}

/// A request: vectors, optional masks, log-likelihoods wanted.
type Request = (Vec<u8>, Option<Vec<u8>>, bool);

fn check_in_order(b: &mut Bench, reqs: &[Request]) {
    for (v, m, log) in reqs {
        b.send(v, m.as_deref(), *log);
    }
    let (replies, values) = b.collect(reqs.len());
    assert_eq!(replies.len(), reqs.len());
    let mut at = 0;
    for (i, (r, (v, m, log))) in replies.iter().zip(reqs).enumerate() {
        assert_eq!((r.id, r.status), (i as u32, Ok(())));
        let want = b.direct(v, m.as_deref(), if *log { Output::LogLikelihood } else { Output::Likelihood });
        assert_eq!(&values[at..at + r.count], &want[..], "request {i}");
        at += r.count;
    }
    assert_eq!(b.client.counters.lost + b.client.counters.unexpected, 0);
    let c = b.service.counters();
    assert_eq!((c.requests, c.responses), (reqs.len() as u64, reqs.len() as u64));
}

#[test]
fn answers_every_request_once_in_order_inline() {
    let mut b = bench(13, SpnServiceConfig::default(), Kind::Udp);
    check_in_order(&mut b, &requests(13, 30));
    // Nothing more arrives.
    b.pump(200);
    assert_eq!((b.client.counters.answered, b.client.counters.unexpected), (30, 0));
}

#[test]
fn queued_requests_are_evaluated_together() {
    for kind in [Kind::Udp, Kind::Tcp] {
        let mut b = bench(13, SpnServiceConfig::default(), kind);
        assert!(Evaluator::new(b.model.clone()).lanes() >= 40);
        // Eight small requests queued at once: three runs of the same output (log, linear,
        // log), each one gathered evaluation; masks or not do not split a run.
        let reqs: Vec<Request> = requests(13, 8)
            .into_iter()
            .enumerate()
            .map(|(i, (v, m, _))| {
                let n = 5.min(v.len() / 13);
                (v[..n * 13].to_vec(), m.map(|m| m[..n * 2].to_vec()), !(4..6).contains(&i))
            })
            .collect();
        check_in_order(&mut b, &reqs);
        assert_eq!(b.service.counters().evaluations, 3);
    }
}

#[test]
fn replicated_workers_keep_the_order() {
    let cfg = SpnServiceConfig { workers: 3, queue_depth: 2, max_in_flight: 16 };
    let mut b = bench(13, cfg, Kind::Udp);
    check_in_order(&mut b, &requests(13, 120));
}

#[test]
fn raw_ethernet_with_padded_frames() {
    let mut b = bench(5, SpnServiceConfig::default(), Kind::Raw);
    check_in_order(&mut b, &requests(5, 20));
}

#[test]
fn malformed_requests_get_error_records_or_are_dropped_and_counted() {
    let mut b = bench(6, SpnServiceConfig { workers: 2, ..Default::default() }, Kind::Udp);
    let good = vec![1u8; 12];
    let mut rec = Vec::new();
    encode_request(100, 6, &good, None, true, &mut rec).unwrap();
    let mut wrong_len = Vec::new();
    encode_request(101, 4, &good, None, true, &mut wrong_len).unwrap();
    let truncated = rec[..rec.len() - 1].to_vec();
    let mut too_many = Vec::new();
    encode_request(103, 6, &vec![0u8; 6 * 200], None, true, &mut too_many).unwrap();
    b.send_record(&rec, 100);
    b.send_record(&wrong_len, 101);
    b.send_record(&truncated, 100);
    b.send_record(b"short", 999);
    b.send_record(b"XXXX and some more bytes to make a header", 998);
    b.send_record(&too_many, 103);
    b.send_record(&rec, 100);
    let (replies, _) = b.collect(5);
    let statuses: Vec<Result<(), u16>> = replies.iter().map(|r| r.status).collect();
    let code = |s: Status| Err(s as u16);
    // The truncated request has id 100 in its header; the short and foreign records are never
    // answered, so the client counts them lost when the answer to 103 arrives.
    assert_eq!(
        statuses,
        vec![Ok(()), code(Status::WrongVectorLength), code(Status::BadLength), code(Status::TooManyVectors), Ok(())]
    );
    let c = b.service.counters();
    assert_eq!(
        (c.records, c.requests, c.error_records, c.dropped_short, c.dropped_bad_magic, c.responses),
        (7, 2, 3, 1, 1, 5)
    );
    assert_eq!((b.client.counters.lost, b.client.counters.errors), (2, 3));
}

#[test]
fn mutated_requests_never_crash_the_service() {
    let mut b = bench(9, SpnServiceConfig::default(), Kind::Udp);
    let mut rec = Vec::new();
    encode_request(1, 9, &[3u8; 9 * 4], Some(&[0xffu8; 2 * 4]), true, &mut rec).unwrap();
    let mut rng = spn::rng::Rng::new(77);
    for i in 0..2000 {
        let mut m = rec.clone();
        match i % 4 {
            0 => {
                let at = rng.range(0, m.len() - 1);
                m[at] ^= 1 << rng.range(0, 7);
            }
            1 => m.truncate(rng.range(0, m.len())),
            2 => m.extend((0..rng.range(1, 30)).map(|_| rng.next_u64() as u8)),
            _ => {
                let k = rng.range(0, 15);
                m[k] = rng.next_u64() as u8;
            }
        }
        let _ = b.client.send_raw_record(&mut b.client_stack, &m, 0, b.now);
        if i % 50 == 0 {
            b.pump(20);
        }
    }
    b.pump(200);
    let c = b.service.counters();
    assert_eq!(c.records, c.requests + c.error_records + c.dropped_short + c.dropped_bad_magic);
    assert_eq!(c.responses, c.requests + c.error_records);
}

/// Run the load generator for 200 ms over `kind` with 50 vectors per request and check that
/// every request was answered, none lost, none failed.
fn run_load_over(kind: Kind) -> LoadReport {
    let mut b = bench(10, SpnServiceConfig::default(), kind);
    let spn = b.model.spn().clone();
    let (inputs, _) = sample_u8(&spn, 1000, 0.0, 3);
    let cfg = LoadConfig {
        vectors_per_request: 50,
        window: 4,
        duration: Duration::from_millis(200),
        log: true,
        timeout: Duration::from_secs(1),
    };
    let Bench { client_stack, server_stack, service, client, .. } = &mut b;
    let report = run_load(client_stack, client, &inputs, 10, &cfg, Instant::now, |t| {
        server_stack.poll(t)?;
        service.serve(server_stack)?;
        server_stack.flush()?;
        Ok(())
    })
    .unwrap();
    assert!(report.requests > 10, "{report:?}");
    assert_eq!((report.answered, report.lost, report.errors), (report.requests, 0, 0));
    assert_eq!(report.latency.count(), report.requests);
    report
}

#[test]
fn load_generator_reports_throughput_and_latency() {
    let report = run_load_over(Kind::Udp);
    assert_eq!(report.vectors, report.requests * 50);
    assert!(report.vectors_per_sec() > 0.0 && report.checksum < 0.0);
}

#[test]
fn tcp_answers_records_split_across_segments_once_in_order() {
    // MSS 160: most records span several segments, and segments carry the end of one record
    // and the start of the next.
    let cfg = SpnServiceConfig { workers: 2, queue_depth: 2, max_in_flight: 16 };
    let mut b = bench_mtu(13, cfg, Kind::Tcp, 200);
    check_in_order(&mut b, &requests(13, 150));
    b.pump(200);
    assert_eq!((b.client.counters.answered, b.client.counters.unexpected), (150, 0));
    let conns = b.service.connections();
    assert_eq!((conns.accepted, conns.open, b.service.counters().streams_closed), (1, 1, 0));
}

/// Read every complete response record from `h`'s stream: (id, status, values).
fn read_responses(
    stack: &mut Stack<MemLink>,
    h: net::TcpHandle,
    buf: &mut Vec<u8>,
) -> Vec<(u32, Result<(), u16>, Vec<f64>)> {
    let mut chunk = [0u8; 97];
    while let Ok(net::Recv::Data(n)) = stack.tcp_recv(h, &mut chunk) {
        buf.extend_from_slice(&chunk[..n]);
    }
    let mut out = Vec::new();
    while let Some(len) = record::response_len(buf).filter(|l| *l <= buf.len()) {
        let r = record::decode_response(&buf[..len]).unwrap();
        out.push((r.id, r.status, (0..usize::from(r.count)).map(|i| record::response_value(buf, i)).collect()));
        buf.drain(..len);
    }
    out
}

#[test]
fn tcp_stream_dribbled_in_small_pieces_with_malformed_records() {
    let mut b = bench(6, SpnServiceConfig::default(), Kind::Tcp);
    let h = b.client_stack.tcp_connect("10.0.0.2:5005".parse::<std::net::SocketAddr>().unwrap()).unwrap();
    while b.client_stack.tcp_connect_result(h).unwrap().is_none() {
        b.pump(1);
    }
    let vectors: Vec<u8> = (0..6 * 30).map(|i| (i * 7 % 256) as u8).collect();
    let mut stream = Vec::new();
    let mut rec = Vec::new();
    let mut want = Vec::new();
    for id in 0..40u32 {
        let n = 1 + id as usize % 30;
        if id % 10 == 7 {
            // Wrong vector length: answered with an error, its body skipped.
            encode_request(id, 3, &vectors[..3 * n], None, true, &mut rec).unwrap();
            want.push((id, Err(Status::WrongVectorLength as u16), vec![]));
        } else {
            encode_request(id, 6, &vectors[..6 * n], None, id % 2 == 0, &mut rec).unwrap();
            let out = if id % 2 == 0 { Output::LogLikelihood } else { Output::Likelihood };
            want.push((id, Ok(()), b.direct(&vectors[..6 * n], None, out)));
        }
        stream.extend_from_slice(&rec);
    }
    // Then a record of an unknown version: answered with an error, then the stream is closed.
    encode_request(99, 6, &vectors[..6], None, true, &mut rec).unwrap();
    rec[4] = 9;
    stream.extend_from_slice(&rec);
    want.push((99, Err(Status::BadVersion as u16), vec![]));
    encode_request(100, 6, &vectors[..6], None, true, &mut rec).unwrap();
    stream.extend_from_slice(&rec); // Never read.
    let (mut at, mut piece, mut got, mut buf) = (0, 1, Vec::new(), Vec::new());
    while at < stream.len() {
        let end = (at + piece).min(stream.len());
        at += b.client_stack.tcp_send(h, &stream[at..end]).unwrap();
        piece = piece % 53 + 7;
        b.client_stack.flush().unwrap();
        b.pump(2);
        got.extend(read_responses(&mut b.client_stack, h, &mut buf));
    }
    for _ in 0..500 {
        b.pump(1);
        got.extend(read_responses(&mut b.client_stack, h, &mut buf));
    }
    assert_eq!(got, want);
    assert!(buf.is_empty());
    let c = b.service.counters();
    assert_eq!((c.requests, c.error_records, c.responses, c.streams_closed), (36, 5, 41, 1));
    // The service closed the connection after its answers (our client's connection stays).
    assert!(b.client_stack.tcp_at_eof(h).unwrap());
    assert_eq!(b.service.connections().accepted, 2);
    assert_eq!(b.service.connections().completed, 1);
}

#[test]
fn tcp_load_generator() {
    run_load_over(Kind::Tcp);
}
