//! The request line checked and decoded before anything is looked up: the
//! path below `/webhdfs/v1` percent-decoded, valid UTF-8 and a valid
//! [`ImagePath`]; the query string split into at most
//! [`MAX_QUERY_PARAMS`] parameters, names lower-cased (WebHDFS's names are
//! case-insensitive).

use crate::error::RemoteError;
use nsimage_viewer::paths::ImagePath;

/// The WebHDFS prefix every request's path starts with.
pub const PREFIX: &str = "/webhdfs/v1";
/// Longest request URI accepted (path and query), in bytes.
pub const MAX_URI_BYTES: usize = 16 * 1024;
/// Most query parameters parsed; a query with more is refused.
pub const MAX_QUERY_PARAMS: usize = 1024;

/// A checked request: the path and the query parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The path inside the image.
    pub path: ImagePath,
    /// `(lower-cased name, value)`, in the query's order.
    pub params: Vec<(String, String)>,
}

impl Parsed {
    /// The first value of parameter `name` (lower case).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of parameter `name` (lower case), in order.
    pub fn params_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.params
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Checks and decodes `path` (raw, as on the request line) and `query`
/// (raw, without the `?`).
pub fn parse(path: &str, query: Option<&str>) -> Result<Parsed, RemoteError> {
    let len = path.len() + query.map_or(0, |q| q.len() + 1);
    if len > MAX_URI_BYTES {
        return Err(RemoteError::uri_too_long(len, MAX_URI_BYTES));
    }
    let rest = path
        .strip_prefix(PREFIX)
        .filter(|r| r.is_empty() || r.starts_with('/'))
        .ok_or_else(|| {
            RemoteError::bad_argument(format!("{path:?}: not a WebHDFS path (under {PREFIX}/)"))
        })?;
    let decoded = decode(rest, false)?;
    let text = if decoded.is_empty() {
        "/".to_string()
    } else {
        decoded
    };
    let path = ImagePath::parse(&text).map_err(|e| RemoteError::bad_argument(e.to_string()))?;
    let mut params = Vec::new();
    if let Some(q) = query {
        for pair in q.split('&').filter(|p| !p.is_empty()) {
            if params.len() == MAX_QUERY_PARAMS {
                return Err(RemoteError::bad_argument(format!(
                    "more than {MAX_QUERY_PARAMS} query parameters"
                )));
            }
            let (n, v) = pair.split_once('=').unwrap_or((pair, ""));
            params.push((decode(n, true)?.to_ascii_lowercase(), decode(v, true)?));
        }
    }
    Ok(Parsed { path, params })
}

/// Percent-decodes `s` (and `+` as a space in a query); the bytes must be
/// UTF-8 without NUL.
fn decode(s: &str, query: bool) -> Result<String, RemoteError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| {
                        RemoteError::bad_argument(format!(
                            "{s:?}: a % not followed by two hex digits at byte {i}"
                        ))
                    })?;
                out.push(hex);
                i += 3;
            }
            b'+' if query => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    if out.contains(&0) {
        return Err(RemoteError::bad_argument(format!(
            "{s:?}: decodes to a NUL byte"
        )));
    }
    String::from_utf8(out)
        .map_err(|_| RemoteError::bad_argument(format!("{s:?}: decodes to invalid UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_params() {
        let p = parse("/webhdfs/v1/a%20b//c/", Some("OP=liststatus&x=1+2")).unwrap();
        assert_eq!(p.path.canonical(), b"/a b/c");
        assert_eq!(p.param("op"), Some("liststatus"));
        assert_eq!(p.param("x"), Some("1 2"));
        assert_eq!(parse("/webhdfs/v1", None).unwrap().path.canonical(), b"/");
    }

    #[test]
    fn bad_requests_refused() {
        for (path, query) in [
            ("/webhdfs/v1/a/../b", None),
            ("/webhdfs/v1/a/%2e%2e/b", None),
            ("/webhdfs/v1/%zz", None),
            ("/webhdfs/v1/%", None),
            ("/webhdfs/v1/%ff%fe", None),
            ("/webhdfs/v1/a%00", None),
            ("/webhdfs/v2/a", None),
            ("/webhdfs/v1x", None),
            ("/webhdfs/v1/", Some("op=%zz")),
        ] {
            let e = parse(path, query).unwrap_err();
            assert_eq!(e.status, 400, "{path} {query:?}");
        }
        let many = vec!["a=1"; MAX_QUERY_PARAMS + 1].join("&");
        assert_eq!(parse("/webhdfs/v1/", Some(&many)).unwrap_err().status, 400);
        let long = "a".repeat(MAX_URI_BYTES);
        assert_eq!(
            parse(&format!("/webhdfs/v1/{long}"), None)
                .unwrap_err()
                .status,
            414
        );
    }
}
