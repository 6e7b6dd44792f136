//! Fuzz input as a stream of choices: each read takes the next bytes and
//! reads zeros once the input is used up, so every input is a valid plan.

pub struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data, pos: 0 }
    }

    /// True once every byte has been read.
    pub fn done(&self) -> bool {
        self.pos >= self.data.len()
    }

    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        b
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    pub fn u64(&mut self) -> u64 {
        (self.u32() as u64) | ((self.u32() as u64) << 32)
    }

    /// `n` bytes (zeros past the end).
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.u8()).collect()
    }

    /// A number below `n` (0 when `n` is 0), from two bytes.
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            self.u16();
            return 0;
        }
        self.u16() as usize % n
    }

    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        let r = self.data.get(self.pos..).unwrap_or(&[]);
        self.pos = self.data.len();
        r
    }
}

/// A temporary directory on `/dev/shm` when there is one (fsync is free
/// there), else in the system's temporary directory.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .expect("temporary directory")
}
