//! `nsimage info`: format version, features, sections and sub-sections, read
//! from the header and index alone.

use nsimage_loader::ImageSource;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Image file.
    file: PathBuf,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let src = ImageSource::open(&a.file)?;
    let h = src.header;
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
                    "sub_sections": s.sub_sections.iter().map(|u| json!({
                        "offset": u.offset,
                        "length": u.length,
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
            "sections": sections,
        });
        out!("{v}");
        return Ok(ExitCode::SUCCESS);
    }
    out!(
        "{}: nsimage format version {}, {} bytes",
        a.file.display(),
        h.version,
        src.len()
    );
    out!(
        "features: required {:#x}, optional {:#x}",
        h.required_features,
        h.optional_features
    );
    out!(
        "{:<14} {:>12} {:>12} {:>10} {:>6}  checksum",
        "section",
        "offset",
        "length",
        "records",
        "subs"
    );
    for s in &src.index.sections {
        out!(
            "{:<14} {:>12} {:>12} {:>10} {:>6}  {:016x}{}",
            s.kind.to_string(),
            s.offset,
            s.length,
            s.records,
            s.sub_sections.len(),
            s.checksum,
            if s.optional { " (optional)" } else { "" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
