//! Timers: intermediate timer catch events, timer boundary events, timer start events
//! of processes and event subprocesses. A start event's timer belongs to no instance (`elementInstanceKey` and
//! `processInstanceKey` are -1, as in Zeebe) and lives in state like any timer, so the
//! leader finds it due after a restart or a failover.

use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{CronSchedule, ElementKind, TimerDefinition, TriggerDefinition, ValueOrExpr};
use crate::model_cache::DeployedProcess;
use crate::outcome::{Evaluated, Failure, ignore_failure};
use rill_feel::temporal::{self, IsoCycle, IsoDuration};
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
                    .evaluate_duration(&context, self.feel_env())
                    .map_err(failed)?;
                once(temporal::add_duration(now, duration))
            }
            TimerDefinition::Date(ValueOrExpr::Static(date)) => once(*date),
            TimerDefinition::Date(ValueOrExpr::Expr(expression)) => {
                let context = self.context_at(expression, active)?;
                once(
                    expression
                        .evaluate_date_time(&context, self.feel_env())
                        .map_err(failed)?,
                )
            }
            TimerDefinition::Cron(cron) => Due {
                due_date: cron_next(cron, now)?,
                repetitions: -1,
                interval: None,
            },
            TimerDefinition::Cycle(value) => {
                let cycle = match value {
                    ValueOrExpr::Static(cycle) => *cycle,
                    ValueOrExpr::Expr(expression) => {
                        let context = self.context_at(expression, active)?;
                        expression
                            .evaluate_cycle(&context, self.feel_env())
                            .map_err(failed)?
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

    /// Cancels the timers that belong to an element instance.
    pub fn cancel_timers(&mut self, element_instance_key: Key) -> Result<()> {
        for key in self.read().timers_of_element(element_instance_key)? {
            if let Some(timer) = self.read().timer(key)? {
                self.event(key, Intent::Canceled, timer)?;
            }
        }
        Ok(())
    }

    /// A due timer fires: completes its catch event, triggers its boundary event, or
    /// creates an instance at its timer start event.
    pub fn fire_timer(&mut self, key: Key, timer: TimerRecord) -> Result<()> {
        let element_key = timer.element_instance_key;
        self.event(key, Intent::Triggered, timer.clone())?;
        if element_key < 0 {
            return self.fire_start_timer(timer);
        }
        let Some(active) = self.active(Key(element_key))? else {
            return Ok(());
        };
        if active.element().id == timer.target_element_id {
            return self.complete_with(Key(element_key), None);
        }
        let process = active.process.clone();
        if let Some(catch) = process.model.element_by_id(&timer.target_element_id)
            && let Some((TriggerDefinition::Timer(definition), false)) =
                process.model.element(catch).kind.trigger()
        {
            self.arm_next_cycle(&active, &timer, definition)?;
        }
        self.trigger_catch_event(Key(element_key), &timer.target_element_id, None)
    }

    /// A non-interrupting cycle that fired arms its next timer, counted from this due
    /// date, while it has firings left (a cron cycle: at its next match, forever).
    fn arm_next_cycle(
        &mut self,
        active: &Active,
        timer: &TimerRecord,
        definition: &TimerDefinition,
    ) -> Result<()> {
        let due = match definition {
            TimerDefinition::Cron(cron) => cron.next_after(timer.due_date).map(|due_date| Due {
                due_date,
                repetitions: -1,
                interval: None,
            }),
            TimerDefinition::Cycle(_) if timer.repetitions != 1 => {
                ignore_failure(self.evaluate_timer(definition, active))?.map(|due| Due {
                    due_date: temporal::add_duration(
                        timer.due_date,
                        due.interval.unwrap_or(IsoDuration {
                            months: 0,
                            millis: 0,
                        }),
                    ),
                    repetitions: if timer.repetitions < 0 {
                        -1
                    } else {
                        timer.repetitions - 1
                    },
                    interval: due.interval,
                })
            }
            _ => None,
        };
        match due {
            Some(due) => self.create_timer(active, &timer.target_element_id, due),
            None => Ok(()),
        }
    }
}

/// The next match of a cron cycle after `after`; one that never matches again cannot be
/// armed (an `EXTRACT_VALUE_ERROR` on an element).
fn cron_next(cron: &CronSchedule, after: i64) -> Evaluated<i64> {
    cron.next_after(after).ok_or_else(|| {
        Failure::extract_value(format!(
            "the cron cycle '{}' has no time after {after} that matches",
            cron.source()
        ))
        .into()
    })
}

/// When a timer start event is armed at `now` (at deploy), or, with `previous`, when
/// it fires next after that firing; `None` when it never fires (again).
fn start_timer_due(
    definition: &TimerDefinition,
    now: i64,
    previous: Option<&TimerRecord>,
) -> Option<Due> {
    match (definition, previous) {
        (TimerDefinition::Date(ValueOrExpr::Static(date)), None) => Some(Due {
            due_date: *date,
            repetitions: 1,
            interval: None,
        }),
        (TimerDefinition::Cycle(ValueOrExpr::Static(cycle)), previous) => {
            let (from, repetitions) = match previous {
                None => (now, cycle.repetitions),
                Some(_) if previous.is_some_and(|t| t.repetitions == 1) => return None,
                Some(timer) => (
                    timer.due_date,
                    if timer.repetitions < 0 {
                        -1
                    } else {
                        timer.repetitions - 1
                    },
                ),
            };
            if repetitions == 0 {
                return None;
            }
            Some(Due {
                due_date: temporal::add_duration(from, cycle.interval),
                repetitions,
                interval: Some(cycle.interval),
            })
        }
        (TimerDefinition::Cron(cron), previous) => Some(Due {
            due_date: cron.next_after(previous.map_or(now, |t| t.due_date))?,
            repetitions: -1,
            interval: None,
        }),
        _ => None,
    }
}

/// What a timer start event's `timeCycle` expression gives.
#[derive(Debug)]
pub(crate) enum StartCycle {
    Iso(IsoCycle),
    Cron(CronSchedule),
}

impl StartCycle {
    /// When the timer fires first (armed at `now`) or next after `previous`, as a static
    /// cycle of the same kind would.
    fn due(&self, now: i64, previous: Option<&TimerRecord>) -> Option<Due> {
        match self {
            StartCycle::Iso(cycle) => start_timer_due(
                &TimerDefinition::Cycle(ValueOrExpr::Static(*cycle)),
                now,
                previous,
            ),
            StartCycle::Cron(cron) => Some(Due {
                due_date: cron.next_after(previous.map_or(now, |t| t.due_date))?,
                repetitions: -1,
                interval: None,
            }),
        }
    }
}

impl Processing<'_> {
    /// A new version of a process was deployed: the start timers of its earlier versions
    /// are cancelled (as in Zeebe), and its own timer start events are armed.
    pub fn arm_start_timers(&mut self, process: &DeployedProcess) -> Result<()> {
        let id = &process.model.bpmn_process_id;
        for key in self.read().timers_of_element(-1)? {
            let Some(timer) = self.read().timer(key)? else {
                continue;
            };
            if timer.process_definition_key == process.key.get() {
                continue;
            }
            let same_process = self
                .read()
                .process(timer.process_definition_key)?
                .is_some_and(|p| p.bpmn_process_id == *id);
            if same_process {
                self.event(key, Intent::Canceled, timer)?;
            }
        }
        let now = self.now();
        for start in process.model.event_start_events() {
            let element = process.model.element(start);
            let ElementKind::TimerStartEvent(definition) = &element.kind else {
                continue;
            };
            let due = match definition {
                // The deployment checked that they evaluate; re-armed after a deletion,
                // one that no longer does arms nothing.
                TimerDefinition::Date(ValueOrExpr::Expr(expression)) => {
                    self.start_timer_date(expression).ok().map(|due_date| Due {
                        due_date,
                        repetitions: 1,
                        interval: None,
                    })
                }
                TimerDefinition::Cycle(ValueOrExpr::Expr(expression)) => self
                    .start_timer_cycle(expression)
                    .ok()
                    .and_then(|cycle| cycle.due(now, None)),
                _ => start_timer_due(definition, now, None),
            };
            if let Some(due) = due {
                self.create_start_timer(process, &element.id, due)?;
            }
        }
        Ok(())
    }

    /// The cycle of a timer start event's `timeCycle` expression, evaluated now without
    /// variables (as Zeebe evaluates it when the process is deployed and each time the
    /// timer fires): a text that starts with `R` is an ISO 8601 cycle, any other a cron
    /// expression, as for a static `timeCycle`; or why it gives neither.
    pub(crate) fn start_timer_cycle(
        &self,
        expression: &rill_feel::Expression,
    ) -> std::result::Result<StartCycle, String> {
        let value = expression
            .evaluate(&serde_json::Map::new(), self.feel_env())
            .map_err(|error| error.to_string())?;
        let serde_json::Value::String(text) = value else {
            return Err(format!(
                "expected the timeCycle to be a cycle such as \"R/PT1H\" or a cron expression \
                 such as \"0 0 9 * * MON-FRI\", but it is {value}"
            ));
        };
        if text.trim_start().starts_with('R') {
            temporal::parse_cycle(&text)
                .map(StartCycle::Iso)
                .map_err(|error| error.to_string())
        } else {
            CronSchedule::parse(&text)
                .map(StartCycle::Cron)
                .map_err(|reason| {
                    format!(
                        "'{text}' is neither an ISO 8601 cycle (like \"R/PT1H\") nor a cron \
                         expression ({reason})"
                    )
                })
        }
    }

    /// The date of a timer start event's `timeDate` expression, evaluated now without
    /// variables (as Zeebe evaluates it when the process is deployed), in ms since the
    /// epoch; or why it gives none.
    pub(crate) fn start_timer_date(
        &self,
        expression: &rill_feel::Expression,
    ) -> std::result::Result<i64, String> {
        expression
            .evaluate_date_time(&serde_json::Map::new(), self.feel_env())
            .map_err(|error| error.to_string())
    }

    fn create_start_timer(
        &mut self,
        process: &DeployedProcess,
        start_id: &str,
        due: Due,
    ) -> Result<()> {
        let timer = TimerRecord {
            element_instance_key: -1,
            process_instance_key: -1,
            process_definition_key: process.key.get(),
            due_date: due.due_date,
            target_element_id: start_id.to_owned(),
            repetitions: due.repetitions,
            tenant_id: rill_protocol::value::DEFAULT_TENANT.to_owned(),
        };
        let key = self.next_key()?;
        self.wake_at(due.due_date);
        self.event(key, Intent::Created, timer)
    }

    /// A timer start event fired (TRIGGERED is written): a cycle arms its next timer,
    /// then a new instance starts at the start event.
    fn fire_start_timer(&mut self, timer: TimerRecord) -> Result<()> {
        let process = self.model(timer.process_definition_key)?;
        let Some(start) = process.model.element_by_id(&timer.target_element_id) else {
            return Ok(());
        };
        let ElementKind::TimerStartEvent(definition) = &process.model.element(start).kind else {
            return Ok(());
        };
        let next = match definition {
            // Evaluated again, as Zeebe does; one that no longer gives a cycle arms nothing
            // more (this firing still starts its instance).
            TimerDefinition::Cycle(ValueOrExpr::Expr(expression)) => self
                .start_timer_cycle(expression)
                .ok()
                .and_then(|cycle| cycle.due(self.now(), Some(&timer))),
            _ => start_timer_due(definition, self.now(), Some(&timer)),
        };
        if let Some(due) = next {
            self.create_start_timer(&process, &timer.target_element_id, due)?;
        }
        self.start_instance_at(&process, start, serde_json::Map::new())
            .map(|_| ())
    }
}
