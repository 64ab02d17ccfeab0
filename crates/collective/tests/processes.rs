//! Ranks as separate processes on one machine, joined by the shared-memory fabric and
//! started the way a launcher starts them (environment variables). Runs on the real clock:
//! nothing here asserts a duration; a watchdog only bounds a broken run.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const RANK: &str = env!("CARGO_BIN_EXE_lr-collective-rank");

fn fabric_name(tag: &str) -> String {
    format!("coll-test-{tag}-{}", std::process::id())
}

/// Starts `n` ranks with `vars(rank)` as their launcher environment and waits for all;
/// returns (exit code, stdout) per rank.
fn launch(n: usize, extra: &[&str], vars: impl Fn(usize) -> Vec<(String, String)>) -> Vec<(Option<i32>, String)> {
    let children: Vec<Child> = (0..n)
        .map(|r| {
            let mut cmd = Command::new(RANK);
            cmd.args(extra).stdout(Stdio::piped()).stderr(Stdio::inherit());
            for k in ["LINERATE_RANK", "LINERATE_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"] {
                cmd.env_remove(k);
            }
            cmd.envs(vars(r));
            cmd.spawn().unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut out = Vec::new();
    for mut c in children {
        loop {
            if c.try_wait().unwrap().is_some() {
                break;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let o = c.wait_with_output().unwrap();
        out.push((o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned()));
    }
    out
}

fn explicit(n: usize) -> impl Fn(usize) -> Vec<(String, String)> {
    move |r| vec![("LINERATE_RANK".into(), r.to_string()), ("LINERATE_WORLD_SIZE".into(), n.to_string())]
}

#[test]
fn four_processes_run_every_collective_on_the_shm_fabric() {
    let name = fabric_name("four");
    let res = launch(4, &["--fabric", &name], explicit(4));
    for (r, (code, out)) in res.iter().enumerate() {
        assert_eq!(*code, Some(0), "rank {r}: {out}");
        assert!(out.contains(&format!("RESULT rank={r} ok")), "rank {r}: {out}");
    }
}

#[test]
fn ranks_take_rank_and_size_from_openmpi_variables() {
    let name = fabric_name("ompi");
    let res = launch(3, &["--fabric", &name, "--elems", "1000"], |r| {
        vec![("OMPI_COMM_WORLD_RANK".into(), r.to_string()), ("OMPI_COMM_WORLD_SIZE".into(), "3".into())]
    });
    for (r, (code, out)) in res.iter().enumerate() {
        assert_eq!(*code, Some(0), "rank {r}: {out}");
        assert!(out.contains(&format!("RESULT rank={r} ok")), "rank {r}: {out}");
    }
}

#[test]
fn a_rank_that_dies_mid_all_reduce_is_named_by_the_root() {
    let name = fabric_name("die");
    let res = launch(4, &["--fabric", &name, "--die-rank", "2", "--timeout-ms", "1500"], explicit(4));
    assert_eq!(res[2].0, Some(3), "the dying rank: {}", res[2].1);
    for r in [0usize, 1, 3] {
        let (code, out) = &res[r];
        assert_eq!(*code, Some(4), "rank {r} should report a failed operation: {out}");
        assert!(out.contains("all-reduce timed out"), "rank {r}: {out}");
    }
    // The root waits for rank 2's contribution; the others wait for the root's broadcast.
    assert!(res[0].1.contains("waiting for ranks [2]"), "{}", res[0].1);
    // The dead rank never removed the ring it created (to rank 3) nor its doorbell: clean
    // up after it.
    for left in [format!("/dev/shm/linerate-{name}-2-3"), format!("/dev/shm/linerate-{name}-bell-2")] {
        assert!(std::path::Path::new(&left).exists(), "expected the dead rank's {left}");
        std::fs::remove_file(&left).unwrap();
    }
}

/// `mpirun` on PATH; a test that cannot run fails and says why, whoever runs it (`make
/// setup` installs Debian's openmpi-bin).
fn mpirun() -> Option<std::path::PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("mpirun")).find(|c| c.is_file()));
    match found {
        Some(p) => Some(p),
        None => panic!("NOT RUN: mpirun is not installed (make setup installs openmpi-bin)"),
    }
}

#[test]
fn four_ranks_under_the_real_mpirun() {
    let Some(mpirun) = mpirun() else { return };
    let name = fabric_name("mpirun");
    let mut cmd = Command::new(mpirun);
    // Four ranks on two cores: oversubscribe; tests run as root in CI.
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "4", RANK, "--fabric", &name, "--elems", "2000"]);
    for k in ["LINERATE_RANK", "LINERATE_WORLD_SIZE"] {
        cmd.env_remove(k);
    }
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "mpirun failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for r in 0..4 {
        assert!(stdout.contains(&format!("RESULT rank={r} ok")), "rank {r} missing in: {stdout}");
    }
}

#[test]
fn a_rank_killed_mid_all_reduce_is_named_by_the_others_within_the_timeout() {
    use std::io::BufRead;
    let (n, stall, timeout_ms) = (4usize, 1usize, 2000u64);
    let name = fabric_name("kill");
    let mut children: Vec<Child> = (0..n)
        .map(|r| {
            let mut cmd = Command::new(RANK);
            cmd.args(["--fabric", &name, "--stall-rank", &stall.to_string(), "--elems", "200000"]);
            cmd.args(["--timeout-ms", &timeout_ms.to_string()]);
            cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
            cmd.envs(explicit(n)(r));
            cmd.spawn().unwrap()
        })
        .collect();
    // Wait (bounded) until rank 1 is in the middle of the ring all-reduce, then SIGKILL it.
    let out = children[stall].stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx.recv_timeout(Duration::from_secs(60));
    children[stall].kill().unwrap();
    let killed = Instant::now();
    let _ = children[stall].wait();
    let line = line.unwrap_or_else(|e| {
        children.iter_mut().for_each(|c| drop(c.kill()));
        panic!("rank {stall} never reported being mid-all-reduce: {e}")
    });
    assert!(line.starts_with(&format!("STALLED rank={stall} step=")), "{line}");
    let mut outs = Vec::new();
    for (r, c) in children.into_iter().enumerate().filter(|&(r, _)| r != stall) {
        let mut c = c;
        // Bounded: the operation's timeout plus generous slack for a loaded machine.
        while c.try_wait().unwrap().is_none() && killed.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = c.kill();
        let o = c.wait_with_output().unwrap();
        outs.push((r, o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned()));
    }
    eprintln!("killed {line}; the others: {outs:?}");
    for (r, code, out) in &outs {
        assert_eq!(*code, Some(4), "rank {r} should report a failed all-reduce: {out}");
        assert!(out.contains("all-reduce timed out after 2s in step "), "rank {r}: {out}");
    }
    // Rank 2 follows rank 1 on the ring: it waits for rank 1 itself.
    let (_, _, next) = outs.iter().find(|o| o.0 == (stall + 1) % n).unwrap();
    assert!(next.contains(&format!("waiting for ranks [{stall}]")), "{next}");
    // The killed rank left its rings behind: clean up after it.
    if let Ok(dir) = std::fs::read_dir("/dev/shm") {
        let prefix = format!("linerate-{name}-");
        for e in dir.flatten().filter(|e| e.file_name().to_string_lossy().starts_with(&prefix)) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
