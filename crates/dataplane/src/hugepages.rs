//! Transparent huge pages for the datapath's large tables.
//!
//! A 100K-flow table spreads its index, rules and counters over tens of megabytes; with 4 KiB
//! pages every packet's lookups miss the TLB as well as the cache. [`HugePageAlloc`] is the
//! system allocator that also asks the kernel (`madvise(MADV_HUGEPAGE)`) to back every
//! allocation of [`THRESHOLD`] bytes or more with 2 MiB pages, which Debian's default
//! transparent-huge-page mode (`madvise`) grants only on request. Binaries that run a
//! datapath install it with `#[global_allocator]`. Where the kernel has no transparent huge
//! pages the advice fails and nothing changes.

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations at least this large are advised.
pub const THRESHOLD: usize = 2 << 20;

/// The system allocator, advising large allocations to use huge pages.
#[derive(Clone, Copy, Debug, Default)]
pub struct HugePageAlloc;

/// Asks for huge pages on the whole pages inside `[p, p + size)`.
fn advise(p: *mut u8, size: usize) {
    const PAGE: usize = 4096;
    if p.is_null() || size < THRESHOLD {
        return;
    }
    let start = (p as usize).next_multiple_of(PAGE);
    let end = (p as usize + size) & !(PAGE - 1);
    if end > start {
        #[cfg(target_os = "linux")]
        // SAFETY: the range lies inside an allocation this allocator just returned; the
        // advice changes how the kernel backs it, never its contents or validity.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments and returns its
// result unchanged; `advise` only adds a hint about the returned memory.
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        advise(p, new_size);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_allocations_work_and_keep_their_contents_through_realloc() {
        let a = HugePageAlloc;
        let layout = Layout::from_size_align(THRESHOLD + 12345, 64).expect("layout");
        // SAFETY: a non-zero layout; the pointer is checked, written within bounds, grown
        // with the same layout and freed with the layout of its last size.
        unsafe {
            let p = a.alloc_zeroed(layout);
            assert!(!p.is_null());
            assert_eq!(*p.add(THRESHOLD), 0);
            *p.add(7) = 42;
            let q = a.realloc(p, layout, 2 * THRESHOLD);
            assert!(!q.is_null());
            assert_eq!(*q.add(7), 42);
            a.dealloc(
                q,
                Layout::from_size_align(2 * THRESHOLD, 64).expect("layout"),
            );
        }
    }
}
