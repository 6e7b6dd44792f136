//! `find`: the inodes below a path (itself included) that pass every
//! filter given, depth first in name order, like `find(1)`.
//!
//! Text: one path per line. JSON lines, one object per match:
//! `{"path","type","length","modification_time","modification_time_utc",
//! "owner"}`.
//!
//! Filters: `--name GLOB` on the inode's own name (shell glob: `*`, `?`,
//! `[...]`, `{a,b}`); `--type f|d|l`; `--size +N|-N|N` on the length (sum
//! of block lengths, 0 for directories and symlinks): more than, less
//! than, exactly N bytes, N with an optional `k`, `M`, `G`, `T` suffix
//! (powers of 1024); `--mtime-before T`: modified strictly before T, an
//! ISO 8601 UTC date or date-time or milliseconds since the epoch;
//! `--user U`: owned by U.

use crate::error::ViewError;
use crate::paths::ImagePath;
use crate::text::{escaped, utc_iso8601};
use crate::walk::{kind_name, length, lossy, resolve, walk};
use nsimage_namespace::{Inode, InodeKind, Namespace};
use std::borrow::Cow;
use std::io::{self, Write};

/// A size filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeFilter {
    /// Longer than this many bytes (`+N`).
    Above(u64),
    /// Shorter than this many bytes (`-N`).
    Below(u64),
    /// Exactly this many bytes (`N`).
    Exactly(u64),
}

impl SizeFilter {
    /// Parses `+N`, `-N` or `N`, N a size as every option takes one
    /// ([`crate::text::parse_size`]: `1M`, `1MB` and `1MiB` alike).
    pub fn parse(s: &str) -> Result<SizeFilter, String> {
        let (ctor, rest): (fn(u64) -> SizeFilter, &str) = match s.as_bytes().first() {
            Some(b'+') => (SizeFilter::Above, &s[1..]),
            Some(b'-') => (SizeFilter::Below, &s[1..]),
            _ => (SizeFilter::Exactly, s),
        };
        crate::text::parse_size(rest).map(ctor)
    }

    /// Whether `len` passes.
    pub fn matches(self, len: u64) -> bool {
        match self {
            SizeFilter::Above(n) => len > n,
            SizeFilter::Below(n) => len < n,
            SizeFilter::Exactly(n) => len == n,
        }
    }
}

/// Parses a time: milliseconds since the epoch (digits only), or ISO 8601
/// UTC: `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM`, `YYYY-MM-DDTHH:MM:SS` (a space
/// may stand for `T`; an optional trailing `Z`; fractional seconds are
/// refused).
pub fn parse_time(s: &str) -> Result<u64, String> {
    let bad = || {
        format!("{s:?}: a time is milliseconds since the epoch or an ISO 8601 UTC date or date-time (2024-01-31 or 2024-01-31T12:00:00Z)")
    };
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().map_err(|_| bad());
    }
    let t = s.strip_suffix('Z').unwrap_or(s);
    let (date, time) = match t.split_once(['T', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (t, None),
    };
    let num = |x: &str, len: usize| -> Result<u64, String> {
        if x.len() == len && x.bytes().all(|b| b.is_ascii_digit()) {
            x.parse().map_err(|_| bad())
        } else {
            Err(bad())
        }
    };
    let d: Vec<&str> = date.split('-').collect();
    let [y, mo, da] = d[..] else {
        return Err(bad());
    };
    let (y, mo, da) = (num(y, 4)?, num(mo, 2)?, num(da, 2)?);
    if !(1..=12).contains(&mo) || da < 1 || da > days_in_month(y, mo) || y < 1970 {
        return Err(bad());
    }
    let (mut h, mut mi, mut se) = (0, 0, 0);
    if let Some(time) = time {
        let parts: Vec<&str> = time.split(':').collect();
        match parts[..] {
            [a, b] => (h, mi) = (num(a, 2)?, num(b, 2)?),
            [a, b, c] => (h, mi, se) = (num(a, 2)?, num(b, 2)?, num(c, 2)?),
            _ => return Err(bad()),
        }
        if h > 23 || mi > 59 || se > 59 {
            return Err(bad());
        }
    }
    let days = days_from_civil(y, mo, da);
    Ok((days * 86_400 + h * 3600 + mi * 60 + se) * 1000)
}

fn leap(y: u64) -> bool {
    (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400)
}

fn days_in_month(y: u64, m: u64) -> u64 {
    match m {
        2 if leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a date of 1970 or later.
fn days_from_civil(y: u64, m: u64, d: u64) -> u64 {
    let mut days = 0;
    for year in 1970..y {
        days += if leap(year) { 366 } else { 365 };
    }
    for month in 1..m {
        days += days_in_month(y, month);
    }
    days + d - 1
}

/// The filters of a search; `None` passes everything.
#[derive(Clone, Debug, Default)]
pub struct FindOptions {
    /// A glob over the inode's own name.
    pub name: Option<globset::GlobMatcher>,
    /// Only this kind.
    pub kind: Option<InodeKind>,
    /// A size condition.
    pub size: Option<SizeFilter>,
    /// Modified strictly before this time (ms since the epoch).
    pub mtime_before: Option<u64>,
    /// Modified strictly after this time.
    pub mtime_after: Option<u64>,
    /// Last read strictly before this time: files only (HDFS keeps no
    /// access time for a directory, nsimage none for a symlink), the
    /// cold-data question.
    pub atime_before: Option<u64>,
    /// Last read strictly after this time: files only.
    pub atime_after: Option<u64>,
    /// Owned by this user.
    pub user: Option<Vec<u8>>,
    /// Of this group.
    pub group: Option<Vec<u8>>,
}

impl FindOptions {
    /// Compiles a `--name` glob.
    pub fn glob(pattern: &str) -> Result<globset::GlobMatcher, String> {
        globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map(|g| g.compile_matcher())
            .map_err(|e| format!("{pattern:?}: {e}"))
    }

    /// Whether `inode` passes every filter.
    pub fn matches(&self, inode: &Inode<'_>) -> bool {
        self.matches_found(
            &Found {
                path: &[],
                id: inode.id(),
                kind: inode.kind(),
                length: length(inode),
                mtime: inode.mtime(),
                atime: atime(inode),
                owner: inode.user(),
                group: inode.group(),
            },
            inode.name(),
        )
    }

    /// Whether an inode named `name` with `f`'s facts (its path aside)
    /// passes every filter.
    pub fn matches_found(&self, f: &Found<'_>, name: &[u8]) -> bool {
        if self.kind.is_some_and(|k| k != f.kind) {
            return false;
        }
        if self.mtime_before.is_some_and(|t| f.mtime >= t)
            || self.mtime_after.is_some_and(|t| f.mtime <= t)
        {
            return false;
        }
        if self
            .atime_before
            .is_some_and(|t| f.atime.is_none_or(|a| a >= t))
            || self
                .atime_after
                .is_some_and(|t| f.atime.is_none_or(|a| a <= t))
        {
            return false;
        }
        if self.user.as_deref().is_some_and(|u| u != f.owner)
            || self.group.as_deref().is_some_and(|g| g != f.group)
        {
            return false;
        }
        if self.size.is_some_and(|s| !s.matches(f.length)) {
            return false;
        }
        if let Some(g) = &self.name {
            if !g.is_match(&*lossy(name)) {
                return false;
            }
        }
        true
    }
}

/// One match, borrowed from the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found<'a> {
    /// Its path.
    pub path: &'a [u8],
    /// Its id.
    pub id: u64,
    /// Its kind.
    pub kind: InodeKind,
    /// Sum of block lengths.
    pub length: u64,
    /// Modification time, ms since the epoch.
    pub mtime: u64,
    /// A file's last access time (none for a directory or a symlink).
    pub atime: Option<u64>,
    /// Owning user.
    pub owner: &'a [u8],
    /// Owning group.
    pub group: &'a [u8],
}

/// A file's access time; `None` for the other kinds.
fn atime(inode: &Inode<'_>) -> Option<u64> {
    match inode.attrs() {
        nsimage_namespace::Attrs::File(f) => Some(f.atime),
        _ => None,
    }
}

/// How matches are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FindFormat {
    /// One path a line (control characters escaped).
    #[default]
    Lines,
    /// One JSON object a line.
    Json,
    /// Each path as its bytes followed by a NUL (`find -print0`, for
    /// `xargs -0`): nothing escaped.
    Print0,
}

/// Calls `each` with every match below `path` (itself included), depth
/// first in name order; the first error `each` returns stops the search.
/// Holds nothing per match.
pub fn find_each<E: From<ViewError>>(
    ns: &Namespace,
    path: &ImagePath,
    opts: &FindOptions,
    mut each: impl FnMut(&Found<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let top = resolve(ns, path)?;
    walk(top, &path.canonical(), |inode, p, _| {
        if !opts.matches(&inode) {
            return Ok(());
        }
        each(&Found {
            path: p,
            id: inode.id(),
            kind: inode.kind(),
            length: length(&inode),
            mtime: inode.mtime(),
            atime: atime(&inode),
            owner: inode.user(),
            group: inode.group(),
        })
    })
}

/// The paths of every match, collected (see [`find_each`] to stream the
/// matches).
pub fn find(
    ns: &Namespace,
    path: &ImagePath,
    opts: &FindOptions,
) -> Result<Vec<Vec<u8>>, ViewError> {
    let mut out = Vec::new();
    find_each(ns, path, opts, |f| {
        out.push(f.path.to_vec());
        Ok::<(), ViewError>(())
    })?;
    Ok(out)
}

/// Writes one match in `format`: its path (a line, or NUL-ended), or its
/// JSON object (a line).
pub fn write_found(f: &Found<'_>, format: FindFormat, out: &mut impl Write) -> io::Result<()> {
    /// A match as JSON, serialized field by field.
    #[derive(serde::Serialize)]
    struct FoundJson<'a> {
        path: Cow<'a, str>,
        id: u64,
        #[serde(rename = "type")]
        kind: &'static str,
        length: u64,
        modification_time: u64,
        modification_time_utc: String,
        owner: Cow<'a, str>,
    }
    match format {
        FindFormat::Json => {
            let j = FoundJson {
                path: lossy(f.path),
                id: f.id,
                kind: kind_name(f.kind),
                length: f.length,
                modification_time: f.mtime,
                modification_time_utc: utc_iso8601(f.mtime),
                owner: lossy(f.owner),
            };
            serde_json::to_writer(&mut *out, &j)?;
            writeln!(out)
        }
        FindFormat::Lines => writeln!(out, "{}", escaped(f.path)),
        FindFormat::Print0 => {
            out.write_all(f.path)?;
            out.write_all(&[0])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_times_parse() {
        assert_eq!(SizeFilter::parse("+1k"), Ok(SizeFilter::Above(1024)));
        assert_eq!(SizeFilter::parse("-2M"), Ok(SizeFilter::Below(2 << 20)));
        assert_eq!(SizeFilter::parse("7"), Ok(SizeFilter::Exactly(7)));
        // The size syntax of every option: `--step 2MB` and `--size -1MB`.
        assert_eq!(SizeFilter::parse("-1MB"), Ok(SizeFilter::Below(1 << 20)));
        assert_eq!(SizeFilter::parse("+2GiB"), Ok(SizeFilter::Above(2 << 30)));
        assert!(SizeFilter::parse("+x").is_err());
        assert!(SizeFilter::parse("-1XB").is_err());
        assert!(SizeFilter::parse("+99999999999T").is_err());
        assert_eq!(parse_time("1234"), Ok(1234));
        assert_eq!(parse_time("2025-01-01"), Ok(1_735_689_600_000));
        assert_eq!(parse_time("2025-01-01T00:01Z"), Ok(1_735_689_660_000));
        assert_eq!(parse_time("2000-02-29T00:00:00Z"), Ok(951_782_400_000));
        assert_eq!(parse_time("2023-12-31 23:59:59"), Ok(1_704_067_199_000));
        for bad in [
            "",
            "2023-02-29",
            "2023-13-01",
            "2023-1-01",
            "x",
            "2023-01-01T25:00",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }
}
