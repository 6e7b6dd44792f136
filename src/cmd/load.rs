//! `nsimage load`: loads an image into memory and reports counts, digest and
//! time.

use nsimage::loader::{load, LoadOptions};
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
    let pb = super::spinner(&format!("loading {}", a.file.display()));
    let loaded = load(&a.file, &LoadOptions::default())?;
    pb.finish_and_clear();
    let ns = &loaded.namespace;
    let st = ns.stats();
    let digest = ns.digest().to_string();
    let s = &loaded.stats;
    if a.json {
        let mut m = super::stats_json(&st, &digest, s.seconds);
        m.insert("threads".into(), 1.into());
        m.insert("mode".into(), "serial".into());
        m.insert("read".into(), "bulk".into());
        m.insert("sub_sections".into(), s.pieces.into());
        m.insert("read_calls".into(), s.read_calls.into());
        m.insert("heap_bytes".into(), ns.heap_bytes().into());
        println!("{}", serde_json::Value::Object(m));
    } else {
        println!("{}: {}", a.file.display(), super::stats_text(&st, &digest));
        println!(
            "loaded in {:.3} s: {} pieces, {} read calls, {} bytes read",
            s.seconds, s.pieces, s.read_calls, s.bytes_read
        );
    }
    Ok(ExitCode::SUCCESS)
}
