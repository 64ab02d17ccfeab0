//! `linerate`: the command-line front end of the linerate platform.

mod bench_cable;
mod bench_collective;
mod bench_common;
mod bench_link;
mod bench_middlebox;
mod bench_tcp;
mod bench_udp;
mod callgrind;
mod cleanup;
mod cmd_collective;
mod cmd_demo;
mod cmd_firewall;
mod cmd_host;
mod cmd_ids;
mod cmd_ids_check;
mod cmd_iperf;
mod cmd_iperf3;
mod cmd_middlebox;
mod cmd_ping;
mod cmd_rdma;
mod cmd_spn;
mod cmd_stats;
mod cmd_tap;
mod collective_job;
mod duration;
mod examples;
mod flag_values;
mod link_stack;
mod logging;
mod metrics_http;
mod openmetrics;
mod output;
mod reproduce;
mod runloop;
mod services;
mod statsfile;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

/// linerate: a userspace network stack and platform for network-attached compute.
#[derive(Parser)]
#[command(name = "linerate", version, about)]
struct Cli {
    /// Log more to stderr: -v info, -vv debug, -vvv trace (RUST_LOG overrides).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The tour: every capability on an in-process testbed, with a table of measured figures.
    Demo(cmd_demo::DemoArgs),
    /// Run a linerate host on a TAP device in a new network namespace, facing Linux tools.
    Tap(cmd_tap::TapArgs),
    /// Run a linerate host on any link (shm, TAP, AF_PACKET, AF_XDP with one stack per queue).
    Host(cmd_host::HostArgs),
    /// Ping from a linerate host (to the Linux stack over TAP, or to another linerate host).
    Ping(cmd_ping::PingArgs),
    /// Show the live counters of running linerate instances.
    Stats(cmd_stats::StatsArgs),
    /// TCP goodput between two linerate processes over a shared-memory link (-s / -c HOST).
    Iperf(cmd_iperf::IperfArgs),
    /// iperf3's protocol on a TAP host: serve stock `iperf3 -c` (-s) or test a stock `iperf3 -s` (-c ADDR).
    Iperf3(cmd_iperf3::Iperf3Args),
    /// Blacklisting firewall on the middlebox runtime (Rosebud case study 2).
    Firewall(cmd_firewall::FirewallArgs),
    /// Snort-rule IDS on the middlebox runtime (Rosebud case study 1, software reordering);
    /// `ids check RULES` lists the rules it evaluates only in part.
    Ids(cmd_ids::IdsArgs),
    /// The middlebox runtime: live counters of running middleboxes.
    #[command(subcommand)]
    Middlebox(cmd_middlebox::MiddleboxCommand),
    /// Sum-Product Network inference: generate, compile, eval, serve, bench.
    #[command(subcommand)]
    Spn(cmd_spn::SpnCommand),
    /// Reliable connectionless RDMA writes (seed 001): benchmark.
    #[command(subcommand)]
    Rdma(cmd_rdma::RdmaCommand),
    /// MPI-like collectives: launch N local ranks of a program on a shared-memory fabric.
    #[command(subcommand)]
    Collective(cmd_collective::CollectiveCommand),
    /// Distributed K-Means (seed 003) on Covertype-shaped data over 1..N ranks.
    Kmeans(cmd_collective::KmeansArgs),
    /// Benchmarks, reported as ratios against peers measured in the same run.
    Bench(BenchArgs),
    /// Re-run the seed papers' evaluations: per figure a PNG, a CSV and a report.md section.
    Reproduce(reproduce::ReproduceArgs),
    /// Write a man page per command (linerate.1, linerate-ping.1, linerate-bench-link.1, ...)
    /// to DIR, generated from the command-line definition.
    Man {
        /// The directory (created if missing).
        dir: std::path::PathBuf,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Internal: the peer process of a benchmark.
    #[command(hide = true, subcommand)]
    BenchPeer(PeerCommand),
}

/// `linerate bench`: a benchmark, and where to export its tables.
#[derive(clap::Args)]
struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
    #[command(flatten)]
    export: reproduce::export::ExportArgs,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Frames/s and Gbit/s over every link kind, beside memcpy bandwidth.
    Link(bench_link::LinkArgs),
    /// UDP goodput and 64-byte round trip between two linerate processes, beside Linux UDP.
    Udp(bench_udp::UdpArgs),
    /// TCP goodput, round trip, connection rate and 10,000 connections, beside Linux TCP.
    Tcp(bench_tcp::TcpArgs),
    /// Middlebox forwarding (1 and 2 units) beside memcpy, firewall and IDS rates, swap time.
    Middlebox(bench_middlebox::MiddleboxBenchArgs),
    /// All-reduce and broadcast latency 64 B..8 MiB on the shm fabric, beside OpenMPI (shm, TCP).
    Collective(bench_collective::CollectiveBenchArgs),
}

#[derive(Subcommand)]
enum PeerCommand {
    /// Drain a shared-memory link and report frame counts.
    LinkSink(bench_link::SinkArgs),
    /// A linerate host on a shared-memory link serving UDP echo and a UDP sink.
    Udp(bench_udp::PeerArgs),
    /// A linerate host on a shared-memory link serving a TCP echo and a reporting TCP sink.
    Tcp(bench_tcp::PeerArgs),
    /// One linerate rank of `bench collective` (environment from the launcher).
    Collective(bench_collective::CollectivePeerArgs),
    /// Push a number of IDS trace frames through one IDS unit in step mode (for callgrind).
    IdsCost(bench_middlebox::IdsCostArgs),
}

/// The command line definition with the examples attached.
fn command() -> clap::Command {
    examples::attach(Cli::command())
}

/// Commands whose only writes go to standard output and files (SIGPIPE may end them).
fn writes_to_a_pipe_only(c: &Command) -> bool {
    matches!(
        c,
        Command::Completions { .. } | Command::Ids(_) | Command::Firewall(_) | Command::Stats(_) | Command::Demo(_)
    )
}

/// `linerate man DIR`: one page per visible command, from the definition (clap_mangen).
fn write_man_pages(dir: &std::path::Path) -> Result<ExitCode, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    clap_mangen::generate_to(command(), dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let pages =
        std::fs::read_dir(dir).map(|d| d.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "1")).count());
    eprintln!("linerate: {} man pages in {}", pages.unwrap_or(0), dir.display());
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = match Cli::from_arg_matches(&command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    logging::init(cli.verbose);
    if writes_to_a_pipe_only(&cli.command) {
        // As Unix tools: a reader that closed the pipe (`| head`) ends the program quietly by
        // SIGPIPE (status 141 in the shell), not with a panic on the failed write. Commands
        // that talk to sockets or child processes keep SIGPIPE ignored and see EPIPE instead.
        // SAFETY: restoring the default disposition of a signal has no preconditions.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    tracing::info!(version = env!("CARGO_PKG_VERSION"), args = ?std::env::args().skip(1).collect::<Vec<_>>(), "starting");
    let result = match cli.command {
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut command(), "linerate", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir } => write_man_pages(&dir),
        Command::Demo(a) => cmd_demo::run(a),
        Command::Tap(a) => cmd_tap::run(a),
        Command::Host(a) => cmd_host::run(a),
        Command::Ping(a) => cmd_ping::run(a),
        Command::Stats(a) => cmd_stats::run(a),
        Command::Iperf(a) => cmd_iperf::run(a),
        Command::Iperf3(a) => cmd_iperf3::run(a),
        Command::Firewall(a) => cmd_firewall::run_firewall(a),
        Command::Ids(a) => cmd_ids::run_ids(a),
        Command::Middlebox(c) => cmd_middlebox::run_command(c),
        Command::Spn(c) => cmd_spn::run(c),
        Command::Rdma(c) => cmd_rdma::run(c),
        Command::Collective(c) => cmd_collective::run(c),
        Command::Kmeans(a) => cmd_collective::run_kmeans(a),
        Command::Reproduce(a) => reproduce::run(a),
        Command::Bench(b) => reproduce::export::request(b.export).and_then(|()| match b.command {
            BenchCommand::Link(a) => bench_link::run(a),
            BenchCommand::Udp(a) => bench_udp::run(a),
            BenchCommand::Tcp(a) => bench_tcp::run(a),
            BenchCommand::Middlebox(a) => bench_middlebox::run(a),
            BenchCommand::Collective(a) => bench_collective::run(a),
        }),
        Command::BenchPeer(PeerCommand::LinkSink(a)) => bench_link::run_sink(a),
        Command::BenchPeer(PeerCommand::Udp(a)) => bench_udp::run_peer(a),
        Command::BenchPeer(PeerCommand::Tcp(a)) => bench_tcp::run_peer(a),
        Command::BenchPeer(PeerCommand::Collective(a)) => bench_collective::run_peer(a),
        Command::BenchPeer(PeerCommand::IdsCost(a)) => bench_middlebox::run_ids_cost(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            tracing::debug!(error = %e, "failed");
            eprintln!("linerate: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_definition_is_consistent() {
        // clap checks names, shorts and defaults only in debug builds: check them here.
        super::command().debug_assert();
    }
}
