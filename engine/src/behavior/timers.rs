//! Timers: intermediate timer catch events and timer boundary events.

use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{BoundaryDefinition, ElementKind, TimerDefinition, ValueOrExpr};
use crate::outcome::{Evaluated, Failure, ignore_failure};
use rill_feel::temporal::{self, IsoDuration};
use rill_protocol::Intent;
use rill_protocol::Key;
use rill_protocol::value::TimerRecord;

/// When a timer fires, and how often (-1 = forever, 1 = once).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Due {
    pub due_date: i64,
    pub repetitions: i32,
    /// For cycles: the interval to the next firing.
    pub interval: Option<IsoDuration>,
}

impl Processing<'_> {
    pub fn evaluate_timer(&self, definition: &TimerDefinition, active: &Active) -> Evaluated<Due> {
        let now = self.now();
        let once = |due_date| Due {
            due_date,
            repetitions: 1,
            interval: None,
        };
        let failed = |e: rill_feel::FeelError| Failure::extract_value(e.to_string());
        Ok(match definition {
            TimerDefinition::Duration(ValueOrExpr::Static(duration)) => {
                once(temporal::add_duration(now, *duration))
            }
            TimerDefinition::Duration(ValueOrExpr::Expr(expression)) => {
                let context = self.context_at(expression, active)?;
                let duration = expression
                    .evaluate_duration(&context, now)
                    .map_err(failed)?;
                once(temporal::add_duration(now, duration))
            }
            TimerDefinition::Date(ValueOrExpr::Static(date)) => once(*date),
            TimerDefinition::Date(ValueOrExpr::Expr(expression)) => {
                let context = self.context_at(expression, active)?;
                once(
                    expression
                        .evaluate_date_time(&context, now)
                        .map_err(failed)?,
                )
            }
            TimerDefinition::Cycle(value) => {
                let cycle = match value {
                    ValueOrExpr::Static(cycle) => *cycle,
                    ValueOrExpr::Expr(expression) => {
                        let context = self.context_at(expression, active)?;
                        expression.evaluate_cycle(&context, now).map_err(failed)?
                    }
                };
                Due {
                    due_date: temporal::add_duration(now, cycle.interval),
                    repetitions: cycle.repetitions,
                    interval: Some(cycle.interval),
                }
            }
        })
    }

    pub fn create_timer(
        &mut self,
        active: &Active,
        target_element_id: &str,
        due: Due,
    ) -> Result<()> {
        let record = active.record();
        let timer = TimerRecord {
            element_instance_key: active.key().get(),
            process_instance_key: record.process_instance_key,
            process_definition_key: record.process_definition_key,
            due_date: due.due_date,
            target_element_id: target_element_id.to_owned(),
            repetitions: due.repetitions,
            tenant_id: record.tenant_id.clone(),
        };
        let key = self.next_key()?;
        self.wake_at(due.due_date);
        self.event(key, Intent::Created, timer)
    }

    /// Creates the timers of an activity's timer boundary events. All are evaluated
    /// first: when one fails, none is created.
    pub fn arm_boundary_timers(&mut self, active: &Active) -> Evaluated {
        if active.is_multi_instance_inner() {
            // The boundary events belong to the multi-instance body.
            return Ok(());
        }
        let process = active.process.clone();
        let mut timers = Vec::new();
        for boundary in &active.element().boundary_events {
            let element = process.model.element(*boundary);
            if let ElementKind::BoundaryEvent {
                definition: BoundaryDefinition::Timer(definition),
                ..
            } = &element.kind
            {
                timers.push((element.id.clone(), self.evaluate_timer(definition, active)?));
            }
        }
        for (target, due) in timers {
            self.create_timer(active, &target, due)?;
        }
        Ok(())
    }

    /// Cancels the timers that belong to an element instance.
    pub fn cancel_timers(&mut self, element_instance_key: Key) -> Result<()> {
        for key in self.read().timers_of_element(element_instance_key)? {
            if let Some(timer) = self.read().timer(key)? {
                self.event(key, Intent::Canceled, timer)?;
            }
        }
        Ok(())
    }

    /// A due timer fires: completes its catch event, or triggers its boundary event.
    pub fn fire_timer(&mut self, key: Key, timer: TimerRecord) -> Result<()> {
        let element_key = timer.element_instance_key;
        self.event(key, Intent::Triggered, timer.clone())?;
        let Some(active) = self.active(Key(element_key))? else {
            return Ok(());
        };
        if active.element().id == timer.target_element_id {
            return self.complete_with(Key(element_key), None);
        }
        let process = active.process.clone();
        let Some(boundary) = process.model.element_by_id(&timer.target_element_id) else {
            return Ok(());
        };
        let (interrupting, cycle) = match &process.model.element(boundary).kind {
            ElementKind::BoundaryEvent {
                interrupting,
                definition: BoundaryDefinition::Timer(definition),
                ..
            } => (
                *interrupting,
                matches!(definition, TimerDefinition::Cycle(_)),
            ),
            _ => return Ok(()),
        };
        if interrupting {
            return self.interrupt_and_activate_boundary(&active, boundary, None);
        }
        // A cycle with firings left arms its next timer, counted from this due date.
        if cycle
            && timer.repetitions != 1
            && let ElementKind::BoundaryEvent {
                definition: BoundaryDefinition::Timer(definition),
                ..
            } = &process.model.element(boundary).kind
            && let Some(due) = ignore_failure(self.evaluate_timer(definition, &active))?
        {
            let repetitions = if timer.repetitions < 0 {
                -1
            } else {
                timer.repetitions - 1
            };
            self.create_timer(
                &active,
                &timer.target_element_id,
                Due {
                    due_date: temporal::add_duration(
                        timer.due_date,
                        due.interval.unwrap_or(IsoDuration {
                            months: 0,
                            millis: 0,
                        }),
                    ),
                    repetitions,
                    interval: due.interval,
                },
            )?;
        }
        let scope_key = active.record().flow_scope_key;
        self.activate(Key(scope_key), &process, boundary, None)
    }
}
