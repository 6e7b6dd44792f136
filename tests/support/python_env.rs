//! The Python virtual environment of the tests' real clients (the `hdfs`
//! WebHDFS client, DuckDB, PySpark): created or reused by
//! `tests/python/setup.sh` from the pinned `tests/python/requirements.txt`,
//! once per test process. A failure to set it up fails the test: nothing
//! is skipped because a package is missing.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The environment's `python`, set up on first use.
pub fn python() -> &'static Path {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let setup = root().join("tests/python/setup.sh");
        let out = Command::new("bash")
            .arg(&setup)
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", setup.display()));
        assert!(
            out.status.success(),
            "{} failed ({}):\n{}",
            setup.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let py = PathBuf::from(stdout.lines().last().unwrap_or_default().trim());
        assert!(
            py.is_file(),
            "{} printed no python: {stdout}",
            setup.display()
        );
        py
    })
}

/// Runs `script` (a path from the repository root) with `args` under the
/// environment's python; its output, after checking that it succeeded.
pub fn run(script: &str, args: &[&str]) -> Output {
    let out = Command::new(python())
        .arg(root().join(script))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {script}: {e}"));
    assert!(
        out.status.success(),
        "{script} {args:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `script` and parses its stdout as one JSON document.
pub fn run_json(script: &str, args: &[&str]) -> Value {
    let out = run(script, args);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{script}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}
