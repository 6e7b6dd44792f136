//! The house rules of README's "Architecture", checked on the sources:
//! each crate depends only on crates of a lower layer, the product crates
//! pull in none of the command line's or the tooling's crates, and no two
//! modules of a crate import each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every workspace crate, its folder and its layer: a crate may depend only
/// on crates of a strictly lower layer (never beside, never above).
const LAYERS: [(&str, &str, u32); 7] = [
    ("nsimage-namespace", "namespace", 0),
    ("nsimage-format", "format-spec", 1),
    ("nsimage-writer", "writer", 2),
    ("nsimage-loader", "loader", 2),
    ("nsimage-store", "store", 3),
    ("nsimage-testkit", "testkit", 4),
    ("nsimage", ".", 5),
];

/// The library crates a user of nsimage links.
const PRODUCT: [&str; 5] = [
    "nsimage-namespace",
    "nsimage-format",
    "nsimage-writer",
    "nsimage-loader",
    "nsimage-store",
];

/// Crates only the command line (or the tooling) may depend on.
const CLI_ONLY: [&str; 6] = [
    "clap",
    "indicatif",
    "plotters",
    "rusqlite",
    "rand",
    "rand_pcg",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Names of the `nsimage-*` crates in the `[dependencies]` table of a
/// manifest (dev- and build-dependencies are not layering).
fn workspace_dependencies(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let mut out = BTreeSet::new();
    let mut in_deps = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps && line.starts_with("nsimage-") {
            let name = line.split(['=', '.', ' ']).next().unwrap();
            out.insert(name.to_string());
        }
    }
    out
}

#[test]
fn every_crate_depends_only_on_lower_layers() {
    let layer: BTreeMap<&str, u32> = LAYERS.iter().map(|&(n, _, l)| (n, l)).collect();
    for (name, dir, level) in LAYERS {
        for dep in workspace_dependencies(&root().join(dir).join("Cargo.toml")) {
            let Some(&dep_level) = layer.get(dep.as_str()) else {
                panic!("{name} depends on {dep}, which has no layer here");
            };
            assert!(
                dep_level < level,
                "{name} (layer {level}) depends on {dep} (layer {dep_level}): beside or above it"
            );
        }
    }
}

#[test]
fn product_crates_pull_in_no_command_line_or_tooling_crate() {
    for krate in PRODUCT {
        let out = Command::new(env!("CARGO"))
            .args(["tree", "--offline", "-e", "normal", "--prefix", "none"])
            .args(["-f", "{p}", "-p", krate])
            .current_dir(root())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cargo tree -p {krate}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let tree = String::from_utf8(out.stdout).unwrap();
        let names: BTreeSet<&str> = tree
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert!(
            names.contains(krate),
            "cargo tree -p {krate} printed:\n{tree}"
        );
        for banned in CLI_ONLY.iter().chain(["nsimage", "nsimage-testkit"].iter()) {
            assert!(
                !names.contains(banned),
                "{krate} depends on {banned}:\n{tree}"
            );
        }
    }
}

/// The `.rs` files under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a source file belongs to (`None` for the crate
/// root).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib" && name != "main").then_some(name)
}

/// The code of a source file: comment lines (docs included) are dropped,
/// since a link in a doc comment is not an import.
fn code(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a file names with `crate::NAME`.
fn imports(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if modules.contains(&name) {
            out.insert(name);
        }
        // `use crate::{a, b::c}` names several.
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for part in group.split(',') {
                let name = part.trim().split("::").next().unwrap_or("").trim();
                if modules.contains(name) {
                    out.insert(name.to_string());
                }
            }
        }
    }
    out
}

#[test]
fn no_two_modules_of_a_crate_import_each_other() {
    for (name, dir, _) in LAYERS {
        let src = root().join(dir).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        let modules: BTreeSet<String> = files.iter().filter_map(|f| top_module(&src, f)).collect();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for f in &files {
            let Some(from) = top_module(&src, f) else {
                continue;
            };
            let text = code(&std::fs::read_to_string(f).unwrap());
            for to in imports(&text, &modules) {
                if to != from {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
        // Any cycle, not only pairs: a depth-first search for a back edge.
        fn visit(
            m: &str,
            edges: &BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(i) = path.iter().position(|p| p == m) {
                let mut cycle = path[i..].to_vec();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            if done.contains(m) {
                return None;
            }
            path.push(m.to_string());
            for next in edges.get(m).into_iter().flatten() {
                if let Some(c) = visit(next, edges, path, done) {
                    return Some(c);
                }
            }
            path.pop();
            done.insert(m.to_string());
            None
        }
        let mut done = BTreeSet::new();
        for m in &modules {
            if let Some(cycle) = visit(m, &edges, &mut Vec::new(), &mut done) {
                panic!("{name}: modules import each other: {}", cycle.join(" -> "));
            }
        }
        assert!(
            modules.len() >= 2 || name == "nsimage-testkit",
            "{name}: found no modules under {}",
            src.display()
        );
    }
}
