//! `count`: a subtree's directories, files and bytes, and with quotas its
//! namespace and space quotas and what is left of them, in the columns of
//! `hdfs dfs -count [-q] [-h] [-v]` (Hadoop's `ContentSummary` and
//! `QuotaUsage` text): the counts right-aligned in fields of 12, 12 and 18
//! characters, the quotas in fields of 12, 15, 15 and 15, each field
//! followed by a space, then the path as given. A quota that is not set
//! prints `none` and what is left of it `inf`. With `-h`, every figure
//! (counts included, as Hadoop does) in Hadoop's binary prefixes with one
//! decimal (`30.5 M`, `2 G`, `512`), as every command's `-h` prints sizes.
//!
//! The figures are a [`DuRow`]'s (the subtree's top included, as HDFS
//! counts it): directories, files and symlinks (Hadoop's file count has
//! both), bytes, and the quotas against the inodes and the space consumed.

use crate::du::DuRow;
use crate::text::hadoop_size;

/// The header line of `-v` (without its newline): the quota columns
/// first with `quotas`, then the counts and `PATHNAME`.
pub fn header(quotas: bool) -> String {
    let mut s = String::new();
    if quotas {
        s.push_str(&quota_fields(
            "QUOTA",
            "REM_QUOTA",
            "SPACE_QUOTA",
            "REM_SPACE_QUOTA",
        ));
    }
    s.push_str(&count_fields("DIR_COUNT", "FILE_COUNT", "CONTENT_SIZE"));
    s.push_str("PATHNAME");
    s
}

/// One row (without its newline): `row`'s figures, shown as `path`.
pub fn line(row: &DuRow, quotas: bool, human: bool, path: &str) -> String {
    let size = |n: i128| {
        if human {
            hadoop_size(n)
        } else {
            n.to_string()
        }
    };
    let mut s = String::new();
    if quotas {
        let (q, q_left) = match row.ns_quota.filter(|&q| q > 0) {
            Some(q) => (
                size(i128::from(q)),
                size(i128::from(q) - i128::from(row.ns_used())),
            ),
            None => ("none".into(), "inf".into()),
        };
        let (sq, sq_left) = match row.ds_quota.filter(|&q| q >= 0) {
            Some(q) => (
                size(i128::from(q)),
                size(i128::from(q) - i128::from(row.ds_used())),
            ),
            None => ("none".into(), "inf".into()),
        };
        s.push_str(&quota_fields(&q, &q_left, &sq, &sq_left));
    }
    let u = &row.usage;
    s.push_str(&count_fields(
        &size(i128::from(u.directories)),
        &size(i128::from(u.files.saturating_add(u.symlinks))),
        &size(i128::from(u.bytes)),
    ));
    s.push_str(path);
    s
}

fn quota_fields(q: &str, q_left: &str, sq: &str, sq_left: &str) -> String {
    format!("{q:>12} {q_left:>15} {sq:>15} {sq_left:>15} ")
}

fn count_fields(dirs: &str, files: &str, size: &str) -> String {
    format!("{dirs:>12} {files:>12} {size:>18} ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::du::Usage;
    use nsimage_namespace::InodeKind;

    #[test]
    fn lines_have_hadoops_fields() {
        let row = DuRow {
            path: b"/data".to_vec(),
            depth: 0,
            kind: InodeKind::Directory,
            usage: Usage {
                files: 9,
                directories: 3,
                symlinks: 1,
                bytes: 31_981_568,
                space_consumed: 3 * 31_981_568,
                small_files: 0,
            },
            ns_quota: Some(100),
            ds_quota: None,
        };
        assert_eq!(
            header(false),
            "   DIR_COUNT   FILE_COUNT       CONTENT_SIZE PATHNAME"
        );
        assert_eq!(
            header(true),
            "       QUOTA       REM_QUOTA     SPACE_QUOTA REM_SPACE_QUOTA    DIR_COUNT   FILE_COUNT       CONTENT_SIZE PATHNAME"
        );
        assert_eq!(
            line(&row, false, false, "/data"),
            "           3           10           31981568 /data"
        );
        assert_eq!(
            line(&row, true, true, "/data"),
            "         100              87            none             inf            3           10             30.5 M /data"
        );
    }
}
