//! The `nsimage` command line. One file per subcommand under `cmd/`.
//! Exit codes: 0 ok; 1 the data is corrupt or invalid; 2 usage or I/O error.

mod cmd;
mod mem;

use clap::Parser;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;
use std::process::ExitCode;

/// Counts allocations so that `load --json` and the bench can report them.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocations made by this process so far.
pub fn allocations() -> usize {
    GLOBAL.stats().allocations + GLOBAL.stats().reallocations
}

fn main() -> ExitCode {
    let cli = cmd::Cli::parse();
    match cmd::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("nsimage: {}", cmd::message(&e));
            ExitCode::from(cmd::exit_code(&e))
        }
    }
}
