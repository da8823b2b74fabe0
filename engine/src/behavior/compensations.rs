//! BPMN compensation, as Zeebe 8.8 runs it:
//!
//! - an activity with a compensation boundary event writes a `COMPENSATION_SUBSCRIPTION
//!   CREATED` when it completes (a multi-instance activity once, for its body); so does
//!   a subprocess or multi-instance body that completes while holding subscriptions of
//!   its own (without a handler: compensating it compensates what is inside);
//! - a compensation throw or end event triggers the untriggered subscriptions of its
//!   scope (of the event subprocess's scope for a thrower in an event subprocess), or
//!   only `activityRef`'s, and, going down, those inside the subprocesses it
//!   compensates: `TRIGGERED`, then the compensation boundary event passes through its
//!   lifecycle and the handler is entered beside the thrower (event type
//!   `COMPENSATION`). Rill triggers them newest first (reverse order of completion); all
//!   handlers run at once, as in Zeebe. Nothing to compensate: the thrower goes on;
//! - a handler that completes completes its subscription (`COMPLETED`), then every
//!   subprocess subscription left empty above it; a thrower none of whose
//!   subscriptions is left completes;
//! - subscriptions go (`DELETED`) with their scope when it is terminated, and with the
//!   process instance when it ends.
//!
//! An ad-hoc subprocess is one scope across its inner instances: subscriptions of what
//! completed in any of them are scoped to the ad-hoc subprocess's element instance.

use rill_protocol::value::{
    BpmnElementType, BpmnEventType, CompensationSubscriptionRecord, ProcessInstanceRecord,
};
use rill_protocol::{Intent, JsonValue, Key};

use crate::context::{Active, Processing, Step};
use crate::error::Result;
use crate::model::{ElementIdx, ElementKind};

type Subscription = (Key, CompensationSubscriptionRecord);

impl Processing<'_> {
    /// An activity of a process with compensation completes (before its
    /// ELEMENT_COMPLETED): it becomes compensable if it has a compensation boundary
    /// event, or if it is a subprocess or body holding compensable activities.
    pub(crate) fn open_compensation_subscription(&mut self, active: &Active) -> Result<()> {
        let model = &active.process.model;
        let record = active.record();
        // An inner instance's boundary events are its body's.
        let handler = if active.is_multi_instance_inner() {
            None
        } else {
            model.compensation_boundary(active.idx).map(|(_, h)| h)
        };
        if handler.is_none() {
            let holds_scope = matches!(
                record.bpmn_element_type,
                BpmnElementType::SubProcess
                    | BpmnElementType::MultiInstanceBody
                    | BpmnElementType::AdHocSubProcess
            );
            if !holds_scope {
                return Ok(());
            }
            let holds = self
                .read()
                .compensation_subscriptions(record.process_instance_key)?
                .iter()
                .any(|(_, s)| s.compensable_activity_scope_key == active.key().get());
            if !holds {
                return Ok(());
            }
        }
        let scope = self.compensation_scope_of(Key(record.flow_scope_key))?;
        let subscription = CompensationSubscriptionRecord {
            tenant_id: record.tenant_id.clone(),
            process_instance_key: record.process_instance_key,
            process_definition_key: record.process_definition_key,
            compensable_activity_id: active.element().id.clone(),
            throw_event_id: String::new(),
            throw_event_instance_key: -1,
            compensation_handler_id: handler
                .map(|h| model.element(h).id.clone())
                .unwrap_or_default(),
            compensation_handler_instance_key: -1,
            compensable_activity_scope_key: scope.get(),
            compensable_activity_instance_key: active.key().get(),
            variables: JsonValue::from(serde_json::Value::Object(serde_json::Map::new())),
        };
        let key = self.next_key()?;
        self.event(key, Intent::Created, subscription)
    }

    /// A compensation throw or end event was entered: trigger what it compensates, or
    /// go on at once when there is nothing.
    pub(crate) fn throw_compensation(
        &mut self,
        thrower: &Active,
        activity: Option<ElementIdx>,
    ) -> Result<()> {
        self.mark(thrower, Intent::ElementActivated)?;
        let scope = self.compensation_scope(thrower)?;
        let model = &thrower.process.model;
        let activity_id = activity.map(|a| model.element(a).id.clone());
        let untriggered: Vec<Subscription> = self
            .read()
            .compensation_subscriptions(thrower.record().process_instance_key)?
            .into_iter()
            .filter(|(_, s)| s.throw_event_id.is_empty())
            .collect();
        let top: Vec<Subscription> = untriggered
            .iter()
            .rev()
            .filter(|(_, s)| {
                s.compensable_activity_scope_key == scope.get()
                    && activity_id
                        .as_ref()
                        .is_none_or(|id| s.compensable_activity_id == *id)
            })
            .cloned()
            .collect();
        if top.is_empty() {
            return self.complete_with(thrower.key(), None);
        }
        let mut handlers = Vec::new();
        for subscription in top {
            self.trigger_compensation(thrower, subscription, &untriggered, &mut handlers)?;
        }
        // Entered after every subscription is triggered: a handler that completes at
        // once must not find its thrower with nothing left to wait for.
        for handler in handlers {
            self.push_step(Step::Activate {
                scope_key: Key(thrower.record().flow_scope_key),
                process: thrower.process.clone(),
                element: handler,
                trigger: None,
            });
        }
        Ok(())
    }

    /// Triggers one subscription, then those inside the subprocess it stands for (newest
    /// first); collects the handlers to enter.
    fn trigger_compensation(
        &mut self,
        thrower: &Active,
        (key, mut subscription): Subscription,
        untriggered: &[Subscription],
        handlers: &mut Vec<ElementIdx>,
    ) -> Result<()> {
        subscription.throw_event_id = thrower.element().id.clone();
        subscription.throw_event_instance_key = thrower.key().get();
        self.event(key, Intent::Triggered, subscription.clone())?;
        let model = &thrower.process.model;
        if !subscription.compensation_handler_id.is_empty()
            && let Some(activity) = model.element_by_id(&subscription.compensable_activity_id)
            && let Some((boundary, handler)) = model.compensation_boundary(activity)
        {
            // The boundary event passes through its lifecycle beside the thrower.
            let mut record = ProcessInstanceRecord {
                bpmn_element_type: BpmnElementType::BoundaryEvent,
                element_id: model.element(boundary).id.clone(),
                bpmn_event_type: BpmnEventType::Compensation,
                ..thrower.record().clone()
            };
            let boundary_key = self.next_key()?;
            // Zeebe writes all four records with the tree path of the first.
            self.fill_tree_path(boundary_key, &mut record)?;
            for intent in [
                Intent::ElementActivating,
                Intent::ElementActivated,
                Intent::ElementCompleting,
                Intent::ElementCompleted,
            ] {
                self.event(boundary_key, intent, record.clone())?;
            }
            handlers.push(handler);
        }
        let inside = subscription.compensable_activity_instance_key;
        for nested in untriggered
            .iter()
            .rev()
            .filter(|(_, s)| s.compensable_activity_scope_key == inside)
        {
            self.trigger_compensation(thrower, nested.clone(), untriggered, handlers)?;
        }
        Ok(())
    }

    /// The scope whose completed activities a thrower compensates: its own, or for a
    /// thrower in an event subprocess, the scope the event subprocess belongs to.
    fn compensation_scope(&self, thrower: &Active) -> Result<Key> {
        let scope_key = Key(thrower.record().flow_scope_key);
        let model = &thrower.process.model;
        let in_event_subprocess = thrower.element().flow_scope.is_some_and(|scope| {
            matches!(
                model.element(scope).kind,
                ElementKind::SubProcess {
                    triggered_by_event: true,
                    ..
                }
            )
        });
        if !in_event_subprocess {
            return self.compensation_scope_of(scope_key);
        }
        let outer = self
            .read()
            .peek_element_instance(scope_key, |scope| scope.record.flow_scope_key)?;
        self.compensation_scope_of(outer.map_or(scope_key, Key))
    }

    /// The scope an element instance counts as for compensation: an ad-hoc
    /// subprocess's inner instance counts as the ad-hoc subprocess, so that a thrower in
    /// one activation compensates what completed in the others (and the subscriptions
    /// outlive the inner instance they completed in).
    fn compensation_scope_of(&self, scope_key: Key) -> Result<Key> {
        let ad_hoc = self.read().peek_element_instance(scope_key, |scope| {
            (scope.record.bpmn_element_type == BpmnElementType::AdHocSubProcessInnerInstance)
                .then_some(scope.record.flow_scope_key)
        })?;
        Ok(ad_hoc.flatten().map_or(scope_key, Key))
    }

    /// A compensation handler completed (after its ELEMENT_COMPLETED): its subscription
    /// completes, then each subprocess subscription above it that has nothing left
    /// inside; a thrower with no subscription left goes on.
    pub(crate) fn compensation_handler_completed(&mut self, handler: &Active) -> Result<()> {
        let instance = handler.record().process_instance_key;
        let mut left = self.read().compensation_subscriptions(instance)?;
        let handler_id = &handler.element().id;
        let Some(done) = left.iter().position(|(_, s)| {
            !s.throw_event_id.is_empty() && s.compensation_handler_id == *handler_id
        }) else {
            return Ok(());
        };
        let (key, subscription) = left.remove(done);
        self.event(key, Intent::Completed, subscription.clone())?;
        let mut throwers = vec![subscription.throw_event_instance_key];
        let mut scope = subscription.compensable_activity_scope_key;
        while !left
            .iter()
            .any(|(_, s)| s.compensable_activity_scope_key == scope)
        {
            let Some(parent) = left.iter().position(|(_, s)| {
                s.compensable_activity_instance_key == scope
                    && !s.throw_event_id.is_empty()
                    && s.compensation_handler_id.is_empty()
            }) else {
                break;
            };
            let (key, parent) = left.remove(parent);
            self.event(key, Intent::Completed, parent.clone())?;
            throwers.push(parent.throw_event_instance_key);
            scope = parent.compensable_activity_scope_key;
        }
        throwers.dedup();
        for thrower in throwers {
            if !left
                .iter()
                .any(|(_, s)| s.throw_event_instance_key == thrower)
            {
                self.push_step(Step::Complete { key: Key(thrower) });
            }
        }
        Ok(())
    }

    /// A scope ends: the subscriptions of what completed in it (and inside those) go.
    /// For the process, every subscription of the instance.
    pub(crate) fn delete_compensation_subscriptions(&mut self, scope: &Active) -> Result<()> {
        if !scope.process.model.has_compensation {
            return Ok(());
        }
        let instance = scope.record().process_instance_key;
        let all = self.read().compensation_subscriptions(instance)?;
        let doomed: Vec<&Subscription> =
            if scope.record().bpmn_element_type == BpmnElementType::Process {
                all.iter().collect()
            } else {
                let scope_key = scope.key().get();
                with_nested(&all, |s| s.compensable_activity_scope_key == scope_key)
            };
        for (key, subscription) in doomed {
            self.event(*key, Intent::Deleted, subscription.clone())?;
        }
        Ok(())
    }

    /// An ad-hoc subprocess's inner instance is terminated (before what runs in it): the
    /// subscriptions its throwers triggered go, with those inside them, as their
    /// handlers and throwers go with it; left triggered, they would keep the ad-hoc
    /// subprocess's compensation from ever completing. What completed in it stays
    /// compensable: it belongs to the ad-hoc subprocess.
    pub(crate) fn delete_compensations_thrown_in(&mut self, inner: &Active) -> Result<()> {
        if !inner.process.model.has_compensation {
            return Ok(());
        }
        let ad_hoc = inner.record().flow_scope_key;
        let all = self
            .read()
            .compensation_subscriptions(inner.record().process_instance_key)?;
        let mut throwers = Vec::new();
        for (_, s) in &all {
            let thrower = s.throw_event_instance_key;
            if s.compensable_activity_scope_key == ad_hoc
                && thrower > 0
                && !throwers.contains(&thrower)
                && self.lies_in(Key(thrower), inner.key())?
            {
                throwers.push(thrower);
            }
        }
        if throwers.is_empty() {
            return Ok(());
        }
        let doomed = with_nested(&all, |s| {
            s.compensable_activity_scope_key == ad_hoc
                && throwers.contains(&s.throw_event_instance_key)
        });
        for (key, subscription) in doomed {
            self.event(*key, Intent::Deleted, subscription.clone())?;
        }
        Ok(())
    }

    /// Whether a live element instance lies (at any depth) inside a scope.
    fn lies_in(&self, element: Key, scope: Key) -> Result<bool> {
        let mut at = element;
        while at.get() > 0 {
            let Some(up) = self
                .read()
                .peek_element_instance(at, |i| i.record.flow_scope_key)?
            else {
                return Ok(false);
            };
            if up == scope.get() {
                return Ok(true);
            }
            at = Key(up);
        }
        Ok(false)
    }
}

/// The subscriptions `root` picks and, going down, those of what completed inside the
/// activities they stand for; in key order.
fn with_nested(
    all: &[Subscription],
    root: impl Fn(&CompensationSubscriptionRecord) -> bool,
) -> Vec<&Subscription> {
    let mut doomed: Vec<&Subscription> = all.iter().filter(|(_, s)| root(s)).collect();
    let mut next = 0;
    while next < doomed.len() {
        let inside = doomed[next].1.compensable_activity_instance_key;
        for subscription in all {
            if subscription.1.compensable_activity_scope_key == inside {
                doomed.push(subscription);
            }
        }
        next += 1;
    }
    doomed.sort_by_key(|(key, _)| *key);
    doomed
}
