//! The `nsimage` command line. One file per subcommand under `cmd/`.
//! Exit codes: 0 ok; 1 the data is corrupt or invalid; 2 usage or I/O error.

mod cmd;
mod mem;

use clap::{Arg, ArgAction, Command, CommandFactory, FromArgMatches};
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

/// The command line, `-h` never meaning help: it is "human-readable
/// sizes" wherever sizes are printed, as in `hdfs dfs` (help is `--help`),
/// and an unknown argument elsewhere.
fn command() -> Command {
    fn long_help_only(c: Command) -> Command {
        let c = if c.is_disable_help_flag_set() {
            c
        } else {
            c.disable_help_flag(true).arg(
                Arg::new("help")
                    .long("help")
                    .help("Print help")
                    .action(ArgAction::HelpLong),
            )
        };
        c.mut_subcommands(long_help_only)
    }
    long_help_only(cmd::Cli::command())
}

fn main() -> ExitCode {
    let cli = cmd::Cli::from_arg_matches(&command().get_matches()).unwrap_or_else(|e| e.exit());
    match cmd::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("nsimage: {}", cmd::message(&e));
            ExitCode::from(cmd::exit_code(&e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command and subcommand (parents too) has an example in its
    /// `--help`, and every argument it takes says what it is.
    #[test]
    fn every_command_has_examples_and_every_argument_help() {
        fn walk(c: &Command, path: &str, missing: &mut Vec<String>) {
            let name = format!("{path} {}", c.get_name()).trim().to_string();
            if !c.is_hide_set() {
                let after = [c.get_after_help(), c.get_after_long_help()]
                    .into_iter()
                    .flatten()
                    .map(|s| s.to_string())
                    .collect::<String>();
                if !after.contains("Examples:\n  nsimage ") {
                    missing.push(format!("{name}: no examples"));
                }
                for a in c.get_arguments().filter(|a| !a.is_hide_set()) {
                    if a.get_help().is_none() && a.get_long_help().is_none() {
                        missing.push(format!("{name}: {} has no help", a.get_id()));
                    }
                }
            }
            for s in c.get_subcommands().filter(|s| s.get_name() != "help") {
                walk(s, &name, missing);
            }
        }
        let mut missing = Vec::new();
        let root = command();
        for s in root.get_subcommands().filter(|s| s.get_name() != "help") {
            walk(s, "", &mut missing);
        }
        assert!(missing.is_empty(), "{}", missing.join("\n"));
    }
}
