//! The byte ranges copies take. A runtime copy reads and writes raw addresses, so every
//! function that does (`Queue::memcpy`, `Queue::memset`, the CPU's host copies) takes one
//! of these instead of an address: a range is valid for its lifetime `'a`, and only code
//! that can prove that makes one. The proof is either a borrow (`&mut [u8]`, `&[u8]`: safe
//! constructors) or an `unsafe` constructor whose caller states why the bytes stay valid
//! (memory objects over their allocation, JS buffers while the binding holds them).
//!
//! Ranges carry raw pointers, never Rust references, because the bytes may be shared:
//! a `SharedArrayBuffer` that another JS thread writes at the same moment, or USM memory
//! that a device reads. Nothing here ever makes a `&[u8]` over them.

use std::marker::PhantomData;

use crate::error::{MemoryError, Result};
use crate::runtime::Address;

/// `len` bytes at `address`, valid for `'a`, that a copy may touch as `Access` says:
/// [`WriteBytes`] (write and read) or [`ReadBytes`] (read only).
#[derive(Debug, Clone, Copy)]
pub struct Bytes<'a, Access> {
    address: Address,
    len: u64,
    _valid_for: PhantomData<(&'a [u8], Access)>,
}

/// Access of bytes a copy may write (and read).
#[derive(Debug, Clone, Copy)]
pub struct Write;

/// Access of bytes a copy may only read.
#[derive(Debug, Clone, Copy)]
pub struct Read;

/// Bytes a copy may write (and read).
pub type WriteBytes<'a> = Bytes<'a, Write>;

/// Bytes a copy may read.
pub type ReadBytes<'a> = Bytes<'a, Read>;

impl<A> Bytes<'_, A> {
    /// Where the range starts.
    pub fn address(&self) -> Address {
        self.address
    }

    /// The range's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the range has no bytes (a copy over it moves nothing).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first `len` bytes, or `None` when the range is shorter.
    pub fn prefix(self, len: u64) -> Option<Self> {
        (len <= self.len).then_some(Bytes { len, ..self })
    }
}

impl<'a> WriteBytes<'a> {
    /// # Safety
    /// `address..address + len` is memory that may be written and read (host memory, or
    /// USM memory of the context the range is used with) and stays allocated for `'a`;
    /// no Rust reference to those bytes is alive while the range is used.
    pub unsafe fn from_raw(address: Address, len: u64) -> Self {
        Bytes { address, len, _valid_for: PhantomData }
    }

    /// The bytes of a borrowed slice: the borrow is the proof.
    pub fn of_slice(bytes: &'a mut [u8]) -> Self {
        Bytes { address: bytes.as_mut_ptr() as Address, len: bytes.len() as u64, _valid_for: PhantomData }
    }

    /// The same bytes, to read.
    pub fn as_read(self) -> ReadBytes<'a> {
        Bytes { address: self.address, len: self.len, _valid_for: PhantomData }
    }
}

impl<'a> ReadBytes<'a> {
    /// # Safety
    /// `address..address + len` is memory that may be read (host memory, or USM memory of
    /// the context the range is used with) and stays allocated for `'a`.
    pub unsafe fn from_raw(address: Address, len: u64) -> Self {
        Bytes { address, len, _valid_for: PhantomData }
    }

    /// The bytes of a borrowed slice: the borrow is the proof.
    pub fn of_slice(bytes: &'a [u8]) -> Self {
        Bytes { address: bytes.as_ptr() as Address, len: bytes.len() as u64, _valid_for: PhantomData }
    }

    /// The bytes a copy of all of this range into `dst` moves; an error when `dst` is
    /// shorter (a copy never writes past the range it was given).
    pub fn copy_len(&self, dst: &WriteBytes<'_>) -> Result<u64> {
        if self.len > dst.len {
            return Err(MemoryError::CopyPastRange { len: self.len, range: dst.len });
        }
        Ok(self.len)
    }

    /// Whether the two ranges share a byte.
    pub fn overlaps(&self, other: &WriteBytes<'_>) -> bool {
        self.address < other.address.saturating_add(other.len) && other.address < self.address.saturating_add(self.len)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn ranges_of_slices_cover_exactly_the_slice_and_prefixes_never_grow() {
        let mut data = [0u8; 16];
        let base = data.as_ptr() as Address;
        let write = WriteBytes::of_slice(&mut data);
        assert_eq!((write.address(), write.len()), (base, 16));
        assert_eq!(write.prefix(4).map(|p| p.len()), Some(4));
        assert!(write.prefix(17).is_none());
        let read = write.as_read();
        assert!(read.overlaps(&write));
        let other = [0u8; 4];
        assert!(!ReadBytes::of_slice(&other).overlaps(&write));
        assert!(ReadBytes::of_slice(&[]).is_empty());
    }
}
