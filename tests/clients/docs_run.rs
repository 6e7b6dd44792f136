//! Every command block of README.md and docs/*.md runs as written: a
//! fenced block with lines that start with `$ ` is a shell session, run
//! by bash in an empty directory of its own (the built `nsimage` and the
//! tests' Python first on PATH, `examples/` linked in), each command's
//! output (stdout and stderr together) compared with the lines under it
//! in the block. In those lines, `...` alone stands for any lines (none
//! included) and `[..]` for any text within a line: what varies from run
//! to run (times, random keys, temporary paths). A command that ends with
//! `&` runs in the background, its output not compared; one that starts a
//! server (`nsimage serve`) is waited for until it answers, and every
//! process the block started is ended with it (its process group).
//!
//! A block may need files a reader is assumed to have (a namespace with a
//! private directory, a groups file): an HTML comment on the line before
//! its fence, `<!-- setup: COMMANDS -->`, holds the commands that make
//! them, run first and not compared (a reader does not see it).
//!
//! A command that exits non-zero prints `[exit N]` after its output, so a
//! block shows every failure it means. `NSIMAGE_UPDATE_DOCS=1` writes the
//! actual output of each command that no longer matches into the block
//! instead of comparing (the others keep their wildcards), for a person
//! to put the wildcards back in where it varies.

use crate::python_env;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One `$ ` command of a block and the lines the block shows under it.
#[derive(Debug)]
struct Step {
    command: String,
    /// The block's line numbers (0-based, within the file) of the
    /// expected output.
    expected: std::ops::Range<usize>,
}

/// A session: its file, its line range and its steps.
#[derive(Debug)]
struct Session {
    file: PathBuf,
    /// The commands of the `<!-- setup: ... -->` line before the fence.
    setup: Option<String>,
    steps: Vec<Step>,
}

/// The documentation files: README.md and every docs/*.md.
fn doc_files() -> Vec<PathBuf> {
    let mut v = vec![Path::new(ROOT).join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    v.extend(docs);
    v
}

/// The sessions of `file`'s fenced blocks.
fn sessions(file: &Path, lines: &[&str]) -> Vec<Session> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with("```") {
            i += 1;
            continue;
        }
        let setup = i
            .checked_sub(1)
            .and_then(|p| lines[p].strip_prefix("<!-- setup: "))
            .and_then(|l| l.strip_suffix(" -->"))
            .map(str::to_string);
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && !lines[end].starts_with("```") {
            end += 1;
        }
        let body = start..end;
        i = end + 1;
        if !lines[body.clone()].iter().any(|l| l.starts_with("$ ")) {
            continue;
        }
        let mut steps = Vec::new();
        let mut j = body.start;
        while j < body.end {
            if !lines[j].starts_with("$ ") {
                j += 1;
                continue;
            }
            let mut command = lines[j][2..].to_string();
            while command.ends_with('\\') && j + 1 < body.end {
                j += 1;
                command.push('\n');
                command.push_str(lines[j]);
            }
            let first = j + 1;
            let mut k = first;
            while k < body.end && !lines[k].starts_with("$ ") {
                k += 1;
            }
            steps.push(Step {
                command,
                expected: first..k,
            });
            j = k;
        }
        out.push(Session {
            file: file.to_path_buf(),
            setup,
            steps,
        });
    }
    out
}

/// The bash script of a session: each command's output after a marker
/// line of its own.
fn script(s: &Session) -> String {
    // The group ends with the session; a server of the block before that
    // still holds the port is waited out first.
    let mut sc = String::from(
        "trap 'trap - TERM; kill -TERM -- -$$ 2>/dev/null' EXIT\n\
         for _ in $(seq 300); do curl -s -o /dev/null --max-time 1 http://127.0.0.1:5978/ || break; \
         sleep 0.1; done\n",
    );
    if let Some(setup) = &s.setup {
        sc.push_str(&format!("{{\n{setup}\n}} >/dev/null 2>&1\n"));
    }
    for (i, step) in s.steps.iter().enumerate() {
        sc.push_str(&format!("printf '\\036%d\\036\\n' {i}\n"));
        if let Some(bg) = background(&step.command) {
            sc.push_str(&format!("{{\n{bg}\n}} >/dev/null 2>&1 &\n"));
            if bg.contains("nsimage serve") {
                // Until the server answers (at most 30 s), or a line that
                // says it did not, which no block shows.
                sc.push_str(
                    "up=no; for _ in $(seq 300); do curl -s -o /dev/null -k --max-time 1 \
                     https://127.0.0.1:5978/ 2>/dev/null && up=yes && break; curl -s -o /dev/null \
                     --max-time 1 http://127.0.0.1:5978/ && up=yes && break; sleep 0.1; done\n\
                     [ $up = yes ] || echo 'the server did not start within 30 s'\n",
                );
            }
        } else {
            // A command that fails says so (`[exit N]` under its output),
            // and the block must show it.
            sc.push_str(&format!(
                "{{\n{}\n}} 2>&1\nst=$?; [ $st -eq 0 ] || printf '[exit %d]\\n' $st\n",
                step.command
            ));
        }
    }
    sc.push_str(&format!("printf '\\036%d\\036\\n' {}\n", s.steps.len()));
    sc
}

/// The command of a step that runs in the background (ends with `&`,
/// before any ` # comment`), without its `&`.
fn background(command: &str) -> Option<&str> {
    let c = command.trim_end();
    let c = match c.rfind(" #") {
        Some(i) if c[..i].trim_end().ends_with('&') => c[..i].trim_end(),
        _ => c,
    };
    c.strip_suffix('&')
}

/// Whether `line` matches `pattern`, in which `[..]` is any text.
fn line_matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == line;
    }
    let Some(mut rest) = line.strip_prefix(parts[0]) else {
        return false;
    };
    let last = parts[parts.len() - 1];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Whether `got` matches `want`, in which a line `...` is any lines.
fn matches(want: &[&str], got: &[&str]) -> bool {
    match want.split_first() {
        None => got.is_empty(),
        Some((&"...", rest)) => (0..=got.len()).any(|n| matches(rest, &got[n..])),
        Some((w, rest)) => {
            got.first().is_some_and(|g| line_matches(w, g)) && matches(rest, &got[1..])
        }
    }
}

/// The expected lines, without the blank lines that end them.
fn trimmed<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let mut v = lines.to_vec();
    while v.last().is_some_and(|l| l.trim().is_empty()) {
        v.pop();
    }
    v
}

#[test]
fn every_command_block_of_the_docs_runs_as_written() {
    let update = std::env::var_os("NSIMAGE_UPDATE_DOCS").is_some();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_nsimage"))
        .parent()
        .unwrap()
        .to_path_buf();
    let py_dir = python_env::python().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}:{}",
        bin_dir.display(),
        py_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut failures = Vec::new();
    let mut ran = 0;
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut replaced: Vec<(std::ops::Range<usize>, Vec<String>)> = Vec::new();
        for s in sessions(&file, &lines) {
            let dir = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(
                Path::new(ROOT).join("examples"),
                dir.path().join("examples"),
            )
            .unwrap();
            // A session of its own (`setsid`), whose process group its
            // EXIT trap ends: every server it started in the background
            // goes with it, and its port is free for the next block.
            let out = Command::new("timeout")
                .args(["-k", "10", "300", "setsid", "bash", "-c", &script(&s)])
                .current_dir(dir.path())
                .env("PATH", &path)
                .env_remove("NSIMAGE_KEY_FILE")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let parts: Vec<&str> = stdout.split('\u{1e}').collect();
            // parts: "", "0", "\n<out 0>", "1", "\n<out 1>", ..., "N", "\n"
            for (i, step) in s.steps.iter().enumerate() {
                ran += 1;
                let got = parts
                    .get(2 + 2 * i)
                    .map(|t| t.strip_prefix('\n').unwrap_or(t));
                let got_lines: Vec<&str> = match got {
                    Some(g) => trimmed(&g.lines().collect::<Vec<_>>()),
                    None => vec!["<no output: the session stopped before this command>"],
                };
                let want = trimmed(&lines[step.expected.clone()]);
                let bg = background(&step.command).is_some();
                if update {
                    // Only what no longer matches is rewritten (wildcards
                    // kept), never a background step's lines nor a
                    // session that stopped early.
                    if bg || got.is_none() || matches(&want, &got_lines) {
                        continue;
                    }
                    let mut new: Vec<String> = got_lines.iter().map(|l| l.to_string()).collect();
                    let blanks = step.expected.len() - want.len().min(step.expected.len());
                    new.extend(std::iter::repeat_n(String::new(), blanks));
                    replaced.push((step.expected.clone(), new));
                } else if !bg && !matches(&want, &got_lines) {
                    failures.push(format!(
                        "{}:{}: $ {}\n--- the docs show:\n{}\n--- it printed:\n{}\n--- stderr of the session:\n{}",
                        s.file.strip_prefix(ROOT).unwrap_or(&s.file).display(),
                        step.expected.start,
                        step.command,
                        want.join("\n"),
                        got_lines.join("\n"),
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
            }
        }
        if update && !replaced.is_empty() {
            let mut new_lines: Vec<String> = Vec::new();
            let mut at = 0;
            for (range, with) in replaced {
                new_lines.extend(lines[at..range.start].iter().map(|l| l.to_string()));
                new_lines.extend(with);
                at = range.end;
            }
            new_lines.extend(lines[at..].iter().map(|l| l.to_string()));
            std::fs::write(&file, new_lines.join("\n") + "\n").unwrap();
        }
    }
    assert!(ran >= 40, "only {ran} commands found in the docs");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn wildcards_match_what_they_say() {
    assert!(line_matches("a [..] c", "a bb c"));
    assert!(!line_matches("a [..] c", "a bb d"));
    assert!(line_matches("[..]", ""));
    assert!(matches(&["x", "...", "z"], &["x", "y", "y", "z"]));
    assert!(matches(&["x", "...", "z"], &["x", "z"]));
    assert_eq!(
        background("nsimage serve x &   # listening"),
        Some("nsimage serve x ")
    );
    assert_eq!(background("curl 'http://h/#x'"), None);
    assert!(!matches(&["x", "z"], &["x", "y", "z"]));
}
