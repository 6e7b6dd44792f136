//! Words for the kinds of file that readers and writers refuse: an image is
//! read from, and saved over, regular files only.

use std::os::unix::fs::FileTypeExt;

/// What a file type is, for messages ("a FIFO", "a directory", ...).
pub fn describe(t: std::fs::FileType) -> &'static str {
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "a file of an unknown kind"
    }
}
