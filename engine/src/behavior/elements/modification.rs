//! What a process instance modification does to elements (`commands/modification.rs`
//! decides what to do): entering a flow scope without starting it, entering an element
//! as if a token had arrived, and terminating an element instance together with the
//! scopes it leaves empty.

use std::sync::Arc;

use rill_protocol::Key;
use rill_protocol::value::BpmnElementType;
use rill_protocol::{Intent, value::ProcessInstanceRecord};

use crate::context::Processing;
use crate::error::Result;
use crate::model::ElementIdx;
use crate::model_cache::DeployedProcess;
use crate::state::ElementState;

impl Processing<'_> {
    /// Creates an instance of the subprocess `idx` in the live scope `scope_key`, for an
    /// element to be activated inside it: ELEMENT_ACTIVATING, the triggers it holds
    /// (its boundary events, its event subprocesses), ELEMENT_ACTIVATED. Its input
    /// mappings and its start event are left out, as in Zeebe. A trigger that cannot be
    /// evaluated is an incident on the new instance, which then stays in
    /// ELEMENT_ACTIVATING (`None`: nothing can be entered in it).
    pub(crate) fn enter_scope_for_modification(
        &mut self,
        scope_key: Key,
        scope: ProcessInstanceRecord,
        process: &Arc<DeployedProcess>,
        idx: ElementIdx,
    ) -> Result<Option<Key>> {
        let active = self.enter_element(scope_key, scope, process, idx)?;
        if let Err(halt) = self.open_event_triggers(&active) {
            self.incident_on(&active, halt)?;
            return Ok(None);
        }
        self.mark(&active, Intent::ElementActivated)?;
        Ok(Some(active.key()))
    }

    /// Enters the element `idx` in the live scope `scope_key` as if a token had arrived
    /// at it (a joining gateway does not wait for the other tokens).
    pub(crate) fn activate_for_modification(
        &mut self,
        scope_key: Key,
        process: &Arc<DeployedProcess>,
        idx: ElementIdx,
    ) -> Result<()> {
        let Some(scope) = self.read().element_instance(scope_key)? else {
            return Ok(());
        };
        if scope.state != ElementState::Activated {
            return Ok(());
        }
        let active = self.enter_element(scope_key, scope.record, process, idx)?;
        self.run_activation(active, None)
    }

    /// Terminates an element instance (with everything in it), then each scope above it
    /// that is left with no element instance and no token, up to the process instance;
    /// the scopes in `kept` (those an activation of this modification enters) stay.
    pub(crate) fn terminate_for_modification(&mut self, key: Key, kept: &[Key]) -> Result<()> {
        let Some(instance) = self.read().element_instance(key)? else {
            // Terminated already, with a scope another instruction terminated.
            return Ok(());
        };
        self.terminate(key)?;
        let mut scope_key = Key(instance.record.flow_scope_key);
        while scope_key.get() > 0 && !kept.contains(&scope_key) {
            let Some(scope) = self.read().element_instance(scope_key)? else {
                return Ok(());
            };
            let empty = scope.state == ElementState::Activated
                && scope.active_flows == 0
                && self.only_terminating_inside(scope_key, scope.active_children)?;
            if !empty {
                return Ok(());
            }
            self.terminate(scope_key)?;
            if scope.record.bpmn_element_type == BpmnElementType::Process {
                return Ok(());
            }
            scope_key = Key(scope.record.flow_scope_key);
        }
        Ok(())
    }

    /// Whether every live child of a scope is terminating (held up by canceling task
    /// listeners): the scope is as good as empty, and terminates with them.
    fn only_terminating_inside(&self, scope_key: Key, children: u32) -> Result<bool> {
        if children == 0 {
            return Ok(true);
        }
        for child in self.read().children(scope_key)? {
            let terminating = self
                .read()
                .peek_element_instance(child, |i| i.state == ElementState::Terminating)?;
            if terminating != Some(true) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}
