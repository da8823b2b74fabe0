//! Multi-instance body: the container of a multi-instance activity's inner instances
//! (record type `MULTI_INSTANCE_BODY`, the element's id). Entering it evaluates the input
//! collection once; a parallel body enters one inner instance per item at once, a
//! sequential one enters the next when the previous completes. Each inner instance gets
//! the local variables `loopCounter` (from 1) and the input element. When an inner
//! instance completes, its output element is kept under its loop counter and the
//! completion condition is evaluated; the body completes when every instance has
//! completed (or the condition held: the others are terminated), and the output
//! collection then reaches the body's flow scope. The body carries the boundary events.
//!
//! Cost is linear in the collection: a parallel body hands each inner instance its item
//! in the same command; a sequential body keeps the evaluated collection as one hidden
//! variable of its own (`INPUT_SNAPSHOT`); outputs are kept one entry per instance and
//! the list is built once, when the body completes.

use rill_protocol::{Intent, Key};
use serde_json::{Map, Value, json};

use super::{ElementBehavior, INPUT_SNAPSHOT, Outgoing, Trigger, wrong_kind};
use crate::behavior::json_type_name;
use crate::context::{Active, Processing, Step};
use crate::error::Result;
use crate::model::MultiInstance;
use crate::outcome::{Evaluated, Failure};
use crate::state::ElementState;

/// The loop counter's variable name (Zeebe's).
const LOOP_COUNTER: &str = "loopCounter";

pub(super) struct MultiInstanceBody;

/// What the completion of an inner instance gives its body, evaluated before anything
/// is written.
pub(super) struct InnerOutput {
    /// The completion condition held: the body ends now.
    pub ends_body: bool,
    /// The output element's value, under the output collection's name.
    output: Option<(String, Value)>,
}

fn characteristics(active: &Active) -> Result<&MultiInstance> {
    active
        .element()
        .multi_instance
        .as_ref()
        .ok_or_else(|| wrong_kind(active, "multi-instance activity"))
}

/// The local variables an inner instance starts with: its item under the input element.
fn item_variables(mi: &MultiInstance, item: Value) -> Trigger {
    let name = mi.input_element.as_ref()?;
    let mut variables = Map::new();
    variables.insert(name.clone(), item);
    Some(variables)
}

impl ElementBehavior for MultiInstanceBody {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let mi = characteristics(active)?;
        let expression = &mi.input_collection;
        let context = p.context_at(expression, active)?;
        let collection = expression
            .evaluate(&context, p.feel_env())
            .map_err(|e| Failure::extract_value(e.to_string()))?;
        let Value::Array(mut items) = collection else {
            return Err(Failure::extract_value(format!(
                "Expected result of the expression '{}' to be 'ARRAY', but was '{}'",
                expression.source(),
                json_type_name(&collection)
            ))
            .into());
        };
        p.open_event_triggers(active)?;
        if mi.sequential && !items.is_empty() {
            // The first item now, the others from the kept collection as they come.
            let first = items[0].clone();
            let snapshot = Value::Array(items);
            p.set_variable(active.record(), active.key(), INPUT_SNAPSHOT, &snapshot)?;
            items = vec![first];
        }
        p.mark(active, Intent::ElementActivated)?;
        if items.is_empty() {
            // Nothing to do: the body completes at once (an empty output collection).
            p.complete(active, None, Outgoing::All)?;
            return Ok(());
        }
        if !mi.sequential {
            p.multi_instance_totals
                .insert(active.key(), u32::try_from(items.len()).unwrap_or(u32::MAX));
        }
        for item in items {
            p.push_step(Step::Activate {
                scope_key: active.key(),
                process: active.process.clone(),
                element: active.idx,
                trigger: item_variables(mi, item),
            });
        }
        Ok(())
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)?;
        let mi = characteristics(active)?;
        if let Some(name) = &mi.output_collection {
            let total = p.number_of_instances(active, mi)?;
            let collected = p.collected_outputs(active.key(), total, None)?;
            let mut variables = Map::new();
            variables.insert(name.clone(), collected);
            let scope = Key(active.record().flow_scope_key);
            p.propagate_variables(scope, &active.instance, variables)?;
        }
        p.collections.forget(active.key());
        Ok(())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)?;
        p.delete_compensation_subscriptions(active)?;
        p.resolve_element_incident(active.key())?;
        p.collections.forget(active.key());
        Ok(())
    }
}

impl Processing<'_> {
    /// An inner instance is entered: its item (the trigger), a local `null` for a
    /// plain-variable output element (so that what a worker sets under that name stays
    /// in the instance, as in Zeebe) and its loop counter, in that order.
    pub(super) fn set_loop_variables(&mut self, active: &Active, items: Trigger) -> Evaluated {
        let mi = characteristics(active)?;
        if let Some(variables) = items {
            self.set_local_variables(&active.instance, variables)?;
        }
        let instance = Key(active.record().process_instance_key);
        if let Some(name) = mi.output_element_variable()
            && Some(name) != mi.input_element.as_deref()
            && name != LOOP_COUNTER
            && self
                .read()
                .variable(instance, active.key(), name)?
                .is_none()
        {
            self.set_variable(active.record(), active.key(), name, &Value::Null)?;
        }
        let counter = self.read().loop_counter(active.key())?.unwrap_or(0);
        self.set_variable(active.record(), active.key(), LOOP_COUNTER, &json!(counter))?;
        Ok(())
    }

    /// An inner instance completes (after its output mappings): its output element and
    /// the completion condition are evaluated. Returns whether the body is done and the
    /// output to keep ([`Processing::keep_inner_output`]). Fails before writing anything.
    pub(super) fn collect_inner_output(&mut self, active: &Active) -> Evaluated<InnerOutput> {
        let mi = characteristics(active)?;
        let body_key = Key(active.record().flow_scope_key);
        let output = match (&mi.output_collection, &mi.output_element) {
            (Some(name), Some(expression)) => {
                let context = self.context_at(expression, active)?;
                let value = expression
                    .evaluate(&context, self.feel_env())
                    .map_err(|e| Failure::extract_value(e.to_string()))?;
                Some((name, value))
            }
            _ => None,
        };
        let done = match &mi.completion_condition {
            None => false,
            Some(condition) => {
                let mut context = self.context_at(condition, active)?;
                let Some(body) = self.active(body_key)? else {
                    return Ok(InnerOutput {
                        ends_body: false,
                        output: None,
                    });
                };
                let counts = self.read().multi_instance_counts(body_key)?;
                let total = self.number_of_instances(&body, mi)?;
                let not_created = total.saturating_sub(counts.created as usize);
                let live = body.instance.active_children as usize;
                context.insert("numberOfInstances".into(), json!(total));
                context.insert(
                    "numberOfActiveInstances".into(),
                    json!(live.saturating_sub(1) + if mi.sequential { 0 } else { not_created }),
                );
                context.insert(
                    "numberOfCompletedInstances".into(),
                    json!(counts.completed + 1),
                );
                context.insert("numberOfTerminatedInstances".into(), json!(0));
                if let Some((name, value)) = &output
                    && condition.variable_names().iter().any(|n| n == *name)
                {
                    // The collection so far, this instance's output included.
                    let counter = self.read().loop_counter(active.key())?.unwrap_or(0);
                    let so_far = self.collected_outputs(body_key, total, Some((counter, value)))?;
                    context.insert((*name).clone(), so_far);
                }
                match condition.evaluate(&context, self.feel_env()) {
                    Ok(Value::Bool(done)) => done,
                    Ok(other) => {
                        return Err(Failure::extract_value(format!(
                            "Expected result of the expression '{}' to be 'BOOLEAN', but was \
                             '{}'",
                            condition.source(),
                            json_type_name(&other)
                        ))
                        .into());
                    }
                    Err(e) => return Err(Failure::extract_value(e.to_string()).into()),
                }
            }
        };
        Ok(InnerOutput {
            ends_body: done,
            output: output.map(|(name, value)| (name.clone(), value)),
        })
    }

    /// Sets an inner instance's output element as its local variable named like the
    /// output collection; the completed-event applier moves it to the body.
    pub(super) fn keep_inner_output(&mut self, active: &Active, output: InnerOutput) -> Result<()> {
        if let Some((name, value)) = output.output {
            self.set_variable(active.record(), active.key(), &name, &value)?;
        }
        Ok(())
    }

    /// After an inner instance completed: end the body early (terminating the other
    /// inner instances) when the completion condition held, else enter the next item
    /// (sequential) or complete the body once no inner instance is left.
    pub(super) fn inner_instance_completed(
        &mut self,
        body_key: Key,
        inner: &Active,
        ends_body: bool,
    ) -> Result<()> {
        let Some(body) = self.active(body_key)? else {
            return Ok(());
        };
        if body.instance.state != ElementState::Activated {
            return Ok(());
        }
        let mi = characteristics(inner)?;
        if ends_body {
            if !self.terminate_children(body_key)? {
                // An inner instance waits for its canceling task listeners: the body
                // completes once it is terminated (`resume_termination`).
                return Ok(());
            }
            return self.complete(&body, None, Outgoing::All);
        }
        let counts = self.read().multi_instance_counts(body_key)?;
        if mi.sequential {
            let (next, _) = self.snapshot_item(&body, counts.created as usize)?;
            if let Some(item) = next {
                self.push_step(Step::Activate {
                    scope_key: body_key,
                    process: body.process.clone(),
                    element: body.idx,
                    trigger: item_variables(mi, item),
                });
                return Ok(());
            }
            return self.complete(&body, None, Outgoing::All);
        }
        let total = self.number_of_instances(&body, mi)?;
        if body.instance.active_children == 0 && counts.created as usize >= total {
            return self.complete(&body, None, Outgoing::All);
        }
        Ok(())
    }

    /// `numberOfInstances`: the size of the input collection.
    fn number_of_instances(&mut self, body: &Active, mi: &MultiInstance) -> Result<usize> {
        if mi.sequential {
            return Ok(self.snapshot_item(body, usize::MAX)?.1);
        }
        let created = self.read().multi_instance_counts(body.key())?.created;
        Ok(match self.multi_instance_totals.get(&body.key()) {
            Some(total) => *total as usize,
            None => created as usize,
        })
    }

    /// The item at `index` of a sequential body's input collection and the collection's
    /// size, from the collection kept when the body was entered (parsed once per body).
    fn snapshot_item(&mut self, body: &Active, index: usize) -> Result<(Option<Value>, usize)> {
        let instance = Key(body.record().process_instance_key);
        let Some(stored) = self.read().variable(instance, body.key(), INPUT_SNAPSHOT)? else {
            return Ok((None, 0));
        };
        let Some(entry) = self.collections.items(body.key(), &stored.value) else {
            return Ok((None, 0));
        };
        let items = &entry.1;
        Ok((items.get(index).cloned(), items.len()))
    }

    /// The output collection of a body: `total` entries in loop-counter order, `null`
    /// where an instance did not complete; `extra` is an output not stored yet.
    fn collected_outputs(
        &self,
        body_key: Key,
        total: usize,
        extra: Option<(u32, &Value)>,
    ) -> Result<Value> {
        let mut list = vec![Value::Null; total];
        for (counter, json) in self.read().multi_instance_outputs(body_key)? {
            if let Some(slot) = (counter as usize)
                .checked_sub(1)
                .and_then(|i| list.get_mut(i))
            {
                *slot = serde_json::from_str(&json).unwrap_or(Value::Null);
            }
        }
        if let Some((counter, value)) = extra
            && let Some(slot) = (counter as usize)
                .checked_sub(1)
                .and_then(|i| list.get_mut(i))
        {
            *slot = value.clone();
        }
        Ok(Value::Array(list))
    }
}
