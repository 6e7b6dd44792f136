//! What a file that is not an image looks like, from its first bytes: the
//! words of [`LoadError::NotAnImage`](crate::LoadError::NotAnImage), so that
//! a Parquet file, an XML dump or a text file given in an image's place is
//! named as what it is.

/// What the file whose first bytes are `head` looks like, when it is a
/// kind this knows (`None` for other binary bytes: those may be a damaged
/// image, and are reported as one).
pub(crate) fn guess(head: &[u8]) -> Option<String> {
    let trimmed = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map_or(&[][..], |i| &head[i..]);
    let known: &[(&[u8], &str)] = &[
        (b"PAR1", "a Parquet file"),
        (b"\x1f\x8b", "a gzip file"),
        (b"\x28\xb5\x2f\xfd", "a zstd file"),
        (b"\x04\x22\x4d\x18", "an LZ4 file"),
        (b"PK\x03\x04", "a zip file"),
        (b"SQLite format 3\0", "an SQLite database"),
        (b"\x7fELF", "an executable (ELF)"),
        (b"Obj\x01", "an Avro file"),
        (b"ORC", "an ORC file"),
        (b"SEQ", "a Hadoop SequenceFile"),
    ];
    if let Some((_, what)) = known.iter().find(|(m, _)| head.starts_with(m)) {
        return Some((*what).to_string());
    }
    if trimmed.starts_with(b"<?xml") || trimmed.starts_with(b"<fsimage") {
        return Some(
            "an XML file: `nsimage dump --format xml` writes those; read the image it came from"
                .into(),
        );
    }
    if trimmed.starts_with(b"{") || trimmed.starts_with(b"[") {
        return Some("a JSON file".into());
    }
    // Text: UTF-8 without control characters but whitespace (a character
    // cut short at the end of `head` is still text).
    let valid = match std::str::from_utf8(head) {
        Ok(t) => Some(t),
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok(),
        Err(_) => None,
    };
    let text = valid.is_some_and(|t| {
        !t.is_empty()
            && t.chars()
                .all(|c| !c.is_control() || c.is_ascii_whitespace())
    });
    text.then(|| "a text file".into())
}

#[cfg(test)]
mod tests {
    use super::guess;

    #[test]
    fn files_of_other_kinds_are_named() {
        assert_eq!(guess(b"PAR1\x15\x04").as_deref(), Some("a Parquet file"));
        assert!(guess(b"<?xml version=\"1.0\"?>\n<fsimage>")
            .is_some_and(|g| g.starts_with("an XML file")));
        assert_eq!(
            guess(b"root:x:0:0:root:/root:/bin/bash\n").as_deref(),
            Some("a text file")
        );
        assert_eq!(
            guess("caf\u{e9}".as_bytes()[..4].as_ref()).as_deref(),
            Some("a text file")
        );
        // Other binary bytes may be a damaged image: not named.
        assert_eq!(guess(b"\x00\x01\x02\x03"), None);
        assert_eq!(guess(b"\xb7DFSIMG1"), None);
    }
}
