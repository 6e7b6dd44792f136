//! [`RemoteError`]: an error as WebHDFS sends it, a `RemoteException`
//! JSON body with Hadoop's exception name and the status code Hadoop's
//! NameNode gives that exception.

use serde_json::json;

/// Most characters of a client's own text (a method, an op) echoed into
/// an error message.
pub const ECHO_CHARS: usize = 64;

/// `text` as an error message shows it: at most [`ECHO_CHARS`]
/// characters, control characters and quotes escaped, and how long the
/// whole was when it was cut.
pub fn echo(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(ECHO_CHARS)
        .flat_map(char::escape_debug)
        .collect();
    let shown = text
        .chars()
        .take(ECHO_CHARS)
        .map(char::len_utf8)
        .sum::<usize>();
    if shown < text.len() {
        out.push_str(&format!("... ({} bytes)", text.len()));
    }
    out
}

/// An error answer: Hadoop's exception class and a message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{exception}: {message}")]
pub struct RemoteError {
    /// HTTP status code.
    pub status: u16,
    /// The exception's simple name (`FileNotFoundException`).
    pub exception: &'static str,
    /// Its Java class name (`java.io.FileNotFoundException`).
    pub java_class: &'static str,
    /// What went wrong.
    pub message: String,
}

impl RemoteError {
    /// 404 `java.io.FileNotFoundException`.
    pub fn not_found(message: impl Into<String>) -> RemoteError {
        RemoteError {
            status: 404,
            exception: "FileNotFoundException",
            java_class: "java.io.FileNotFoundException",
            message: message.into(),
        }
    }

    /// 400 `java.lang.IllegalArgumentException`: a bad path, parameter or
    /// unknown operation.
    pub fn bad_argument(message: impl Into<String>) -> RemoteError {
        RemoteError {
            status: 400,
            exception: "IllegalArgumentException",
            java_class: "java.lang.IllegalArgumentException",
            message: message.into(),
        }
    }

    /// 400 `java.lang.UnsupportedOperationException`: a read operation this
    /// server does not answer (an image holds no file data to `OPEN`).
    pub fn unsupported(message: impl Into<String>) -> RemoteError {
        RemoteError {
            status: 400,
            exception: "UnsupportedOperationException",
            java_class: "java.lang.UnsupportedOperationException",
            message: message.into(),
        }
    }

    /// 403 `org.apache.hadoop.security.AccessControlException`: a write to
    /// this read-only server. Hadoop's clients surface it as a permission
    /// refusal and do not retry it.
    pub fn read_only(message: impl Into<String>) -> RemoteError {
        RemoteError {
            status: 403,
            exception: "AccessControlException",
            java_class: "org.apache.hadoop.security.AccessControlException",
            message: message.into(),
        }
    }

    /// 403 `java.io.IOException` (Hadoop's status for a plain
    /// IOException), e.g. an asked extended attribute that is not there.
    pub fn io(message: impl Into<String>) -> RemoteError {
        RemoteError {
            status: 403,
            exception: "IOException",
            java_class: "java.io.IOException",
            message: message.into(),
        }
    }

    /// 414 with an IllegalArgumentException body: a request line over the
    /// limit.
    pub fn uri_too_long(len: usize, limit: usize) -> RemoteError {
        RemoteError {
            status: 414,
            ..RemoteError::bad_argument(format!(
                "the request URI is {len} bytes, over the limit of {limit}"
            ))
        }
    }

    /// 500 `java.io.IOException`: nothing is being served yet, or the
    /// server failed.
    pub fn internal(message: impl Into<String>) -> RemoteError {
        RemoteError {
            status: 500,
            ..RemoteError::io(message)
        }
    }

    /// 403 `org.apache.hadoop.ipc.StandbyException`: a standby member of
    /// a highly available group asked what only the active answers (a
    /// write, or a read without `--standby-reads`). HA-aware clients move
    /// on to the next server's URL, as they do from a standby NameNode.
    pub fn standby(category: &str) -> RemoteError {
        RemoteError {
            status: 403,
            exception: "StandbyException",
            java_class: "org.apache.hadoop.ipc.StandbyException",
            message: format!("Operation category {category} is not supported in state standby"),
        }
    }

    /// 503 `org.apache.hadoop.ipc.RetriableException`: the write was not
    /// acknowledged because the group's journal quorum (etcd) could not be
    /// reached in time; it may be retried (on this server or another).
    pub fn no_quorum(message: impl Into<String>) -> RemoteError {
        RemoteError {
            status: 503,
            exception: "RetriableException",
            java_class: "org.apache.hadoop.ipc.RetriableException",
            message: message.into(),
        }
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        json!({
            "RemoteException": {
                "exception": self.exception,
                "javaClassName": self.java_class,
                "message": self.message,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_are_short_and_escaped() {
        assert_eq!(echo("PUT"), "PUT");
        assert_eq!(echo("a\u{1b}b\"c"), "a\\u{1b}b\\\"c");
        let long = "x".repeat(100_000);
        let e = echo(&long);
        assert!(e.len() < 100, "{e}");
        assert!(e.ends_with("... (100000 bytes)"), "{e}");
    }
}
