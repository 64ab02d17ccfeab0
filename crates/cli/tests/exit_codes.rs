//! Honest exit codes (issue 25): a damaged or truncated capture is refused naming the file and
//! the record, with no output file written (`--keep-going` accepts it with a warning); model
//! file errors name the file and a UTF-8 byte-order mark is accepted; nonsense flag values are
//! refused; a reader that closes the pipe ends the program quietly with 0 or SIGPIPE (141).

mod common;

use common::{Scratch, BIN, BLACKLIST, RULES};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn linerate(args: &[&str]) -> Output {
    let out = Command::new(BIN).args(args).stdin(Stdio::null()).output().expect("linerate runs");
    eprintln!("--- {args:?}: {:?}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A capture with `n` 60-byte Ethernet frames, written by linerate's own writer.
fn capture(path: &Path, n: usize) {
    let frames: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let mut f = vec![0u8; 60];
            f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
            f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
            f[12..14].copy_from_slice(&[0x88, 0xb5]);
            f[14] = i as u8;
            f
        })
        .collect();
    // Classic pcap, little-endian, microseconds, Ethernet.
    let mut b = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0];
    for (i, f) in frames.iter().enumerate() {
        for v in [i as u32, 0, f.len() as u32, f.len() as u32] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(f);
    }
    std::fs::write(path, b).expect("capture written");
}

/// Run the firewall from `input` to `out`, with `extra` flags.
fn firewall(input: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "firewall",
        "--blacklist",
        BLACKLIST,
        "--input",
        input.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    linerate(&args)
}

/// The pcapng blocks of a section header and one Ethernet interface, little-endian.
fn pcapng_head() -> Vec<u8> {
    let mut f = Vec::new();
    let block = |f: &mut Vec<u8>, t: u32, body: &[u8]| {
        let total = (12 + body.len()) as u32;
        f.extend_from_slice(&t.to_le_bytes());
        f.extend_from_slice(&total.to_le_bytes());
        f.extend_from_slice(body);
        f.extend_from_slice(&total.to_le_bytes());
    };
    let mut shb = vec![0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0];
    shb.extend_from_slice(&u64::MAX.to_le_bytes());
    block(&mut f, 0x0a0d_0d0a, &shb);
    block(&mut f, 1, &[1, 0, 0, 0, 0, 0, 0, 0]);
    f
}

/// An enhanced packet block on interface `iface` claiming `caplen` bytes of a 60-byte frame.
fn epb(iface: u32, caplen: u32) -> Vec<u8> {
    let mut body = Vec::new();
    for v in [iface, 0, 0, caplen, 60] {
        body.extend_from_slice(&v.to_le_bytes());
    }
    body.extend_from_slice(&[0u8; 60]);
    let total = (12 + body.len()) as u32;
    let mut b = 6u32.to_le_bytes().to_vec();
    b.extend_from_slice(&total.to_le_bytes());
    b.extend_from_slice(&body);
    b.extend_from_slice(&total.to_le_bytes());
    b
}

#[test]
fn a_truncated_capture_is_refused_naming_file_and_packet_and_no_output_is_written() {
    let t = Scratch::new("exit-cut");
    let input = t.path("in.pcap");
    capture(&input, 5);
    let len = std::fs::metadata(&input).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&input).unwrap().set_len(len - 10).unwrap();
    let out = t.path("out.pcap");
    let o = firewall(&input, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "tcpdump exits 1 on a cut file");
    let e = stderr(&o);
    assert!(e.contains(input.to_str().unwrap()) && e.contains("packet 5") && e.contains("--keep-going"), "{e}");
    assert_eq!(e.lines().count(), 1, "one sentence: {e}");
    assert!(!out.exists(), "an output file that looks complete was written");
    // --keep-going: the four packets before the cut, with a warning.
    let o = firewall(&input, &out, &["--keep-going"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("warning") && stderr(&o).contains("4 complete packets"), "{}", stderr(&o));
    assert_eq!(link::capture::open_capture(&out).unwrap().len(), 4);
}

#[test]
fn damaged_pcapng_blocks_are_refused_naming_the_block() {
    let t = Scratch::new("exit-damaged");
    let out = t.path("out.pcap");
    // (name, file, what the sentence says)
    let mut early = pcapng_head();
    early.truncate(28); // the section header alone
    early.extend(epb(0, 60)); // a packet before any interface
    let mut zero = pcapng_head();
    zero.extend_from_slice(&[6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]); // block length 0
    let mut huge = pcapng_head();
    huge.extend_from_slice(&6u32.to_le_bytes());
    huge.extend_from_slice(&0x7fff_fff0u32.to_le_bytes()); // block length past the end
    huge.extend_from_slice(&[0u8; 32]);
    let mut caplen = pcapng_head();
    caplen.extend(epb(0, 60));
    caplen.extend(epb(0, 4000)); // captured length beyond its block
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("early.pcapng", early, "block 2"),
        ("zero.pcapng", zero, "a block length of 0"),
        ("huge.pcapng", huge, "packet 1"),
        ("caplen.pcapng", caplen, "captured length of 4000"),
    ];
    for (name, bytes, says) in cases {
        let input = t.path(name);
        std::fs::write(&input, bytes).unwrap();
        let o = firewall(&input, &out, &[]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {e}");
        assert!(e.contains(name) && e.contains(says), "{name}: {e}");
        assert!(!out.exists(), "{name}: an output file was written");
        // The IDS refuses it the same way.
        let o =
            linerate(&["ids", "--rules", RULES, "--input", input.to_str().unwrap(), "--output", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "ids, {name}: {}", stderr(&o));
        assert!(!out.exists(), "ids, {name}: an output file was written");
    }
}

#[test]
fn nonsense_flag_values_are_refused() {
    for args in [
        &["firewall", "--blacklist", BLACKLIST, "--input", "x.pcap", "--mtu", "0"][..],
        &["tap", "--mtu", "0"][..],
        &["tap", "--mtu", "70000"][..],
    ] {
        let o = linerate(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: a usage error");
        assert!(stderr(&o).contains("68 to 65535"), "{args:?}: {}", stderr(&o));
    }
    // Checked before any namespace is made, so this runs without root.
    let o = linerate(&["tap", "--host-ip", "10.77.0.1/24", "--duration", "1s"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--host-ip 10.77.0.1 is the Linux side's address"), "{}", stderr(&o));
    let o = linerate(&["tap", "--host-ip", "10.78.0.2/24", "--duration", "1s"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not in the Linux side's subnet"), "{}", stderr(&o));
}

#[test]
fn model_files_with_a_byte_order_mark_load_and_model_errors_name_the_file() {
    let t = Scratch::new("exit-spn");
    let model = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../spn/tests/data/nips10.json")).unwrap();
    let bom = t.path("bom.json");
    std::fs::write(&bom, format!("\u{feff}{model}")).unwrap();
    let o = linerate(&["spn", "compile", bom.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let broken = t.path("broken.json");
    std::fs::write(&broken, "\u{feff}{\"nodes\": [").unwrap();
    let o = linerate(&["spn", "compile", broken.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("broken.json: model JSON"), "the JSON parser, and the file named: {e}");
}

/// Run `linerate args | head -c 10` and return linerate's status and stderr.
fn into_a_closed_pipe(args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("linerate runs");
    let mut pipe = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    std::io::Read::read_exact(&mut pipe, &mut first).expect("some output first");
    drop(pipe); // the reader goes away, as `head` does
    let out = child.wait_with_output().unwrap();
    (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_closed_stdout_ends_the_program_quietly() {
    for args in [&["completions", "bash"][..], &["ids", "check", RULES][..]] {
        let (status, err) = into_a_closed_pipe(args);
        let quiet = status.success() || status.signal() == Some(libc_sigpipe());
        assert!(quiet, "{args:?}: {status:?}, {err}");
        assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{args:?}: {err}");
    }
}

/// SIGPIPE's number on Linux (the shell reports 128 + 13 = 141).
fn libc_sigpipe() -> i32 {
    13
}
