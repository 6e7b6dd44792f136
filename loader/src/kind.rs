//! What a file that is not an image looks like, from its first bytes: the
//! words of [`LoadError::NotAnImage`](crate::LoadError::NotAnImage), so that
//! a Parquet file, an XML dump or a text file given in an image's place is
//! named as what it is.

/// What the file whose first bytes are `head` looks like.
pub(crate) fn guess(head: &[u8]) -> String {
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
        return (*what).to_string();
    }
    if trimmed.starts_with(b"<?xml") || trimmed.starts_with(b"<fsimage") {
        return "an XML file: `nsimage dump --format xml` writes those; read the image it came \
                from"
            .into();
    }
    if trimmed.starts_with(b"{") || trimmed.starts_with(b"[") {
        return "a JSON file".into();
    }
    let text = head
        .iter()
        .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace() || b >= 0x80);
    if text {
        return "a text file".into();
    }
    let shown: String = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("it starts with bytes {shown}")
}

#[cfg(test)]
mod tests {
    use super::guess;

    #[test]
    fn files_of_other_kinds_are_named() {
        assert_eq!(guess(b"PAR1\x15\x04"), "a Parquet file");
        assert!(guess(b"<?xml version=\"1.0\"?>\n<fsimage>").starts_with("an XML file"));
        assert_eq!(guess(b"root:x:0:0:root:/root:/bin/bash\n"), "a text file");
        assert_eq!(guess(b"\x00\x01\x02\x03"), "it starts with bytes 00010203");
    }
}
