//! `nsimage info`: format version, features, sections and sub-sections, read
//! from the header and index alone; for a Hadoop fsimage, its summary
//! (layout version, codec, every section) and its snapshots.

use nsimage_loader::ImageSource;
use nsimage_viewer::text::{bytes_summary, size_text};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    disable_help_flag = true,
    after_help = "Examples:\n  nsimage info ns.nsi\n  nsimage info fsimage_0000000000000001234 -h\n  nsimage info ns.nsi --json"
)]
pub struct Args {
    /// Image file.
    file: PathBuf,
    /// Print help (`-h` is `--human` here).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Sizes as `hdfs dfs -h` prints them (binary prefixes, one
    /// decimal: `1.5 K`, `9.7 T`) instead of byte counts.
    #[arg(short = 'h', long)]
    human: bool,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    if nsimage_loader::hdfs::is_hdfs_file(&a.file)? {
        return hdfs(&a);
    }
    let src = ImageSource::open(&a.file)?;
    let h = src.header;
    // Pieces at rest: codecs in use, plain and stored bytes, encryption.
    let mut codecs: Vec<&str> = Vec::new();
    let (mut plain, mut stored) = (0u64, 0u64);
    for s in &src.index.sections {
        plain = plain.saturating_add(s.plain_length());
        stored = stored.saturating_add(s.length);
        for p in s.pieces() {
            let c = p.at_rest.codec.name();
            if p.at_rest.codec != nsimage_format::codec::Codec::None && !codecs.contains(&c) {
                codecs.push(c);
            }
        }
    }
    let ratio = plain as f64 / stored.max(1) as f64;
    let encryption = src.index.encryption.as_ref().map(|e| {
        json!({
            "cipher": "AES-256-GCM",
            "key_fingerprint": nsimage_format::cipher::hex(&e.key_fingerprint),
            "image_id": nsimage_format::cipher::hex(&e.image_id),
        })
    });
    let ratio_of =
        |s: &nsimage_format::SectionInfo| s.plain_length() as f64 / s.length.max(1) as f64;
    if a.json {
        let sections: Vec<_> = src
            .index
            .sections
            .iter()
            .map(|s| {
                json!({
                    "kind": s.kind.to_string(),
                    "optional": s.optional,
                    "offset": s.offset,
                    "length": s.length,
                    "records": s.records,
                    "checksum": format!("{:016x}", s.checksum),
                    "plain_length": s.plain_length(),
                    "ratio": ratio_of(s),
                    "codec": s.at_rest.codec.name(),
                    "sub_sections": s.sub_sections.iter().map(|u| json!({
                        "offset": u.offset,
                        "length": u.length,
                        "plain_length": u.plain_length(),
                        "codec": u.at_rest.codec.name(),
                        "records": u.records,
                        "first_key": u.first_key,
                        "checksum": format!("{:016x}", u.checksum),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let v = json!({
            "format": "nsimage",
            "version": h.version,
            "required_features": h.required_features,
            "optional_features": h.optional_features,
            "bytes": src.len(),
            "codecs": codecs,
            "plain_bytes": plain,
            "stored_bytes": stored,
            "ratio": ratio,
            "encryption": encryption,
            "sections": sections,
        });
        out!("{v}");
        return Ok(ExitCode::SUCCESS);
    }
    out!(
        "{}: nsimage format version {}, {}",
        a.file.display(),
        h.version,
        bytes_summary(src.len(), a.human)
    );
    let size = |b: u64| size_text(b, a.human);
    out!(
        "features: required {:#x}, optional {:#x}",
        h.required_features,
        h.optional_features
    );
    out!(
        "at rest: {}, {} plain{} in {} stored ({ratio:.2}x){}",
        if codecs.is_empty() {
            "uncompressed".to_string()
        } else {
            format!("compressed ({})", codecs.join(", "))
        },
        size(plain),
        if a.human { "" } else { " bytes" },
        size(stored),
        match &src.index.encryption {
            Some(e) => format!(
                ", encrypted (AES-256-GCM, key fingerprint {})",
                nsimage_format::cipher::hex(&e.key_fingerprint)
            ),
            None => String::new(),
        }
    );
    out!(
        "{:<14} {:>12} {:>12} {:>12} {:>6} {:>10} {:>6}  checksum",
        "section",
        "offset",
        "length",
        "plain",
        "ratio",
        "records",
        "subs"
    );
    for s in &src.index.sections {
        out!(
            "{:<14} {:>12} {:>12} {:>12} {:>6.2} {:>10} {:>6}  {:016x}{}",
            s.kind.to_string(),
            s.offset,
            size(s.length),
            size(s.plain_length()),
            ratio_of(s),
            s.records,
            s.sub_sections.len(),
            s.checksum,
            if s.optional { " (optional)" } else { "" }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `info` of a Hadoop fsimage (magic `HDFSIMG1`): the summary and the small
/// sections, not the inodes.
fn hdfs(a: &Args) -> anyhow::Result<ExitCode> {
    let img = nsimage_loader::hdfs::describe(&a.file)?;
    let sidecar = nsimage_loader::hdfs::sidecar_path(&a.file).exists();
    let snaps = &img.snapshots;
    let name = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    if a.json {
        let sections: Vec<_> = img
            .sections
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "offset": s.offset,
                    "length": s.length,
                    "sub_section": s.sub_section,
                    "known": s.known,
                    "decoded": s.decoded,
                })
            })
            .collect();
        let n = &img.name_system;
        let v = json!({
            "format": "hdfs",
            "layout_version": img.layout_version,
            "ondisk_version": img.ondisk_version,
            "codec": img.codec,
            "codec_class": img.codec_class,
            "bytes": img.file_bytes,
            "summary_offset": img.summary.0,
            "summary_length": img.summary.1,
            "md5_sidecar": sidecar,
            "string_mask_bits": img.string_mask_bits,
            "last_inode_id": img.inode_header.map(|h| h.0),
            "inodes": img.inode_header.map(|h| h.1),
            "name_system": {
                "namespace_id": n.namespace_id,
                "transaction_id": n.transaction_id,
                "genstamp_v1": n.genstamp_v1,
                "genstamp_v2": n.genstamp_v2,
                "genstamp_v1_limit": n.genstamp_v1_limit,
                "last_allocated_block_id": n.last_allocated_block_id,
                "last_allocated_striped_block_id": n.last_allocated_striped_block_id,
            },
            "sections": sections,
            "snapshots": {
                "counter": snaps.counter,
                "snapshottable_dirs": snaps.snapshottable_dirs,
                "snapshots": snaps.snapshots.iter().map(|s| json!({
                    "id": s.id,
                    "name": name(&s.name),
                    "root": s.root,
                })).collect::<Vec<_>>(),
                "diffs": {
                    "entries": snaps.diffs.entries,
                    "file_diffs": snaps.diffs.file_diffs,
                    "dir_diffs": snaps.diffs.dir_diffs,
                    "created": snaps.diffs.created,
                    "deleted": snaps.diffs.deleted,
                    "deleted_refs": snaps.diffs.deleted_refs,
                },
            },
            "references": img.references.len(),
            "ec_policies": img.ec_policies.iter().map(|p| json!({"id": p.id, "name": p.name, "state": p.state})).collect::<Vec<_>>(),
            "files_under_construction": img.files_under_construction.len(),
        });
        out!("{v}");
        return Ok(ExitCode::SUCCESS);
    }
    out!(
        "{}: HDFS fsimage, layout version {}, codec {}, {}{}",
        a.file.display(),
        img.layout_version,
        img.codec_class.unwrap_or("none"),
        bytes_summary(img.file_bytes, a.human),
        if sidecar {
            ", .md5 sidecar present"
        } else {
            ""
        }
    );
    out!("{:<24} {:>12} {:>12}  notes", "section", "offset", "length");
    for s in &img.sections {
        let note = match (s.known, s.decoded, s.sub_section) {
            (false, _, _) => "unknown, skipped",
            (true, _, true) => "sub-section",
            (true, false, _) => "skipped",
            _ => "",
        };
        out!(
            "{:<24} {:>12} {:>12}  {note}",
            s.name,
            s.offset,
            size_text(s.length, a.human)
        );
    }
    out!(
        "summary at {} ({}); string table maskBits {}",
        img.summary.0,
        if a.human {
            nsimage_viewer::text::label_size(img.summary.1, true)
        } else {
            format!("{} bytes", img.summary.1)
        },
        img.string_mask_bits
    );
    out!(
        "snapshots: counter {}, {} snapshottable directories, {} snapshots, {} diff entries ({} file, {} directory), {} references",
        snaps.counter,
        snaps.snapshottable_dirs.len(),
        snaps.snapshots.len(),
        snaps.diffs.entries,
        snaps.diffs.file_diffs,
        snaps.diffs.dir_diffs,
        img.references.len()
    );
    for s in &snaps.snapshots {
        out!(
            "  snapshot {} {:?} of directory {}",
            s.id,
            name(&s.name),
            s.root
        );
    }
    Ok(ExitCode::SUCCESS)
}
