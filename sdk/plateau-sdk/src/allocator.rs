//! Size classes in front of a general allocator: the component's global
//! allocator is [`SizeClasses`] over talc (the SDK's default `talc`
//! feature).
//!
//! Every request runs in a fresh instance whose memory is thrown away
//! afterwards, and with fuel metering on, every instruction of the
//! allocator is counted. Most of a request's allocations are small and
//! short-lived (JSON keys and values, map nodes, strings), so blocks of up
//! to [`MAX_SMALL`] bytes come from 16 size classes: a free block is popped
//! from its class's list, or carved from the current chunk, in a handful of
//! instructions. Freed small blocks go back on their class's list and are
//! reused by the next allocation of the same class; larger blocks, and
//! blocks aligned to more than 16 bytes, go to the backing allocator.
//!
//! Memory given to a class is never handed back to the backing allocator,
//! so a request holds at most its peak of small blocks per class, plus one
//! chunk.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;
use std::ptr;

/// Step between size classes, and the alignment every small block has.
const STEP: usize = 16;
/// Largest block served by a size class.
pub const MAX_SMALL: usize = 256;
const CLASSES: usize = MAX_SMALL / STEP;
/// Size classes carve their blocks from chunks of this size.
const CHUNK: usize = 16 << 10;

/// A global allocator serving small blocks from size classes and the rest
/// from `A`. Not thread-safe: components are single-threaded.
pub struct SizeClasses<A> {
    backing: A,
    state: UnsafeCell<State>,
}

struct State {
    /// Head of each class's list of free blocks; a free block's first word
    /// points to the next one.
    free: [*mut u8; CLASSES],
    /// The unused rest of the current chunk.
    next: *mut u8,
    end: *mut u8,
}

// A component instance has one thread, so the state is never shared.
#[cfg(target_arch = "wasm32")]
unsafe impl<A: Sync> Sync for SizeClasses<A> {}

impl<A> SizeClasses<A> {
    pub const fn new(backing: A) -> Self {
        SizeClasses {
            backing,
            state: UnsafeCell::new(State {
                free: [ptr::null_mut(); CLASSES],
                next: ptr::null_mut(),
                end: ptr::null_mut(),
            }),
        }
    }
}

/// The class of a block of `size` bytes aligned to `align`, if it is small.
fn class(size: usize, align: usize) -> Option<usize> {
    (size <= MAX_SMALL && align <= STEP).then(|| size.max(1).div_ceil(STEP) - 1)
}

impl<A: GlobalAlloc> SizeClasses<A> {
    /// A block of `size` bytes from a new chunk, once the current one is
    /// used up (what is left of it is not used).
    #[cold]
    unsafe fn refill(&self, state: &mut State, size: usize) -> *mut u8 {
        // SAFETY: CHUNK and STEP make a valid, non-zero layout.
        let chunk = unsafe {
            self.backing
                .alloc(Layout::from_size_align_unchecked(CHUNK, STEP))
        };
        if chunk.is_null() {
            return chunk;
        }
        // SAFETY: the chunk is CHUNK bytes long, more than any class.
        unsafe {
            state.next = chunk.add(size);
            state.end = chunk.add(CHUNK);
        }
        chunk
    }
}

unsafe impl<A: GlobalAlloc> GlobalAlloc for SizeClasses<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(c) = class(layout.size(), layout.align()) else {
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { self.backing.alloc(layout) };
        };
        // SAFETY: single-threaded, and no reference to the state outlives
        // this call.
        let state = unsafe { &mut *self.state.get() };
        let head = state.free[c];
        if !head.is_null() {
            // SAFETY: a free block holds the next free block's address.
            state.free[c] = unsafe { head.cast::<*mut u8>().read() };
            return head;
        }
        // A new block, carved from the current chunk.
        let size = (c + 1) * STEP;
        if (state.end as usize) - (state.next as usize) < size {
            // SAFETY: `size` is a class's size.
            return unsafe { self.refill(state, size) };
        }
        let block = state.next;
        // SAFETY: at least `size` bytes of the chunk are left.
        state.next = unsafe { block.add(size) };
        block
    }

    #[inline]
    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        let Some(c) = class(layout.size(), layout.align()) else {
            // SAFETY: a large block came from the backing allocator.
            return unsafe { self.backing.dealloc(block, layout) };
        };
        // SAFETY: as in `alloc`; the block is at least 16 bytes and
        // 16-aligned, so it holds a pointer.
        let state = unsafe { &mut *self.state.get() };
        unsafe { block.cast::<*mut u8>().write(state.free[c]) };
        state.free[c] = block;
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = class(layout.size(), layout.align());
        let new = class(new_size, layout.align());
        match (old, new) {
            (Some(a), Some(b)) if a == b => block,
            // SAFETY: a large block came from the backing allocator.
            (None, None) => unsafe { self.backing.realloc(block, layout, new_size) },
            _ => {
                // SAFETY: the caller guarantees a valid new size for this
                // alignment; the copy covers what both blocks hold.
                unsafe {
                    let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
                    let moved = self.alloc(new_layout);
                    if !moved.is_null() {
                        ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                        self.dealloc(block, layout);
                    }
                    moved
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn classes_cover_small_blocks_of_small_alignment() {
        assert_eq!(class(0, 1), Some(0));
        assert_eq!(class(16, 8), Some(0));
        assert_eq!(class(17, 8), Some(1));
        assert_eq!(class(256, 16), Some(15));
        assert_eq!(class(257, 8), None);
        assert_eq!(class(8, 32), None);
    }

    #[test]
    fn a_freed_block_is_reused_by_its_class_only() {
        let a = SizeClasses::new(System);
        unsafe {
            let x = a.alloc(layout(24, 8));
            let y = a.alloc(layout(24, 8));
            assert_ne!(x, y);
            assert_eq!(x as usize % STEP, 0);
            a.dealloc(x, layout(24, 8));
            let other = a.alloc(layout(100, 8));
            assert_ne!(other, x, "another class does not take the block");
            assert_eq!(a.alloc(layout(32, 4)), x, "the same class reuses it");
        }
    }

    #[test]
    fn realloc_keeps_contents_across_classes_and_into_the_backing_allocator() {
        let a = SizeClasses::new(System);
        unsafe {
            let mut size = 1;
            let mut block = a.alloc(layout(size, 1));
            block.write(7);
            for new_size in [10, 16, 40, 200, 256, 300, 5000, 120, 3] {
                block = a.realloc(block, layout(size, 1), new_size);
                assert!(!block.is_null());
                assert_eq!(block.read(), 7, "resized from {size} to {new_size}");
                size = new_size;
            }
            a.dealloc(block, layout(size, 1));
        }
    }

    /// Many live blocks of mixed sizes, freed and reallocated in turns:
    /// every block keeps its own bytes.
    #[test]
    fn live_blocks_never_overlap() {
        let a = SizeClasses::new(System);
        let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for round in 0..20_000u32 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let free = !live.is_empty() && seed.is_multiple_of(3);
            unsafe {
                if free {
                    let (block, l, tag) = live.swap_remove(seed as usize % live.len());
                    assert!((0..l.size()).all(|i| block.add(i).read() == tag));
                    a.dealloc(block, l);
                } else {
                    let l = layout(1 + (seed as usize >> 8) % 600, 1 << ((seed >> 20) % 6));
                    let block = a.alloc(l);
                    assert!(!block.is_null());
                    assert_eq!(block as usize % l.align(), 0);
                    let tag = round as u8;
                    block.write_bytes(tag, l.size());
                    live.push((block, l, tag));
                }
            }
        }
        for (block, l, tag) in live {
            unsafe {
                assert!((0..l.size()).all(|i| block.add(i).read() == tag));
                a.dealloc(block, l);
            }
        }
    }
}
