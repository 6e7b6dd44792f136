//! `nsimage verify`: every checksum and structural rule; lists each bad
//! region and exits 1 if there is one.

use nsimage_loader::{verify, LoadError, ReadStrategy, VerifyOptions};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  nsimage verify ns.nsi\n  nsimage verify fsimage_0000000000000001234 --json\n  nsimage --md5 ignore verify copied.fsimage"
)]
pub struct Args {
    /// Image file.
    file: PathBuf,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: super::memory::MemoryLimit,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    // Positioned reads, not a mapping: `verify` is for files of unknown
    // origin, and one cut short while mapped would be a SIGBUS, not a
    // report.
    let report = match verify(
        &a.file,
        &VerifyOptions {
            read: ReadStrategy::Bulk,
            key: super::key()?,
            budget: Some(a.memory.budget()),
            md5: super::md5(),
        },
    ) {
        Ok(r) => r,
        // Header, footer or index damage: report it in the same shape.
        Err(LoadError::Corrupt { at, detail, .. }) => nsimage_loader::VerifyReport {
            problems: vec![nsimage_loader::Problem { at, detail }],
            ..Default::default()
        },
        // A file of another kind, asked for JSON: the same shape, its one
        // problem at 0 (in text, the error says it in words).
        Err(e @ LoadError::NotAnImage { .. }) if a.json => nsimage_loader::VerifyReport {
            problems: vec![nsimage_loader::Problem {
                at: nsimage_format::Location::at(0),
                detail: e.to_string(),
            }],
            ..Default::default()
        },
        Err(e) => return Err(e.into()),
    };
    if a.json {
        let list = |ps: &[nsimage_loader::Problem]| -> Vec<_> {
            ps.iter()
                .map(|p| {
                    json!({
                        "section": p.at.section.map(|s| s.to_string()),
                        "sub_section": p.at.sub_section,
                        "offset": p.at.offset,
                        "detail": p.detail,
                    })
                })
                .collect()
        };
        let v = json!({
            "ok": report.is_ok(),
            "sections": report.sections,
            "pieces": report.pieces,
            "bytes": report.bytes,
            "problems": list(&report.problems),
            "warnings": list(&report.warnings),
        });
        out!("{v}");
    } else if report.is_ok() {
        for w in &report.warnings {
            eprintln!("{}: warning at {}: {}", a.file.display(), w.at, w.detail);
        }
        out!(
            "{}: ok ({} sections, {} pieces, {} bytes)",
            a.file.display(),
            report.sections,
            report.pieces,
            report.bytes
        );
    } else {
        for p in &report.problems {
            out!("{}: corrupt at {}: {}", a.file.display(), p.at, p.detail);
        }
    }
    Ok(if report.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::EXIT_DATA)
    })
}
