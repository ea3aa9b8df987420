//! Handles: the binding's values (devices, contexts, queues, memory) live in per-
//! environment slabs, and JS holds only their ids, plain numbers. A number crosses
//! Node-API for a fraction of what an external object costs to make, check and finalize;
//! the JS classes give ids back explicitly (`free()`) or through a `FinalizationRegistry`.
//!
//! An id is `index + generation * 2^24`, exact in a JS number: a stale id (its value
//! released, its slot reused) never reaches the new value.

use crate::memory::interface::{js_integer, JsInteger};

/// Slots per slab (the low 24 bits of an id).
const INDEX_LIMIT: u32 = 1 << 24;
/// Generations wrap below 2^29, so an id stays below 2^53.
const GENERATION_LIMIT: u32 = 1 << 29;

/// Values behind ids, with generations so that a stale id finds nothing.
pub struct Slab<T> {
    entries: Vec<Entry<T>>,
    vacant: Vec<u32>,
}

struct Entry<T> {
    generation: u32,
    value: Option<T>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { entries: Vec::new(), vacant: Vec::new() }
    }
}

fn id_of(index: u32, generation: u32) -> f64 {
    f64::from(index) + f64::from(generation) * f64::from(INDEX_LIMIT)
}

/// `(index, generation)` of a well-formed id, else `None`.
fn parts(id: f64) -> Option<(u32, u32)> {
    let JsInteger::Safe(id) = js_integer(id) else { return None };
    let id = u64::try_from(id).ok()?;
    let index = u32::try_from(id % u64::from(INDEX_LIMIT)).ok()?;
    let generation = u32::try_from(id / u64::from(INDEX_LIMIT)).ok()?;
    Some((index, generation))
}

impl<T> Slab<T> {
    /// Stores `value`; `None` when every slot is taken.
    pub fn insert(&mut self, value: T) -> Option<f64> {
        if let Some(index) = self.vacant.pop() {
            let entry = &mut self.entries[index as usize];
            entry.value = Some(value);
            return Some(id_of(index, entry.generation));
        }
        let index = u32::try_from(self.entries.len()).ok().filter(|&i| i < INDEX_LIMIT)?;
        self.entries.push(Entry { generation: 0, value: Some(value) });
        Some(id_of(index, 0))
    }

    /// The value of a live id; `None` for a malformed or stale one (its value released).
    pub fn get(&self, id: f64) -> Option<&T> {
        let (index, generation) = parts(id)?;
        let entry = self.entries.get(index as usize)?;
        (entry.generation == generation).then_some(entry.value.as_ref()).flatten()
    }

    /// Takes the value out; its id (and every copy of it) is dead from now on.
    pub fn remove(&mut self, id: f64) -> Option<T> {
        let (index, generation) = parts(id)?;
        let entry = self.entries.get_mut(index as usize)?;
        if entry.generation != generation {
            return None;
        }
        let value = entry.value.take()?;
        entry.generation = (entry.generation + 1) % GENERATION_LIMIT;
        self.vacant.push(index);
        Some(value)
    }

    /// Calls `f` on every live value.
    pub fn for_each(&mut self, mut f: impl FnMut(&mut T)) {
        for entry in &mut self.entries {
            if let Some(value) = entry.value.as_mut() {
                f(value);
            }
        }
    }

    /// The ids of the live values for which `keep` is true.
    pub fn ids_where(&self, mut keep: impl FnMut(&T) -> bool) -> Vec<f64> {
        let live = self.entries.iter().enumerate().filter_map(|(index, entry)| {
            let value = entry.value.as_ref()?;
            let index = u32::try_from(index).ok()?;
            keep(value).then(|| id_of(index, entry.generation))
        });
        live.collect()
    }

    /// Takes every live value out, handing each to `f`.
    pub fn drain(&mut self, mut f: impl FnMut(T)) {
        for index in 0..self.entries.len() {
            let entry = &mut self.entries[index];
            if let Some(value) = entry.value.take() {
                entry.generation = (entry.generation + 1) % GENERATION_LIMIT;
                if let Ok(index) = u32::try_from(index) {
                    self.vacant.push(index);
                }
                f(value);
            }
        }
    }

    /// Live values.
    #[cfg(test)]
    pub fn live(&self) -> usize {
        self.entries.len() - self.vacant.len()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::memory::interface::MAX_SAFE_INTEGER;

    #[test]
    fn a_stale_id_never_reaches_the_value_that_reuses_its_slot() {
        let mut slab = Slab::default();
        let a = slab.insert("a").unwrap();
        assert_eq!(slab.get(a), Some(&"a"));
        assert_eq!(slab.remove(a), Some("a"));
        assert_eq!(slab.remove(a), None, "released once");
        let b = slab.insert("b").unwrap();
        assert_ne!(a, b, "same slot, new generation");
        assert_eq!(slab.get(a), None);
        assert_eq!(slab.remove(a), None);
        assert_eq!(slab.get(b), Some(&"b"));
        assert_eq!(slab.live(), 1);
    }

    #[test]
    fn malformed_ids_find_nothing() {
        let mut slab = Slab::default();
        let a = slab.insert(1).unwrap();
        for id in [-1.0, 0.5, f64::NAN, f64::INFINITY, 1e300, a + 1.0, a + f64::from(INDEX_LIMIT)] {
            assert_eq!(slab.get(id), None, "{id}");
        }
    }

    #[test]
    fn ids_stay_exact_in_a_js_number_when_generations_wrap() {
        let mut slab = Slab::default();
        let first = slab.insert(0).unwrap();
        slab.entries[0].generation = GENERATION_LIMIT - 1;
        slab.entries[0].value = Some(1);
        let last = id_of(0, GENERATION_LIMIT - 1);
        assert!(last <= MAX_SAFE_INTEGER);
        assert_eq!(slab.remove(last), Some(1));
        assert_eq!(slab.entries[0].generation, 0, "wrapped");
        assert_eq!(slab.get(first), None, "the slot is vacant");
    }
}
