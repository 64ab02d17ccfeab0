//! linerate's benchmarks and the seed papers' evaluations, as a library the `linerate`
//! command runs: `bench link|udp|tcp|middlebox|collective` (each side against its peer,
//! measured in the same run: memcpy and the kernel's links, the Linux stack, Snort/Hyperscan,
//! OpenMPI), `reproduce` (every paper's figures as PNG, CSV and a report), the callgrind cost
//! counts, and what the commands share with them: the tables printed as text or JSON
//! ([`output`]), the poll loop's helpers ([`runloop`]), duration flags ([`duration`]) and
//! process helpers (CPU pinning, peers in child processes: [`bench_common`]).
//!
//! The `spn bench` and `rdma bench` commands live with their commands in `linerate-cli`;
//! `reproduce` reaches them (and `collective kmeans`) through [`reproduce::Commands`].

pub mod bench_cable;
pub mod bench_collective;
pub mod bench_common;
pub mod bench_link;
pub mod bench_middlebox;
pub mod bench_tcp;
pub mod bench_udp;
pub mod callgrind;
pub mod duration;
pub mod output;
pub mod reproduce;
pub mod runloop;
pub mod stdout;
