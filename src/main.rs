//! The `nsimage` command line. One file per subcommand under `cmd/`.
//! Exit codes: 0 ok; 1 the data is corrupt or invalid; 2 usage or I/O error.

mod cmd;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cmd::Cli::parse();
    match cmd::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("nsimage: {e:#}");
            ExitCode::from(cmd::exit_code(&e))
        }
    }
}
