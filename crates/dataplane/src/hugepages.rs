//! Transparent huge pages for the datapath's large tables.
//!
//! A 100K-flow table spreads its index, rules and counters over tens of megabytes; with 4 KiB
//! pages every packet's lookups miss the TLB as well as the cache. [`HugePageAlloc`] is the
//! system allocator that also asks the kernel (`madvise(MADV_HUGEPAGE)`) to back every
//! allocation of [`THRESHOLD`] bytes or more with 2 MiB pages, which Debian's default
//! transparent-huge-page mode (`madvise`) grants only on request. Such allocations start on
//! a 2 MiB boundary and grow by moving to a new advised block: advice on a block the
//! allocator placed anywhere, or grew in place, leaves most of a 100K-flow table in 4 KiB
//! pages (at L3/100K in the Table II benchmark, 45 of 155 MiB on huge pages that way against
//! 158 of 203 MiB this way, the rest small allocations). Binaries that run a datapath install it with
//! `#[global_allocator]`. Where the kernel has no transparent huge pages the advice fails
//! and nothing changes.

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations at least this large are advised.
pub const THRESHOLD: usize = 2 << 20;

/// The huge page size: large allocations start on such a boundary, so that every 2 MiB
/// of them can be one page (a boundary in the middle would leave the ends in 4 KiB pages).
const HUGE_PAGE: usize = 2 << 20;

/// The system allocator, advising large allocations to use huge pages.
#[derive(Clone, Copy, Debug, Default)]
pub struct HugePageAlloc;

/// The layout a request is served with: large ones aligned to a huge page.
fn served(layout: Layout) -> Layout {
    if layout.size() < THRESHOLD {
        return layout;
    }
    Layout::from_size_align(layout.size(), layout.align().max(HUGE_PAGE)).unwrap_or(layout)
}

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

// SAFETY: every method serves the caller's layout from `System`, with a larger alignment
// for large requests (`served`, applied the same way when freeing, as the size and
// alignment decide it); `advise` only adds a hint about the returned memory. `realloc`
// of a large block moves it into a new advised block (the bytes up to the smaller size
// copied), so the kernel backs the new block with huge pages as it is first written,
// where growing in place would keep the old 4 KiB pages.
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees (a larger alignment is still valid).
        let p = unsafe { System.alloc(served(layout)) };
        advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees (a larger alignment is still valid).
        let p = unsafe { System.alloc_zeroed(served(layout)) };
        advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with `served(layout)`.
        unsafe { System.dealloc(ptr, served(layout)) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.size() < THRESHOLD && new_size < THRESHOLD {
            // SAFETY: forwarded with the caller's guarantees; both layouts are served as is.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return core::ptr::null_mut();
        };
        // SAFETY: `new_layout` has a non-zero size (the caller's contract for `new_size`).
        let q = unsafe { self.alloc(new_layout) };
        if !q.is_null() {
            // SAFETY: both blocks are live, distinct and at least `min(old, new)` long; the
            // old one is freed with the layout it was allocated with.
            unsafe {
                core::ptr::copy_nonoverlapping(ptr, q, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_allocations_start_on_huge_pages_and_keep_their_contents_through_realloc() {
        let a = HugePageAlloc;
        let small = Layout::from_size_align(4000, 8).expect("layout");
        // SAFETY: non-zero layouts; every pointer is checked, written and read within its
        // block, resized with the layout of its current size and freed with the layout of
        // its last size.
        unsafe {
            // Small, grown past the threshold (moved to an aligned block), shrunk back.
            let p = a.alloc(small);
            assert!(!p.is_null());
            for i in 0..4000 {
                *p.add(i) = (i % 251) as u8;
            }
            let q = a.realloc(p, small, THRESHOLD + 1);
            assert!(!q.is_null());
            assert_eq!(q as usize % HUGE_PAGE, 0);
            assert!((0..4000).all(|i| *q.add(i) == (i % 251) as u8));
            *q.add(THRESHOLD) = 9;
            let large = Layout::from_size_align(THRESHOLD + 1, 8).expect("layout");
            let r = a.realloc(q, large, 3 * THRESHOLD);
            assert!(!r.is_null());
            assert_eq!(r as usize % HUGE_PAGE, 0);
            assert_eq!(*r.add(THRESHOLD), 9);
            assert!((0..4000).all(|i| *r.add(i) == (i % 251) as u8));
            let larger = Layout::from_size_align(3 * THRESHOLD, 8).expect("layout");
            let s = a.realloc(r, larger, 100);
            assert!(!s.is_null());
            assert!((0..100).all(|i| *s.add(i) == (i % 251) as u8));
            a.dealloc(s, Layout::from_size_align(100, 8).expect("layout"));

            // Zeroed and large from the start, with an alignment of its own.
            let z = Layout::from_size_align(THRESHOLD + 12345, 64).expect("layout");
            let p = a.alloc_zeroed(z);
            assert!(!p.is_null());
            assert_eq!(p as usize % HUGE_PAGE, 0);
            assert_eq!(*p.add(THRESHOLD), 0);
            a.dealloc(p, z);
        }
    }
}
