//! Text escapes shared by the dump formats: names are bytes (anything but
//! `/` and NUL, not necessarily UTF-8), and each format has its own rule
//! for the bytes it cannot hold as they are.

/// Appends `s` as XML character data.
///
/// `&`, `<`, `>`, `"` and `'` become entity references. Characters XML 1.0
/// does not allow (control characters other than tab, newline and carriage
/// return; U+FFFE, U+FFFF) and the backslash are written as Hadoop's OIV
/// writes them, `\XXXX;` with the code point in four (or more) hex digits,
/// so the backslash written as `\005c;` keeps the escape reversible. A byte
/// that is not part of valid UTF-8 is written as `\00XX;` with XX its value
/// (80 to ff): never ambiguous, since the characters U+0080 to U+00FF are
/// written as themselves.
pub(crate) fn xml_text(s: &[u8], out: &mut Vec<u8>) {
    for chunk in s.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '&' => out.extend_from_slice(b"&amp;"),
                '<' => out.extend_from_slice(b"&lt;"),
                '>' => out.extend_from_slice(b"&gt;"),
                '"' => out.extend_from_slice(b"&quot;"),
                '\'' => out.extend_from_slice(b"&apos;"),
                '\\' => out.extend_from_slice(b"\\005c;"),
                '\t' | '\n' | '\r' => push_char(c, out),
                c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                    out.extend_from_slice(format!("\\{:04x};", c as u32).as_bytes())
                }
                c => push_char(c, out),
            }
        }
        for b in chunk.invalid() {
            out.extend_from_slice(format!("\\{:04x};", b).as_bytes());
        }
    }
}

fn push_char(c: char, out: &mut Vec<u8>) {
    let mut b = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
}

/// Appends `s` as a JSON string (quotes included); bytes that are not
/// valid UTF-8 become U+FFFD (callers add a base64 field beside it).
pub(crate) fn json_str(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for chunk in s.utf8_chunks() {
        for &b in chunk.valid().as_bytes() {
            match b {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                b if b < 0x20 => out.extend_from_slice(format!("\\u{:04x}", b).as_bytes()),
                b => out.push(b),
            }
        }
        if !chunk.invalid().is_empty() {
            out.extend_from_slice("\u{fffd}".as_bytes());
        }
    }
    out.push(b'"');
}

/// Appends `"key":"value"` for a byte string, and `,"key_base64":"..."`
/// when the bytes are not UTF-8 (the string field then holds them with
/// U+FFFD in place of the invalid bytes).
pub(crate) fn json_bytes_field(key: &str, s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
    json_str(s, out);
    if std::str::from_utf8(s).is_err() {
        out.extend_from_slice(b",\"");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"_base64\":\"");
        base64(s, out);
        out.push(b'"');
    }
}

/// Appends `s` in standard base64 (RFC 4648, with padding).
pub(crate) fn base64(s: &[u8], out: &mut Vec<u8>) {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for c in s.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(A[(n >> 18) as usize & 63]);
        out.push(A[(n >> 12) as usize & 63]);
        out.push(if c.len() > 1 {
            A[(n >> 6) as usize & 63]
        } else {
            b'='
        });
        out.push(if c.len() > 2 {
            A[n as usize & 63]
        } else {
            b'='
        });
    }
}

/// Appends `b` in lowercase hex, two digits a byte.
pub(crate) fn push_hex(b: &[u8], out: &mut Vec<u8>) {
    const D: &[u8; 16] = b"0123456789abcdef";
    for &x in b {
        out.push(D[usize::from(x >> 4)]);
        out.push(D[usize::from(x & 15)]);
    }
}

/// `b` as `0x` and lowercase hex (an xattr value that is not text, in
/// `diff` and `journal dump`).
pub(crate) fn hex0x(b: &[u8]) -> Vec<u8> {
    let mut s = Vec::with_capacity(2 + 2 * b.len());
    s.extend_from_slice(b"0x");
    push_hex(b, &mut s);
    s
}

/// Appends `v` in decimal.
pub(crate) fn num<T: itoa_like::Num>(v: T, out: &mut Vec<u8>) {
    v.push_to(out);
}

/// Decimal formatting without a `format!` allocation per number.
pub(crate) mod itoa_like {
    /// An integer that can append its decimal form.
    pub(crate) trait Num {
        /// Appends the decimal form to `out`.
        fn push_to(self, out: &mut Vec<u8>);
    }
    impl Num for u64 {
        fn push_to(self, out: &mut Vec<u8>) {
            let mut buf = [0u8; 20];
            let mut i = buf.len();
            let mut v = self;
            loop {
                i -= 1;
                buf[i] = b'0' + (v % 10) as u8;
                v /= 10;
                if v == 0 {
                    break;
                }
            }
            out.extend_from_slice(&buf[i..]);
        }
    }
    impl Num for i64 {
        fn push_to(self, out: &mut Vec<u8>) {
            if self < 0 {
                out.push(b'-');
            }
            self.unsigned_abs().push_to(out);
        }
    }
    impl Num for u16 {
        fn push_to(self, out: &mut Vec<u8>) {
            u64::from(self).push_to(out);
        }
    }
    impl Num for u8 {
        fn push_to(self, out: &mut Vec<u8>) {
            u64::from(self).push_to(out);
        }
    }
    impl Num for i32 {
        fn push_to(self, out: &mut Vec<u8>) {
            i64::from(self).push_to(out);
        }
    }
    impl Num for i8 {
        fn push_to(self, out: &mut Vec<u8>) {
            i64::from(self).push_to(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        let mut o = Vec::new();
        xml_text(b"a&<>\"'\\\x01\xff\xc3\xbf", &mut o);
        assert_eq!(
            String::from_utf8(o).unwrap(),
            "a&amp;&lt;&gt;&quot;&apos;\\005c;\\0001;\\00ff;\u{ff}"
        );
        let mut o = Vec::new();
        json_bytes_field("p", b"a\"\n\xff", &mut o);
        assert_eq!(
            String::from_utf8(o).unwrap(),
            "\"p\":\"a\\\"\\n\u{fffd}\",\"p_base64\":\"YSIK/w==\""
        );
        let mut o = Vec::new();
        base64(b"foobar", &mut o);
        base64(b"fo", &mut o);
        assert_eq!(o, b"Zm9vYmFyZm8=");
        let mut o = Vec::new();
        num(0u64, &mut o);
        num(-12i64, &mut o);
        num(u64::MAX, &mut o);
        assert_eq!(o, b"0-1218446744073709551615");
    }
}
