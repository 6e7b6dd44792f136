//! `nsimage generate`: a deterministic synthetic namespace, saved as an image.

use anyhow::Context;
use nsimage_store::fs::RealFs;
use nsimage_store::save::{check_target, save_file, save_image};
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_testkit::streamed::write_generated;
use nsimage_writer::{AtRestOptions, WriteOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  nsimage generate -o ns.nsi\n  nsimage generate -o big.nsi --inodes 5000000 --seed 7 --compress zstd\n  nsimage generate -o ns.nsi --inodes 200000 --json"
)]
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
    /// Which synthetic namespace: 2 (the default) draws each directory on
    /// its own and streams the image out in bounded memory, at any size; 1
    /// is the first generator, which builds the whole namespace in memory
    /// first (about 256 bytes per inode) and gives the images of earlier
    /// releases. Both have the same shape; docs/performance.md ("A streamed
    /// generator (version 2)") says how they differ.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=2))]
    generator: u32,
    /// Threads that draw the namespace (version 2); 0: one per core.
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// Bytes a plain image of the default shape takes per inode, at least
/// (95 were measured from 5 to 316 million inodes).
const IMAGE_BYTES_PER_INODE: u64 = 80;

/// Refuses up front a plain image of `inodes` inodes that the file system
/// holding `output` has no room for (a compressed one may fit: not
/// checked).
fn check_disk(output: &std::path::Path, inodes: u64, plain: bool) -> anyhow::Result<()> {
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    let Ok(st) = rustix::fs::statvfs(dir) else {
        return Ok(());
    };
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    let need = inodes.saturating_mul(IMAGE_BYTES_PER_INODE);
    if plain && need > free {
        anyhow::bail!(
            "{inodes} inodes need about {need} bytes of disk for the image ({IMAGE_BYTES_PER_INODE} \
             per inode at least); {} has {free} free",
            dir.display()
        );
    }
    Ok(())
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    // Refuse what cannot be written or held before spending time on it.
    let fs = RealFs::default();
    check_target(&fs, &a.output)?;
    let key = super::encryption_key(a.encrypt)?;
    let opts = WriteOptions {
        sub_section_bytes: a.sub_section_bytes,
        sub_section_min_inodes: a.sub_section_min_inodes,
        at_rest: AtRestOptions {
            compression: a.compress,
            key,
        },
        ..WriteOptions::default()
    };
    let spec = GenSpec {
        inodes: a.inodes,
        seed: a.seed,
    };
    let started = Instant::now();
    let (st, digest, bytes, save_seconds) = if a.generator == 1 {
        nsimage_testkit::generate::check_fits(a.inodes)?;
        let pb = super::spinner(&format!("generating {} inodes", a.inodes));
        let ns = generate(spec);
        pb.set_message(format!("saving {}", a.output.display()));
        let saving = Instant::now();
        let summary = save_image(&fs, &a.output, &ns, &opts).context("saving the image")?;
        pb.finish_and_clear();
        let save = saving.elapsed().as_secs_f64();
        (ns.stats(), ns.digest(), summary.bytes, Some(save))
    } else {
        nsimage_testkit::streamed::check_fits(a.inodes)?;
        check_disk(
            &a.output,
            a.inodes,
            opts.at_rest.compression.codec == nsimage_format::codec::Codec::None,
        )?;
        let threads = match a.threads {
            0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            t => t,
        };
        let pb = super::spinner(&format!(
            "generating {} inodes into {}",
            a.inodes,
            a.output.display()
        ));
        let g = save_file(&fs, &a.output, |out| {
            write_generated(spec, out, &opts, threads)
        })
        .context("generating the image")?;
        pb.finish_and_clear();
        (g.stats, g.digest, g.summary.bytes, None)
    };
    let seconds = started.elapsed().as_secs_f64();
    let digest = digest.to_string();
    if a.json {
        let mut m = super::stats_json(&st, &digest, seconds);
        m.insert("path".into(), a.output.display().to_string().into());
        m.insert("image_bytes".into(), bytes.into());
        m.insert("generator".into(), a.generator.into());
        if let Some(s) = save_seconds {
            m.insert("save_seconds".into(), s.into());
        }
        out!("{}", serde_json::Value::Object(m));
    } else {
        out!(
            "{}: {}",
            a.output.display(),
            super::stats_text(&st, &digest)
        );
        out!("image {bytes} bytes, {seconds:.2} s");
    }
    Ok(ExitCode::SUCCESS)
}
