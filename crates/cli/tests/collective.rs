//! `linerate collective launch` and `linerate kmeans` end to end.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_linerate");

/// Runs `linerate collective launch -n 3 LAUNCH_ARGS -- sh -c "echo ECHO"` and returns what
/// the ranks printed (the launch must succeed).
fn launch_echo(launch_args: &[&str], echo: &str) -> String {
    let out = Command::new(BIN)
        .args(["collective", "launch", "-n", "3"])
        .args(launch_args)
        .args(["--", "sh", "-c", &format!("echo {echo}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn launch_gives_every_rank_its_environment() {
    let text = launch_echo(
        &["--fabric", "cli-launch-test"],
        "rank=$LINERATE_RANK size=$LINERATE_WORLD_SIZE fabric=$LINERATE_FABRIC",
    );
    for r in 0..3 {
        assert!(text.contains(&format!("rank={r} size=3 fabric=cli-launch-test")), "{text}");
    }
}

#[test]
fn launch_reports_failed_ranks() {
    let out = Command::new(BIN)
        .args(["collective", "launch", "-n", "2", "--", "sh", "-c", "exit $((LINERATE_RANK * 3))"])
        .output()
        .unwrap();
    // As mpirun: the failed rank is named and its exit status is the launcher's.
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rank 1 exited with status 3"), "{err}");
}

#[test]
fn launch_on_links_gives_each_rank_its_link_address_and_root() {
    let text = launch_echo(
        &["--link", "af_xdp:veth{rank}", "--ip", "10.9.0.1/24"],
        "rank=$LINERATE_RANK link=$LINERATE_LINK ip=$LINERATE_IP root=$LINERATE_ROOT_ADDR",
    );
    for r in 0..3 {
        let want = format!("rank={r} link=af_xdp:veth{r} ip=10.9.0.{}/24 root=10.9.0.1:7470", r + 1);
        assert!(text.contains(&want), "{text}");
    }
}

#[test]
fn launch_on_links_over_ipv6_gives_each_rank_both_addresses_and_the_ipv6_root() {
    let text = launch_echo(
        &["--link", "af_xdp:veth{rank}", "--ip", "10.9.0.1/24,fd09::1/64", "--root", "fd09::1"],
        "rank=$LINERATE_RANK ip=$LINERATE_IP root=$LINERATE_ROOT_ADDR",
    );
    for r in 0..3 {
        let want = format!("rank={r} ip=10.9.0.{}/24,fd09::{}/64 root=[fd09::1]:7470", r + 1, r + 1);
        assert!(text.contains(&want), "{text}");
    }
}

#[test]
fn bad_link_values_are_refused_with_one_sentence() {
    let cases: [(&[&str], &str); 6] = [
        (&["--link", "veth0", "--ip", "10.9.0.1/24"], "is not KIND:NAME"),
        (&["--link", "af_xdp:v{rank}", "--ip", "10.9.0.254/24"], "3 consecutive addresses from it do not fit"),
        (&["--link", "af_xdp:v{rank}", "--ip", "10.9.0.1"], "needs a prefix length"),
        (&["--link", "af_xdp:v{rank}", "--ip", "10.9.0.1/24", "--root", "x"], "root \"x\" is not an IP address"),
        (&["--link", "af_xdp:v{rank}", "--ip", "10.9.0.1/24,fd09::ffff:ffff:ffff:fffe/64"], "do not fit its prefix"),
        (&["--link", "af_xdp:v{rank}", "--ip", "10.9.0.1/24", "--root", "fd09::1"], "has no IPv6 address"),
    ];
    for (flags, want) in cases {
        let out = Command::new(BIN)
            .args(["collective", "launch", "-n", "3"])
            .args(flags)
            .args(["--", "true"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want), "{flags:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{flags:?}: {err}");
    }
    let out = Command::new(BIN).args(["kmeans", "--rank", "1", "--world-size", "2"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("name it with --link"), "{err}");
}

fn kmeans(ranks: usize) -> String {
    let out = Command::new(BIN)
        .args(["kmeans", "--ranks", &ranks.to_string(), "--samples", "20000", "--iters", "4"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("per iteration") && text.contains("communication"), "{text}");
    text.lines().find(|l| l.starts_with("centres checksum")).unwrap_or_default().to_string()
}

#[test]
fn kmeans_gives_the_same_centres_on_1_2_and_4_ranks() {
    let one = kmeans(1);
    assert!(!one.is_empty());
    assert_eq!(kmeans(2), one);
    assert_eq!(kmeans(4), one);
}

/// Two well-separated clusters of 200 two-feature samples and two initial centres, as CSV.
fn two_clusters(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (data, init) = (dir.join("x.csv"), dir.join("c.csv"));
    let mut text = String::from("a,b\n");
    for i in 0..200 {
        let base = if i % 2 == 0 { 0.0 } else { 100.0 };
        text.push_str(&format!("{},{}\n", base + (i % 7) as f64, base - (i % 5) as f64));
    }
    std::fs::write(&data, text).unwrap();
    std::fs::write(&init, "1,1\n90,90\n").unwrap();
    (data, init)
}

#[test]
fn kmeans_json_and_centres_out_hold_the_same_centres() {
    let dir = std::env::temp_dir().join(format!("lr-cli-kmjson-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (data, init) = two_clusters(&dir);
    let npy = dir.join("centres.npy");
    let run = |json: bool| {
        let mut c = Command::new(BIN);
        c.args(["kmeans", "-k", "2", "--ranks", "2", "--iters", "5", "--data"]).arg(&data).arg("--init").arg(&init);
        if json {
            c.arg("--json").arg("--centres-out").arg(&npy);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let v: serde_json::Value = serde_json::from_str(&run(true)).expect("--json prints one JSON document");
    let tables = v["tables"].as_array().expect("the tables format");
    let figures = &tables[0];
    assert_eq!(figures["rows"][0]["samples"], 200);
    assert_eq!(figures["rows"][0]["features"], 2);
    assert!(figures["rows"][0]["per_iteration"].as_f64().is_some_and(|s| s > 0.0), "{figures}");
    assert_eq!(figures["units"]["per_iteration"], "s");
    // The checksum is the one the text output prints.
    let text = run(false);
    let sum = figures["summary"]["centres_checksum"].as_str().expect("checksum");
    assert!(text.contains(&format!("centres checksum {sum}")), "{text} vs {sum}");
    // The centres in the JSON are the ones written to the .npy file, exactly.
    let rows = tables[1]["rows"].as_array().expect("a row per centre");
    let json: Vec<f32> =
        rows.iter().flat_map(|r| ["feature_0", "feature_1"].map(|k| r[k].as_f64().expect("a number") as f32)).collect();
    let m = accel::matrix::load(&npy).expect("the .npy reads back");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!((m.rows, m.cols), (2, 2));
    assert_eq!(m.data, json);
    // And they are the two clusters' means.
    assert!((m.data[0] - 3.0).abs() < 0.1 && (m.data[1] + 2.0).abs() < 0.1, "{:?}", m.data);
    assert!((m.data[2] - 103.0).abs() < 0.1 && (m.data[3] - 98.0).abs() < 0.1, "{:?}", m.data);
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    // The reader is gone before the command writes (as `| head -c 10` once it has its bytes).
    let mut child = Command::new(BIN)
        .args(["kmeans", "--samples", "2000", "--iters", "2", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}: {err}", out.status);
}

#[test]
fn kmeans_reads_csv_data_and_centres() {
    let dir = std::env::temp_dir().join(format!("lr-cli-km-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (data, init) = two_clusters(&dir);
    let run = |ranks: &str| {
        let out = Command::new(BIN)
            .args(["kmeans", "-k", "2", "--ranks", ranks, "--iters", "5", "--data"])
            .arg(&data)
            .arg("--init")
            .arg(&init)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let one = run("1");
    assert!(one.contains("200 samples x 2 features, k = 2"), "{one}");
    let sum = |t: &str| t.lines().find(|l| l.starts_with("centres checksum")).unwrap_or_default().to_string();
    assert_eq!(sum(&run("2")), sum(&one));
    std::fs::write(&init, "1,1,1\n").unwrap();
    let out =
        Command::new(BIN).args(["kmeans", "-k", "2", "--data"]).arg(&data).arg("--init").arg(&init).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected k = 2 rows of 2"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kmeans_ranks_show_their_collective_counters_in_stats() {
    let dir = std::env::temp_dir().join(format!("lr-cli-km-stats-{}", std::process::id()));
    let mut run = Command::new(BIN)
        .env("LINERATE_RUN_DIR", &dir)
        .args(["kmeans", "--ranks", "2", "--samples", "200000", "--iters", "400"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Poll `linerate stats` (bounded) until both ranks have published.
    let mut text = String::new();
    for _ in 0..200 {
        let out = Command::new(BIN).env("LINERATE_RUN_DIR", &dir).args(["stats", "--all"]).output().unwrap();
        text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains("rank0") && text.contains("rank1") && text.contains("ops_completed") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = run.kill();
    let _ = run.wait();
    let _ = std::fs::remove_dir_all(&dir);
    // Killed, the run left its fabric's ring behind: remove it.
    let ring = format!("/dev/shm/linerate-lr-kmeans-{}-0-1", run.id());
    assert!(std::path::Path::new(&ring).exists(), "expected the killed run's ring {ring}");
    let _ = std::fs::remove_file(&ring);
    // And each rank's doorbell.
    for r in 0..2 {
        let _ = std::fs::remove_file(format!("/dev/shm/linerate-lr-kmeans-{}-bell-{r}", run.id()));
    }
    assert!(text.contains("rank0") && text.contains("rank1"), "{text}");
    for c in ["msgs_sent", "ops_completed", "unmatched_pauses"] {
        assert!(text.contains(c), "{c} missing: {text}");
    }
}

/// `bench collective --veth` at small sizes (not timed: the tables' shape, and numbers from
/// both sides at every size): linerate's ranks on AF_XDP and OpenMPI's TCP over one veth
/// between two namespaces the benchmark creates and deletes.
#[test]
fn bench_collective_over_a_veth_measures_linerate_and_openmpi_side_by_side() {
    if let Some(why) = testbed::netns_unavailable() {
        panic!("NOT RUN: {why} (run as root)");
    }
    let child = Command::new(BIN)
        .args(["bench", "collective", "--veth", "--max-bytes", "1024", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    let rows = |i: usize| v["tables"][i]["rows"].as_array().cloned().unwrap_or_default();
    let title = v["tables"][0]["title"].as_str().unwrap_or_default();
    assert!(!title.contains("[OpenMPI:"), "OpenMPI did not run: {title}");
    let latency = rows(0);
    assert_eq!(latency.len(), 2 * 3, "all-reduce and broadcast at 64, 512 and 1024 bytes: {v}");
    for r in &latency {
        for k in ["linerate", "openmpi_tcp", "ratio"] {
            assert!(r[k].as_f64().is_some_and(|x| x > 0.0), "{k} in {r}");
        }
    }
    let goodput = rows(1);
    assert_eq!(goodput.len(), 1, "send/recv at 1 KiB: {v}");
    for k in ["linerate", "linerate_tcp", "openmpi_tcp", "ratio_vs_openmpi_tcp"] {
        assert!(goodput[0][k].as_f64().is_some_and(|x| x > 0.0), "{k} in {}", goodput[0]);
    }
    let after = Command::new("ip").args(["netns", "list"]).output().unwrap().stdout;
    let mine = format!("lr-bcv-{pid}-");
    assert!(!String::from_utf8_lossy(&after).contains(&mine), "a namespace was left behind");
}
