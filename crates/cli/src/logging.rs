//! Diagnostics through `tracing`, to standard error: `-v` shows info, `-vv` debug, `-vvv`
//! trace; `RUST_LOG` (an env-filter directive such as `linerate=debug,net=trace`) overrides.
//! Without either, only warnings and errors are shown.

use tracing_subscriber::EnvFilter;

/// Install the stderr subscriber for `verbose` repetitions of `-v`.
pub fn init(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::try_new(&spec).unwrap_or_else(|e| {
            eprintln!("linerate: RUST_LOG={spec:?} is not a valid filter ({e}); using {level}");
            EnvFilter::new(level)
        }),
        _ => EnvFilter::new(level),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(true)
        .with_ansi(false)
        .try_init();
}
