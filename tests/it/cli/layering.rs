//! The house rules of ARCHITECTURE.md, checked on the sources:
//! each crate depends only on crates of a lower layer, the product crates
//! pull in none of the command line's or the tooling's crates, and no two
//! modules of a crate import each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every workspace crate, its folder and its layer: a crate may depend only
/// on crates of a strictly lower layer (never beside, never above).
const LAYERS: [(&str, &str, u32); 10] = [
    ("nsimage-namespace", "namespace", 0),
    ("nsimage-format", "format-spec", 1),
    ("nsimage-writer", "writer", 2),
    ("nsimage-loader", "loader", 2),
    ("nsimage-store", "store", 3),
    ("nsimage-viewer", "viewer", 3),
    ("nsimage-export", "export", 4),
    ("nsimage-testkit", "testkit", 4),
    ("nsimage-server", "server", 4),
    ("nsimage", ".", 5),
];

/// The library crates a user of nsimage links.
const PRODUCT: [&str; 8] = [
    "nsimage-namespace",
    "nsimage-format",
    "nsimage-writer",
    "nsimage-loader",
    "nsimage-store",
    "nsimage-viewer",
    "nsimage-server",
    "nsimage-export",
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

/// The module path of a source file: `lib.rs` is the root (empty path),
/// `a.rs` and `a/mod.rs` are `a`, `a/b.rs` is `a::b`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_str().unwrap().to_string())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap().to_string();
    if !matches!(stem.as_str(), "lib" | "main" | "mod") {
        parts.push(stem);
    }
    parts
}

/// The code of a source file that belongs to its module: comment lines
/// (docs included: a link is not an import) and the unit tests at its end
/// (`#[cfg(test)]`, whose `super::*` is the file itself) are dropped.
fn code(text: &str) -> String {
    let mut out = Vec::new();
    for l in text.lines() {
        let t = l.trim_start();
        if t.starts_with("#[cfg(test)]") {
            break;
        }
        if !t.starts_with("//") {
            out.push(l);
        }
    }
    out.join("\n")
}

/// The inline modules a file declares with a body (`pub mod pb { .. }`).
fn inline_modules(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for l in code.lines() {
        let t = l
            .trim_start()
            .trim_start_matches("pub ")
            .trim_start_matches("pub(crate) ");
        if let Some(rest) = t.strip_prefix("mod ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if rest[name.len()..].trim_start().starts_with('{') {
                out.push(name);
            }
        }
    }
    out
}

/// Every path a file names from `start` (`crate::` or `super::`), with
/// `use` groups expanded: `crate::{a::{B, C}, d}` gives `a::B`, `a::C`, `d`.
fn paths_after(code: &str, start: &str) -> Vec<Vec<String>> {
    fn ident(s: &str) -> usize {
        s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len())
    }
    /// Parses a path (or group) at the front of `s` under `prefix`.
    fn parse(s: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let s = s.trim_start();
        if let Some(group) = s.strip_prefix('{') {
            // Split the group at its top-level commas.
            let (mut depth, mut from) = (0usize, 0usize);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        parse(&group[from..i], prefix.clone(), out);
                        return;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        parse(&group[from..i], prefix.clone(), out);
                        from = i + 1;
                    }
                    _ => {}
                }
            }
            return;
        }
        let n = ident(s);
        if n == 0 {
            if !prefix.is_empty() {
                out.push(prefix);
            }
            return;
        }
        let mut path = prefix;
        path.push(s[..n].to_string());
        match s[n..].strip_prefix("::") {
            Some(rest) => parse(rest, path, out),
            None => out.push(path),
        }
    }
    let mut out = Vec::new();
    for (i, _) in code.match_indices(start) {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        parse(&code[i + start.len()..], Vec::new(), &mut out);
    }
    out
}

#[test]
fn no_two_modules_of_a_crate_import_each_other() {
    type Module = Vec<String>;
    let mut failures = Vec::new();
    for (name, dir, _) in LAYERS {
        let src = root().join(dir).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        let mut code_of: BTreeMap<Module, String> = BTreeMap::new();
        for f in &files {
            let m = module_of(&src, f);
            code_of.insert(m, code(&std::fs::read_to_string(f).unwrap()));
        }
        let mut modules: BTreeSet<Module> = code_of.keys().cloned().collect();
        for (m, c) in &code_of {
            for inner in inline_modules(c) {
                let mut p = m.clone();
                p.push(inner);
                modules.insert(p);
            }
        }
        // Names a module re-exports (`pub use a::b::C;`), so that a path
        // through the re-export leads to the defining module.
        let mut reexports: BTreeMap<(Module, String), Module> = BTreeMap::new();
        for (m, c) in &code_of {
            for l in c.lines().filter(|l| l.trim_start().starts_with("pub use ")) {
                let l = l.trim_start().trim_start_matches("pub use ");
                let mut found = Vec::new();
                let l = l.trim_start_matches("crate::").trim_start_matches("self::");
                paths_after(&format!("crate::{l}"), "crate::")
                    .into_iter()
                    .for_each(|p| found.push(p));
                for p in found {
                    let (last, dir) = p.split_last().unwrap();
                    let mut target = m.clone();
                    target.extend(dir.iter().cloned());
                    if modules.contains(&target) {
                        reexports.insert((m.clone(), last.clone()), target);
                    }
                }
            }
        }
        // The module a path names: its longest prefix that is a module,
        // then through one re-export of the next name.
        let resolve = |path: &[String]| -> Module {
            let mut m: Module = Vec::new();
            let mut rest = path;
            while let Some((first, tail)) = rest.split_first() {
                let mut next = m.clone();
                next.push(first.clone());
                if modules.contains(&next) {
                    m = next;
                    rest = tail;
                } else {
                    if let Some(t) = reexports.get(&(m.clone(), first.clone())) {
                        return t.clone();
                    }
                    break;
                }
            }
            m
        };
        let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        for (m, c) in &code_of {
            let mut named = Vec::new();
            for p in paths_after(c, "crate::") {
                named.push(resolve(&p));
            }
            let parent = &m[..m.len().saturating_sub(1)];
            for p in paths_after(c, "super::") {
                // `super::super::x` climbs one more level per `super`.
                let ups = p.iter().take_while(|s| *s == "super").count();
                let mut full = parent[..parent.len().saturating_sub(ups)].to_vec();
                full.extend(p.into_iter().skip(ups));
                named.push(resolve(&full));
            }
            // `use child::X` and `use self::child::X`: relative to the module.
            for l in c.lines() {
                let t = l.trim_start();
                let Some(u) = t
                    .strip_prefix("pub use ")
                    .or_else(|| t.strip_prefix("pub(crate) use "))
                    .or_else(|| t.strip_prefix("use "))
                else {
                    continue;
                };
                let u = u.trim_start_matches("self::");
                if u.starts_with("crate::") || u.starts_with("super::") {
                    continue;
                }
                for p in paths_after(&format!("self::{u}"), "self::") {
                    let mut child = m.clone();
                    child.push(p[0].clone());
                    if modules.contains(&child) {
                        let mut full = m.clone();
                        full.extend(p);
                        named.push(resolve(&full));
                    }
                }
            }
            for to in named {
                // A module may use its own children and ancestors' items
                // only if they do not use it back; self-edges are free.
                if &to != m {
                    edges.entry(m.clone()).or_default().insert(to);
                }
            }
        }
        // Any cycle, not only pairs: a depth-first search for a back edge.
        fn visit(
            m: &Module,
            edges: &BTreeMap<Module, BTreeSet<Module>>,
            path: &mut Vec<Module>,
            done: &mut BTreeSet<Module>,
        ) -> Option<Vec<Module>> {
            if let Some(i) = path.iter().position(|p| p == m) {
                let mut cycle = path[i..].to_vec();
                cycle.push(m.clone());
                return Some(cycle);
            }
            if done.contains(m) {
                return None;
            }
            path.push(m.clone());
            for next in edges.get(m).into_iter().flatten() {
                if let Some(c) = visit(next, edges, path, done) {
                    return Some(c);
                }
            }
            path.pop();
            done.insert(m.clone());
            None
        }
        let show = |m: &Module| {
            if m.is_empty() {
                "(crate root)".to_string()
            } else {
                m.join("::")
            }
        };
        let mut done = BTreeSet::new();
        for m in &modules {
            if let Some(cycle) = visit(m, &edges, &mut Vec::new(), &mut done) {
                let cycle: Vec<String> = cycle.iter().map(show).collect();
                failures.push(format!("{name}: {}", cycle.join(" -> ")));
                break;
            }
        }
        assert!(
            modules.len() >= 3,
            "{name}: found no modules under {}",
            src.display()
        );
    }
    assert!(
        failures.is_empty(),
        "modules import each other:\n{}",
        failures.join("\n")
    );
}
