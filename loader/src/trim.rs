//! Gives the allocator's free memory back to the system, at the caller's
//! choice. A load frees its decode scratch (node buffers, read buffers, the
//! parent table) when it ends, but glibc keeps freed heap pages resident; a
//! server that has just loaded its namespace may not want to carry them.
#![allow(unsafe_code)]

/// Returns the allocator's free heap pages to the operating system.
///
/// This is a process-wide effect: it trims the whole glibc heap (every
/// arena), not only what a load freed, and it costs a pass over the free
/// lists, so it is the caller's choice when to ask for it; typically once,
/// right after [`load`](crate::load) of a large image. On Linux with glibc
/// it calls `malloc_trim(0)`; on every other target it does nothing.
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
