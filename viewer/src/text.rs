//! Human-readable forms shared by the viewer's commands.

use nsimage_namespace::InodeKind;
use std::borrow::Cow;

/// Name bytes (a name, path, symlink target, owner, group) as text that is
/// safe on a terminal, for every human-readable output: UTF-8 as is except
/// control characters (C0 0x00-0x1F, DEL 0x7F and C1 U+0080-U+009F) and
/// the characters that reorder or break a line on a terminal without being
/// controls (see [`spoofs_a_line`]), each of whose UTF-8 bytes is written
/// `\xHH`, and bytes that are not UTF-8,
/// written `\xHH` too; a backslash is written `\\`. The mapping is
/// reversible: `\xHH` always stands for the byte HH, `\\` for a backslash.
/// JSON output is not escaped this way (JSON escapes for itself).
pub fn escaped(b: &[u8]) -> Cow<'_, str> {
    let hidden = |c: char| c.is_control() || spoofs_a_line(c);
    if let Ok(s) = std::str::from_utf8(b) {
        if !s.chars().any(|c| c == '\\' || hidden(c)) {
            return Cow::Borrowed(s);
        }
    }
    let mut out = String::with_capacity(b.len() + 8);
    let hex = |out: &mut String, bytes: &[u8]| {
        for x in bytes {
            out.push_str(&format!("\\x{x:02x}"));
        }
    };
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else if hidden(c) {
                hex(&mut out, c.encode_utf8(&mut [0u8; 4]).as_bytes());
            } else {
                out.push(c);
            }
        }
        hex(&mut out, chunk.invalid());
    }
    Cow::Owned(out)
}

/// Whether `c` is a Unicode bidirectional control (U+061C ALM, U+200E LRM,
/// U+200F RLM, the embeddings and overrides U+202A-U+202E, the isolates
/// U+2066-U+2069) or a line or paragraph separator (U+2028, U+2029): not
/// controls to Rust, but each can make a name show as another (reordered
/// text, a line that seems to end) on a terminal.
pub fn spoofs_a_line(c: char) -> bool {
    matches!(
        c,
        '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// `ls -l`'s type and permission string: `drwxr-xr-x`, `-rw-r--r--`,
/// `lrwxrwxrwx`; the sticky bit shows as `t` (or `T` without others' x).
pub fn permission_string(kind: InodeKind, mode: u16) -> String {
    let mut b = Vec::with_capacity(10);
    push_permission(kind, mode, &mut b);
    b.into_iter().map(char::from).collect()
}

/// `rwx` bits (the low three of `bits`) as `r-x`.
pub fn rwx(bits: u32) -> [u8; 3] {
    let on = |bit: u32, c: u8| if bits & bit != 0 { c } else { b'-' };
    [on(4, b'r'), on(2, b'w'), on(1, b'x')]
}

/// An ACL entry's type as `getfacl` names it (0 `user`, 1 `group`, 2
/// `mask`, anything else `other`).
pub fn acl_kind_name(kind: u8) -> &'static str {
    match kind {
        0 => "user",
        1 => "group",
        2 => "mask",
        _ => "other",
    }
}

/// Appends [`permission_string`]'s ten ASCII bytes to `out`, without an
/// allocation (the dumps write one per inode).
pub fn push_permission(kind: InodeKind, mode: u16, out: &mut Vec<u8>) {
    out.push(match kind {
        InodeKind::Directory => b'd',
        InodeKind::Symlink => b'l',
        InodeKind::File => b'-',
    });
    for shift in [6u16, 3, 0] {
        let bits = (mode >> shift) & 7;
        out.push(if bits & 4 != 0 { b'r' } else { b'-' });
        out.push(if bits & 2 != 0 { b'w' } else { b'-' });
        let x = bits & 1 != 0;
        if shift == 0 && mode & 0o1000 != 0 {
            out.push(if x { b't' } else { b'T' });
        } else {
            out.push(if x { b'x' } else { b'-' });
        }
    }
}

/// Parses a size, the one syntax of every option that takes one: digits
/// and an optional binary unit, any case (K, M, G, T, P; `2M`, `2MiB` and
/// `2MB` all mean 2 MiB).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(digits);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{s:?}: a size is a number of bytes, e.g. 2M or 128G"))?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (K, M, G, T or P)")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?}: too large"))
}

/// A time in milliseconds since the Unix epoch as UTC ISO 8601, to the
/// second: `2025-01-01T00:00:00Z`.
pub fn utc_iso8601(ms: u64) -> String {
    let mut b = Vec::with_capacity(20);
    push_utc_iso8601(ms, &mut b);
    b.into_iter().map(char::from).collect()
}

/// Appends [`utc_iso8601`]'s ASCII bytes to `out`, without an allocation.
pub fn push_utc_iso8601(ms: u64, out: &mut Vec<u8>) {
    let (y, mo, d, h, mi, s) = civil(ms / 1000);
    // The year in at least four digits; the others in two.
    let digits = |v: u64, width: usize, out: &mut Vec<u8>| {
        let mut buf = [0u8; 20];
        let mut n = v;
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for _ in (buf.len() - i)..width {
            out.push(b'0');
        }
        out.extend_from_slice(&buf[i..]);
    };
    digits(y, 4, out);
    for (sep, v) in [(b'-', mo), (b'-', d), (b'T', h), (b':', mi), (b':', s)] {
        out.push(sep);
        digits(v, 2, out);
    }
    out.push(b'Z');
}

/// A time in milliseconds since the Unix epoch as Hadoop's logs write it
/// (log4j's ISO8601 layout, UTC here): `2025-01-01 00:00:00,000`.
pub fn log_time(ms: u64) -> String {
    let (y, mo, d, h, mi, s) = civil(ms / 1000);
    let milli = ms % 1000;
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02},{milli:03}")
}

/// A time as OIV's XML prints the dates of delegation keys and tokens
/// (Java's `yyyy-MM-dd'T'HH:mm:ss.SSS`, UTC): `2025-01-01T00:00:00.000`.
/// Java reads the stored `uint64` as a signed `long`; values of 2^63 and
/// above, which no NameNode writes, print here as the unsigned number.
pub fn oiv_xml_date(ms: u64) -> String {
    let (y, mo, d, h, mi, s) = civil(ms / 1000);
    let milli = ms % 1000;
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}")
}

/// [`oiv_xml_date`]'s text back to milliseconds since the epoch; `None`
/// for text of another shape or a date before 1970.
pub fn parse_oiv_xml_date(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let n = b.len();
    // `Y...Y-MM-DDTHH:MM:SS.mmm`: the year in four digits or more.
    if n < 23 {
        return None;
    }
    let seps = [
        (19, b'-'),
        (16, b'-'),
        (13, b'T'),
        (10, b':'),
        (7, b':'),
        (4, b'.'),
    ];
    if seps.iter().any(|&(back, c)| b[n - back] != c) {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u64> {
        let t = s.get(r)?;
        if t.bytes().all(|c| c.is_ascii_digit()) {
            t.parse().ok()
        } else {
            None
        }
    };
    let y = num(0..n - 19)?;
    let (mo, d) = (num(n - 18..n - 16)?, num(n - 15..n - 13)?);
    let (h, mi, sec, ms) = (
        num(n - 12..n - 10)?,
        num(n - 9..n - 7)?,
        num(n - 6..n - 4)?,
        num(n - 3..n)?,
    );
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = match mo {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if !(1..=month_days).contains(&d) || h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    // Days from the civil date (the inverse of `civil`).
    let (y, m) = if mo <= 2 {
        (y.checked_sub(1)?, mo + 9)
    } else {
        (y, mo - 3)
    };
    let era = y / 400;
    let yoe = y % 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era
        .checked_mul(146_097)?
        .checked_add(doe)?
        .checked_sub(719_468)?;
    days.checked_mul(86_400)?
        .checked_add(h * 3600 + mi * 60 + sec)?
        .checked_mul(1000)?
        .checked_add(ms)
}

/// `b` as text where it is printable UTF-8 (no control characters), as
/// `stat`, the JSON dump and `diff` show an xattr's value; `None` where it
/// is shown encoded instead.
pub fn printable(b: &[u8]) -> Option<&str> {
    std::str::from_utf8(b)
        .ok()
        .filter(|s| !s.chars().any(char::is_control))
}

/// A time as `hdfs dfs -stat`'s `%y` and `%x` print it (`yyyy-MM-dd
/// HH:mm:ss`, UTC).
pub fn stat_time(ms: u64) -> String {
    let (y, mo, d, h, mi, s) = civil(ms / 1000);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
}

/// The same time as OIV's Delimited processor and `hdfs dfs -ls` write it (`yyyy-MM-dd
/// HH:mm`, UTC).
pub fn oiv_time(ms: u64) -> String {
    let (y, mo, d, h, mi, _) = civil(ms / 1000);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}")
}

/// Seconds since the epoch as (year, month, day, hour, minute, second) in
/// the proleptic Gregorian calendar, UTC (the days-to-civil algorithm over
/// 400-year eras).
fn civil(secs: u64) -> (u64, u64, u64, u64, u64, u64) {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Shift the epoch to 0000-03-01 so leap days end each era's year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Bytes in binary units, one decimal: `0 B`, `1023 B`, `1.5 KiB`,
/// `128.0 MiB` (the loader's form, which its refusals print too).
pub use nsimage_loader::budget::human_size;

/// `n` as Hadoop's `-h` prints it (`TraditionalBinaryPrefix.long2String(n,
/// "", 1)`): below 1024 the number itself; else in the largest binary
/// prefix (K, M, G, T, P, E) it reaches, an exact multiple without
/// decimals, any other with one decimal rounded half up, then a space and
/// the prefix letter.
pub fn hadoop_size(n: i128) -> String {
    const PREFIXES: [char; 6] = ['K', 'M', 'G', 'T', 'P', 'E'];
    let sign = if n < 0 { "-" } else { "" };
    let m = n.unsigned_abs();
    if m < 1024 {
        return format!("{sign}{m}");
    }
    // The largest prefix `m` reaches: 1024^(i + 1).
    let mut i = 0;
    while i + 1 < PREFIXES.len() && m >= 1u128 << (10 * (i + 2)) {
        i += 1;
    }
    let unit = 1u128 << (10 * (i + 1));
    if m.is_multiple_of(unit) {
        return format!("{sign}{} {}", m / unit, PREFIXES[i]);
    }
    // Tenths, rounded half up, in integers: no float rounding to differ,
    // and no product that could overflow (the remainder is below `unit`).
    let tenths_of = |unit: u128| (m / unit) * 10 + ((m % unit) * 10 + unit / 2) / unit;
    let mut tenths = tenths_of(unit);
    if tenths >= 10_240 && i + 1 < PREFIXES.len() {
        // 1023.95 K and above print as the next prefix.
        i += 1;
        tenths = tenths_of(unit << 10);
    }
    format!("{sign}{}.{} {}", tenths / 10, tenths % 10, PREFIXES[i])
}

/// A byte count as the text commands print it: with `-h/--human` as
/// Hadoop's shell prints it ([`hadoop_size`]: `30.5 M`), the plain count
/// otherwise.
pub fn size_text(bytes: u64, human: bool) -> String {
    if human {
        hadoop_size(i128::from(bytes))
    } else {
        bytes.to_string()
    }
}

/// A byte count in a summary line: the raw count with a readable form
/// beside it, `10653532160000 bytes (9.7 TiB)`; with `hadoop_units` (a
/// command's `-h`, whose columns are in Hadoop's units) that form is
/// Hadoop's too, `10653532160000 bytes (9.7 T)`, so that one output never
/// mixes the two.
pub fn bytes_summary(bytes: u64, hadoop_units: bool) -> String {
    format!("{bytes} bytes ({})", label_size(bytes, hadoop_units))
}

/// A size where the output always shows a readable one (a bucket's
/// bounds, a step): binary units (`2.0 MiB`), or Hadoop's (`2 M`) with
/// `hadoop_units` (a command's `-h`).
pub fn label_size(bytes: u64, hadoop_units: bool) -> String {
    if hadoop_units {
        hadoop_size(i128::from(bytes))
    } else {
        human_size(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_hadoop_prints_them() {
        assert_eq!(hadoop_size(0), "0");
        assert_eq!(hadoop_size(1023), "1023");
        assert_eq!(hadoop_size(1024), "1 K");
        assert_eq!(hadoop_size(1280), "1.3 K");
        assert_eq!(hadoop_size(1536), "1.5 K");
        assert_eq!(hadoop_size(31_981_568), "30.5 M");
        assert_eq!(hadoop_size(2 << 30), "2 G");
        assert_eq!(hadoop_size(1024 * 1024 - 1), "1.0 M");
        assert_eq!(hadoop_size(-1536), "-1.5 K");
        assert_eq!(hadoop_size(i128::from(i64::MAX)), "8.0 E");
    }

    #[test]
    fn permission_strings() {
        assert_eq!(permission_string(InodeKind::Directory, 0o755), "drwxr-xr-x");
        assert_eq!(permission_string(InodeKind::File, 0o644), "-rw-r--r--");
        assert_eq!(permission_string(InodeKind::Symlink, 0o777), "lrwxrwxrwx");
        assert_eq!(
            permission_string(InodeKind::Directory, 0o1777),
            "drwxrwxrwt"
        );
        assert_eq!(
            permission_string(InodeKind::Directory, 0o1770),
            "drwxrwx--T"
        );
    }

    #[test]
    fn oiv_xml_dates_round_trip() {
        for ms in [
            0,
            1,
            999,
            951_782_400_000,
            1_600_000_000_123,
            4_102_444_800_000,
        ] {
            assert_eq!(parse_oiv_xml_date(&oiv_xml_date(ms)), Some(ms), "{ms}");
        }
        assert_eq!(
            parse_oiv_xml_date("2020-09-13T12:26:40.123"),
            Some(1_600_000_000_123)
        );
        for bad in [
            "",
            "2020-09-13 12:26:40.123",
            "2020-13-01T00:00:00.000",
            "1969-12-31T23:59:59.999",
            "2020-09-13T12:26:40",
        ] {
            assert_eq!(parse_oiv_xml_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn utc_times() {
        assert_eq!(utc_iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_iso8601(1_735_689_600_000), "2025-01-01T00:00:00Z");
        // A leap day, and the last second of a year.
        assert_eq!(utc_iso8601(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(utc_iso8601(1_704_067_199_000), "2023-12-31T23:59:59Z");
        assert_eq!(oiv_time(1_735_689_600_000 + 61_000), "2025-01-01 00:01");
        assert_eq!(
            log_time(1_735_689_600_000 + 61_007),
            "2025-01-01 00:01:01,007"
        );
    }

    #[test]
    fn names_are_escaped_for_terminals() {
        assert!(matches!(
            escaped(b"/user/a b/\xc3\xa9"),
            Cow::Borrowed("/user/a b/\u{e9}")
        ));
        assert_eq!(escaped(b"\x1b]0;owned\x07"), "\\x1b]0;owned\\x07");
        assert_eq!(escaped(b"a\nb\tc\rd\x7f"), "a\\x0ab\\x09c\\x0dd\\x7f");
        // C1 controls (CSI is U+009B), and bytes that are not UTF-8.
        assert_eq!(escaped("x\u{9b}2J".as_bytes()), "x\\xc2\\x9b2J");
        assert_eq!(escaped(b"\x9b\xff"), "\\x9b\\xff");
        // A backslash is escaped, so a literal "\x1b" in a name differs
        // from an escape byte.
        assert_eq!(escaped(b"\\x1b"), "\\\\x1b");
        assert_ne!(escaped(b"\\x1b"), escaped(b"\x1b"));
        // U+00A0 and beyond are not controls.
        assert_eq!(escaped("\u{a0}\u{2603}".as_bytes()), "\u{a0}\u{2603}");
    }

    #[test]
    fn bidi_controls_and_separators_are_escaped() {
        // "evil\u{202e}txt.exe" shows as "evilexe.txt" unescaped.
        assert_eq!(
            escaped("evil\u{202e}txt.exe".as_bytes()),
            "evil\\xe2\\x80\\xaetxt.exe"
        );
        assert_eq!(escaped("a\u{2028}b".as_bytes()), "a\\xe2\\x80\\xa8b");
        assert_eq!(escaped("\u{061c}".as_bytes()), "\\xd8\\x9c");
        let spoofing = [
            0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068,
            0x2069, 0x2028, 0x2029,
        ];
        for u in spoofing {
            let c = char::from_u32(u).unwrap();
            let name = format!("x{c}y");
            let e = escaped(name.as_bytes());
            assert!(!e.contains(c), "U+{u:04X}: {e}");
            // Reversible: the escapes are the character's UTF-8 bytes.
            let hex: String = c
                .encode_utf8(&mut [0u8; 4])
                .bytes()
                .map(|b| format!("\\x{b:02x}"))
                .collect();
            assert_eq!(e, format!("x{hex}y"), "U+{u:04X}");
        }
        // Their neighbours are shown as they are.
        for c in [
            '\u{200d}', '\u{2027}', '\u{202f}', '\u{2065}', '\u{206a}', '\u{061b}',
        ] {
            let name = format!("x{c}y");
            assert_eq!(escaped(name.as_bytes()), name, "U+{:04X}", u32::from(c));
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(128 << 20), "128.0 MiB");
        assert_eq!(human_size(1024), "1.0 KiB");
        assert_eq!(human_size((1 << 20) - 1), "1.0 MiB");
        assert_eq!(human_size(10_653_532_160_000), "9.7 TiB");
        assert_eq!(human_size(u64::MAX), "16.0 EiB");
        assert_eq!(size_text(1536, false), "1536");
        assert_eq!(size_text(1536, true), "1.5 K");
        assert_eq!(
            bytes_summary(10_653_532_160_000, false),
            "10653532160000 bytes (9.7 TiB)"
        );
        assert_eq!(
            bytes_summary(10_653_532_160_000, true),
            "10653532160000 bytes (9.7 T)"
        );
        assert_eq!(label_size(2 << 20, false), "2.0 MiB");
        assert_eq!(label_size(2 << 20, true), "2 M");
    }
}
