//! Signals: subscriptions of catch events (opened with their holder, as timers and
//! message subscriptions are) and of the signal start events of each process's latest
//! version, and what a broadcast does on a partition: it fires every subscription of
//! its name that existed when it arrived, oldest first.

use rill_protocol::value::{SignalRecord, SignalSubscriptionRecord};
use rill_protocol::{Intent, JsonValue, Key, ValueType};
use serde_json::{Map, Value};

use crate::context::{Active, Processing, Step};
use crate::error::Result;
use crate::model::ElementKind;
use crate::model_cache::DeployedProcess;

impl Processing<'_> {
    /// Opens the subscription of `catch_event_id` to `signal_name`, held by `holder`.
    pub fn open_signal_subscription(
        &mut self,
        holder: &Active,
        catch_event_id: &str,
        signal_name: String,
    ) -> Result<()> {
        let record = SignalSubscriptionRecord {
            process_definition_key: holder.record().process_definition_key,
            bpmn_process_id: holder.record().bpmn_process_id.clone(),
            catch_event_id: catch_event_id.to_owned(),
            catch_event_instance_key: holder.key().get(),
            signal_name,
            tenant_id: holder.record().tenant_id.clone(),
        };
        let key = self.next_key()?;
        self.event(key, Intent::Created, record)
    }

    /// Closes the signal subscriptions an element instance (or, for signal start events,
    /// a process definition) holds.
    pub fn close_signal_subscriptions(&mut self, holder: Key) -> Result<()> {
        for subscription in self.read().signal_subscriptions_of(holder)? {
            self.event(subscription.key, Intent::Deleted, subscription.record)?;
        }
        Ok(())
    }

    /// A new latest version of a process was deployed: its signal start events replace
    /// those of the version that was the latest (`previous`).
    pub fn replace_signal_start_subscriptions(
        &mut self,
        process: &DeployedProcess,
        previous: Option<Key>,
    ) -> Result<()> {
        if let Some(previous) = previous {
            self.close_signal_subscriptions(previous)?;
        }
        let model = &process.model;
        for start in model.event_start_events() {
            let element = model.element(start);
            let ElementKind::SignalStartEvent { signal_name } = &element.kind else {
                continue;
            };
            let record = SignalSubscriptionRecord {
                process_definition_key: process.key.get(),
                bpmn_process_id: model.bpmn_process_id.clone(),
                catch_event_id: element.id.clone(),
                catch_event_instance_key: -1,
                signal_name: signal_name.clone(),
                tenant_id: crate::commands::tenant(),
            };
            let key = self.next_key()?;
            self.event(key, Intent::Created, record)?;
        }
        Ok(())
    }

    /// A signal throw or end event broadcasts its signal, with its local variables (its
    /// input mappings) as the signal's variables. The broadcast runs after the steps
    /// already queued, as Zeebe processes it as a command of its own after the thrower.
    pub fn throw_signal(&mut self, thrower: &Active, signal_name: String) -> Result<()> {
        let mut variables = Map::new();
        let instance = thrower.record().process_instance_key;
        for (name, variable) in self.read().scope_variables(instance, thrower.key())? {
            let value = serde_json::from_str(&variable.value).unwrap_or(Value::Null);
            variables.insert(name, value);
        }
        self.push_step(Step::BroadcastSignal {
            signal: Box::new(SignalRecord {
                signal_name,
                variables: JsonValue::from(Value::Object(variables)),
                tenant_id: thrower.record().tenant_id.clone(),
            }),
        });
        Ok(())
    }

    /// Broadcasts a thrown signal: here, then to every other partition.
    pub(crate) fn broadcast_thrown_signal(&mut self, signal: SignalRecord) -> Result<()> {
        let key = self.next_key()?;
        self.event(key, Intent::Broadcasted, signal.clone())?;
        self.catch_signal(&signal, true)?;
        crate::commands::distribute(self, key, ValueType::Signal, Intent::Broadcast)
    }

    /// Fires the subscriptions of this partition to a broadcast signal: a catch event
    /// fires as a timer or a message would; a signal start event, only on the partition
    /// the signal was broadcast on (`here`, as in Zeebe: each partition has the
    /// subscription, one creates the instance), creates an instance with the signal's
    /// variables. Subscriptions opened meanwhile (by an instance the signal created) do
    /// not catch it.
    pub fn catch_signal(&mut self, signal: &SignalRecord, here: bool) -> Result<()> {
        let variables = signal.variables.to_object().unwrap_or_default();
        for subscription in self.read().signal_subscriptions(&signal.signal_name)? {
            // An earlier catch may have closed it (an interrupting event ended its holder).
            if self
                .read()
                .signal_subscription(&signal.signal_name, subscription.key)?
                .is_none()
            {
                continue;
            }
            let record = &subscription.record;
            if record.catch_event_instance_key < 0 {
                if !here {
                    continue;
                }
                let process = self.model(Key(record.process_definition_key))?;
                let Some(start) = process.model.element_by_id(&record.catch_event_id) else {
                    continue;
                };
                self.start_instance_at(&process, start, variables.clone())?;
            } else {
                self.trigger_catch_event(
                    Key(record.catch_event_instance_key),
                    &record.catch_event_id,
                    Some(variables.clone()),
                )?;
            }
        }
        Ok(())
    }
}
