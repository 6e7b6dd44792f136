//! Gives the allocator's free memory back to the system after a load. The
//! decode scratch (node buffers, read buffers, the parent table) is freed
//! when the load ends, but glibc keeps freed heap pages resident; a server
//! that has just loaded its namespace should not carry them.
#![allow(unsafe_code)]

/// Releases free heap memory to the system (glibc only; a no-op elsewhere).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // Safety: malloc_trim takes no pointers and has no preconditions; it
        // only returns pages of chunks that are already free.
        unsafe {
            malloc_trim(0);
        }
    }
}
