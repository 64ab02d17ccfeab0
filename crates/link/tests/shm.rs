//! The shared-memory cable: between two threads, between two processes, peer loss, bad headers.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant as StdInstant};

use link::shm::ShmLink;
use link::{FrameBatch, Instant, Link, LinkConfig, LinkError};

const N: u32 = 100_000;
const LIMIT: Duration = Duration::from_secs(30);

fn unique(tag: &str) -> String {
    static K: AtomicUsize = AtomicUsize::new(0);
    format!("it-{tag}-{}-{}", std::process::id(), K.fetch_add(1, Ordering::Relaxed))
}

fn fill(seq: u32, buf: &mut [u8]) -> usize {
    let len = 60 + (seq as usize * 131) % 1455;
    buf[..4].copy_from_slice(&seq.to_le_bytes());
    for (i, b) in buf[4..len].iter_mut().enumerate() {
        *b = (seq as usize).wrapping_mul(7).wrapping_add(i) as u8;
    }
    len
}

fn check(seq: u32, f: &[u8]) -> Result<(), String> {
    let mut want = [0u8; 1600];
    let len = fill(seq, &mut want);
    if f != &want[..len] {
        return Err(format!("frame {seq} differs (len {} vs {len})", f.len()));
    }
    Ok(())
}

fn send_all(link: &mut ShmLink) -> Result<(), String> {
    let start = StdInstant::now();
    let mut b = FrameBatch::new(32, 1518);
    let mut seq = 0;
    while seq < N || !b.is_empty() {
        if start.elapsed() > LIMIT {
            return Err(format!("sender timed out at {seq}"));
        }
        while seq < N && !b.is_full() {
            assert!(b.push_with(|s| fill(seq, s)));
            seq += 1;
        }
        if link.tx_batch(Instant::ZERO, &mut b).map_err(|e| e.to_string())? == 0 {
            std::thread::yield_now();
        }
    }
    Ok(())
}

fn receive_all(link: &mut ShmLink) -> Result<(), String> {
    let start = StdInstant::now();
    let mut b = FrameBatch::new(32, 1518);
    let mut next = 0;
    while next < N {
        if start.elapsed() > LIMIT {
            return Err(format!("receiver timed out at {next}"));
        }
        b.clear();
        if link.rx_batch(Instant::ZERO, &mut b).map_err(|e| e.to_string())? == 0 {
            std::thread::yield_now();
        }
        for f in b.iter() {
            check(next, f)?;
            next += 1;
        }
    }
    Ok(())
}

#[test]
fn two_threads_move_100k_frames() {
    let name = unique("thr");
    let mut a = ShmLink::create(&name, LinkConfig::default().depth(256)).unwrap();
    let n2 = name.clone();
    let rx = std::thread::spawn(move || {
        let mut b = ShmLink::open(&n2, Duration::from_secs(5)).map_err(|e| e.to_string())?;
        receive_all(&mut b)?;
        Ok::<_, String>(b)
    });
    send_all(&mut a).unwrap();
    let mut b = rx.join().unwrap().unwrap();
    assert_eq!(a.stats().tx_frames, N as u64);
    assert_eq!(b.stats().rx_frames, N as u64);
    assert_eq!(a.kind(), "shm");
    // The peer goes away: B drains what is left, then sees Closed both ways.
    let mut batch = FrameBatch::new(4, 1518);
    assert!(batch.push(b"last words"));
    a.tx_batch(Instant::ZERO, &mut batch).unwrap();
    drop(a);
    let mut got = FrameBatch::new(4, 1518);
    assert_eq!(b.rx_batch(Instant::ZERO, &mut got).unwrap(), 1);
    assert!(matches!(b.rx_batch(Instant::ZERO, &mut got), Err(LinkError::Closed)));
    assert!(batch.push(b"anyone?"));
    assert!(matches!(b.tx_batch(Instant::ZERO, &mut batch), Err(LinkError::Closed)));
}

/// The child side of `two_processes_move_100k_frames`; does nothing unless started by it.
#[test]
fn child_process_side() {
    let Ok(name) = std::env::var("LRT_SHM_CHILD") else {
        return;
    };
    let mut b = ShmLink::open(&name, Duration::from_secs(10)).unwrap();
    receive_all(&mut b).unwrap();
    let mut ack = FrameBatch::new(1, 64);
    assert!(ack.push(b"ack from child"));
    assert_eq!(b.tx_batch(Instant::ZERO, &mut ack).unwrap(), 1);
}

#[test]
fn two_processes_move_100k_frames() {
    let name = unique("proc");
    let mut a = ShmLink::create(&name, LinkConfig::default().depth(512)).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_process_side", "--nocapture", "--test-threads=1"])
        .env("LRT_SHM_CHILD", &name)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let sent = send_all(&mut a);
    let mut ack = FrameBatch::new(1, 1518);
    let start = StdInstant::now();
    let mut status = None;
    while start.elapsed() < LIMIT {
        if ack.is_empty() {
            let _ = a.rx_batch(Instant::ZERO, &mut ack);
        }
        if let Some(s) = child.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if status.is_none() {
        let _ = child.kill();
    }
    let _ = child.wait();
    sent.unwrap();
    assert!(status.is_some_and(|s| s.success()), "child failed or timed out: {status:?}");
    if ack.is_empty() {
        a.rx_batch(Instant::ZERO, &mut ack).unwrap();
    }
    assert_eq!(ack.get(0), b"ack from child");
}

fn write_segment(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = std::path::PathBuf::from(format!("/dev/shm/linerate-{name}"));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn bad_headers_give_clear_errors() {
    let name = unique("bad");
    let path = write_segment(&name, &[0x5a; 8192]);
    let err = ShmLink::open(&name, Duration::from_millis(50)).err().unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(matches!(&err, LinkError::Config(m) if m.contains("bad magic")), "{err}");

    let mut hdr = vec![0u8; 8192];
    hdr[0..8].copy_from_slice(b"LRTSHM01");
    hdr[8..12].copy_from_slice(&99u32.to_le_bytes());
    hdr[12..16].copy_from_slice(b"REDY");
    let name = unique("ver");
    let path = write_segment(&name, &hdr);
    let err = ShmLink::open(&name, Duration::from_millis(50)).err().unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(matches!(&err, LinkError::Config(m) if m.contains("version 99")), "{err}");

    hdr[8..12].copy_from_slice(&1u32.to_le_bytes());
    hdr[16..20].copy_from_slice(&1500u32.to_le_bytes());
    hdr[20..24].copy_from_slice(&1024u32.to_le_bytes());
    hdr[40..48].copy_from_slice(&(1u64 << 30).to_le_bytes());
    let name = unique("size");
    let path = write_segment(&name, &hdr);
    let err = ShmLink::open(&name, Duration::from_millis(50)).err().unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(matches!(&err, LinkError::Config(m) if m.contains("but the file has 8192")), "{err}");
}
