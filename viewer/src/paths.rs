//! The paths users type, checked before anything is read: absolute (a
//! leading `/`), no `.` or `..` segment, no NUL byte. Repeated and trailing
//! slashes are ignored, as HDFS does (`/a//b/` is `/a/b`).

use crate::error::ViewError;

/// An absolute path inside an image, as its components.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImagePath {
    given: String,
    components: Vec<Vec<u8>>,
}

impl ImagePath {
    /// Checks `path` as typed; the root is `/`.
    pub fn parse(path: &str) -> Result<ImagePath, ViewError> {
        let bad = |detail: &str| ViewError::BadPath {
            path: path.to_string(),
            detail: detail.to_string(),
        };
        if !path.starts_with('/') {
            return Err(bad("not an absolute path (it must start with /)"));
        }
        if path.contains('\0') {
            return Err(bad("a path may not hold a NUL byte"));
        }
        let mut components = Vec::new();
        for c in path.split('/').filter(|c| !c.is_empty()) {
            if c == "." || c == ".." {
                return Err(bad(
                    "`.` and `..` segments are not resolved; give the path itself",
                ));
            }
            components.push(c.as_bytes().to_vec());
        }
        Ok(ImagePath {
            given: path.to_string(),
            components,
        })
    }

    /// The root, `/`.
    pub fn root() -> ImagePath {
        ImagePath {
            given: "/".to_string(),
            components: Vec::new(),
        }
    }

    /// The path's components, root first (none for the root).
    pub fn components(&self) -> &[Vec<u8>] {
        &self.components
    }

    /// The path as the user gave it, for messages.
    pub fn given(&self) -> &str {
        &self.given
    }

    /// The path in canonical form (`/a/b`), as bytes.
    pub fn canonical(&self) -> Vec<u8> {
        if self.components.is_empty() {
            return b"/".to_vec();
        }
        let mut out = Vec::new();
        for c in &self.components {
            out.push(b'/');
            out.extend_from_slice(c);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_only_without_dot_segments() {
        let p = ImagePath::parse("/a//b/").unwrap();
        assert_eq!(p.components(), &[b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(p.canonical(), b"/a/b");
        assert_eq!(ImagePath::parse("/").unwrap(), ImagePath::root());
        for bad in ["a/b", "", "/a/../b", "/a/./b", "/..", "/a\0b"] {
            assert!(
                matches!(ImagePath::parse(bad), Err(ViewError::BadPath { .. })),
                "{bad:?}"
            );
        }
    }
}
