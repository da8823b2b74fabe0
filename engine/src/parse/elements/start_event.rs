//! `bpmn:startEvent`: a none start event; a timer, message or signal start event of the
//! process; or the start event of an event subprocess (timer, message, signal, error or
//! escalation, interrupting or not). A none start event of the process may carry the
//! process's start form.

use roxmltree::Node;

use super::{ElementParser, FlowNode};
use crate::model::{ElementKind, ProcessModel, TimerDefinition, TriggerDefinition, ValueOrExpr};
use crate::parse::document::{bpmn_children, text_of};
use crate::parse::process::Builder;
use crate::parse::values::{self, TimerKind};

pub(super) struct StartEvent;

impl ElementParser for StartEvent {
    /// A start event with a definition is built only where it runs: timer, message and
    /// signal start events on the process itself, and (with error and escalation) the
    /// start events of event subprocesses. Any other is not built at all, so it cannot
    /// count as the scope's start event.
    fn admit<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &mut FlowNode<'a, 'input>,
    ) -> bool {
        let Some(definition) = b.event_definition(at.id, at.node) else {
            return true;
        };
        let kind = definition.tag_name().name();
        let runs = if at.in_event_subprocess {
            matches!(
                kind,
                "timerEventDefinition"
                    | "messageEventDefinition"
                    | "signalEventDefinition"
                    | "errorEventDefinition"
                    | "escalationEventDefinition"
            )
        } else {
            matches!(
                kind,
                "timerEventDefinition" | "messageEventDefinition" | "signalEventDefinition"
            )
        };
        if at.in_event_subprocess && !runs {
            let message = format!(
                "an event subprocess started by a {kind} is not supported; use a timer, \
                 message, signal, error or escalation start event"
            );
            b.unsupported(Some(at.id), definition, message);
            return false;
        }
        if !runs {
            let message = format!(
                "a start event with a {kind} is not supported; use a none, timer, message \
                 or signal start event"
            );
            b.unsupported(Some(at.id), definition, message);
            return false;
        }
        if at.scope != ProcessModel::ROOT && !at.in_event_subprocess {
            let message = format!(
                "a start event with a {kind} inside a subprocess needs an event subprocess \
                 (triggeredByEvent=\"true\"); a subprocess starts at a none start event"
            );
            b.unsupported(Some(at.id), definition, message);
            return false;
        }
        at.start_definition = Some(definition);
        true
    }

    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        let (id, node) = (at.id, at.node);
        let kind = match at.start_definition {
            None => ElementKind::StartEvent,
            Some(definition) if at.in_event_subprocess => {
                b.event_subprocess_start(id, node, definition)
            }
            Some(definition) => b.event_start(id, definition),
        };
        if let Some(form) = at.extensions.form {
            if matches!(kind, ElementKind::StartEvent) && at.scope == ProcessModel::ROOT {
                b.start_form = b.start_form(id, form);
            } else {
                b.problem(
                    Some(id),
                    form,
                    "zeebe:formDefinition on a start event is a start form, which only the \
                     process's none start event can have"
                        .to_owned(),
                );
            }
        }
        kind
    }

    fn inputs_refused(&self, _kind: &ElementKind) -> Option<&'static str> {
        Some(
            "a start event cannot have input mappings, nothing in it would read them; use \
             output mappings",
        )
    }

    fn listeners_refused(
        &self,
        _kind: &ElementKind,
    ) -> (Option<&'static str>, Option<&'static str>) {
        (
            Some(
                "a start event cannot have start listeners in zeebe:executionListeners; put \
                 them on the process or subprocess",
            ),
            None,
        )
    }
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    /// A timer, message or signal start event of the process.
    fn event_start(&mut self, id: &str, definition: Node<'a, 'input>) -> ElementKind {
        if definition.tag_name().name() == "signalEventDefinition" {
            let signal = self.signal(id, definition);
            let signal_name = match signal.signal_name {
                ValueOrExpr::Static(name) => name,
                ValueOrExpr::Expr(expression) => {
                    self.problem(
                        Some(id),
                        definition,
                        format!(
                            "the signal of a signal start event has the name expression '={}'; \
                             a signal start event needs a static name",
                            expression.source()
                        ),
                    );
                    String::new()
                }
            };
            return ElementKind::SignalStartEvent { signal_name };
        }
        if definition.tag_name().name() == "timerEventDefinition" {
            let timer = self
                .start_timer(id, definition)
                .unwrap_or(TimerDefinition::Date(ValueOrExpr::Static(0)));
            return ElementKind::TimerStartEvent(timer);
        }
        let message_name = match definition.attribute("messageRef") {
            None => {
                self.problem(
                    Some(id),
                    definition,
                    "the message start event names no message (messageRef); reference a \
                     bpmn:message with a name"
                        .to_owned(),
                );
                String::new()
            }
            Some(reference) => self.start_message_name(id, definition, reference),
        };
        ElementKind::MessageStartEvent { message_name }
    }

    /// The timer of a timer start event: a date or a cycle (ISO 8601 or cron), static
    /// or FEEL evaluated when the process is deployed.
    fn start_timer(&mut self, id: &str, definition: Node<'a, 'input>) -> Option<TimerDefinition> {
        let values: Vec<Node<'a, 'input>> = bpmn_children(definition)
            .filter(|n| TimerKind::from_element_name(n.tag_name().name()).is_some())
            .collect();
        let [value] = values.as_slice() else {
            self.problem(
                Some(id),
                definition,
                "a timer start event needs exactly one timeDate or timeCycle".to_owned(),
            );
            return None;
        };
        let kind = TimerKind::from_element_name(value.tag_name().name())?;
        let raw = text_of(*value);
        if kind == TimerKind::Duration {
            self.problem(
                Some(id),
                *value,
                "a timer start event cannot have a timeDuration (a duration from what?); use \
                 timeDate or timeCycle"
                    .to_owned(),
            );
            return None;
        }
        if let Some(source) = raw.trim_start().strip_prefix('=') {
            // Evaluated when the process is deployed (without variables), as in Zeebe,
            // and a cycle again each time it fires; the deployment checks that it gives
            // a date, or a cycle (ISO 8601 or cron).
            return match values::expression(kind.element_name(), source) {
                Ok(expression) if kind == TimerKind::Cycle => {
                    Some(TimerDefinition::Cycle(ValueOrExpr::Expr(expression)))
                }
                Ok(expression) => Some(TimerDefinition::Date(ValueOrExpr::Expr(expression))),
                Err(message) => {
                    self.problem(Some(id), *value, message);
                    None
                }
            };
        }
        match values::timer(kind, raw.trim()) {
            Ok(timer) => Some(timer),
            Err(message) => {
                self.problem(Some(id), *value, message);
                None
            }
        }
    }

    /// The static name of the message a message start event waits for.
    fn start_message_name(&mut self, id: &str, at: Node<'a, 'input>, reference: &str) -> String {
        let Some(&message) = self.ctx.messages.get(reference) else {
            self.problem(
                Some(id),
                at,
                format!(
                    "the message start event references message '{reference}', which does not exist"
                ),
            );
            return String::new();
        };
        match message.attribute("name").map(str::trim) {
            Some(name) if !name.is_empty() && !name.starts_with('=') => name.to_owned(),
            Some(name) if name.starts_with('=') => {
                self.problem(
                    Some(id),
                    at,
                    format!(
                        "the message '{reference}' of a message start event has the name \
                         expression '{name}'; a message start event needs a static name"
                    ),
                );
                String::new()
            }
            _ => {
                self.problem(
                    Some(id),
                    at,
                    format!("the message '{reference}' has no name; give it one"),
                );
                String::new()
            }
        }
    }

    /// The start event of an event subprocess: a timer, a message, an error or an
    /// escalation, which interrupts the enclosing scope unless `isInterrupting="false"`
    /// (never for an error). Other definitions were refused before.
    fn event_subprocess_start(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        definition: Node<'a, 'input>,
    ) -> ElementKind {
        let interrupting = node.attribute("isInterrupting").map(str::trim) != Some("false");
        let fix = "an error start event of an event subprocess must be interrupting; remove \
                   isInterrupting=\"false\"";
        let definition = self
            .trigger(id, node, definition, interrupting, fix)
            .unwrap_or(TriggerDefinition::Error { error_code: None });
        ElementKind::EventStartEvent {
            interrupting,
            definition,
        }
    }
}
