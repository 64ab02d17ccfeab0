//! `linerate bench collective --veth`: two ranks in two network namespaces joined by a veth
//! pair the benchmark creates (and always deletes), linerate's ranks on the veth through
//! AF_XDP (or AF_PACKET) beside OpenMPI's TCP transport over the same veth through the
//! kernel, measured in the same run. Each namespace's veth end has a kernel address for
//! OpenMPI; linerate's ranks have addresses of their own, which AF_XDP's steering program
//! takes (the kernel keeps its own). OpenMPI's second rank runs in the other namespace
//! through `ip netns exec` in an MPMD `mpirun` whose PMIx server accepts connections over the
//! veth.

use super::{bps_cell, collect_ranks, parse_rows, ratio, us_cell, Figures};
use crate::output::{Cell, Table};
use std::path::Path;
use std::process::Stdio;
use testbed::Netns;

/// The subnet of the veth (kernel addresses .1 and .2, linerate's ranks .11 and .12).
const SUBNET: &str = "10.91.0";

/// The two namespaces joined by the veth `lrcv0` / `lrcv1` (deleted, with the veth, on drop).
struct Rig {
    ns: [Netns; 2],
}

impl Rig {
    fn new() -> Result<Rig, String> {
        let e = |e: testbed::TestbedError| format!("setting up the veth: {e}");
        let ns = [Netns::create("lr-bcv").map_err(e)?, Netns::create("lr-bcv").map_err(e)?];
        ns[0]
            .ip(&["link", "add", "lrcv0", "type", "veth", "peer", "name", "lrcv1", "netns", ns[1].name()])
            .map_err(e)?;
        for (i, n) in ns.iter().enumerate() {
            let dev = format!("lrcv{i}");
            n.ip(&["addr", "add", &format!("{SUBNET}.{}/24", i + 1), "dev", &dev]).map_err(e)?;
            n.ip(&["link", "set", &dev, "up"]).map_err(e)?;
        }
        Ok(Rig { ns })
    }
}

/// linerate's two ranks, one per namespace on `kind:lrcv<r>`.
fn ours(rig: &Rig, kind: &str, max_bytes: usize) -> Result<(Figures, Vec<(String, u64)>), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let exe = exe.to_str().ok_or("the executable's path is not UTF-8")?;
    let children: Vec<std::process::Child> = (0..2)
        .map(|r| {
            rig.ns[r]
                .command(exe)
                .args(["bench-peer", "collective"])
                .env("LINERATE_RANK", r.to_string())
                .env("LINERATE_WORLD_SIZE", "2")
                .env("LINERATE_LINK", format!("{kind}:lrcv{r}"))
                .env("LINERATE_IP", format!("{SUBNET}.{}/24", 11 + r))
                .env("LINERATE_ROOT_ADDR", format!("{SUBNET}.11"))
                .env("LINERATE_BENCH_MAX_BYTES", max_bytes.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    collect_ranks(children)
}

/// OpenMPI's two ranks over its TCP transport on the veth: `mpirun` in the first namespace,
/// its second rank moved to the other by `ip netns exec`.
fn openmpi(rig: &Rig, bin: &Path, max_bytes: usize) -> Result<Figures, String> {
    let bin = bin.to_str().ok_or("the peer's path is not UTF-8")?;
    let max = max_bytes.min(u64::MAX as usize).to_string();
    let subnet = format!("{SUBNET}.0/24");
    let out = rig.ns[0]
        .command("mpirun")
        // The rank in the other namespace reaches the PMIx server over the veth, not loopback.
        .env("PMIX_MCA_ptl_tcp_remote_connections", "1")
        .env("PMIX_MCA_ptl_tcp_if_include", &subnet)
        .args(["--allow-run-as-root", "--oversubscribe", "--mca", "pml", "ob1", "--mca", "btl", "self,tcp"])
        .args(["--mca", "btl_tcp_if_include", &subnet])
        .args(["-x", "PMIX_MCA_ptl_tcp_remote_connections", "-x", "PMIX_MCA_ptl_tcp_if_include"])
        .args(["-np", "1", bin, &max, ":", "-np", "1", "ip", "netns", "exec", rig.ns[1].name(), bin, &max])
        .output()
        .map_err(|e| format!("mpirun is not available ({e})"))?;
    if !out.status.success() {
        return Err(format!("mpirun over the veth failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(parse_rows(&String::from_utf8_lossy(&out.stdout)))
}

/// The veth mode's tables: all-reduce and broadcast times, send/recv goodput, linerate on
/// `kind` beside OpenMPI's TCP over the same veth (`peer`: the built OpenMPI program, or why
/// there is none), and rank 0's counters.
pub(super) fn measure(
    kind: &str,
    peer: &Result<std::path::PathBuf, String>,
    max_bytes: usize,
) -> Result<Vec<Table>, String> {
    let rig = Rig::new()?;
    let (us, counters) = ours(&rig, kind, max_bytes)?;
    let (tcp, why) = match peer.as_ref().map_err(String::clone).and_then(|bin| openmpi(&rig, bin, max_bytes)) {
        Ok(f) => (f, String::new()),
        Err(e) => (Figures::new(), format!(" [OpenMPI: {e}]")),
    };
    let sizes = |v: Vec<usize>| v.into_iter().filter(|&b| b <= max_bytes).collect::<Vec<_>>();
    let mut t = Table::new(
        &format!(
            "2 ranks in two namespaces over a veth: linerate on {kind} vs OpenMPI TCP (kernel) on the same veth, \
             median time (operation + barrier); ratio = linerate / OpenMPI{why}"
        ),
        &["op", "bytes", "linerate", "OpenMPI tcp", "ratio"],
    );
    for op in ["allreduce", "bcast"] {
        for b in sizes(collective::bench::fig6_sizes()) {
            let k = (b, op.to_string());
            let (l, o) = (us.get(&k).copied(), tcp.get(&k).copied());
            t.row(vec![Cell::from(op), Cell::bytes(b as u64), us_cell(l), us_cell(o), ratio(l, o)]);
        }
    }
    let mut tables = vec![t];
    let mut t = Table::new(
        &format!(
            "send/recv rank 0 -> 1 over the veth, goodput (until a 4-byte reply); linerate on {kind}, linerate TCP = \
             one plain connection of the same stacks; ratio = linerate / peer{why}"
        ),
        &["bytes", "linerate", "linerate TCP", "OpenMPI tcp", "ratio vs linerate TCP", "ratio vs OpenMPI tcp"],
    );
    for b in sizes(collective::bench::fig5_sizes()) {
        let get = |f: &Figures, op: &str| f.get(&(b, op.to_string())).copied();
        let gbps = |us: Option<f64>| us.filter(|&u| u > 0.0).map(|u| b as f64 * 8.0 / (u * 1e-6));
        let (l, lt, o) = (gbps(get(&us, "sendrecv")), gbps(get(&us, "tcp")), gbps(get(&tcp, "sendrecv")));
        t.row(vec![Cell::bytes(b as u64), bps_cell(l), bps_cell(lt), bps_cell(o), ratio(l, lt), ratio(l, o)]);
    }
    tables.push(t);
    let mut t =
        Table::new(&format!("collective layer counters of rank 0 over the veth ({kind})"), &["counter", "value"]);
    for (k, v) in counters {
        t.row(vec![Cell::from(k), Cell::count_u64(v)]);
    }
    tables.push(t);
    Ok(tables)
}
