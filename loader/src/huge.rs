//! Transparent huge pages for the node table: the one large allocation a
//! load writes from end to end. With 4 KiB pages, filling a 5M-inode table
//! (320 MB) takes some 78,000 page faults, each a trip into the kernel and
//! its page allocator; with 2 MiB pages, about 150. Where the kernel grants
//! huge pages only on request (`/sys/kernel/mm/transparent_hugepage/enabled`
//! set to `madvise`, a common default) the table asks with
//! `madvise(MADV_HUGEPAGE)`; where it never grants them the hint does
//! nothing. `NSIMAGE_NO_HUGE_PAGES=1` leaves the hint out (for
//! comparisons).
#![allow(unsafe_code)]

use std::mem::MaybeUninit;

const HUGE_PAGE: usize = 2 << 20;

/// Asks the kernel to back the 2 MiB-aligned part of `slots` with huge
/// pages. A hint: failures (an old kernel, huge pages turned off) change
/// nothing but speed.
pub(crate) fn advise<T>(slots: &mut [MaybeUninit<T>]) {
    if std::env::var_os("NSIMAGE_NO_HUGE_PAGES").is_some_and(|v| !v.is_empty() && v != "0") {
        return;
    }
    let start = slots.as_mut_ptr() as usize;
    let Some(end) = start.checked_add(std::mem::size_of_val(slots)) else {
        return;
    };
    let Some(first) = start.checked_next_multiple_of(HUGE_PAGE) else {
        return;
    };
    let last = end - end % HUGE_PAGE;
    if last <= first {
        return;
    }
    // Safety: the range lies within `slots`, memory this thread holds
    // exclusively (`&mut`), and starts on a page boundary as madvise
    // requires. MADV_HUGEPAGE changes only how the kernel backs the pages,
    // never their contents or their mapping's protection, so no reference
    // is invalidated; the return value is ignored (a hint).
    unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            last - first,
            libc::MADV_HUGEPAGE,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advising_any_slice_is_harmless() {
        let mut big: Box<[MaybeUninit<u64>]> = Box::new_uninit_slice(3 << 20);
        advise(&mut big);
        for (i, s) in big.iter_mut().enumerate() {
            s.write(i as u64);
        }
        // Safety (test): every slot was just written.
        let big = unsafe { big.assume_init() };
        assert!(big.iter().enumerate().all(|(i, &v)| v == i as u64));
        let mut small: Box<[MaybeUninit<u8>]> = Box::new_uninit_slice(10);
        advise(&mut small);
        advise::<u8>(&mut []);
    }
}
