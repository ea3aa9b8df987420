//! Books of address ranges kept by start address, ranges never overlapping: the pool's
//! blocks, a context's allocations, open IPC mappings, registered host ranges.
//!
//! [`RangeBook`] is the one type for them, and [`RangeBook::insert`] the one place that
//! checks that a new range overlaps none already there. Every lookup is a walk of a
//! `BTreeMap` from the range's end down, so it costs O(log n) plus the entries it returns.

use std::collections::BTreeMap;

use crate::runtime::Address;

/// The entry of `book` whose range holds `address`, as `(start, entry)`; `len` reads an
/// entry's length. For books whose entries carry their length in their own way (the
/// pool's book, a context's allocations); [`RangeBook`] keeps the length itself.
pub(crate) fn entry_holding<V>(
    book: &BTreeMap<Address, V>,
    address: Address,
    len: impl FnOnce(&V) -> u64,
) -> Option<(Address, &V)> {
    let (&start, entry) = book.range(..=address).next_back()?;
    (address - start < len(entry)).then_some((start, entry))
}

/// One range of a [`RangeBook`], as lookups return it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range<'a, V> {
    pub(crate) start: Address,
    pub(crate) len: u64,
    pub(crate) value: &'a V,
}

impl<V> Range<'_, V> {
    /// One past the last byte (saturating: a range may end at the top of the space).
    pub(crate) fn end(&self) -> Address {
        self.start.saturating_add(self.len)
    }

    /// Whether `address..address + len` lies inside this range.
    pub(crate) fn covers(&self, address: Address, len: u64) -> bool {
        address >= self.start && address.saturating_add(len) <= self.end()
    }
}

/// Non-overlapping ranges `start..start + len`, each with a value, by start address.
/// Ranges are never empty: a range of length 0 is stored as one byte long, so that it
/// still claims its address (an empty host buffer has one).
#[derive(Debug)]
pub(crate) struct RangeBook<V> {
    ranges: BTreeMap<Address, (u64, V)>,
}

impl<V> Default for RangeBook<V> {
    fn default() -> Self {
        RangeBook::new()
    }
}

impl<V> RangeBook<V> {
    /// An empty book (`const`: a book may be a process-wide static).
    pub(crate) const fn new() -> Self {
        RangeBook { ranges: BTreeMap::new() }
    }

    /// How many ranges the book holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether the book holds no range.
    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The ranges that overlap `address..address + len`, highest first (an empty query
    /// asks about the one byte at `address`).
    pub(crate) fn overlapping(&self, address: Address, len: u64) -> impl Iterator<Item = Range<'_, V>> {
        let end = address.saturating_add(len.max(1));
        self.ranges
            .range(..end)
            .rev()
            .map(|(&start, (len, value))| Range { start, len: *len, value })
            .take_while(move |range| range.end() > address)
    }

    /// The first range (the highest) that overlaps `address..address + len`.
    pub(crate) fn first_overlapping(&self, address: Address, len: u64) -> Option<Range<'_, V>> {
        self.overlapping(address, len).next()
    }

    /// The range that holds the byte at `address`.
    pub(crate) fn holding(&self, address: Address) -> Option<Range<'_, V>> {
        self.first_overlapping(address, 1)
    }

    /// The value of the range that starts at `start`, to change it in place.
    pub(crate) fn get_mut(&mut self, start: Address) -> Option<&mut V> {
        self.ranges.get_mut(&start).map(|(_, value)| value)
    }

    /// Adds `start..start + len` with `value`, unless it overlaps a range of the book:
    /// then the book is unchanged and the error is the value back with the first
    /// overlapping range's `(start, len)`.
    pub(crate) fn insert(&mut self, start: Address, len: u64, value: V) -> Result<(), Overlap<V>> {
        let len = len.max(1);
        if let Some(range) = self.first_overlapping(start, len) {
            return Err(Overlap { value, start: range.start, len: range.len });
        }
        self.ranges.insert(start, (len, value));
        Ok(())
    }

    /// Takes out the range that starts at `start`, as `(len, value)`.
    pub(crate) fn remove(&mut self, start: Address) -> Option<(u64, V)> {
        self.ranges.remove(&start)
    }

    /// Takes out the range that starts at `start` if `is` says its value is the one meant
    /// (a range may have been ended and its start taken again by another).
    pub(crate) fn remove_if(&mut self, start: Address, is: impl FnOnce(&V) -> bool) -> Option<(u64, V)> {
        match self.ranges.get(&start) {
            Some((_, value)) if is(value) => self.ranges.remove(&start),
            _ => None,
        }
    }
}

/// [`RangeBook::insert`] of a range that overlaps one already in the book.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Overlap<V> {
    /// The value that was not inserted.
    pub(crate) value: V,
    /// The overlapping range of the book.
    pub(crate) start: Address,
    pub(crate) len: u64,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_entry_holds_its_range_and_nothing_past_it() {
        let book = BTreeMap::from([(100u64, 10u64), (200, 1)]);
        let holding = |ptr| entry_holding(&book, ptr, |&len| len).map(|(start, _)| start);
        assert_eq!([99, 100, 109, 110, 200, 201].map(holding), [None, Some(100), Some(100), None, Some(200), None]);
        assert_eq!(entry_holding(&BTreeMap::<Address, u64>::new(), 5, |&len| len), None);
    }

    #[test]
    fn a_book_refuses_overlap_and_finds_ranges_by_any_byte() {
        let mut book = RangeBook::new();
        book.insert(100, 10, 'a').unwrap();
        book.insert(110, 5, 'b').unwrap();
        assert_eq!(book.insert(109, 2, 'c'), Err(Overlap { value: 'c', start: 110, len: 5 }));
        assert_eq!(book.insert(90, 11, 'c').map_err(|e| e.start), Err(100));
        assert_eq!(book.insert(0, 0, 'z'), Ok(()), "an empty range still claims its byte");
        assert_eq!(book.insert(0, 1, 'y').map_err(|e| e.start), Err(0));
        let starts = |address, len| book.overlapping(address, len).map(|r| r.start).collect::<Vec<_>>();
        assert_eq!(starts(105, 10), vec![110, 100]);
        assert_eq!(starts(115, 10), Vec::<Address>::new());
        assert_eq!(starts(99, 0), Vec::<Address>::new());
        assert_eq!(book.holding(114).map(|r| *r.value), Some('b'));
        assert!(book.holding(100).is_some_and(|r| r.covers(100, 10) && !r.covers(105, 10)));
        assert_eq!(book.remove_if(110, |&v| v == 'a'), None);
        assert_eq!(book.remove_if(110, |&v| v == 'b'), Some((5, 'b')));
        assert_eq!(book.len(), 2);
        book.insert(u64::MAX - 3, 10, 'm').unwrap();
        assert_eq!(book.holding(u64::MAX - 1).map(|r| *r.value), Some('m'), "saturating at the top");
    }

    proptest! {
        /// Against a plain list of ranges: the book holds exactly the ranges that did not
        /// overlap those before them, and every query answers as a scan of that list.
        #[test]
        fn a_book_answers_as_a_scan_would(
            inserts in proptest::collection::vec((0u64..2000, 0u64..64), 0..60),
            queries in proptest::collection::vec((0u64..2100, 0u64..200), 0..40),
        ) {
            let mut book = RangeBook::new();
            let mut list: Vec<(u64, u64)> = Vec::new();
            let overlaps = |a: u64, al: u64, b: u64, bl: u64| a < b + bl.max(1) && b < a + al.max(1);
            for (i, &(start, len)) in inserts.iter().enumerate() {
                let expected_free = list.iter().all(|&(s, l)| !overlaps(start, len, s, l));
                prop_assert_eq!(book.insert(start, len, i).is_ok(), expected_free);
                if expected_free {
                    list.push((start, len.max(1)));
                }
            }
            prop_assert_eq!(book.len(), list.len());
            for &(address, len) in &queries {
                let mut expected: Vec<u64> =
                    list.iter().filter(|&&(s, l)| overlaps(address, len, s, l)).map(|&(s, _)| s).collect();
                expected.sort_unstable_by(|a, b| b.cmp(a));
                let found: Vec<u64> = book.overlapping(address, len).map(|r| r.start).collect();
                prop_assert_eq!(&found, &expected);
                let holding = list.iter().find(|&&(s, l)| address >= s && address < s + l).map(|&(s, _)| s);
                prop_assert_eq!(book.holding(address).map(|r| r.start), holding);
            }
        }
    }
}
