//! Variables: reading the scope chain for expressions, input and output mappings, and
//! writing with Zeebe's propagation (a variable goes to the nearest scope that holds
//! it, else to the process scope).

use std::collections::HashMap;

use rill_engine_api::Action;
use rill_feel::Expression;
use rill_protocol::value::{ProcessInstanceRecord, ProcessInstanceResultRecord, VariableRecord};
use rill_protocol::{CommandResponse, Intent, JsonValue, Key};
use serde_json::{Map, Value};

use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{FlowIdx, Mapping, ValueOrExpr};
use crate::outcome::{Evaluated, Failure, Rejection};
use crate::state::{AwaitRegistration, ElementInstance, StoredVariable};

/// A type name for messages about values.
pub(crate) fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "NULL",
        Value::Bool(_) => "BOOLEAN",
        Value::Number(_) => "NUMBER",
        Value::String(_) => "STRING",
        Value::Array(_) => "ARRAY",
        Value::Object(_) => "OBJECT",
    }
}

/// No condition of a gateway held and it has no default flow.
fn no_flow_taken(gateway_id: &str, kind: &str) -> crate::outcome::Halt {
    Failure::condition(format!(
        "Expected at least one condition to evaluate to true, or to have a default flow, but \
         no condition of {kind} '{gateway_id}' was true"
    ))
    .into()
}

/// Sets `value` at `path` inside `base` (creating contexts on the way).
fn put_path(base: Option<Value>, path: &[String], value: Value) -> Value {
    let Some((first, rest)) = path.split_first() else {
        return value;
    };
    let mut object = match base {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let inner = object.remove(first);
    object.insert(first.clone(), put_path(inner, rest, value));
    Value::Object(object)
}

impl Processing<'_> {
    /// Scope keys from `key` up to the process instance.
    pub fn scope_chain(&self, key: Key) -> Result<Vec<Key>> {
        let mut chain = vec![key];
        let mut current = key;
        while let Some(instance) = self.read().element_instance(current)? {
            let parent = instance.record.flow_scope_key;
            if parent < 0 {
                break;
            }
            chain.push(Key(parent));
            current = Key(parent);
        }
        Ok(chain)
    }

    /// The scope chain of a job's element: known from the model when the task sits
    /// directly in the process (no state read), else walked.
    pub fn job_scope_chain(&mut self, job: &rill_protocol::value::JobRecord) -> Result<Vec<Key>> {
        let process = self.model(job.process_definition_key)?;
        if let Some(idx) = process.model.element_by_id(&job.element_id)
            && process.model.element(idx).flow_scope == Some(crate::model::ProcessModel::ROOT)
            && process.model.element(idx).multi_instance.is_none()
        {
            return Ok(vec![
                Key(job.element_instance_key),
                Key(job.process_instance_key),
            ]);
        }
        self.scope_chain(Key(job.element_instance_key))
    }

    /// The value of `name` as seen from the first scope of `chain`.
    fn visible_variable(&self, instance: Key, chain: &[Key], name: &str) -> Result<Option<Value>> {
        Ok(self
            .visible_variable_text(instance, chain, name)?
            .map(|variable| serde_json::from_str(&variable.value).unwrap_or(Value::Null)))
    }

    /// The variables `names` as seen from the first scope of `chain`.
    pub fn variables_named(
        &self,
        instance: Key,
        chain: &[Key],
        names: &[String],
    ) -> Result<Map<String, Value>> {
        let mut out = Map::new();
        for name in names {
            if let Some(value) = self.visible_variable(instance, chain, name)? {
                out.insert(name.clone(), value);
            }
        }
        Ok(out)
    }

    /// Every variable visible from the first scope of `chain` (inner scopes win).
    pub fn all_variables(&self, instance: Key, chain: &[Key]) -> Result<Map<String, Value>> {
        Ok(self
            .variables_document(instance, chain, None)?
            .to_object()
            .unwrap_or_default())
    }

    /// The variables visible from the first scope of `chain` (inner scopes win), all of
    /// them or only `names`, as one JSON object built from the stored texts: a job
    /// activation or an awaited result hands them on without parsing them.
    pub fn variables_document(
        &self,
        instance: Key,
        chain: &[Key],
        names: Option<&[String]>,
    ) -> Result<JsonValue> {
        let mut entries: Vec<(String, String)> = Vec::new();
        match names {
            Some(names) => {
                for name in names {
                    if let Some(variable) = self.visible_variable_text(instance, chain, name)? {
                        entries.push((name.clone(), variable.value));
                    }
                }
            }
            None => {
                let mut position: HashMap<String, usize> = HashMap::new();
                for scope in chain.iter().rev() {
                    for (name, variable) in self.read().scope_variables(instance, *scope)? {
                        if name == super::elements::INPUT_SNAPSHOT
                            || name == super::MESSAGE_START_VARIABLE
                        {
                            continue;
                        }
                        match position.get(&name) {
                            Some(&at) => entries[at].1 = variable.value,
                            None => {
                                position.insert(name.clone(), entries.len());
                                entries.push((name, variable.value));
                            }
                        }
                    }
                }
            }
        }
        Ok(JsonValue::from_entries(
            entries
                .iter()
                .map(|(name, text)| (name.as_str(), text.as_str())),
        ))
    }

    /// The stored variable `name` as seen from the first scope of `chain`.
    fn visible_variable_text(
        &self,
        instance: Key,
        chain: &[Key],
        name: &str,
    ) -> Result<Option<StoredVariable>> {
        for scope in chain {
            if let Some(variable) = self.read().variable(instance, *scope, name)? {
                return Ok(Some(variable));
            }
        }
        Ok(None)
    }

    /// The variables an expression reads, as seen from an element's own scope.
    pub fn context_at(
        &self,
        expression: &Expression,
        active: &Active,
    ) -> Result<Map<String, Value>> {
        let chain = self.scope_chain(active.key())?;
        self.variables_named(
            Key(active.record().process_instance_key),
            &chain,
            expression.variable_names(),
        )
    }

    /// A string an element needs (job type, message name, error code).
    pub fn evaluate_string(
        &self,
        value: &ValueOrExpr<String>,
        active: &Active,
    ) -> Evaluated<String> {
        let expression = match value {
            ValueOrExpr::Static(text) => return Ok(text.clone()),
            ValueOrExpr::Expr(expression) => expression,
        };
        let context = self.context_at(expression, active)?;
        let text = expression
            .evaluate_string(&context, self.feel_env())
            .map_err(|e| Failure::extract_value(e.to_string()))?;
        Ok(text)
    }

    /// Input mappings: evaluated in the flow scope, each seeing the earlier ones,
    /// written as the element's local variables.
    /// A multi-instance inner instance's inputs also see its own locals (the item and
    /// the loop counter), as in Zeebe.
    pub fn evaluate_inputs(&self, active: &Active) -> Evaluated<Map<String, Value>> {
        let instance = active.record().process_instance_key;
        let from = if active.is_multi_instance_inner() {
            active.key()
        } else {
            Key(active.record().flow_scope_key)
        };
        let chain = self.scope_chain(from)?;
        self.evaluate_mappings(&active.element().inputs, Key(instance), &chain, false)
    }

    /// Output mappings: evaluated in the element's scope; nested targets merge into the
    /// visible value of the target variable.
    pub fn evaluate_outputs(&self, active: &Active) -> Evaluated<Map<String, Value>> {
        let instance = active.record().process_instance_key;
        let chain = self.scope_chain(active.key())?;
        self.evaluate_mappings(&active.element().outputs, Key(instance), &chain, true)
    }

    fn evaluate_mappings(
        &self,
        mappings: &[Mapping],
        instance: Key,
        chain: &[Key],
        merge_visible: bool,
    ) -> Evaluated<Map<String, Value>> {
        let mut result = Map::new();
        for mapping in mappings {
            let Some(root) = mapping.target.first() else {
                continue;
            };
            let mut context =
                self.variables_named(instance, chain, mapping.source.variable_names())?;
            if !merge_visible {
                // Inputs see the locals mapped before them.
                for (name, value) in &result {
                    context.insert(name.clone(), value.clone());
                }
            }
            let value = mapping
                .source
                .evaluate(&context, self.feel_env())
                .map_err(|e| Failure::io_mapping(e.to_string()))?;
            let base = match result.remove(root) {
                Some(existing) => Some(existing),
                None if merge_visible && mapping.target.len() > 1 => {
                    self.visible_variable(instance, chain, root)?
                }
                None => None,
            };
            let merged = put_path(base, &mapping.target[1..], value);
            result.insert(root.clone(), merged);
        }
        Ok(result)
    }

    /// Creates or updates one variable in a scope (no event if the value is unchanged).
    pub fn set_variable(
        &mut self,
        at: &ProcessInstanceRecord,
        scope_key: Key,
        name: &str,
        value: &Value,
    ) -> Result<()> {
        self.set_variable_text(at, scope_key, name, &value.to_string())
    }

    /// [`Self::set_variable`] with the value as checked, compact JSON text.
    pub fn set_variable_text(
        &mut self,
        at: &ProcessInstanceRecord,
        scope_key: Key,
        name: &str,
        text: &str,
    ) -> Result<()> {
        let instance = at.process_instance_key;
        let (key, intent) = match self.read().variable(instance, scope_key, name)? {
            Some(existing) if existing.value == text => return Ok(()),
            Some(existing) => (existing.key, Intent::Updated),
            None => (self.next_key()?, Intent::Created),
        };
        let record = VariableRecord {
            name: name.to_owned(),
            value: text.to_owned(),
            scope_key: scope_key.get(),
            process_instance_key: instance,
            process_definition_key: at.process_definition_key,
            bpmn_process_id: at.bpmn_process_id.clone(),
            tenant_id: at.tenant_id.clone(),
            root_process_instance_key: at.root_process_instance_key,
        };
        self.event(key, intent, record)
    }

    /// Sets variables in the scope of `at` itself.
    pub fn set_local_variables(
        &mut self,
        at: &ElementInstance,
        variables: Map<String, Value>,
    ) -> Result<()> {
        for (name, value) in &variables {
            self.set_variable(&at.record, at.key, name, value)?;
        }
        Ok(())
    }

    /// Sets each variable in the nearest scope from `start` upwards that holds it, or
    /// else in the process scope.
    pub fn propagate_variables(
        &mut self,
        start: Key,
        at: &ElementInstance,
        variables: Map<String, Value>,
    ) -> Result<()> {
        if variables.is_empty() {
            return Ok(());
        }
        let instance = at.record.process_instance_key;
        let chain = self.scope_chain(start)?;
        for (name, value) in &variables {
            let mut target = instance;
            for scope in &chain {
                if self.read().variable(instance, *scope, name)?.is_some() {
                    target = scope.get();
                    break;
                }
            }
            self.set_variable(&at.record, Key(target), name, value)?;
        }
        Ok(())
    }

    /// Evaluates the condition of a flow leaving a gateway: `true` or `false`, anything
    /// else is a condition failure.
    fn condition_holds(
        &self,
        condition: &rill_feel::Expression,
        instance: Key,
        chain: &[Key],
    ) -> Evaluated<bool> {
        let context = self.variables_named(instance, chain, condition.variable_names())?;
        let value = condition
            .evaluate(&context, self.feel_env())
            .map_err(|e| Failure::condition(e.to_string()))?;
        match value {
            Value::Bool(holds) => Ok(holds),
            other => Err(Failure::condition(format!(
                "Expected result of the expression '{}' to be 'BOOLEAN', but was '{}'",
                condition.source(),
                json_type_name(&other)
            ))
            .into()),
        }
    }

    /// Picks the flow an exclusive gateway takes: the first whose condition is true,
    /// else the default flow.
    pub fn choose_flow(
        &self,
        active: &Active,
        default_flow: Option<FlowIdx>,
    ) -> Evaluated<FlowIdx> {
        let model = &active.process.model;
        let element = active.element();
        let instance = Key(active.record().process_instance_key);
        let chain = self.scope_chain(active.key())?;
        for flow_idx in &element.outgoing {
            if Some(*flow_idx) == default_flow {
                continue;
            }
            let Some(condition) = &model.flow(*flow_idx).condition else {
                return Ok(*flow_idx);
            };
            if self.condition_holds(condition, instance, &chain)? {
                return Ok(*flow_idx);
            }
        }
        default_flow.ok_or_else(|| no_flow_taken(&element.id, "exclusive gateway"))
    }

    /// Picks the flows an inclusive gateway takes: every flow whose condition is true
    /// (a flow without a condition is taken), in document order; else the default flow.
    pub fn choose_flows(
        &self,
        active: &Active,
        default_flow: Option<FlowIdx>,
    ) -> Evaluated<Vec<FlowIdx>> {
        let model = &active.process.model;
        let element = active.element();
        let instance = Key(active.record().process_instance_key);
        let chain = self.scope_chain(active.key())?;
        let mut taken = Vec::new();
        for flow_idx in &element.outgoing {
            if Some(*flow_idx) == default_flow {
                continue;
            }
            let holds = match &model.flow(*flow_idx).condition {
                None => true,
                Some(condition) => self.condition_holds(condition, instance, &chain)?,
            };
            if holds {
                taken.push(*flow_idx);
            }
        }
        if taken.is_empty() {
            let default =
                default_flow.ok_or_else(|| no_flow_taken(&element.id, "inclusive gateway"))?;
            taken.push(default);
        }
        Ok(taken)
    }

    /// What the end of a process instance needs from its variables, read before the end
    /// is applied (which removes them): the document for a client awaiting the result,
    /// and the marker of the message that started it.
    pub fn ending_instance(
        &self,
        process_instance_key: Key,
        registration: Option<AwaitRegistration>,
    ) -> Result<EndingInstance> {
        let awaited = match registration {
            Some(registration) => {
                let chain = [process_instance_key];
                let names = &registration.fetch_variables;
                let names = (!names.is_empty()).then_some(&names[..]);
                let variables = self.variables_document(process_instance_key, &chain, names)?;
                Some((registration.request_id, variables))
            }
            None => None,
        };
        let message_start = self
            .read()
            .variable(
                process_instance_key,
                process_instance_key,
                super::MESSAGE_START_VARIABLE,
            )?
            .and_then(|v| serde_json::from_str::<super::MessageStart>(&v.value).ok());
        Ok(EndingInstance {
            awaited,
            message_start,
        })
    }

    /// An instance ended (`process`: its ending record): a waiting client gets its
    /// answer.
    pub fn instance_finished(
        &mut self,
        process: &ProcessInstanceRecord,
        ending: &mut EndingInstance,
        completed: bool,
    ) {
        if let Some((request_id, variables)) = ending.awaited.take() {
            let response = await_response(process, variables, completed);
            self.answer_waiting(request_id, response);
        }
    }

    /// Sends the answer to the waiting request: now if it waits on this very command,
    /// else once this command is committed.
    pub fn answer_waiting(&mut self, request_id: u64, response: CommandResponse) {
        if self.ctx.request.map(|r| r.0) == Some(request_id) {
            self.out.response = Some(response);
        } else {
            self.out.actions.push(Action::Respond {
                request: rill_engine_api::RequestId(request_id),
                response,
            });
        }
    }
}

/// The answer for a client awaiting the result of an instance, built from the
/// instance's ending record and the variables it asked for.
fn await_response(
    process: &ProcessInstanceRecord,
    variables: JsonValue,
    completed: bool,
) -> CommandResponse {
    let process_instance_key = process.process_instance_key;
    if !completed {
        let rejection = Rejection::invalid_state(format!(
            "Expected process instance with key '{process_instance_key}' to complete, but it was \
             terminated"
        ));
        return CommandResponse::Rejected(rejection.into());
    }
    CommandResponse::Accepted {
        key: Key(process_instance_key),
        intent: Intent::Completed,
        value: ProcessInstanceResultRecord {
            bpmn_process_id: process.bpmn_process_id.clone(),
            version: process.version,
            process_definition_key: process.process_definition_key,
            process_instance_key,
            variables,
            tenant_id: process.tenant_id.clone(),
        }
        .into(),
    }
}

/// What an ending process instance's variables said, read before they were removed.
pub struct EndingInstance {
    /// The waiting client's request and the variables it asked for.
    awaited: Option<(u64, JsonValue)>,
    /// The marker of the message that started the instance, if one did.
    pub message_start: Option<super::MessageStart>,
}
