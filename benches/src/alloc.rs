//! A counting global allocator: live heap bytes and their peak, counted only while
//! switched on, so the rest of a benchmark pays one relaxed load per allocation.
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: golem_benches::alloc::Counting = golem_benches::alloc::Counting;
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering};

static ON: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static ALLOCATED: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting live bytes while [`start`] is in force.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counting;

/// What was counted between [`start`] and [`stop`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Bytes allocated and not freed since `start` (negative when more was freed).
    pub live: isize,
    /// The most `live` reached.
    pub peak: isize,
    /// Calls to `alloc`, `alloc_zeroed` and growing `realloc`.
    pub allocations: u64,
    /// Bytes those calls asked for.
    pub allocated: u64,
}

/// Starts counting from zero: live bytes are those allocated (less those freed) since.
pub fn start() {
    LIVE.store(0, Ordering::SeqCst);
    PEAK.store(0, Ordering::SeqCst);
    ALLOCATIONS.store(0, Ordering::SeqCst);
    ALLOCATED.store(0, Ordering::SeqCst);
    ON.store(true, Ordering::SeqCst);
}

/// The counts since [`start`] so far.
pub fn counts() -> Counts {
    Counts {
        live: LIVE.load(Ordering::SeqCst),
        peak: PEAK.load(Ordering::SeqCst),
        allocations: ALLOCATIONS.load(Ordering::SeqCst),
        allocated: ALLOCATED.load(Ordering::SeqCst),
    }
}

/// Stops counting and returns the counts since [`start`].
pub fn stop() -> Counts {
    ON.store(false, Ordering::SeqCst);
    counts()
}

fn grew(bytes: usize) {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    ALLOCATED.fetch_add(bytes as u64, Ordering::Relaxed);
    let bytes = isize::try_from(bytes).unwrap_or(isize::MAX);
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    LIVE.fetch_sub(
        isize::try_from(bytes).unwrap_or(isize::MAX),
        Ordering::Relaxed,
    );
}

// SAFETY: every call is forwarded to `System` unchanged; the counting touches atomics only.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `System::alloc`'s.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() && ON.load(Ordering::Relaxed) {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() && ON.load(Ordering::Relaxed) {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, that is by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        if ON.load(Ordering::Relaxed) {
            shrank(layout.size());
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`, and `new_size` is the caller's valid request.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() && ON.load(Ordering::Relaxed) {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        new
    }
}
