//! The NameNode's file conventions: the image's name (`fsimage_` and the
//! transaction id in 19 digits, `NNStorage`) and its `.md5` sidecar (one
//! line, `<md5 hex> *<file name>`, `MD5FileUtils`).

/// The NameNode's name for the image of transaction `txid`:
/// `fsimage_0000000000000000042`.
pub fn image_file_name(txid: u64) -> String {
    format!("fsimage_{txid:019}")
}

/// The name of the sidecar of image `file_name`: `<file name>.md5`.
pub fn md5_sidecar_name(file_name: &str) -> String {
    format!("{file_name}.md5")
}

/// An MD5 as 32 lowercase hex digits.
pub fn md5_hex(md5: &[u8; 16]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(32);
    for b in md5 {
        // Writing to a String cannot fail.
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The sidecar's one line, as the NameNode writes it:
/// `<md5 hex> *<file name>\n`.
pub fn md5_sidecar_line(md5: &[u8; 16], file_name: &str) -> String {
    format!("{} *{file_name}\n", md5_hex(md5))
}
