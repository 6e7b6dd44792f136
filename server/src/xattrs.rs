//! Extended attributes' names and values as WebHDFS writes them: a name
//! with its namespace prefix (HDFS's `XAttrHelper`), a value in one of
//! `XAttrCodec`'s encodings (`0x` hex, `0s` base64, `"text"`), read from a
//! request (SETXATTR) or written in an answer (GETXATTRS' `encoding`).

use crate::error::{echo, RemoteError};
use nsimage_namespace::XAttrNs;

/// `user.a` as (namespace, name), as HDFS's `XAttrHelper` parses it:
/// `user`, `trusted`, `security` or `raw` (any case) and a non-empty
/// name; `system` is the NameNode's own.
pub fn xattr_name(full: &str) -> Result<(XAttrNs, Vec<u8>), RemoteError> {
    let bad = || {
        RemoteError::bad_argument(format!(
            "An XAttr name must be prefixed with user/trusted/security/system/raw, followed by a '.': {}",
            echo(full)
        ))
    };
    let (prefix, name) = full.split_once('.').ok_or_else(bad)?;
    if name.is_empty() {
        return Err(bad());
    }
    let ns = match prefix.to_ascii_lowercase().as_str() {
        "user" => XAttrNs::User,
        "trusted" => XAttrNs::Trusted,
        "security" => XAttrNs::Security,
        "raw" => XAttrNs::Raw,
        "system" => {
            return Err(crate::perm::denied(format!(
                "User doesn't have permission for xattr: {}",
                echo(full)
            )))
        }
        _ => return Err(bad()),
    };
    Ok((ns, name.as_bytes().to_vec()))
}

/// An xattr value as WebHDFS sends it (HDFS's `XAttrCodec`): `0x` hex,
/// `0s` base64, `"text"` quoted, else the text itself.
pub fn xattr_value(v: &str) -> Result<Vec<u8>, RemoteError> {
    let bad =
        |why: &str| RemoteError::bad_argument(format!("Invalid xattr.value {}: {why}", echo(v)));
    if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        if hex.len() % 2 != 0 {
            return Err(bad("odd number of hex digits"));
        }
        return (0..hex.len())
            .step_by(2)
            .map(|i| {
                hex.get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| bad("not hex"))
            })
            .collect();
    }
    if let Some(b64) = v.strip_prefix("0s").or_else(|| v.strip_prefix("0S")) {
        return base64_decode(b64).ok_or_else(|| bad("not base64"));
    }
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        return Ok(v.as_bytes()[1..v.len() - 1].to_vec());
    }
    Ok(v.as_bytes().to_vec())
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    // A query's `+` arrives as a space: take it back.
    let s: Vec<u8> = s
        .bytes()
        .map(|b| if b == b' ' { b'+' } else { b })
        .collect();
    let trimmed: &[u8] = {
        let mut t = &s[..];
        while let [rest @ .., b'='] = t {
            t = rest;
        }
        t
    };
    let val = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    };
    let mut out = Vec::with_capacity(trimmed.len() * 3 / 4);
    for chunk in trimmed.chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

/// A value in WebHDFS's `encoding`: `text` (quoted), `hex` (`0x...`, the
/// default) or `base64` (`0s...`).
pub fn encode_value(v: &[u8], encoding: &str) -> Result<String, RemoteError> {
    match encoding.to_ascii_uppercase().as_str() {
        "TEXT" => Ok(format!("\"{}\"", String::from_utf8_lossy(v))),
        "HEX" => {
            let mut s = String::with_capacity(2 + 2 * v.len());
            s.push_str("0x");
            for b in v {
                s.push_str(&format!("{b:02x}"));
            }
            Ok(s)
        }
        "BASE64" => Ok(format!("0s{}", base64_encode(v))),
        other => Err(RemoteError::bad_argument(format!(
            "Invalid value for webhdfs parameter \"encoding\": \"{}\" (TEXT, HEX or BASE64)",
            echo(other)
        ))),
    }
}

fn base64_encode(v: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(v.len().div_ceil(3) * 4);
    for chunk in v.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                let idx = usize::try_from((n >> (18 - 6 * i)) & 63).unwrap_or(0);
                out.push(char::from(A[idx]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xattr_names_and_values() {
        assert_eq!(
            xattr_name("user.team").unwrap(),
            (XAttrNs::User, b"team".to_vec())
        );
        assert_eq!(xattr_name("TRUSTED.a.b").unwrap().0, XAttrNs::Trusted);
        assert_eq!(xattr_name("system.x").unwrap_err().status, 403);
        for bad in ["team", "user.", "bogus.x"] {
            assert_eq!(xattr_name(bad).unwrap_err().status, 400, "{bad}");
        }
        assert_eq!(xattr_value("0x6162").unwrap(), b"ab");
        assert_eq!(xattr_value("0sYWJjZA==").unwrap(), b"abcd");
        assert_eq!(xattr_value("0sYWJj").unwrap(), b"abc");
        assert_eq!(xattr_value("\"hi\"").unwrap(), b"hi");
        assert_eq!(xattr_value("plain").unwrap(), b"plain");
        assert_eq!(xattr_value("").unwrap(), b"");
        assert!(xattr_value("0x6").is_err());
        assert!(xattr_value("0xzz").is_err());
        assert!(xattr_value("0s!!").is_err());
    }

    #[test]
    fn encodings() {
        assert_eq!(encode_value(b"ab", "hex").unwrap(), "0x6162");
        assert_eq!(encode_value(b"ab", "TEXT").unwrap(), "\"ab\"");
        assert_eq!(encode_value(b"abcd", "base64").unwrap(), "0sYWJjZA==");
        assert_eq!(encode_value(b"abc", "base64").unwrap(), "0sYWJj");
        assert!(encode_value(b"x", "rot13").is_err());
        for v in [&b""[..], b"a", b"ab", b"abc", b"\xff\x00\x10\x80"] {
            let sent = encode_value(v, "base64").unwrap();
            assert_eq!(xattr_value(&sent).unwrap(), v, "{sent}");
        }
    }
}
