//! The rules of FORMAT.md on a single name or ACL that both the loader's
//! batches and the namespace's mutations apply, so that no mutation can make
//! what an image may not hold.

use crate::consts::MAX_NAME_LENGTH;

/// A valid name for an inode other than the root (FORMAT.md, INODE): 1 to
/// 65,536 bytes, not `.` or `..`, no `/` and no NUL byte.
#[inline]
pub(crate) fn valid_name(name: &[u8]) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LENGTH
        && name != b"."
        && name != b".."
        && !has_slash_or_nul(name)
}

/// Whether `name` holds a `/` or a NUL byte, eight bytes at a time: this
/// runs once per inode on the load's hot path.
#[inline]
fn has_slash_or_nul(name: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // Non-zero exactly when some byte of `w` is zero (a borrow can only
    // mark bytes above a zero byte, so there are no false positives).
    let zero = |w: u64| w.wrapping_sub(LO) & !w & HI;
    let (words, rest) = name.as_chunks::<8>();
    let mut hit = 0;
    for c in words {
        let w = u64::from_le_bytes(*c);
        hit |= zero(w) | zero(w ^ (LO * u64::from(b'/')));
    }
    hit != 0 || rest.iter().any(|&b| b == b'/' || b == 0)
}

/// The ACL rules that involve more than one entry (FORMAT.md, INODE): a
/// mask or other entry is unnamed, and no two entries share scope, type
/// and name. `entries` are (name id, type, default scope).
pub(crate) fn acl_error(
    entries: impl Iterator<Item = (u32, u8, bool)> + Clone,
) -> Option<&'static str> {
    for (i, (name, kind, scope)) in entries.clone().enumerate() {
        if kind >= 2 && name != 0 {
            return Some("a mask or other ACL entry has a name");
        }
        if entries
            .clone()
            .take(i)
            .any(|(n, k, s)| (n, k, s) == (name, kind, scope))
        {
            return Some("two ACL entries have the same scope, type and name");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::valid_name;

    #[test]
    fn slash_and_nul_are_found_at_every_position() {
        for len in 1..40 {
            let ok = vec![b'a'; len];
            assert!(valid_name(&ok));
            for i in 0..len {
                for bad in [b'/', 0] {
                    let mut n = ok.clone();
                    n[i] = bad;
                    assert!(!valid_name(&n), "{n:?}");
                }
                // Bytes next to the bad ones are fine.
                for good in [b'.', b'0', 0x01, 0xff, 0x80, 0x2e, 0x30] {
                    let mut n = ok.clone();
                    n[i] = good;
                    assert!(valid_name(&n) || n == b"." || n == b"..", "{n:?}");
                }
            }
        }
        assert!(!valid_name(b""));
        assert!(!valid_name(b"."));
        assert!(!valid_name(b".."));
        assert!(valid_name(b"..."));
    }
}
