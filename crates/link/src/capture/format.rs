//! The two capture formats and how one is chosen.

use std::path::Path;

/// A capture file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Classic libpcap format (written with nanosecond timestamps).
    Pcap,
    /// pcapng: section header, interface description and enhanced packet blocks.
    PcapNg,
}

impl Format {
    /// The format a file name asks for: pcapng for a `.pcapng` extension (any case), else pcap.
    pub fn for_path(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("pcapng") => Format::PcapNg,
            _ => Format::Pcap,
        }
    }

    /// Parse a format name as given on a command line: `pcap` or `pcapng`.
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "pcap" => Some(Format::Pcap),
            "pcapng" => Some(Format::PcapNg),
            _ => None,
        }
    }

    /// The format's name (`pcap` or `pcapng`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Pcap => "pcap",
            Format::PcapNg => "pcapng",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_and_name_choose_the_format() {
        assert_eq!(Format::for_path(Path::new("a/b.pcapng")), Format::PcapNg);
        assert_eq!(Format::for_path(Path::new("b.PCAPNG")), Format::PcapNg);
        assert_eq!(Format::for_path(Path::new("b.pcap")), Format::Pcap);
        assert_eq!(Format::for_path(Path::new("-")), Format::Pcap);
        assert_eq!(Format::from_name("pcapng"), Some(Format::PcapNg));
        assert_eq!(Format::from_name("ng"), None);
        assert_eq!(Format::PcapNg.name(), "pcapng");
    }
}
