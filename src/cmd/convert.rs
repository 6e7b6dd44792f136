//! `nsimage convert`: an image of either format (nsimage, or a Hadoop
//! fsimage) rewritten in the other, or in the same one with other options;
//! and OIV's XML read back into a Hadoop fsimage (Hadoop's ReverseXML,
//! `nsimage_viewer::reverse_xml`).

use anyhow::{bail, Context};
use nsimage_loader::{load, LoadOptions};
use nsimage_store::fs::RealFs;
use nsimage_store::save::{
    check_target, save_hdfs_image, save_hdfs_with, save_image, HdfsSaveOptions, SaveOptions,
};
use nsimage_viewer::reverse_xml::{reverse_xml, MessageSink};
use nsimage_viewer::ViewError;
use nsimage_writer::hdfs::{
    image_file_name, md5_hex, HdfsCodec, HdfsMessageWriter, HdfsWriteOptions,
};
use nsimage_writer::WriteOptions;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum To {
    /// nsimage's sectioned format.
    Nsimage,
    /// Hadoop's fsimage (HDFSIMG1), with its `.md5` sidecar.
    Hdfs,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Codec {
    None,
    Zlib,
    Gzip,
}

impl Codec {
    /// The Hadoop writer's codec.
    fn hdfs(self) -> HdfsCodec {
        match self {
            Codec::None => HdfsCodec::None,
            Codec::Zlib => HdfsCodec::Zlib,
            Codec::Gzip => HdfsCodec::Gzip,
        }
    }
}

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  nsimage convert fsimage_0000000000000001234 ns.nsi --to nsimage\n  nsimage convert ns.nsi nn/current/fsimage_0000000000000001234 --to hdfs\n  nsimage convert fsimage_31 back.fsimage --to hdfs --layout-version=-64\n  nsimage convert fsimage.xml fsimage_0000000000000001234 --to hdfs   (OIV XML back to an image)"
)]
pub struct Args {
    /// The image to read (either format; detected by its magic), or an
    /// OIV XML document (`hdfs oiv -p XML`, `nsimage dump --format xml`;
    /// read back into a Hadoop image, `--to hdfs` only).
    input: PathBuf,
    /// The image to write. For `--to hdfs`, an existing directory gets the
    /// NameNode's file name, `fsimage_<txid in 19 digits>`.
    output: PathBuf,
    /// The output format.
    #[arg(long, value_enum)]
    to: To,
    /// Hadoop output: cut INODE and INODE_DIR into sub-sections, as a
    /// NameNode with `dfs.image.parallel.load` does (whatever the inode
    /// count), so that loaders read them in parallel.
    #[arg(long)]
    sub_sections: bool,
    /// Hadoop output: how many sub-sections to aim for
    /// (`dfs.image.parallel.target.sections`).
    #[arg(long, default_value_t = nsimage_writer::hdfs::DEFAULT_TARGET_SECTIONS)]
    target_sections: u32,
    /// Hadoop output: the codec of every section.
    #[arg(long, value_enum, default_value = "none")]
    codec: Codec,
    /// Hadoop output: the layout version to write, one of those the writer
    /// writes faithfully (-57, Hadoop 2.5, to -67, Hadoop 3.4). Default: a
    /// Hadoop input's own (a NameNode of that release reads the output),
    /// else Hadoop 3.3's (-66).
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    layout_version: Option<i32>,
    /// Write the current tree only: a Hadoop image's snapshots (their
    /// diffs, the references they keep, the inodes only they see), which
    /// are otherwise carried into the output (an nsimage image keeps them
    /// in its HDFS_SNAPSHOTS section for the way back), are dropped and
    /// listed on stderr.
    #[arg(long)]
    drop_snapshots: bool,
    /// nsimage output: compress every piece: none, lz4, zstd or
    /// zstd:LEVEL (1-22).
    #[arg(long, default_value = "none", value_parser = super::parse_compression)]
    compress: nsimage_format::codec::Compression,
    /// nsimage output: encrypt every piece with the key of --key-file (the
    /// input, if encrypted, is read with the same key).
    #[arg(long)]
    encrypt: bool,
    /// Load threads (0: every core).
    #[arg(long, default_value_t = 0, value_parser = super::parse_threads)]
    threads: usize,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: super::memory::MemoryLimit,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    if is_xml(&a.input)? {
        return reverse(&a);
    }
    if a.to == To::Nsimage
        && (a.sub_sections || a.codec != Codec::None || a.layout_version.is_some())
    {
        bail!("--sub-sections, --codec and --layout-version apply to --to hdfs only (nsimage images are cut into sub-sections by size)");
    }
    if let Some(lv) = a.layout_version {
        hdfs_layout(Some(lv), None, &a.input)?;
    }
    if a.to == To::Hdfs && (a.encrypt || a.compress.codec != nsimage_format::codec::Codec::None) {
        bail!("--compress and --encrypt apply to --to nsimage only (Hadoop images take --codec)");
    }
    let key = super::encryption_key(a.encrypt)?;
    if a.target_sections == 0 {
        bail!("--target-sections must be at least 1");
    }
    let fs = RealFs::default();
    let mut output = a.output.clone();
    let started = Instant::now();
    let opts = LoadOptions {
        threads: a.threads,
        key: super::key()?,
        budget: Some(a.memory.budget()),
        md5: super::md5(),
        ..LoadOptions::default()
    };
    let lb = super::progress::LoadBar::start(&a.input);
    let loaded = load(&a.input, &opts);
    lb.finish().finish_and_clear();
    let mut loaded = loaded?;
    let input_layout = loaded.hdfs.as_ref().map(|h| h.layout_version);
    let what = loaded.carry().map(|c| {
        format!(
            "{} snapshots of {} snapshottable directories, {} snapshot diff entries, {} inode references, {} inodes only snapshots see",
            c.snapshots.len(),
            c.header.as_ref().map_or(0, |h| h.snapshottable_dir.len()),
            c.diffs.len(),
            c.references.len(),
            c.inodes.len()
        )
    });
    if let (Some(what), true) = (&what, a.drop_snapshots) {
        eprintln!(
            "nsimage: {}: dropped {what} (--drop-snapshots); the current tree is converted exactly",
            a.input.display()
        );
    }
    let carry = if a.drop_snapshots {
        None
    } else {
        loaded
            .hdfs
            .as_mut()
            .and_then(|h| h.carry.take())
            .or(loaded.hdfs_carry.take())
    };
    let ns = loaded.namespace;
    let load_seconds = loaded.stats.seconds;
    if a.to == To::Hdfs && output.is_dir() {
        output = output.join(image_file_name(ns.info().last_txid));
    }
    check_target(&fs, &output)?;
    // The writers report nothing while they run: a spinner.
    let pb = super::spinner(&format!("writing {}", output.display()));
    let writing = Instant::now();
    let mut written_layout = None;
    let (bytes, md5, sections) = match a.to {
        To::Nsimage => {
            let write = WriteOptions {
                at_rest: nsimage_writer::AtRestOptions {
                    compression: a.compress,
                    key,
                },
                ..WriteOptions::default()
            };
            let opts = SaveOptions {
                write,
                carry: carry.as_ref(),
            };
            let s = save_image(&fs, &output, &ns, opts).context("saving the image")?;
            (s.bytes, None, Vec::new())
        }
        To::Hdfs => {
            let layout_version = hdfs_layout(a.layout_version, input_layout, &a.input)?;
            written_layout = Some(layout_version);
            let write = HdfsWriteOptions {
                sub_sections: a.sub_sections,
                target_sections: a.target_sections,
                // Asked for sub-sections: cut whatever the size.
                inode_threshold: if a.sub_sections {
                    0
                } else {
                    HdfsWriteOptions::default().inode_threshold
                },
                codec: a.codec.hdfs(),
                layout_version,
                ..HdfsWriteOptions::default()
            };
            let opts = HdfsSaveOptions {
                write,
                carry: carry.as_ref(),
            };
            let w = save_hdfs_image(&fs, &output, &ns, opts).context("saving the image")?;
            let sections: Vec<serde_json::Value> = w
                .sections
                .iter()
                .map(
                    |s| serde_json::json!({"name": s.name, "offset": s.offset, "length": s.length}),
                )
                .collect();
            (w.bytes, Some(md5_hex(&w.md5)), sections)
        }
    };
    let write_seconds = writing.elapsed().as_secs_f64();
    pb.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    let st = ns.stats();
    let digest = ns.digest().to_string();
    if a.json {
        let mut m = super::stats_json(&st, &digest, seconds);
        m.insert("input".into(), a.input.display().to_string().into());
        m.insert("output".into(), output.display().to_string().into());
        m.insert(
            "format".into(),
            match a.to {
                To::Nsimage => "nsimage",
                To::Hdfs => "hdfs",
            }
            .into(),
        );
        m.insert("image_bytes".into(), bytes.into());
        m.insert("snapshots_carried".into(), carry.is_some().into());
        m.insert("load_seconds".into(), load_seconds.into());
        m.insert("write_seconds".into(), write_seconds.into());
        if let Some(lv) = written_layout {
            m.insert("layout_version".into(), lv.into());
        }
        if let Some(md5) = &md5 {
            m.insert("md5".into(), md5.clone().into());
            m.insert("sections".into(), sections.into());
        }
        out!("{}", serde_json::Value::Object(m));
    } else {
        out!("{}: {}", output.display(), super::stats_text(&st, &digest));
        match &md5 {
            Some(md5) => out!("image {bytes} bytes, md5 {md5}, {seconds:.2} s"),
            None => out!("image {bytes} bytes, {seconds:.2} s"),
        }
        if let (Some(what), Some(_)) = (&what, &carry) {
            out!("carried {what}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether `path` starts as an XML document does (`<?xml` or `<fsimage`,
/// after a byte-order mark and white space).
fn is_xml(path: &Path) -> anyhow::Result<bool> {
    use std::io::Read;
    let mut head = Vec::with_capacity(64);
    std::fs::File::open(path)
        .with_context(|| format!("{}: opening", path.display()))?
        .take(64)
        .read_to_end(&mut head)
        .with_context(|| format!("{}: reading", path.display()))?;
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&head);
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    Ok(head[start..].starts_with(b"<?xml") || head[start..].starts_with(b"<fsimage"))
}

/// OIV's XML read back into a Hadoop fsimage at the output (and its
/// `.md5` sidecar), saved atomically, then loaded to check that it reads
/// back and to report its namespace.
fn reverse(a: &Args) -> anyhow::Result<ExitCode> {
    if a.to != To::Hdfs {
        bail!(
            "{}: an OIV XML document converts to a Hadoop image only (--to hdfs); convert that image to nsimage's format next",
            a.input.display()
        );
    }
    if a.sub_sections
        || a.drop_snapshots
        || a.encrypt
        || a.compress.codec != nsimage_format::codec::Codec::None
        || a.target_sections != nsimage_writer::hdfs::DEFAULT_TARGET_SECTIONS
    {
        bail!("--sub-sections, --target-sections, --drop-snapshots, --compress and --encrypt do not apply to an XML input");
    }
    if let Some(lv) = a.layout_version {
        hdfs_layout(Some(lv), None, &a.input)?;
    }
    let codec = a.codec.hdfs();
    let fs = RealFs::default();
    if a.output.is_dir() {
        bail!(
            "{}: a directory; an image read back from XML needs a file name (fsimage_<txid>)",
            a.output.display()
        );
    }
    check_target(&fs, &a.output)?;
    let started = Instant::now();
    let file =
        std::fs::File::open(&a.input).with_context(|| format!("{}: opening", a.input.display()))?;
    let pb = super::spinner(&format!("writing {}", a.output.display()));
    let mut failed = None;
    let mut reversed = None;
    // The image is loaded before it takes the output's name: one nsimage
    // cannot read back is refused, and the output is left as it was.
    let opts = LoadOptions {
        threads: a.threads,
        budget: Some(a.memory.budget()),
        ..LoadOptions::default()
    };
    let loaded = std::cell::RefCell::new(None);
    let refused = std::cell::RefCell::new(None);
    let check = |tmp: &Path| -> std::io::Result<()> {
        match load(tmp, &opts) {
            Ok(l) => {
                let ns = l.namespace;
                *loaded.borrow_mut() = Some((ns.stats(), ns.digest().to_string()));
                Ok(())
            }
            Err(e) => {
                let m = e.to_string();
                *refused.borrow_mut() = Some(e);
                Err(std::io::Error::other(m))
            }
        }
    };
    let saved = save_hdfs_with(
        &fs,
        &a.output,
        |out| {
            let input = std::io::BufReader::with_capacity(1 << 20, &file);
            let start = |lv: i32| {
                HdfsMessageWriter::new(out, lv, codec)
                    .map(Sink)
                    .map_err(|e| match e.kind() {
                        // A layout version the writer does not write: the
                        // document's (the command line's was checked).
                        std::io::ErrorKind::InvalidInput => ViewError::Xml {
                            path: a.input.clone(),
                            offset: 0,
                            detail: format!(
                                "its layoutVersion: {e}; --layout-version N writes another"
                            ),
                        },
                        _ => ViewError::Io {
                            path: a.output.clone(),
                            source: e,
                        },
                    })
            };
            match reverse_xml(input, &a.input, &a.output, a.layout_version, start) {
                Ok((w, r)) => {
                    reversed = Some(r);
                    w.0.finish()
                }
                Err(e) => {
                    let m = e.to_string();
                    failed = Some(e);
                    Err(std::io::Error::other(m))
                }
            }
        },
        Some(&check),
    );
    pb.finish_and_clear();
    if let Some(e) = failed {
        return Err(e.into());
    }
    if let Some(e) = refused.into_inner() {
        let why = if e.is_data_error() {
            "the image it describes (written under a temporary name) is not one nsimage reads back"
        } else {
            "the image written from it (under a temporary name) could not be read back to check it"
        };
        return Err(anyhow::Error::new(e).context(format!(
            "{}: {why}; {} is left as it was",
            a.input.display(),
            a.output.display()
        )));
    }
    let written = saved.context("saving the image")?;
    let (Some(r), Some((st, digest))) = (reversed, loaded.into_inner()) else {
        bail!("the XML was not read");
    };
    let seconds = started.elapsed().as_secs_f64();
    let md5 = md5_hex(&written.md5);
    if a.json {
        let mut m = super::stats_json(&st, &digest, seconds);
        m.insert("input".into(), a.input.display().to_string().into());
        m.insert("output".into(), a.output.display().to_string().into());
        m.insert("format".into(), "hdfs".into());
        m.insert("image_bytes".into(), written.bytes.into());
        m.insert("layout_version".into(), r.layout_version.into());
        m.insert("md5".into(), md5.into());
        let sections: Vec<serde_json::Value> = written
            .sections
            .iter()
            .map(|s| serde_json::json!({"name": s.name, "offset": s.offset, "length": s.length}))
            .collect();
        m.insert("sections".into(), sections.into());
        out!("{}", serde_json::Value::Object(m));
    } else {
        out!(
            "{}: {}",
            a.output.display(),
            super::stats_text(&st, &digest)
        );
        out!(
            "image {} bytes, layout version {}, md5 {md5}, {seconds:.2} s (read back from OIV XML)",
            written.bytes,
            r.layout_version
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The Hadoop writer as the sink of OIV XML read back.
struct Sink<W: std::io::Write>(HdfsMessageWriter<W>);

impl<W: std::io::Write> MessageSink for Sink<W> {
    fn message(&mut self, body: &[u8]) -> std::io::Result<()> {
        self.0.message(body)
    }

    fn commit(&mut self, name: &str) -> std::io::Result<()> {
        self.0.commit(name)
    }
}

/// The layout version a Hadoop output is written in: the one asked for,
/// else a Hadoop input's own, else Hadoop 3.3's; one the writer does not
/// write faithfully is a usage error before anything is written.
fn hdfs_layout(asked: Option<i32>, input: Option<i32>, path: &Path) -> anyhow::Result<i32> {
    use nsimage_writer::hdfs::{
        HADOOP_3_3_LAYOUT_VERSION, NEWEST_LAYOUT_VERSION, OLDEST_LAYOUT_VERSION,
    };
    let known = NEWEST_LAYOUT_VERSION..=OLDEST_LAYOUT_VERSION;
    match (asked, input) {
        (Some(lv), _) if !known.contains(&lv) => anyhow::bail!(
            "--layout-version {lv}: the Hadoop writer writes layout versions \
             {OLDEST_LAYOUT_VERSION} to {NEWEST_LAYOUT_VERSION} only"
        ),
        (Some(lv), _) => Ok(lv),
        (None, Some(lv)) if !known.contains(&lv) => anyhow::bail!(
            "{}: a Hadoop image of layout version {lv}, which the Hadoop writer does not write \
             ({OLDEST_LAYOUT_VERSION} to {NEWEST_LAYOUT_VERSION}); choose one with \
             --layout-version",
            path.display()
        ),
        (None, Some(lv)) => Ok(lv),
        (None, None) => Ok(HADOOP_3_3_LAYOUT_VERSION),
    }
}
