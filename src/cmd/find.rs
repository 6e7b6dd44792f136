//! `nsimage find`: find inodes by name, type, size, time or owner.
//! (Being built for issue 9.)

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Image file.
    image: PathBuf,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("{}: `nsimage find` is not built yet", a.image.display())
}
