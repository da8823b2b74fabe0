//! A per-command write-back cache of decoded element instances.
//!
//! Element instances change several times per command (ACTIVATING, ACTIVATED,
//! COMPLETING…) and most live only inside one command (start events, gateways, end
//! events). Keeping them decoded and writing only the final state at the end of the
//! command saves most of the encoding and storage work. The cache is emptied after
//! every command, so it never outlives the transaction it buffers for.

use std::cell::RefCell;
use std::collections::BTreeMap;

use rill_engine_api::StateTxn;
use rill_protocol::codec;

use super::KeyBuf;
use super::keys::table;
use super::types::ElementInstance;
use crate::error::Result;

struct Entry {
    value: Option<ElementInstance>,
    dirty: bool,
    /// Created by this command: not in the store yet, so deleting it writes nothing.
    fresh: bool,
}

#[derive(Default)]
pub struct ElementCache {
    entries: RefCell<BTreeMap<i64, Entry>>,
    /// Child index changes of this command: `(scope, child) -> present`.
    children: RefCell<BTreeMap<(i64, i64), bool>>,
}

impl ElementCache {
    /// The cached instance, or what `load` reads from the store (then cached).
    pub(super) fn get(
        &self,
        key: i64,
        load: impl FnOnce() -> Result<Option<ElementInstance>>,
    ) -> Result<Option<ElementInstance>> {
        if let Some(entry) = self.entries.borrow().get(&key) {
            return Ok(entry.value.clone());
        }
        let value = load()?;
        self.entries.borrow_mut().insert(
            key,
            Entry {
                value: value.clone(),
                dirty: false,
                fresh: false,
            },
        );
        Ok(value)
    }

    /// Looks at an instance without copying it (loading it into the cache if needed).
    pub(super) fn peek<R>(
        &self,
        key: i64,
        load: impl FnOnce() -> Result<Option<ElementInstance>>,
        look: impl FnOnce(&ElementInstance) -> R,
    ) -> Result<Option<R>> {
        if let Some(entry) = self.entries.borrow().get(&key) {
            return Ok(entry.value.as_ref().map(look));
        }
        let value = load()?;
        let result = value.as_ref().map(look);
        self.entries.borrow_mut().insert(
            key,
            Entry {
                value,
                dirty: false,
                fresh: false,
            },
        );
        Ok(result)
    }

    pub(super) fn insert(&self, instance: ElementInstance) {
        self.entries.borrow_mut().insert(
            instance.key.get(),
            Entry {
                value: Some(instance),
                dirty: true,
                fresh: true,
            },
        );
    }

    /// Changes an instance in place; false if it does not exist.
    pub(super) fn update(
        &self,
        key: i64,
        load: impl FnOnce() -> Result<Option<ElementInstance>>,
        change: impl FnOnce(&mut ElementInstance),
    ) -> Result<bool> {
        let mut entries = self.entries.borrow_mut();
        let entry = match entries.entry(key) {
            std::collections::btree_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::btree_map::Entry::Vacant(slot) => slot.insert(Entry {
                value: load()?,
                dirty: false,
                fresh: false,
            }),
        };
        match &mut entry.value {
            Some(instance) => {
                change(instance);
                entry.dirty = true;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    pub(super) fn delete(&self, key: i64) {
        let mut entries = self.entries.borrow_mut();
        let fresh = entries.get(&key).is_some_and(|e| e.fresh);
        entries.insert(
            key,
            Entry {
                value: None,
                dirty: !fresh,
                fresh,
            },
        );
    }

    pub(super) fn set_child(&self, scope: i64, child: i64, present: bool) {
        let mut children = self.children.borrow_mut();
        // A child added and removed within the command never reaches the store.
        if !present && children.get(&(scope, child)) == Some(&true) {
            children.remove(&(scope, child));
        } else {
            children.insert((scope, child), present);
        }
    }

    /// Applies this command's child changes of `scope` to the stored list.
    pub(super) fn merge_children(&self, scope: i64, stored: &mut Vec<i64>) {
        let children = self.children.borrow();
        for (&(_, child), &present) in children.range((scope, i64::MIN)..=(scope, i64::MAX)) {
            match (present, stored.binary_search(&child)) {
                (true, Err(at)) => stored.insert(at, child),
                (false, Ok(at)) => {
                    stored.remove(at);
                }
                _ => {}
            }
        }
    }

    /// Writes the changed instances to `txn` and empties the cache.
    pub fn flush(&self, txn: &mut dyn StateTxn) -> Result<()> {
        for ((scope, child), present) in std::mem::take(&mut *self.children.borrow_mut()) {
            let key = KeyBuf::new(table::ELEMENT_CHILD).i64(scope).i64(child);
            if present {
                txn.put(key.bytes(), &[]);
            } else {
                txn.delete(key.bytes());
            }
        }
        let entries = std::mem::take(&mut *self.entries.borrow_mut());
        let mut buffer = Vec::with_capacity(256);
        for (key, entry) in entries {
            if !entry.dirty {
                continue;
            }
            let state_key = KeyBuf::new(table::ELEMENT_INSTANCE).i64(key);
            match entry.value {
                Some(instance) => {
                    buffer.clear();
                    codec::encode_into(&instance, &mut buffer)?;
                    txn.put(state_key.bytes(), &buffer);
                }
                None => txn.delete(state_key.bytes()),
            }
        }
        Ok(())
    }

    /// Forgets everything (after a failed command: its writes are dropped anyway).
    pub fn clear(&self) {
        self.entries.borrow_mut().clear();
        self.children.borrow_mut().clear();
    }
}

#[cfg(test)]
mod tests {
    use rill_engine_api::{MemoryState, StateRead};
    use rill_protocol::Key;
    use rill_protocol::value::{BpmnElementType, BpmnEventType, ProcessInstanceRecord};

    use super::*;
    use crate::state::ElementState;

    fn instance(key: i64) -> ElementInstance {
        ElementInstance {
            key: Key(key),
            state: ElementState::Activating,
            record: ProcessInstanceRecord {
                bpmn_element_type: BpmnElementType::StartEvent,
                element_id: "s".into(),
                bpmn_process_id: "p".into(),
                version: 1,
                process_definition_key: 1,
                process_instance_key: 1,
                flow_scope_key: 1,
                bpmn_event_type: BpmnEventType::None,
                parent_process_instance_key: -1,
                parent_element_instance_key: -1,
                tenant_id: "<default>".into(),
                root_process_instance_key: 1,
                tags: Vec::new(),
                tree_path: None,
            },
            active_children: 0,
            active_flows: 0,
            job_key: Key::NONE,
            has_variables: false,
            awaited: false,
            listeners_done: 0,
            ad_hoc_completion_fulfilled: false,
        }
    }

    #[test]
    fn instances_created_and_removed_in_one_command_never_reach_the_store() {
        let cache = ElementCache::default();
        let mut store = MemoryState::new();
        cache.insert(instance(7));
        cache.set_child(1, 7, true);
        cache.delete(7);
        cache.set_child(1, 7, false);
        cache.insert(instance(8));
        cache.set_child(1, 8, true);
        cache.flush(&mut store).unwrap();
        // Only instance 8 and its child entry were written.
        assert_eq!(store.len(), 2);
        assert!(
            store
                .get(KeyBuf::new(table::ELEMENT_INSTANCE).i64(7).bytes())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn child_changes_merge_with_the_stored_list() {
        let cache = ElementCache::default();
        cache.set_child(1, 5, true);
        cache.set_child(1, 3, false);
        cache.set_child(2, 9, true);
        let mut stored = vec![2, 3, 4];
        cache.merge_children(1, &mut stored);
        assert_eq!(stored, vec![2, 4, 5]);
    }

    #[test]
    fn an_update_changes_the_instance_in_place_and_marks_it_dirty() {
        let cache = ElementCache::default();
        let mut store = MemoryState::new();
        let loaded = cache
            .update(4, || Ok(Some(instance(4))), |i| i.active_children = 2)
            .unwrap();
        assert!(loaded);
        assert_eq!(
            cache.get(4, || Ok(None)).unwrap().unwrap().active_children,
            2
        );
        assert!(
            !cache.update(5, || Ok(None), |_| {}).unwrap(),
            "nothing to update"
        );
        cache.flush(&mut store).unwrap();
        assert_eq!(store.len(), 1);
    }
}
