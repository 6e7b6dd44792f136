//! `nsimage dump`: dump every inode: OIV XML, OIV Delimited or JSON lines.
//! (Being built for issue 9.)

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Image file.
    image: PathBuf,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("{}: `nsimage dump` is not built yet", a.image.display())
}
