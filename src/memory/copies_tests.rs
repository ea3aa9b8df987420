//! Cargo tests of `memory::copies` with the policy of `memory::allocation`: another copy
//! of the package is a second pool, answering as the real table does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::error::MemoryError;
use crate::memory::allocation::{answer_own, bind_view, Allocation, OwnAnswer, ViewHolder};
use crate::memory::copies::{OtherAnswer, OtherCopies, OtherHold};
use crate::memory::pool::{Limits, Pool};
use crate::runtime::fake::{FakeContext, FakeDevice};
use crate::runtime::{Address, UsmKind};

/// Another copy of the package: a pool of its own, answering through `answer_own`
/// as the real table does, its holds the allocation itself.
struct OtherCopy(&'static Pool);

impl OtherCopies for OtherCopy {
    fn lookup(&self, address: Address) -> OtherAnswer {
        match answer_own(self.0, address) {
            OwnAnswer::Live(allocation) => {
                let (base, size) = (allocation.address(), allocation.nbytes());
                OtherAnswer::Live { base, size, hold: OtherHold::new(Box::new(allocation)) }
            }
            OwnAnswer::Unowned { block_base } => OtherAnswer::Unowned { block_base },
            OwnAnswer::Foreign => OtherAnswer::Foreign,
        }
    }
}

#[test]
fn copies_a_view_of_another_copys_memory_is_bounded_by_and_holds_its_allocation() {
    let context = FakeContext::new(7070, FakeDevice::new(1 << 34, 1 << 34));
    let queue = context.queue();
    let theirs: &'static Pool = Box::leak(Box::new(Pool::new(true, Limits::default())));
    let ours: &'static Pool = Box::leak(Box::new(Pool::new(true, Limits::default())));
    let other = OtherCopy(theirs);
    let allocation = Allocation::new(theirs, &queue, UsmKind::Shared, 4096, 0).unwrap();
    let base = allocation.address();

    // Bounded: what the other copy's allocation asked for, no byte more.
    for (at, nbytes) in [(base, 209_920), (base + 4000, 200), (base + 4096, 1)] {
        let result = bind_view(ours, &other, &*context, base, at, nbytes);
        assert!(matches!(result, Err(MemoryError::OutOfBounds { .. })), "{nbytes} at +{}: {result:?}", at - base);
    }
    // Held: the view keeps the allocation when its owner lets go.
    let view = bind_view(ours, &other, &*context, base, base + 16, 4080).unwrap();
    assert!(matches!(view, ViewHolder::OtherCopy(_)));
    assert_eq!(Arc::strong_count(&allocation), 2, "the view holds the other copy's allocation");
    drop(allocation);
    assert_eq!(theirs.cached_range(base), None, "not back in its pool while the view lives");
    let next = Allocation::new(theirs, &queue, UsmKind::Shared, 4096, 0).unwrap();
    assert_ne!(next.address(), base, "the block under the view is not handed out again");
    drop(view);
    assert!(theirs.cached_range(base).is_some(), "the view's drop gave the block back to its pool");
    // A block the other copy holds in its pool: refused as it refuses it itself.
    let result = bind_view(ours, &other, &*context, base, base, 16);
    assert!(matches!(result, Err(MemoryError::Unowned { .. })), "{result:?}");
    assert!(matches!(answer_own(theirs, base), OwnAnswer::Unowned { .. }));
    // Slack after a request: unowned there too.
    let odd = Allocation::new(theirs, &queue, UsmKind::Shared, 100, 0).unwrap();
    let result = bind_view(ours, &other, &*context, odd.address() + 200, odd.address() + 200, 8);
    assert!(matches!(result, Err(MemoryError::Unowned { .. })), "{result:?}");
    // A copy never asks the others on another copy's behalf (no endless asking).
    assert!(matches!(answer_own(ours, next.address()), OwnAnswer::Foreign));
    drop((next, odd));
}
