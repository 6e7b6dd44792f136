//! `nsimage bench --lookup`: one path 6 levels deep looked up through the
//! NAME_INDEX against a full load, both as whole child processes, run
//! alternately; prints the medians, their ratio and the fraction of the
//! image the lookup read.

use super::Args;
use anyhow::bail;
use nsimage_namespace::{InodeKind, Namespace};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The deepest file at most 6 levels down (6 when there is one).
fn pick(ns: &Namespace) -> Option<String> {
    let mut best: Option<(usize, Vec<u8>)> = None;
    for slot in 0..ns.slot_count() {
        let Some(n) = ns.at(slot) else { continue };
        if n.kind() != InodeKind::File {
            continue;
        }
        let Some(p) = ns.path_of(n.id()) else {
            continue;
        };
        let depth = p.iter().filter(|&&b| b == b'/').count();
        if depth <= 6 && best.as_ref().is_none_or(|(d, _)| depth > *d) {
            let done = depth == 6;
            best = Some((depth, p));
            if done {
                break;
            }
        }
    }
    best.map(|(_, p)| String::from_utf8_lossy(&p).into_owned())
}

/// Runs `exe args` once; returns its JSON and its wall time.
fn once(exe: &Path, args: &[String]) -> anyhow::Result<(Value, f64)> {
    let t = Instant::now();
    let o = Command::new(exe).args(args).output()?;
    let secs = t.elapsed().as_secs_f64();
    if !o.status.success() {
        bail!(
            "{} {}: {}",
            exe.display(),
            args.join(" "),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    Ok((serde_json::from_slice(&o.stdout)?, secs))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The lookup bench, for each size of `--inodes`.
pub fn run(a: &Args, exe: &Path) -> anyhow::Result<()> {
    for &n in &a.inodes {
        let (image, ns) = super::reused_image(a, "lookup", n)?;
        let Some(path) = pick(&ns) else {
            bail!("no file in the generated namespace")
        };
        drop(ns);
        let img = image.display().to_string();
        let lookup = vec![
            "lookup".to_string(),
            img.clone(),
            path.clone(),
            "--json".into(),
        ];
        let load = vec!["load".to_string(), img, "--json".into()];
        let (mut tl, mut tf) = (Vec::new(), Vec::new());
        let mut last = Value::Null;
        for _ in 0..a.repeat.max(1) {
            let (v, s) = once(exe, &lookup)?;
            tl.push(s);
            last = v;
            tf.push(once(exe, &load)?.1);
        }
        let (ml, mf) = (median(tl), median(tf));
        let summary = serde_json::json!({
            "inodes": n,
            "path": path,
            "lookup_seconds": ml,
            "load_seconds": mf,
            "speedup": mf / ml.max(1e-9),
            "bytes_read": last["bytes_read"],
            "read_calls": last["read_calls"],
            "image_bytes": last["image_bytes"],
            "fraction_read": last["fraction_read"],
            "indexed": last["indexed"],
        });
        if a.json {
            out!("{summary}");
        } else {
            out!(
                "{n} inodes, {path}: lookup {:.1} ms, load {:.1} ms (medians of {} alternating runs), {:.1}x; read {} of {} bytes ({:.4}%)",
                ml * 1e3,
                mf * 1e3,
                a.repeat.max(1),
                mf / ml.max(1e-9),
                last["bytes_read"],
                last["image_bytes"],
                last["fraction_read"].as_f64().unwrap_or(0.0) * 100.0
            );
        }
    }
    Ok(())
}
