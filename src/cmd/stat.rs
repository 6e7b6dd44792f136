//! `nsimage stat`: everything an image holds for one inode.
//! (Being built for issue 9.)

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Image file.
    image: PathBuf,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("{}: `nsimage stat` is not built yet", a.image.display())
}
