//! Zeebe 8.8's tree path of an element instance (`elementInstancePath`,
//! `processDefinitionPath`, `callingElementPath`), written on its `ELEMENT_ACTIVATING`
//! record and on its incidents, as Zeebe does.
//!
//! It is derived when the record is written, from the record itself and the element
//! instances above it; nothing extra is kept in state. An element directly in its
//! process (most of them) reads nothing: its flow scope is the process instance.
//! Deeper elements read each enclosing scope once (usually cached in this command), and
//! each call activity above a called instance once.

use rill_protocol::Key;
use rill_protocol::value::{ProcessInstanceRecord, TreePath};

use crate::context::Processing;
use crate::error::{Result, inconsistent};

/// More nested scopes, or callers, than any instance can have (call activities nest at
/// most 1,000 deep): only a cycle in state gets here.
const MAX_DEPTH: usize = 100_000;

/// What the walk needs of a call activity's instance.
struct Caller {
    element_id: String,
    process_definition_key: i64,
    process_instance_key: i64,
    flow_scope_key: i64,
    parent_element_instance_key: i64,
}

impl Processing<'_> {
    /// Sets the tree path of the element instance `key` that `record` is about to
    /// enter (its instance may not exist yet; its flow scope and callers do).
    pub fn fill_tree_path(&mut self, key: Key, record: &mut ProcessInstanceRecord) -> Result<()> {
        record.tree_path = Some(Box::new(self.tree_path(key, record)?));
        Ok(())
    }

    /// The tree path of the element instance `key` whose record is `record`.
    pub fn tree_path(&mut self, key: Key, record: &ProcessInstanceRecord) -> Result<TreePath> {
        // Built from the element upwards, then turned around: the root comes first.
        let mut instances: Vec<Vec<i64>> = Vec::with_capacity(1);
        let mut definitions = Vec::with_capacity(1);
        let mut calling = Vec::new();
        let mut level_key = key.get();
        let mut flow_scope = record.flow_scope_key;
        let mut process_instance = record.process_instance_key;
        let mut definition = record.process_definition_key;
        let mut caller = record.parent_element_instance_key;
        loop {
            instances.push(self.scope_path(level_key, flow_scope, process_instance)?);
            definitions.push(definition);
            if caller <= 0 {
                break;
            }
            if instances.len() > MAX_DEPTH {
                return Err(inconsistent(format!(
                    "the callers of element instance {key} form a cycle"
                )));
            }
            let call = self
                .read()
                .peek_element_instance(Key(caller), |i| Caller {
                    element_id: i.record.element_id.clone(),
                    process_definition_key: i.record.process_definition_key,
                    process_instance_key: i.record.process_instance_key,
                    flow_scope_key: i.record.flow_scope_key,
                    parent_element_instance_key: i.record.parent_element_instance_key,
                })?
                .ok_or_else(|| {
                    inconsistent(format!("call activity instance {caller} of {key} is gone"))
                })?;
            let model = self.model(Key(call.process_definition_key))?;
            calling.push(model.call_activity_index(&call.element_id));
            level_key = caller;
            flow_scope = call.flow_scope_key;
            process_instance = call.process_instance_key;
            definition = call.process_definition_key;
            caller = call.parent_element_instance_key;
        }
        instances.reverse();
        definitions.reverse();
        calling.reverse();
        Ok(TreePath {
            element_instance_path: instances,
            process_definition_path: definitions,
            calling_element_path: calling,
        })
    }

    /// The keys from the process instance `process_instance` down through the flow
    /// scopes to `key`, whose flow scope is `flow_scope` (-1 for the process itself).
    fn scope_path(&self, key: i64, flow_scope: i64, process_instance: i64) -> Result<Vec<i64>> {
        let mut path = Vec::with_capacity(2);
        path.push(key);
        let mut scope = flow_scope;
        while scope > 0 {
            path.push(scope);
            if scope == process_instance {
                break;
            }
            if path.len() > MAX_DEPTH {
                return Err(inconsistent(format!(
                    "the flow scopes of element instance {key} form a cycle"
                )));
            }
            scope = self
                .read()
                .peek_element_instance(Key(scope), |i| i.record.flow_scope_key)?
                .ok_or_else(|| {
                    inconsistent(format!(
                        "flow scope {scope} of element instance {key} is gone"
                    ))
                })?;
        }
        path.reverse();
        Ok(path)
    }
}
