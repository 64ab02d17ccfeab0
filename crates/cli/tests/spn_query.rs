//! The SPN service from Linux: `linerate spn serve --tap` in a namespace of its own, queried
//! from that namespace's Linux side with `linerate spn query` and with the pure-Python client
//! (imported by file path, no native module), over UDP and TCP; the answers must equal the
//! local evaluator (`linerate spn eval`). Malformed requests get error records or are counted
//! and dropped, and the service keeps answering.

mod common;

use common::{Scratch, BIN};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The Python client, run from its file.
const PY_CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../py/python/linerate/spn_client.py");
/// The service's address and port on the TAP.
const SERVER: &str = "10.77.0.2:5005";

/// `linerate spn serve` running; stopped (SIGTERM, then SIGKILL) on drop, and the namespace
/// it created deleted.
struct Service {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// Where the clients run.
    ns: String,
    /// True if the service created `ns` (on a TAP).
    owns_ns: bool,
}

impl Service {
    /// The service on a TAP in a namespace of its own named `prefix-…`, with `extra` flags.
    fn start_tap(model: &str, prefix: &str, extra: &[&str]) -> Service {
        let mut cmd = Command::new(BIN);
        cmd.args(["spn", "serve", "--tap", "--model", model, "--transport", "udp,tcp", "--ns-prefix", prefix]);
        cmd.args(extra);
        let s = Service::spawn(cmd, None);
        assert!(s.ns.starts_with(prefix), "namespace {:?}", s.ns);
        s
    }

    /// The service in namespace `ns` on the link `where_` (`--af-packet IFACE`, `--link
    /// af_xdp:IFACE`), at the IPv4 and IPv6 addresses `cidrs`; clients run in `client_ns`.
    fn start_on(model: &str, ns: &str, where_: &[&str], cidrs: (&str, &str), client_ns: &str) -> Service {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns, BIN, "spn", "serve"]).args(where_);
        cmd.args(["--ip", cidrs.0, "--ip6", cidrs.1, "--model", model]);
        cmd.args(["--transport", "udp,tcp"]);
        Service::spawn(cmd, Some(client_ns.to_string()))
    }

    fn spawn(mut cmd: Command, client_ns: Option<String>) -> Service {
        let mut child = cmd
            .args(["--limit-secs", "300"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("linerate runs");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let owns_ns = client_ns.is_none();
        let mut s = Service { child, lines, ns: client_ns.unwrap_or_default(), owns_ns };
        loop {
            let line = s.lines.recv_timeout(Duration::from_secs(30)).expect("serve says it is ready");
            if let Some(ns) = line.strip_prefix("namespace ") {
                s.ns = ns.to_string();
            }
            if line == "ready" {
                break;
            }
        }
        s
    }

    /// Run `program args` in the service's namespace.
    fn exec(&self, program: &str, args: &[&str]) -> Output {
        let o = Command::new("ip").args(["netns", "exec", &self.ns, program]).args(args).output().unwrap();
        eprintln!(
            "--- {program} {}\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&o.stdout).chars().take(2000).collect::<String>(),
            String::from_utf8_lossy(&o.stderr)
        );
        o
    }

    /// Stop the service and return its final report (the last line it prints).
    fn stop(mut self) -> serde_json::Value {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let mut last = String::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(20)) {
            last = l;
        }
        assert!(self.child.wait().unwrap().success(), "serve exits cleanly");
        serde_json::from_str(&last).unwrap_or_else(|e| panic!("the final report {last:?}: {e}"))
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
            for _ in 0..100 {
                if self.child.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // Serve deletes its namespace as it exits; make sure even if it was killed.
        if self.owns_ns && !self.ns.is_empty() {
            let _ = Command::new("ip").args(["netns", "del", &self.ns]).stderr(Stdio::null()).status();
        }
    }
}

fn values(o: &Output) -> Vec<f64> {
    assert!(o.status.success(), "the query failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).lines().map(|l| l.parse::<f64>().unwrap_or_else(|_| panic!("{l:?}"))).collect()
}

fn assert_same(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: number of values");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let rel = (g - w).abs() / g.abs().max(w.abs()).max(1e-300);
        assert!(rel <= 1e-9 || g == w, "{what}: vector {i}: {g} from the service, {w} from spn eval");
    }
}

/// The values of `spn query --json` (its first table: a row per vector, in order).
fn json_values(j: &serde_json::Value) -> Vec<f64> {
    let rows = j["tables"][0]["rows"].as_array().unwrap_or_else(|| panic!("no values table: {j}"));
    rows.iter().map(|r| r["value"].as_f64().unwrap_or(f64::NEG_INFINITY)).collect()
}

/// The exchange's figures in `spn query --json` (its second table's one row).
fn exchange(j: &serde_json::Value) -> &serde_json::Value {
    &j["tables"][1]["rows"][0]
}

/// Write the CSV vectors of `csv` as a float64 .npy array (NaN: missing) at `path`.
fn write_npy(csv: &str, path: &str) {
    let rows: Vec<Vec<f64>> = std::fs::read_to_string(csv)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(|f| f.parse::<f64>().unwrap_or(f64::NAN)).collect())
        .collect();
    let mut h = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {}), }}", rows.len(), rows[0].len());
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out.extend(rows.iter().flatten().flat_map(|v| v.to_le_bytes()));
    std::fs::write(path, out).unwrap();
}

/// Python: `ethtool -K IFACE tx off` (SIOCETHTOOL, ETHTOOL_STXCSUM) without ethtool.
const TX_CSUM_OFF: &str = r#"
import ctypes, fcntl, socket, struct, sys
value = ctypes.create_string_buffer(struct.pack("II", 0x17, 0))
ifr = struct.pack("16sP", sys.argv[1].encode(), ctypes.addressof(value)).ljust(40, b"\0")
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    fcntl.ioctl(s.fileno(), 0x8946, ifr)
"#;

/// Python that imports the client by path and sends malformed requests; prints what came back.
const BAD_REQUESTS: &str = r#"
import importlib.util, socket, struct, sys
spec = importlib.util.spec_from_file_location("spn_client", sys.argv[1])
c = importlib.util.module_from_spec(spec); spec.loader.exec_module(c)
host, port = sys.argv[2].split(":"); addr = (host, int(port)); vars_ = int(sys.argv[3])
def udp(rec, answer=True):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.5); s.connect(addr); s.send(rec)
        try:
            r = s.recv(2048)
        except socket.timeout:
            return "none"
        return "status %d" % c.decode_response(r)[1]
good = c.encode_request(1, [[1] * vars_, [2] * vars_])
print("udp truncated header:", udp(good[:10]))
print("udp bad magic:", udp(b"XXXX" + good[4:]))
print("udp wrong vector length:", udp(c.encode_request(2, [[1] * (vars_ + 3)])))
print("udp truncated body:", udp(good[:-3]))
print("udp bad version:", udp(good[:4] + b"\x09" + good[5:]))
with socket.create_connection(addr, timeout=5) as s:
    s.sendall(c.encode_request(3, [[1] * (vars_ - 1)] * 4) + c.encode_request(4, [[5] * vars_] * 3))
    for want in (3, 4):
        h = c._recv_exact(s, 16); n = struct.unpack_from("<H", h, 6)[0]
        rid, status, vals = c.decode_response(h + c._recv_exact(s, 8 * n))
        print("tcp request %d: status %d, %d values" % (rid, status, len(vals)))
with socket.create_connection(addr, timeout=5) as s:
    s.sendall(b"garbage that is not a record")
    print("tcp garbage: closed" if s.recv(100) == b"" else "tcp garbage: answered")
with socket.create_connection(addr, timeout=5) as s:
    s.sendall(good[:-4])
print("tcp truncated then closed: sent")
try:
    c.query(addr, [[1] * (vars_ + 1)])
    print("query with the wrong model: no error")
except c.SpnError as e:
    print("query with the wrong model:", e)
"#;

/// A generated model (12 inputs) and 700 input vectors with 10% missing values (several UDP
/// requests of at most 182 vectors), and what `linerate spn eval` says of them.
fn model_and_inputs(t: &Scratch) -> (String, String, Vec<f64>) {
    let (model, inputs) = (t.file("m.json"), t.file("x.csv"));
    let g = Command::new(BIN)
        .args(["spn", "generate", "--vars", "12", "--seed", "5", "-o", &model, "--samples", "700"])
        .args(["--samples-out", &inputs, "--missing", "0.1"])
        .output()
        .unwrap();
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let want = values(&Command::new(BIN).args(["spn", "eval", &model, &inputs]).output().unwrap());
    assert_eq!(want.len(), 700);
    (model, inputs, want)
}

/// Namespaces a test created, deleted on drop (with the veth pair between them).
struct Namespaces(Vec<String>);

impl Namespaces {
    fn create(names: &[String]) -> Namespaces {
        let mut made = Namespaces(Vec::new());
        for n in names {
            ip(&["netns", "add", n]);
            made.0.push(n.clone());
        }
        made
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// Run `ip args`, which must succeed.
fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().unwrap();
    assert!(o.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
}

/// Wait (at most 20 tries of 1 s) until `addr` answers `ping` from the clients' namespace
/// (so the clients' neighbour entry for it exists, and its IPv6 address is past duplicate
/// address detection).
fn wait_for_ping(svc: &Service, addr: &str) {
    for _ in 0..20 {
        let o = Command::new("ip").args(["netns", "exec", &svc.ns, "ping", "-c1", "-W1", addr]).output().unwrap();
        if o.status.success() {
            return;
        }
    }
    panic!("{addr} never answered ping");
}

#[test]
fn spn_service_on_af_packet_answers_a_linux_peer_on_a_veth() {
    spn_service_on_a_veth_answers_a_linux_peer("AF_PACKET");
}

#[test]
fn spn_service_on_af_xdp_answers_a_linux_peer_on_a_veth() {
    spn_service_on_a_veth_answers_a_linux_peer("AF_XDP");
}

/// The service on one end of a veth through `kind` (AF_PACKET or AF_XDP), Linux clients
/// (`spn query` over UDP and TCP, the Python client) on the other, answers as the evaluator.
fn spn_service_on_a_veth_answers_a_linux_peer(kind: &str) {
    if !common::can_run(&["python3"]) {
        return;
    }
    let _serial = common::serial();
    let t = Scratch::new(&format!("spn-{}", kind.to_lowercase()));
    let (model, inputs, want) = model_and_inputs(&t);
    let pid = std::process::id();
    let (srv, cli) = (format!("spn-p{pid}-srv"), format!("spn-p{pid}-cli"));
    let _nets = Namespaces::create(&[srv.clone(), cli.clone()]);
    // The service's side of the veth has no address: only linerate answers there.
    ip(&["-n", &srv, "link", "add", "spnsrv0", "type", "veth", "peer", "name", "spncli0", "netns", &cli]);
    ip(&["-n", &srv, "link", "set", "spnsrv0", "up"]);
    ip(&["-n", &cli, "addr", "add", "10.78.0.1/24", "dev", "spncli0"]);
    ip(&["-n", &cli, "addr", "add", "fd78::1/64", "dev", "spncli0", "nodad"]);
    ip(&["-n", &cli, "link", "set", "spncli0", "up"]);
    // Between veths the kernel leaves checksums to an offload that never happens; a real wire
    // carries them computed. Turn Linux's transmit checksum offload off (ethtool -K tx off).
    let o = Command::new("ip").args(["netns", "exec", &cli, "python3", "-c", TX_CSUM_OFF, "spncli0"]).output().unwrap();
    assert!(o.status.success(), "checksum offload off: {}", String::from_utf8_lossy(&o.stderr));
    let where_: &[&str] = if kind == "AF_XDP" { &["--link", "af_xdp:spnsrv0"] } else { &["--af-packet", "spnsrv0"] };
    let svc = Service::start_on(&model, &srv, where_, ("10.78.0.2/24", "fd78::2/64"), &cli);
    // The service's IPv6 address is usable once its duplicate address detection is over.
    wait_for_ping(&svc, "fd78::2");
    for server in ["10.78.0.2:5005", "[fd78::2]:5005"] {
        for transport in ["--udp", "--tcp"] {
            let o = svc.exec(BIN, &["spn", "query", transport, "--server", server, "--input", &inputs]);
            assert_same(&format!("spn query {transport} to {server} over {kind}"), &values(&o), &want);
        }
        let o = svc.exec("python3", &[PY_CLIENT, "--server", server, "--input", &inputs]);
        assert_same(&format!("python client to {server} over {kind}"), &values(&o), &want);
    }
    let report = svc.stop();
    assert_eq!(report["counters"]["vectors"].as_u64(), Some(6 * 700), "{report}");
}

#[test]
fn spn_service_on_a_tap_answers_linux_clients_like_the_local_evaluator() {
    if !common::can_run(&["python3"]) {
        return;
    }
    let _serial = common::serial();
    let t = Scratch::new("spn-query");
    let (model, inputs, want) = model_and_inputs(&t);
    let svc = Service::start_tap(&model, &format!("spn-t{}", std::process::id()), &[]);
    let q_input = |input: &str, extra: &[&str]| {
        let mut args = vec!["spn", "query", "--server", SERVER, "--input", input];
        args.extend_from_slice(extra);
        svc.exec(BIN, &args)
    };
    let q = |extra: &[&str]| q_input(&inputs, extra);
    assert_same("spn query --udp", &values(&q(&["--udp", "--model", &model])), &want);
    assert_same("spn query --tcp", &values(&q(&["--tcp"])), &want);
    let json = q(&["--tcp", "--json", "--vectors", "64"]);
    assert!(json.status.success());
    let j: serde_json::Value = serde_json::from_slice(&json.stdout).expect("--json prints JSON");
    assert_same("spn query --json", &json_values(&j), &want);
    let x = exchange(&j);
    assert_eq!((x["requests"].as_u64(), x["vectors"].as_u64()), (Some(11), Some(700)));
    assert_eq!((x["transport"].as_str(), &x["datagrams_sent"]), (Some("tcp"), &serde_json::Value::Null));
    let npy = t.file("x.npy");
    write_npy(&inputs, &npy);
    assert_same("spn query, .npy input", &values(&q_input(&npy, &["--udp"])), &want);
    assert_same(
        "python client, UDP",
        &values(&svc.exec("python3", &[PY_CLIENT, "--server", SERVER, "--input", &inputs])),
        &want,
    );
    assert_same(
        "python client, TCP",
        &values(&svc.exec("python3", &[PY_CLIENT, "--tcp", "--server", SERVER, "--input", &inputs])),
        &want,
    );
    // The same over IPv6: the TAP host has fd77::2 by default.
    for transport in ["--udp", "--tcp"] {
        let o = svc.exec(BIN, &["spn", "query", transport, "--server", "[fd77::2]:5005", "--input", &inputs]);
        assert_same(&format!("spn query {transport} over IPv6"), &values(&o), &want);
        let mut a = vec![PY_CLIENT, "--server", "[fd77::2]:5005", "--input", &inputs];
        a.extend((transport == "--tcp").then_some("--tcp"));
        assert_same(&format!("python client {transport} over IPv6"), &values(&svc.exec("python3", &a)), &want);
    }

    // Inputs for another model (8 inputs): the service answers error 3, the client says so.
    let other = t.file("other.csv");
    std::fs::write(&other, "1,2,3,4,5,6,7,8\n").unwrap();
    for transport in ["--udp", "--tcp"] {
        let o = svc.exec(BIN, &["spn", "query", transport, "--server", SERVER, "--input", &other]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains("error 3 (vector length differs"), "{err}");
        assert_eq!(err.lines().count(), 1, "one sentence: {err}");
    }
    // No service on that port: linerate answers ICMP port unreachable.
    let o = svc.exec(BIN, &["spn", "query", "--server", "10.77.0.2:5999", "--input", &inputs]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("refused"));
    // The Python client says the same in one line.
    for transport in ["--udp", "--tcp"] {
        let mut a = vec![PY_CLIENT];
        if transport == "--tcp" {
            a.push("--tcp");
        }
        a.extend(["--server", "10.77.0.2:5999", "--input", &inputs]);
        let o = svc.exec("python3", &a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains("refused") && err.lines().count() == 1, "{err}");
    }
    // Bad input: not 8-bit.
    std::fs::write(&other, "1,2,3,4,5,6,7,8,9,10,11,300\n").unwrap();
    let o = svc.exec(BIN, &["spn", "query", "--server", SERVER, "--input", &other]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("300 is not an 8-bit value"));

    let bad = svc.exec("python3", &["-c", BAD_REQUESTS, PY_CLIENT, SERVER, "12"]);
    assert!(bad.status.success(), "{}", String::from_utf8_lossy(&bad.stderr));
    let bad = String::from_utf8_lossy(&bad.stdout).to_string();
    for line in [
        "udp truncated header: none",
        "udp bad magic: none",
        "udp wrong vector length: status 3",
        "udp truncated body: status 6",
        "udp bad version: status 1",
        "tcp request 3: status 3, 0 values",
        "tcp request 4: status 0, 3 values",
        "tcp garbage: closed",
        "tcp truncated then closed: sent",
        "query with the wrong model: request 0: the service answered with error 3",
    ] {
        assert!(bad.contains(line), "expected {line:?} in\n{bad}");
    }
    // The service survived all of that and still answers correctly.
    assert_same("spn query after bad requests", &values(&q(&["--tcp"])), &want);
    assert_same("spn query after bad requests", &values(&q(&["--udp"])), &want);

    let ns = svc.ns.clone();
    let report = svc.stop();
    let c = &report["counters"];
    let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("counter {k} in {report}"));
    assert!(n("dropped_short") >= 1 && n("dropped_bad_magic") >= 1, "{report}");
    assert!(n("error_records") >= 6 && n("streams_closed") >= 1, "{report}");
    assert!(n("vectors") >= 7 * 700, "{report}");
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&list.stdout).contains(&ns), "namespace {ns} left behind");
}

#[test]
fn udp_clients_resend_what_an_impaired_service_loses() {
    if !common::can_run(&["python3"]) {
        return;
    }
    let _serial = common::serial();
    let t = Scratch::new("spn-impaired");
    let (model, inputs, want) = model_and_inputs(&t);
    // The service loses 25% of what it sends (and duplicates 5%): answers and ARP replies.
    let impair = ["--impair", "0.25,0,0.05,0"];
    let svc = Service::start_tap(&model, &format!("spn-i{}", std::process::id()), &impair);
    // Linux resolves the service's MAC first: an ARP reply lost twice in a row would outlast
    // the query's tries (Linux asks again after 1 s), which is not what this test is about.
    wait_for_ping(&svc, "10.77.0.2");
    let o = svc.exec(BIN, &["spn", "query", "--server", SERVER, "--input", &inputs, "--timeout", "0.2", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json prints JSON");
    assert_same("spn query over a lossy service", &json_values(&j), &want);
    assert!(exchange(&j)["resent"].as_u64().unwrap() > 0, "nothing was resent: {j}");
    let py = svc.exec("python3", &[PY_CLIENT, "--server", SERVER, "--input", &inputs, "--timeout", "0.2"]);
    assert_same("python client over a lossy service", &values(&py), &want);
    let tcp = svc.exec(BIN, &["spn", "query", "--tcp", "--server", SERVER, "--input", &inputs, "--timeout", "5"]);
    assert_same("spn query --tcp over a lossy service", &values(&tcp), &want);
    let report = svc.stop();
    // 7 UDP requests of 104 vectors from each client and one TCP request, plus the resends
    // (requests are not lost: only what the service sends is impaired).
    let resent = exchange(&j)["resent"].as_u64().unwrap();
    assert!(report["counters"]["requests"].as_u64().unwrap() >= 7 + 7 + 1 + resent, "{report}");
}

/// Python: `clients` concurrent UDP clients, each keeping 8 requests of 64 vectors
/// outstanding (no resends), `reqs` requests each. Prints one JSON line per client: the
/// request ids in the order their answers came, and whether each answer held the values of
/// the first answer to the same vectors.
const ORDER_CHECK: &str = r#"
import importlib.util, json, socket, struct, sys, threading
spec = importlib.util.spec_from_file_location("spn_client", sys.argv[1])
c = importlib.util.module_from_spec(spec); spec.loader.exec_module(c)
host, port = sys.argv[2].split(":"); addr = (host, int(port))
vars_, clients, reqs = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
out = [None] * clients
def client(k):
    rows = [[(k * 7 + i * 3 + j * 5) % 256 for j in range(vars_)] for i in range(64)]
    recs = [c.encode_request(i, rows) for i in range(reqs)]
    got, same, first = [], True, None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(addr); s.settimeout(1.0)
        sent = outstanding = 0
        while len(got) < reqs:
            while sent < reqs and outstanding < 8:
                s.send(recs[sent]); sent += 1; outstanding += 1
            try:
                rid, status, vals = c.decode_response(s.recv(4096))
            except socket.timeout:
                if sent == reqs:
                    break
                outstanding = 0  # lost: count them at the end, keep going
                continue
            outstanding -= 1
            got.append(rid)
            first = first or vals
            same = same and status == 0 and vals == first
    out[k] = {"ids": got, "same": same}
ts = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
[t.start() for t in ts]; [t.join() for t in ts]
print(json.dumps(out))
"#;

#[test]
fn two_workers_answer_every_request_once_in_order_per_client_on_a_learned_model() {
    if !common::can_run(&["python3"]) {
        return;
    }
    let _serial = common::serial();
    let t = Scratch::new("spn-workers");
    let (model, inputs) = (t.file("m.json"), t.file("x.csv"));
    let g = Command::new(BIN)
        .args(["spn", "generate", "--shape", "learnspn", "--vars", "10", "--seed", "3", "-o", &model])
        .args(["--samples", "900", "--samples-out", &inputs, "--missing", "0.05"])
        .output()
        .unwrap();
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let want = values(&Command::new(BIN).args(["spn", "eval", &model, &inputs]).output().unwrap());
    assert_eq!(want.len(), 900);
    let svc = Service::start_tap(&model, &format!("spn-w{}", std::process::id()), &["--workers", "2"]);
    for transport in ["--udp", "--tcp"] {
        let o = svc.exec(BIN, &["spn", "query", transport, "--server", SERVER, "--input", &inputs, "--json"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json prints JSON");
        assert_same(&format!("spn query {transport}, 2 workers, LearnSPN model"), &json_values(&j), &want);
        let x = exchange(&j);
        assert!(x["rate"].as_f64().unwrap() > 0.0 && x["latency_p99"].as_f64().unwrap() > 0.0, "{j}");
    }
    let (clients, reqs) = (3usize, 200usize);
    let o = svc.exec("python3", &["-c", ORDER_CHECK, PY_CLIENT, SERVER, "10", &clients.to_string(), &reqs.to_string()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let per: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).expect("the clients print JSON");
    let mut answered = 0;
    for (k, c) in per.iter().enumerate() {
        let ids: Vec<u64> = c["ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "client {k}: answers out of order or twice: {ids:?}");
        assert!(c["same"].as_bool().unwrap(), "client {k}: an answer differed");
        let lost = reqs - ids.len();
        assert!(lost * 100 < reqs, "client {k}: {lost} of {reqs} requests unanswered (1% allowed)");
        answered += ids.len() as u64;
    }
    let report = svc.stop();
    assert_eq!(report["workers"].as_u64(), Some(2), "{report}");
    let c = &report["counters"];
    // Every request taken in was answered exactly once (both CLI exchanges and the clients).
    assert_eq!(c["requests"], c["responses"], "{report}");
    assert!(c["responses"].as_u64().unwrap() >= answered, "{report}");
    assert!(report["vectors_per_s"].as_f64().unwrap() > 0.0 && report["latency_p99_s"].as_f64().unwrap() > 0.0);
}
