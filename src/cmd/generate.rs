//! `nsimage generate`: a deterministic synthetic namespace, saved as an image.

use anyhow::Context;
use nsimage_store::fs::RealFs;
use nsimage_store::save::{check_target, save_image};
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_writer::{AtRestOptions, WriteOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Output image.
    #[arg(short, long, default_value = "namespace.nsi")]
    output: PathBuf,
    /// Number of inodes.
    #[arg(long, default_value_t = 1_000_000)]
    inodes: u64,
    /// Random seed; the same seed gives the same namespace.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Target sub-section size in bytes.
    #[arg(long, default_value_t = WriteOptions::default().sub_section_bytes)]
    sub_section_bytes: u64,
    /// Namespaces with fewer inodes get no sub-sections.
    #[arg(long, default_value_t = WriteOptions::default().sub_section_min_inodes)]
    sub_section_min_inodes: u64,
    /// Compress every piece: none, lz4, zstd or zstd:LEVEL (1-22); pieces
    /// that do not shrink are stored as they are.
    #[arg(long, default_value = "none", value_parser = super::parse_compression)]
    compress: nsimage_format::codec::Compression,
    /// Encrypt every piece (AES-256-GCM) with the key of --key-file.
    #[arg(long)]
    encrypt: bool,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    // Refuse what cannot be written or held before spending time on it.
    let fs = RealFs::default();
    check_target(&fs, &a.output)?;
    let key = super::encryption_key(a.encrypt)?;
    nsimage_testkit::generate::check_fits(a.inodes)?;
    let started = Instant::now();
    let pb = super::spinner(&format!("generating {} inodes", a.inodes));
    let ns = generate(GenSpec {
        inodes: a.inodes,
        seed: a.seed,
    });
    pb.set_message(format!("saving {}", a.output.display()));
    let opts = WriteOptions {
        sub_section_bytes: a.sub_section_bytes,
        sub_section_min_inodes: a.sub_section_min_inodes,
        at_rest: AtRestOptions {
            compression: a.compress,
            key,
        },
        ..WriteOptions::default()
    };
    let saving = Instant::now();
    let summary = save_image(&fs, &a.output, &ns, &opts).context("saving the image")?;
    let save_seconds = saving.elapsed().as_secs_f64();
    pb.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    let st = ns.stats();
    let digest = ns.digest().to_string();
    if a.json {
        let mut m = super::stats_json(&st, &digest, seconds);
        m.insert("path".into(), a.output.display().to_string().into());
        m.insert("image_bytes".into(), summary.bytes.into());
        m.insert("save_seconds".into(), save_seconds.into());
        out!("{}", serde_json::Value::Object(m));
    } else {
        out!(
            "{}: {}",
            a.output.display(),
            super::stats_text(&st, &digest)
        );
        out!("image {} bytes, {seconds:.2} s", summary.bytes);
    }
    Ok(ExitCode::SUCCESS)
}
