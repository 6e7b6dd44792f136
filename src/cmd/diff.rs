//! `nsimage diff`: what changed between two images of the same namespace.
//! (Being built for issue 9.)

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Image file.
    image: PathBuf,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("{}: `nsimage diff` is not built yet", a.image.display())
}
