//! The maps of ARCHITECTURE.md ("Where does X go", the module maps, the
//! front pages), checked on the sources: every section kind is in
//! FORMAT.md's table, the proto, the writer, the loader and verify; every
//! library crate's module map lists exactly the modules its `lib.rs`
//! declares; every front page names what the crate must never import and
//! runs an example; every integration-test module is named in
//! docs/testing.md.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The library crates' folders: each has a front page (`src/lib.rs`) with a
/// module map, a "never" and a doctest.
const LIBRARIES: [&str; 9] = [
    "namespace",
    "format-spec",
    "writer",
    "loader",
    "store",
    "viewer",
    "server",
    "export",
    "testkit",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: impl AsRef<Path>) -> String {
    let path = root().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `.rs` file under `dir`, as text.
fn all_sources(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.push_str(&all_sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push_str(&std::fs::read_to_string(&p).unwrap());
            out.push('\n');
        }
    }
    out
}

/// Whether `text` holds `word` with no identifier character on either side.
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

// ---------------------------------------------------------------------
// A new section kind
// ---------------------------------------------------------------------

/// A `SectionKind` constant of `format-spec/src/consts.rs`.
struct Kind {
    name: String,
    number: u32,
}

/// The `pub const X: SectionKind = SectionKind(N);` lines of consts.rs.
fn section_kinds(consts: &str) -> Vec<Kind> {
    let mut out = Vec::new();
    for line in consts.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("pub const ") else {
            continue;
        };
        let Some((name, value)) = rest.split_once(": SectionKind = SectionKind(") else {
            continue;
        };
        let value = value.trim_end_matches(");");
        let number = match value.strip_prefix("0x") {
            Some(hex) => u32::from_str_radix(hex, 16).unwrap(),
            None => value.parse().unwrap(),
        };
        out.push(Kind {
            name: name.to_string(),
            number,
        });
    }
    out
}

/// The kinds listed in `SectionKind::KNOWN`.
fn known_kinds(consts: &str) -> BTreeSet<String> {
    let start = consts.find("pub const KNOWN").expect("SectionKind::KNOWN");
    let body = &consts[start..];
    let body = &body[body.find("= [").unwrap()..body.find("];").unwrap()];
    body.split(|c: char| c == ',' || c == '[' || c.is_whitespace())
        .filter_map(|s| s.strip_prefix("Self::"))
        .map(str::to_string)
        .collect()
}

/// The row of kind `number` in FORMAT.md's section table (the table whose
/// header is `| kind | name | record type | records | order |`): its cells.
fn format_row(format_md: &str, number: u32) -> Option<Vec<String>> {
    let cells =
        |line: &str| -> Vec<String> { line.split('|').map(|c| c.trim().to_string()).collect() };
    let mut lines = format_md.lines();
    lines.find(|l| {
        cells(l).get(1..4) == Some(&["kind".into(), "name".into(), "record type".into()])
    })?;
    lines
        .take_while(|l| l.starts_with('|'))
        .map(cells)
        .find(|c| c.len() > 4 && c[1] == number.to_string())
}

#[test]
fn every_section_kind_is_in_the_spec_the_proto_the_writer_the_loader_and_verify() {
    let consts = read("format-spec/src/consts.rs");
    let format_md = read("format-spec/FORMAT.md");
    let proto =
        read("format-spec/proto/nsimage.proto") + &read("format-spec/proto/hdfs_fsimage.proto");
    let image_rs = read("writer/src/stream.rs");
    let writer = all_sources(&root().join("writer/src"));
    let loader = all_sources(&root().join("loader/src"));
    let verify = read("loader/src/verify.rs");
    let kinds = section_kinds(&consts);
    let known = known_kinds(&consts);
    assert!(
        kinds.len() >= 11,
        "consts.rs: {} section kinds found",
        kinds.len()
    );
    let mut wrong = Vec::new();
    for Kind { name, number } in &kinds {
        let use_ = format!("SectionKind::{name}");
        if !consts.contains(&format!("Self::{name} => \"")) {
            wrong.push(format!("{name}: no arm in SectionKind::name() (consts.rs)"));
        }
        // Kinds from 0x4800 up name the sections of Hadoop images (consts.rs
        // says so); they are never in an nsimage index.
        if *number >= 0x4800 {
            if has_word(&writer, &use_) {
                wrong.push(format!("{name}: a Hadoop-only kind, written by the writer"));
            }
            continue;
        }
        let Some(row) = format_row(&format_md, *number) else {
            wrong.push(format!(
                "{name} ({number}): no row in FORMAT.md's section table"
            ));
            continue;
        };
        if !has_word(&row[2], name) {
            wrong.push(format!(
                "{name} ({number}): FORMAT.md's row names it {:?}",
                row[2]
            ));
        }
        let record = row[3].trim_matches('`');
        if record == "reserved" {
            // Reserved: no record, nobody writes it, a reader treats it as
            // unknown.
            if has_word(&writer, &use_) {
                wrong.push(format!(
                    "{name}: reserved in FORMAT.md, written by the writer"
                ));
            }
            if known.contains(name) {
                wrong.push(format!(
                    "{name}: reserved in FORMAT.md, in SectionKind::KNOWN"
                ));
            }
            continue;
        }
        let message = record.rsplit('.').next().unwrap();
        if !has_word(&proto, &format!("message {message}")) {
            wrong.push(format!(
                "{name}: its record `{message}` (FORMAT.md) is not a message of format-spec/proto/"
            ));
        }
        if !has_word(&image_rs, &use_) {
            wrong.push(format!("{name}: not written by writer/src/stream.rs"));
        }
        if !has_word(&loader, &use_) {
            wrong.push(format!("{name}: read nowhere in loader/src/"));
        }
        let optional = row[2].contains("(optional)");
        if known.contains(name) == optional {
            wrong.push(format!(
                "{name}: FORMAT.md says optional = {optional}, SectionKind::KNOWN says known = {}",
                known.contains(name)
            ));
        }
        // A known kind is checked by the load that verify runs; an optional
        // one is read by verify on its own.
        if optional && !has_word(&verify, name) {
            wrong.push(format!(
                "{name}: optional, and loader/src/verify.rs never names it"
            ));
        }
    }
    assert!(wrong.is_empty(), "section kinds:\n{}", wrong.join("\n"));
}

// ---------------------------------------------------------------------
// Front pages: module maps, nevers, doctests
// ---------------------------------------------------------------------

/// The `//!` lines of a source file, without the marker.
fn front_page(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect()
}

/// The modules a source file declares (`mod x;`, `pub mod x;`,
/// `pub(crate) mod x { .. }`), those under `#[cfg(test)]` and those of
/// another folder (`#[path = ..]`, the tests' shared support) left out: name,
/// and whether it is inline.
fn declared_modules(text: &str) -> BTreeSet<(String, bool)> {
    let mut out = BTreeSet::new();
    let mut test_only = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("//") {
            continue;
        }
        if line.starts_with("#[") {
            test_only |= line == "#[cfg(test)]" || line.starts_with("#[path");
            continue;
        }
        let rest = line
            .strip_prefix("pub(crate) ")
            .or_else(|| line.strip_prefix("pub "))
            .unwrap_or(line);
        if let Some(rest) = rest.strip_prefix("mod ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let inline = rest[name.len()..].trim_start().starts_with('{');
            if !test_only {
                out.insert((name, inline));
            }
        }
        test_only = false;
    }
    out
}

/// The module map of a front page: the backquoted names in the first cell of
/// each row of the table under its `# Module map` heading; `None` when it
/// has no such heading.
fn module_map(page: &[&str]) -> Option<Vec<String>> {
    let start = page.iter().position(|l| l.trim() == "# Module map")?;
    let mut out = Vec::new();
    for line in &page[start + 1..] {
        if line.starts_with('#') {
            break;
        }
        let Some(row) = line.trim().strip_prefix('|') else {
            continue;
        };
        let first = row.split('|').next().unwrap_or("");
        if first.trim_start().starts_with('-') || first.trim() == "file" {
            continue;
        }
        out.extend(first.split('`').skip(1).step_by(2).map(str::to_string));
    }
    Some(out)
}

/// What is wrong with the module map of `file` (a `lib.rs`, or a folder
/// module's own page), whose modules' files sit in `dir`.
fn check_map(file: &Path, dir: &Path, wrong: &mut Vec<String>) {
    let text = std::fs::read_to_string(file).unwrap();
    let shown = file.strip_prefix(root()).unwrap().display().to_string();
    let declared = declared_modules(&text);
    let Some(map) = module_map(&front_page(&text)) else {
        wrong.push(format!("{shown}: no `# Module map` heading with its table"));
        return;
    };
    let mut listed = BTreeSet::new();
    for entry in map {
        if entry == "lib.rs" || entry == "mod.rs" {
            continue;
        }
        let (name, exists) = if let Some(stem) = entry.strip_suffix(".rs") {
            (stem.to_string(), dir.join(&entry).is_file())
        } else if let Some(stem) = entry.strip_suffix('/') {
            (stem.to_string(), dir.join(stem).join("mod.rs").is_file())
        } else {
            let inline = declared.contains(&(entry.clone(), true));
            (entry.clone(), inline)
        };
        if !exists {
            wrong.push(format!(
                "{shown}: the module map lists `{entry}`, which does not exist"
            ));
        }
        listed.insert(name);
    }
    for (name, _) in &declared {
        if !listed.contains(name) {
            wrong.push(format!(
                "{shown}: module `{name}` is missing from the module map"
            ));
        }
    }
    for name in &listed {
        if !declared.iter().any(|(n, _)| n == name) {
            wrong.push(format!(
                "{shown}: the module map lists `{name}`, which it does not declare"
            ));
        }
    }
}

/// Every `.rs` file under `dir` whose front page has a `# Module map`.
fn pages_with_maps(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            pages_with_maps(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("lib.rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            if front_page(&text).iter().any(|l| l.trim() == "# Module map") {
                out.push(p);
            }
        }
    }
}

#[test]
fn every_module_map_lists_exactly_the_declared_modules() {
    let mut wrong = Vec::new();
    for krate in LIBRARIES {
        let src = root().join(krate).join("src");
        check_map(&src.join("lib.rs"), &src, &mut wrong);
        // A folder module may keep a map of its own: `a/mod.rs`, or `a.rs`
        // beside `a/`; it is checked the same way.
        let mut nested = Vec::new();
        pages_with_maps(&src, &mut nested);
        for page in nested {
            let dir = if page.ends_with("mod.rs") {
                page.parent().unwrap().to_path_buf()
            } else {
                page.with_extension("")
            };
            check_map(&page, &dir, &mut wrong);
        }
    }
    assert!(wrong.is_empty(), "module maps:\n{}", wrong.join("\n"));
}

/// Whether a front page holds a fenced Rust block that rustdoc runs: no
/// info string, or only `rust` and an edition.
fn has_running_doctest(page: &[&str]) -> bool {
    let mut in_block = false;
    for line in page {
        let Some(info) = line.trim().strip_prefix("```") else {
            continue;
        };
        if in_block {
            in_block = false;
            continue;
        }
        in_block = true;
        let attrs: Vec<&str> = info
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .collect();
        // `ignore`, `no_run`, `compile_fail`, `text` and the rest do not run.
        let runs = attrs
            .iter()
            .all(|a| *a == "rust" || a.starts_with("edition"));
        if runs {
            return true;
        }
    }
    false
}

#[test]
fn every_front_page_names_its_nevers_and_runs_an_example() {
    let mut wrong = Vec::new();
    for krate in LIBRARIES {
        let text = read(Path::new(krate).join("src/lib.rs"));
        let page = front_page(&text);
        let prose = page.join("\n").to_lowercase();
        if !has_word(&prose, "never") {
            wrong.push(format!(
                "{krate}/src/lib.rs: no \"never\" (what the crate must never import)"
            ));
        }
        if !has_running_doctest(&page) {
            wrong.push(format!(
                "{krate}/src/lib.rs: no example that runs as a doctest"
            ));
        }
        if !text.lines().any(|l| {
            let l = l.trim();
            l == "#![forbid(unsafe_code)]" || l == "#![deny(unsafe_code)]"
        }) {
            wrong.push(format!(
                "{krate}/src/lib.rs: neither forbids nor denies unsafe code"
            ));
        }
    }
    assert!(wrong.is_empty(), "front pages:\n{}", wrong.join("\n"));
}

// ---------------------------------------------------------------------
// The tests' own map: docs/testing.md
// ---------------------------------------------------------------------

/// The rows of docs/testing.md's table of `tests/it/` areas: area, text.
fn area_rows(testing: &str) -> Vec<(String, String)> {
    testing
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("| `")?;
            let (area, text) = rest.split_once("` |")?;
            Some((area.to_string(), text.to_string()))
        })
        .collect()
}

#[test]
fn every_test_module_is_named_in_docs_testing() {
    let testing = read("docs/testing.md");
    let rows = area_rows(&testing);
    let mut wrong = Vec::new();
    for (area, _) in declared_modules(&read("tests/it/main.rs")) {
        let Some((_, text)) = rows.iter().find(|(a, _)| *a == area) else {
            wrong.push(format!(
                "tests/it/{area}: no row in docs/testing.md's table of areas"
            ));
            continue;
        };
        let index = read(format!("tests/it/{area}/mod.rs"));
        for (module, _) in declared_modules(&index) {
            if !text.contains(&format!("`{module}.rs`")) {
                wrong.push(format!(
                    "tests/it/{area}/{module}.rs: not named in the `{area}` row of docs/testing.md"
                ));
            }
        }
    }
    // The Python clients' binary: its section names each module.
    let clients = testing
        .split("### `tests/clients/`")
        .nth(1)
        .expect("docs/testing.md: a `tests/clients/` section");
    let clients = clients.split("\n## ").next().unwrap();
    for (module, _) in declared_modules(&read("tests/clients/main.rs")) {
        if !clients.contains(&format!("`{module}.rs`")) {
            wrong.push(format!(
                "tests/clients/{module}.rs: not named in docs/testing.md's `tests/clients/` section"
            ));
        }
    }
    assert!(wrong.is_empty(), "docs/testing.md:\n{}", wrong.join("\n"));
}

// ---------------------------------------------------------------------
// The diagram and the table of crates in ARCHITECTURE.md
// ---------------------------------------------------------------------

/// A crate's name from the short one ARCHITECTURE.md uses (`format`,
/// `format-spec`, `loader`, ...).
fn crate_of(short: &str) -> String {
    match short {
        "format" | "format-spec" => "nsimage-format".to_string(),
        "nsimage" => "nsimage".to_string(),
        other => format!("nsimage-{other}"),
    }
}

/// The `nsimage-*` crates of a manifest's `[dependencies]`.
fn dependencies(folder: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_deps = false;
    for line in read(Path::new(folder).join("Cargo.toml")).lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
        } else if in_deps && line.starts_with("nsimage-") {
            out.insert(line.split(['=', '.', ' ']).next().unwrap().to_string());
        }
    }
    out
}

/// A comma-separated list of short names, as crates.
fn crates_in(list: &str) -> BTreeSet<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != "none")
        .map(crate_of)
        .collect()
}

#[test]
fn the_diagram_and_the_table_of_crates_are_the_manifests() {
    let arch = read("ARCHITECTURE.md");
    let libraries: BTreeSet<String> = LIBRARIES.iter().map(|f| crate_of(f)).collect();
    let mut wrong = Vec::new();

    // The diagram: "layer N   name  ──► a, b", or names with no arrow.
    let diagram = arch.split("```text\n").nth(1).unwrap();
    let diagram = diagram.split("```").next().unwrap();
    let mut layer = None;
    let mut drawn = BTreeSet::new();
    let mut diagram_layer = std::collections::BTreeMap::new();
    for line in diagram.lines() {
        let mut rest = line.trim();
        if let Some(r) = rest.strip_prefix("layer ") {
            let (n, r) = r.split_once(' ').unwrap();
            layer = Some(n.parse::<u32>().unwrap());
            rest = r.trim();
        }
        let (left, right) = match rest.split_once("──►") {
            Some((l, r)) => (l.trim(), Some(r.trim())),
            None => (rest, None),
        };
        // "format-spec (nsimage-format)", "nsimage (src/, the binary)".
        let left = left.split(" (").next().unwrap();
        for name in left.split(',').map(str::trim) {
            let krate = crate_of(name);
            let deps = dependencies(if krate == "nsimage" {
                "."
            } else {
                LIBRARIES
                    .iter()
                    .find(|f| crate_of(f) == krate)
                    .unwrap_or_else(|| panic!("the diagram names {name}, not a crate"))
            });
            diagram_layer.insert(krate.clone(), layer.unwrap());
            let mut shown = match right {
                Some(r) if r.starts_with("all ") => libraries.clone(),
                Some(r) => crates_in(r),
                None => BTreeSet::new(),
            };
            // "Every crate above layer 1 depends on nsimage-format and
            // nsimage-namespace directly as well."
            if layer.unwrap() > 1 {
                shown.insert("nsimage-format".into());
                shown.insert("nsimage-namespace".into());
            }
            if shown != deps {
                wrong.push(format!(
                    "the diagram: {krate} depends on {shown:?}, its manifest says {deps:?}"
                ));
            }
            drawn.insert(krate);
        }
    }
    for krate in libraries.iter().chain(["nsimage".to_string()].iter()) {
        if !drawn.contains(krate) {
            wrong.push(format!("the diagram: {krate} is missing"));
        }
    }

    // The table: "| `loader/` | `nsimage-loader` | 2 | namespace, format | ... |".
    let mut tabled = BTreeSet::new();
    for line in arch.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 6 || !cells[2].starts_with("`nsimage") {
            continue;
        }
        let krate = cells[2].trim_matches('`').to_string();
        let folder = cells[1].trim_matches('`').trim_end_matches('/');
        let folder = if folder == "src" { "." } else { folder };
        let deps = dependencies(folder);
        let shown = if cells[4] == "every crate above" {
            libraries.clone()
        } else {
            crates_in(cells[4])
        };
        if shown != deps {
            wrong.push(format!(
                "the table: {krate} depends on {shown:?}, its manifest says {deps:?}"
            ));
        }
        if cells[3].parse::<u32>().ok() != diagram_layer.get(&krate).copied() {
            wrong.push(format!(
                "the table: {krate} is on layer {}, the diagram says {:?}",
                cells[3],
                diagram_layer.get(&krate)
            ));
        }
        tabled.insert(krate);
    }
    for krate in libraries.iter().chain(["nsimage".to_string()].iter()) {
        if !tabled.contains(krate) {
            wrong.push(format!("the table: {krate} is missing"));
        }
    }
    assert!(wrong.is_empty(), "ARCHITECTURE.md:\n{}", wrong.join("\n"));
}

#[test]
fn the_error_enums_named_exist_and_only_the_binary_uses_anyhow() {
    let arch = read("ARCHITECTURE.md");
    let claimed = [
        ("namespace", "NsError"),
        ("format-spec", "FormatError"),
        ("loader", "LoadError"),
        ("store", "StoreError"),
        ("viewer", "ViewError"),
        ("export", "ExportError"),
        ("server", "ServeError"),
    ];
    let mut wrong = Vec::new();
    for (folder, name) in claimed {
        if !arch.contains(&format!("`{name}`")) {
            wrong.push(format!(
                "ARCHITECTURE.md no longer names `{name}`: update this test"
            ));
        }
        let src = all_sources(&root().join(folder).join("src"));
        if !has_word(&src, &format!("pub enum {name}")) {
            wrong.push(format!("{folder}/src: no `pub enum {name}`"));
        }
    }
    for folder in LIBRARIES {
        let manifest = read(Path::new(folder).join("Cargo.toml"));
        if manifest
            .lines()
            .any(|l| l.trim_start().starts_with("anyhow"))
        {
            wrong.push(format!("{folder}/Cargo.toml: depends on anyhow"));
        }
    }
    assert!(wrong.is_empty(), "errors:\n{}", wrong.join("\n"));
}

// ---------------------------------------------------------------------
// A new journal op
// ---------------------------------------------------------------------

/// The fields of `JournalOp`'s `oneof op`: message, field name, number.
fn journal_ops(proto: &str) -> Vec<(String, String, u32)> {
    let body = proto
        .split("message JournalOp {")
        .nth(1)
        .expect("nsimage.proto: message JournalOp");
    let body = body.split("oneof op {").nth(1).unwrap();
    let body = body.split('}').next().unwrap();
    body.lines()
        .filter_map(|l| {
            let l = l.trim().strip_suffix(';')?;
            let (decl, number) = l.split_once('=')?;
            let mut words = decl.split_whitespace();
            let message = words.next()?.to_string();
            let name = words.next()?.to_string();
            Some((message, name, number.trim().parse().ok()?))
        })
        .collect()
}

/// `set_xattr` as prost names its variant: `SetXattr`.
fn camel(name: &str) -> String {
    name.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

#[test]
fn every_journal_op_is_in_the_spec_the_op_view_the_edit_and_the_journal_dump() {
    let ops = journal_ops(&read("format-spec/proto/nsimage.proto"));
    assert!(
        ops.len() >= 13,
        "nsimage.proto: {} journal ops found",
        ops.len()
    );
    let store_md = read("format-spec/STORE.md");
    let op_view = read("store/src/op_view.rs");
    let frame = read("store/src/journal/frame.rs");
    let edit = read("store/src/edit.rs");
    let record = read("viewer/src/edits.rs")
        .split("pub fn record(")
        .nth(1)
        .expect("viewer/src/edits.rs: fn record")
        .split("#[cfg(test)]")
        .next()
        .unwrap_or_default()
        .to_string();
    let mut wrong = Vec::new();
    for (message, name, number) in &ops {
        let row = format!("| {number} | `{name}` | `{message}` |");
        if !store_md.contains(&row) {
            wrong.push(format!(
                "{name}: STORE.md's table of operations has no row {row}"
            ));
        }
        let variant = camel(name);
        if !has_word(&op_view, &format!("OpView::{variant}")) {
            wrong.push(format!(
                "{name}: store/src/op_view.rs has no OpView::{variant}"
            ));
        }
        if !has_word(&edit, &format!("OpView::{variant}")) {
            wrong.push(format!(
                "{name}: store/src/edit.rs does not apply OpView::{variant}"
            ));
        }
        // `journal dump`'s record: the viewer's `edits::record`.
        if !has_word(&record, &format!("Op::{variant}")) {
            wrong.push(format!(
                "{name}: viewer/src/edits.rs's record (journal dump) has no Op::{variant}"
            ));
        }
    }
    // The range of op fields a record may hold ends at the last op.
    let (first, last) = (
        ops.iter().min_by_key(|o| o.2).unwrap(),
        ops.iter().max_by_key(|o| o.2).unwrap(),
    );
    let start = format!("journal_op::{}..=", first.1.to_ascii_uppercase());
    let end = format!("journal_op::{}", last.1.to_ascii_uppercase());
    for (file, text) in [
        ("store/src/op_view.rs", &op_view),
        ("store/src/journal/frame.rs", &frame),
    ] {
        let found = text.lines().any(|l| {
            l.split_once(&start)
                .is_some_and(|(_, after)| has_word(after, &end))
        });
        if !found {
            wrong.push(format!(
                "{file}: the range of op fields is not {start}{end}"
            ));
        }
    }
    let shape = format!("numbers {} to {}", first.2, last.2);
    if !store_md.contains(&shape) {
        wrong.push(format!(
            "STORE.md: the record's shape does not say \"{shape}\""
        ));
    }
    assert!(wrong.is_empty(), "journal ops:\n{}", wrong.join("\n"));
}

// ---------------------------------------------------------------------
// A new CLI subcommand
// ---------------------------------------------------------------------

#[test]
fn every_command_of_the_reference_is_in_the_readme() {
    // docs/commands.md is generated from `--help` (`cli::documented`), so
    // its `## nsimage <command>` headings are the binary's commands.
    let reference = read("docs/commands.md");
    let readme = read("README.md");
    let mut wrong = Vec::new();
    for line in reference.lines() {
        let Some(command) = line.strip_prefix("## nsimage ") else {
            continue;
        };
        if command.contains(' ') {
            continue; // a nested command: its parent's row covers it
        }
        let row = format!("| [`{command}`](docs/commands.md#nsimage-{command}) |");
        if !readme.lines().any(|l| l.starts_with(&row)) {
            wrong.push(format!("README.md: no row {row} in the table of commands"));
        }
    }
    assert!(wrong.is_empty(), "commands:\n{}", wrong.join("\n"));
}
