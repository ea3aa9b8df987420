//! Consuming `__sycl_usm_array_interface__` into USM memory, free of Node: the fields as
//! the binding read them, `syclobj` as the binding resolved it to a queue, a context or a
//! filter string, and every check that decides whether a view may exist: dpctl's field
//! validation (`memory::interface`), that the pointer belongs to the context `syclobj`
//! names (dpctl aborts there), and that the described bytes lie inside the allocation
//! wherever its extent is known (dpctl does not check).

use std::sync::Arc;

use crate::error::{MemoryError, Result};
use crate::memory::allocation::{bind_view, provenance, runtime_slack, unowned, Provenance, ViewHolder};
use crate::memory::interface::{parse_interface, pointer_not_bound, syclobj_invalid, RawInterface};
use crate::memory::process::ProcessRuntime;
use crate::memory::usm::{Owner, UsmMemory};
use crate::runtime::UsmKind;
use crate::runtime::{Address, Context, Queue};

/// What the interface's `syclobj` named.
pub enum SyclObj {
    Queue(Arc<dyn Queue>),
    Context(Arc<dyn Context>),
    Filter(String),
    /// Anything else (`null`, a number, a device, ...), as messages show it.
    Invalid,
}

/// Memory described by `raw`, whose `syclobj` is `syclobj` (`shown`: how messages write
/// it). The view holds the allocation under it when this process made that allocation.
pub fn consume(
    process: &'static ProcessRuntime,
    raw: &RawInterface,
    syclobj: SyclObj,
    shown: &str,
) -> Result<UsmMemory> {
    let parsed = parse_interface(raw, |address| resolve(process, syclobj, address, shown))?;
    let queue = parsed.queue;
    let owner =
        bind_view(process.pool(), process.others(), &*queue.context(), parsed.base_ptr, parsed.ptr, parsed.nbytes)?;
    let owner = match owner {
        ViewHolder::Ours(allocation) => Owner::Allocation(allocation),
        ViewHolder::OtherCopy(hold) => Owner::OtherCopy(hold),
        // A mapping of another process's memory opened here is held like our own memory.
        ViewHolder::Nobody => {
            process.ipc().mapping_holding(parsed.ptr, parsed.nbytes).map_or(Owner::Foreign, Owner::Mapping)
        }
    };
    // SAFETY: `parse_interface` and `bind_view` checked that the range is USM memory of
    // the queue's context, inside `owner` when this process allocated it (the view holds
    // it); foreign memory is kept alive by the interface's exporter, as dpctl trusts.
    Ok(unsafe { UsmMemory::from_interface(parsed.ptr, parsed.nbytes, queue, owner, parsed.read_only) })
}

/// `syclobj` as a queue the pointer is valid in. A foreign pointer is an error here,
/// never an abort.
fn resolve(
    process: &'static ProcessRuntime,
    syclobj: SyclObj,
    address: Address,
    shown: &str,
) -> Result<Arc<dyn Queue>> {
    let registry = process.registry();
    // What `syclobj` names comes first (a filter string that names no device is that
    // error, whatever the pointer), then the pointer.
    let (queue, context) = match syclobj {
        SyclObj::Queue(queue) => (Some(queue), None),
        SyclObj::Context(context) => (None, Some(context)),
        SyclObj::Filter(text) => {
            let device = registry.select(Some(&text)).map_err(MemoryError::into_queue_creation)?;
            (Some(registry.cached_queue(&device)?), None)
        }
        SyclObj::Invalid => return Err(syclobj_invalid(shown)),
    };
    // Memory this process allocated that no live allocation owns (a block's slack, a
    // cached block) is refused before the runtime is asked: whether the runtime still
    // calls such memory valid depends on how it rounds and reuses blocks, and the answer
    // must not depend on the device.
    let ours = provenance(process.pool(), process.others(), address);
    if let Provenance::Unowned { block_base } = ours {
        return Err(unowned(address, block_base));
    }
    let (queue, context) = match (queue, context) {
        (Some(queue), _) => {
            let context = queue.context();
            (Some(queue), context)
        }
        (None, Some(context)) => (None, context),
        (None, None) => return Err(syclobj_invalid(shown)),
    };
    // Registered host memory is the user's, whatever a runtime calls it (CUDA's driver
    // reports it as host memory): the model's book of registrations answers.
    if process.registrations().registered_at(address) || context.pointer_kind(address) == UsmKind::Unknown {
        return Err(pointer_not_bound(address, shown));
    }
    // The runtime knows the address but our book does not: it may be the runtime's
    // rounding of one of our allocations (CUDA rounds them up), which no view may touch.
    if matches!(ours, Provenance::Foreign) {
        if let Some(block_base) = runtime_slack(process.pool(), context.address_range(address)) {
            return Err(unowned(address, block_base));
        }
    }
    match queue {
        Some(queue) => Ok(queue),
        None => {
            let device = context.pointer_device(address).map_err(|_| pointer_not_bound(address, shown))?;
            context.create_queue(&device)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::memory::interface::IfaceValue;
    use crate::runtime::fake::{FakeContext, FakeDevice};

    fn raw(data: u64, nbytes: u64, offset: i64) -> RawInterface {
        RawInterface {
            offset: IfaceValue::Number(offset as f64),
            version: IfaceValue::Number(1.0),
            data: IfaceValue::List(vec![IfaceValue::BigInt(i128::from(data)), IfaceValue::Bool(false)]),
            syclobj_present: true,
            shape: IfaceValue::List(vec![IfaceValue::Number(nbytes as f64)]),
            typestr: IfaceValue::String("|u1".into()),
            strides: IfaceValue::Null,
        }
    }

    #[test]
    fn a_view_of_our_allocation_holds_it_and_stays_inside_it() {
        // A process value of this test's own: no provider, its own pool and books.
        let process = ProcessRuntime::new(Vec::new(), None, true).leak();
        let context = FakeContext::new(2001, FakeDevice::new(1 << 34, 1 << 34));
        let queue = context.queue();
        let base = UsmMemory::allocate(process.pool(), &queue, UsmKind::Host, 100, 0).unwrap();
        let view = consume(process, &raw(base.address() + 10, 50, 0), SyclObj::Queue(queue.clone()), "q").unwrap();
        assert_eq!((view.address(), view.nbytes()), (base.address() + 10, 50));
        assert!(Arc::ptr_eq(view.owner().allocation().unwrap(), base.owner().allocation().unwrap()));
        let past = consume(process, &raw(base.address() + 10, 91, 0), SyclObj::Queue(queue.clone()), "q");
        assert!(matches!(past, Err(MemoryError::OutOfBounds { .. })));
        let slack = consume(process, &raw(base.address() + 100, 100, -100), SyclObj::Queue(queue.clone()), "q");
        assert!(matches!(slack, Err(MemoryError::Unowned { .. })), "never from a block's slack");
        let invalid = consume(process, &raw(base.address(), 1, 0), SyclObj::Invalid, "null");
        assert!(matches!(invalid, Err(MemoryError::InterfaceMalformed { .. })));
    }
}
