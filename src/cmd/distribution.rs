//! `nsimage distribution`: file-size histogram, with an SVG bar chart.
//! (Being built for issue 9.)

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Image file.
    image: PathBuf,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "{}: `nsimage distribution` is not built yet",
        a.image.display()
    )
}
