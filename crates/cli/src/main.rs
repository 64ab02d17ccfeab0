//! `linerate`: the command-line front end of the linerate platform.
//!
//! Layout: `commands/` holds one module per subcommand (its options and its run); beside it
//! the pieces several commands share: opening a stack on a link spec (`link_stack`), the
//! services a host runs (`services`), live counters published for `linerate stats`
//! (`statsfile`, `openmetrics`), namespace clean-up (`cleanup`, `netns_names`), flag parsing
//! (`flag_values`), logging and the `--help` examples. The benchmarks, `reproduce`, the tables
//! every command prints and the run loop are the `linerate-bench` crate.

mod cleanup;
mod commands;
mod examples;
mod flag_values;
mod host_ipv6;
mod link_stack;
mod logging;
mod metrics_http;
mod netns_names;
mod openmetrics;
mod services;
mod statsfile;

// The benchmarks, `reproduce` and what the commands share with them (tables, the run loop,
// duration flags, process helpers) live in the `linerate-bench` crate.
use bench::{
    bench_collective, bench_common, bench_link, bench_middlebox, bench_tcp, bench_udp, duration, output, reproduce,
    runloop,
};

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
    Demo(commands::demo::DemoArgs),
    /// Run a linerate host on a TAP device in a new network namespace, facing Linux tools.
    Tap(commands::tap::TapArgs),
    /// Run a linerate host on any link (shm, TAP, AF_PACKET, AF_XDP with one stack per queue).
    Host(commands::host::HostArgs),
    /// Ping from a linerate host (to the Linux stack over TAP, or to another linerate host).
    Ping(commands::ping::PingArgs),
    /// Show the live counters of running linerate instances.
    Stats(commands::stats::StatsArgs),
    /// TCP goodput between two linerate processes over a shared-memory link (-s / -c HOST).
    Iperf(commands::iperf::IperfArgs),
    /// iperf3's protocol on a TAP host: serve stock `iperf3 -c` (-s) or test a stock `iperf3 -s` (-c ADDR).
    Iperf3(commands::iperf3::Iperf3Args),
    /// Blacklisting firewall on the middlebox runtime (Rosebud case study 2).
    Firewall(commands::firewall::FirewallArgs),
    /// Snort-rule IDS on the middlebox runtime (Rosebud case study 1, software reordering);
    /// `ids check RULES` lists the rules it evaluates only in part.
    Ids(commands::ids::IdsArgs),
    /// The middlebox runtime: live counters of running middleboxes.
    #[command(subcommand)]
    Middlebox(commands::middlebox::MiddleboxCommand),
    /// Sum-Product Network inference: generate, compile, eval, serve, bench.
    #[command(subcommand)]
    Spn(commands::spn::SpnCommand),
    /// Reliable connectionless RDMA writes (seed 001): benchmark.
    #[command(subcommand)]
    Rdma(commands::rdma::RdmaCommand),
    /// MPI-like collectives: launch N local ranks of a program on a shared-memory fabric.
    #[command(subcommand)]
    Collective(commands::collective::CollectiveCommand),
    /// Distributed K-Means (seed 003) on Covertype-shaped data over 1..N ranks.
    Kmeans(commands::collective::KmeansArgs),
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
        Command::Demo(a) => commands::demo::run(a),
        Command::Tap(a) => commands::tap::run(a),
        Command::Host(a) => commands::host::run(a),
        Command::Ping(a) => commands::ping::run(a),
        Command::Stats(a) => commands::stats::run(a),
        Command::Iperf(a) => commands::iperf::run(a),
        Command::Iperf3(a) => commands::iperf3::run(a),
        Command::Firewall(a) => commands::firewall::run_firewall(a),
        Command::Ids(a) => commands::ids::run_ids(a),
        Command::Middlebox(c) => commands::middlebox::run_command(c),
        Command::Spn(c) => commands::spn::run(c),
        Command::Rdma(c) => commands::rdma::run(c),
        Command::Collective(c) => commands::collective::run(c),
        Command::Kmeans(a) => commands::collective::run_kmeans(a),
        Command::Reproduce(a) => reproduce::run(a, &commands::reproduce::ThisProgram),
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
    // The reader of standard output went away (`| head -c 10`): the command has cleaned up;
    // end as a Unix tool does, by SIGPIPE.
    bench::stdout::end_if_closed();
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
