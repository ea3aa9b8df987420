//! Books of address ranges kept by start address, ranges never overlapping: the pool's
//! blocks, a context's allocations, open IPC mappings, registered host ranges.

use std::collections::BTreeMap;

use crate::runtime::Address;

/// The entry of `book` whose range holds `address`, as `(start, entry)`; `len` reads an
/// entry's length.
pub(crate) fn entry_holding<V>(
    book: &BTreeMap<Address, V>,
    address: Address,
    len: impl FnOnce(&V) -> u64,
) -> Option<(Address, &V)> {
    let (&start, entry) = book.range(..=address).next_back()?;
    (address - start < len(entry)).then_some((start, entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_holds_its_range_and_nothing_past_it() {
        let book = BTreeMap::from([(100u64, 10u64), (200, 1)]);
        let holding = |ptr| entry_holding(&book, ptr, |&len| len).map(|(start, _)| start);
        assert_eq!([99, 100, 109, 110, 200, 201].map(holding), [None, Some(100), Some(100), None, Some(200), None]);
        assert_eq!(entry_holding(&BTreeMap::<Address, u64>::new(), 5, |&len| len), None);
    }
}
