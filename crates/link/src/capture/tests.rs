//! Round trips in both formats and byte orders, cut and damaged files, foreign blocks and
//! interfaces, timestamp resolutions.

use super::endian::Endian;
use super::pcapng::{block, opt, BYTE_ORDER_MAGIC};
use super::*;

fn frames() -> Vec<(u64, Vec<u8>)> {
    (0..5u8).map(|i| (1_700_000_000_123_456_789 + u64::from(i) * 1_000_001, vec![i; 60 + usize::from(i) * 7])).collect()
}

fn write(format: Format, e: Endian) -> Vec<u8> {
    let mut w = CaptureWriter::with_byte_order(Vec::new(), format, e).unwrap();
    for (t, f) in frames() {
        w.write_frame(t, &f).unwrap();
    }
    std::mem::take(w.get_mut())
}

fn contents(c: &Capture) -> Vec<(u64, Vec<u8>)> {
    c.records().iter().map(|r| (r.stamp, c.frame(r).to_vec())).collect()
}

#[test]
fn both_formats_round_trip_in_both_byte_orders() {
    for format in [Format::Pcap, Format::PcapNg] {
        for e in [Endian::Little, Endian::Big] {
            let bytes = write(format, e);
            let c = read_capture(&bytes[..], "t").unwrap();
            assert_eq!(c.format, format);
            assert_eq!(contents(&c), frames(), "{format:?} {e:?}");
            assert!(c.warning().is_none());
            assert_eq!(c.records()[2].orig_len, 74);
        }
    }
}

#[test]
fn a_cut_last_record_is_dropped_with_a_warning_and_the_rest_kept() {
    for format in [Format::Pcap, Format::PcapNg] {
        let bytes = write(format, Endian::native());
        for cut in [3, 10, 40] {
            let c = read_capture(&bytes[..bytes.len() - cut], "cut.cap").unwrap();
            assert_eq!(contents(&c), frames()[..4].to_vec(), "{format:?} cut {cut}");
            let w = c.warning().expect("a warning");
            assert!(w.contains("cut.cap") && w.contains("packet 5") && w.contains("4 complete packets"), "{w}");
        }
    }
}

#[test]
fn damaged_and_foreign_files_are_refused_or_read_up_to_the_damage() {
    assert!(read_capture(&b"abc"[..], "x").unwrap_err().to_string().contains("not a pcap or pcapng file"));
    assert!(read_capture(&[0u8; 64][..], "x").unwrap_err().to_string().contains("unknown magic"));
    // A classic file of another link type.
    let mut raw = write(Format::Pcap, Endian::Little);
    raw[20] = 105; // IEEE 802.11
    assert!(read_capture(&raw[..], "x").unwrap_err().to_string().contains("link type 105 is not Ethernet"));
    // A record claiming a huge length: read up to it.
    let mut big = write(Format::Pcap, Endian::Little);
    let third = 24 + (16 + 60) + (16 + 67);
    big[third + 8..third + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    let c = read_capture(&big[..], "x").unwrap();
    assert_eq!(c.len(), 2);
    assert!(c.warning().unwrap().contains("damaged"));
    // A pcapng block whose trailing length disagrees.
    let mut ng = write(Format::PcapNg, Endian::Little);
    let n = ng.len();
    ng[n - 1] ^= 0x40;
    let c = read_capture(&ng[..], "x").unwrap();
    assert_eq!(c.len(), 4);
    assert!(c.warning().unwrap().contains("trailing length"));
}

/// Append a pcapng block in byte order `e`.
fn block(e: Endian, out: &mut Vec<u8>, btype: u32, body: &[u8]) {
    let total = (12 + body.len().next_multiple_of(4)) as u32;
    e.put_u32(out, btype);
    e.put_u32(out, total);
    out.extend_from_slice(body);
    out.resize(out.len() + body.len().next_multiple_of(4) - body.len(), 0);
    e.put_u32(out, total);
}

fn shb(e: Endian, out: &mut Vec<u8>) {
    let mut b = Vec::new();
    e.put_u32(&mut b, BYTE_ORDER_MAGIC);
    e.put_u16(&mut b, 1);
    e.put_u16(&mut b, 0);
    e.put_u64(&mut b, u64::MAX);
    block(e, out, block::SHB, &b);
}

fn idb(e: Endian, out: &mut Vec<u8>, linktype: u16, tsresol: Option<u8>, tsoffset: Option<u64>) {
    let mut b = Vec::new();
    e.put_u16(&mut b, linktype);
    e.put_u16(&mut b, 0);
    e.put_u32(&mut b, 0);
    if let Some(r) = tsresol {
        e.put_u16(&mut b, opt::IF_TSRESOL);
        e.put_u16(&mut b, 1);
        b.extend_from_slice(&[r, 0, 0, 0]);
    }
    if let Some(o) = tsoffset {
        e.put_u16(&mut b, opt::IF_TSOFFSET);
        e.put_u16(&mut b, 8);
        e.put_u64(&mut b, o);
    }
    block(e, out, block::IDB, &b);
}

fn epb(e: Endian, out: &mut Vec<u8>, iface: u32, units: u64, data: &[u8]) {
    let mut b = Vec::new();
    for v in [iface, (units >> 32) as u32, units as u32, data.len() as u32, data.len() as u32] {
        e.put_u32(&mut b, v);
    }
    b.extend_from_slice(data);
    block(e, out, block::EPB, &b);
}

#[test]
fn pcapng_sections_interfaces_resolutions_and_unknown_blocks() {
    let mut f = Vec::new();
    // Section 1, big-endian: a microsecond Ethernet interface with a 10 s offset, an 802.11
    // interface, a name-resolution block, packets on both, a packet on a missing interface.
    let be = Endian::Big;
    shb(be, &mut f);
    idb(be, &mut f, 1, None, Some(10));
    idb(be, &mut f, 105, Some(9), None);
    block(be, &mut f, 4, &[0u8; 8]);
    epb(be, &mut f, 0, 1_500_000, b"first");
    epb(be, &mut f, 1, 7, b"wifi");
    epb(be, &mut f, 9, 7, b"nowhere");
    // Section 2, little-endian: binary resolution 2^-10 s; interfaces numbered afresh; a
    // simple packet block (no timestamp).
    let le = Endian::Little;
    shb(le, &mut f);
    idb(le, &mut f, 1, Some(0x80 | 10), None);
    epb(le, &mut f, 0, 2048, b"second");
    let mut spb = Vec::new();
    le.put_u32(&mut spb, 6);
    spb.extend_from_slice(b"simple");
    block(le, &mut f, block::SPB, &spb);
    block(le, &mut f, 0x0bad, &[1, 2, 3, 4]);
    let c = read_capture(&f[..], "ng").unwrap();
    assert_eq!(c.format, Format::PcapNg);
    assert_eq!(
        contents(&c),
        vec![(11_500_000_000, b"first".to_vec()), (2_000_000_000, b"second".to_vec()), (0, b"simple".to_vec()),]
    );
    assert_eq!((c.other_link(), c.malformed(), c.unknown_blocks()), (1, 1, 2));
    assert!(c.warning().is_none());
}

#[test]
fn every_truncation_and_random_damage_is_read_without_panicking() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for format in [Format::Pcap, Format::PcapNg] {
        for e in [Endian::Little, Endian::Big] {
            let good = write(format, e);
            for cut in 0..good.len() {
                if let Ok(c) = read_capture(&good[..cut], "cut") {
                    assert!(c.len() <= 5 && c.records().iter().all(|r| r.start + r.len <= cut));
                }
            }
            for _ in 0..3000 {
                let mut bad = good.clone();
                for _ in 0..1 + rand() % 4 {
                    let i = (rand() as usize) % bad.len();
                    bad[i] = rand() as u8;
                }
                if let Ok(c) = read_capture(&bad[..], "bad") {
                    for r in c.records() {
                        assert!(r.start + r.len <= bad.len());
                        let _ = c.frame(r);
                    }
                }
            }
        }
    }
}

#[test]
fn damage_names_the_file_and_the_record() {
    let e = Endian::Little;
    // A packet block before any interface description, then a good interface and packet.
    let mut f = Vec::new();
    shb(e, &mut f);
    epb(e, &mut f, 0, 1, &[0xab; 60]);
    idb(e, &mut f, 1, None, None);
    epb(e, &mut f, 0, 2, &[0xcd; 60]);
    let c = read_capture(&f[..], "early.pcapng").unwrap();
    assert_eq!((c.len(), c.malformed()), (1, 1));
    assert!(c.warning().is_none());
    let d = c.damage().expect("damage");
    assert!(d.contains("early.pcapng") && d.contains("block 2") && d.contains("never described"), "{d}");
    // A cut file: the damage is the warning without what a lenient reader keeps.
    for format in [Format::Pcap, Format::PcapNg] {
        let bytes = write(format, Endian::native());
        let c = read_capture(&bytes[..bytes.len() - 10], "cut.cap").unwrap();
        let d = c.damage().unwrap();
        assert!(d.contains("cut.cap") && d.contains("packet 5") && !d.contains("are used"), "{d}");
    }
    // A clean file has none.
    assert!(read_capture(&write(Format::PcapNg, e)[..], "ok").unwrap().damage().is_none());
}
