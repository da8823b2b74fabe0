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
}

#[derive(Default)]
pub struct ElementCache {
    entries: RefCell<BTreeMap<i64, Entry>>,
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
            },
        );
        Ok(value)
    }

    pub(super) fn insert(&self, instance: ElementInstance) {
        self.entries.borrow_mut().insert(
            instance.key,
            Entry {
                value: Some(instance),
                dirty: true,
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
        self.entries.borrow_mut().insert(
            key,
            Entry {
                value: None,
                dirty: true,
            },
        );
    }

    /// Writes the changed instances to `txn` and empties the cache.
    pub fn flush(&self, txn: &mut dyn StateTxn) -> Result<()> {
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
    }
}
