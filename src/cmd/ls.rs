//! `nsimage ls`: list a directory of an image (or one inode), like `hdfs dfs -ls`.
//! (Being built for issue 9.)

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Image file.
    image: PathBuf,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("{}: `nsimage ls` is not built yet", a.image.display())
}
