//! What events reference and define, read the same way by every event kind: the one
//! event definition of an event, messages, signals, timers, thrown and caught error
//! and escalation codes, link names, and the triggers of boundary events and event
//! subprocess start events.

use std::collections::HashMap;

use rill_feel::temporal::IsoDuration;
use roxmltree::Node;

use super::document::{Context, ZEEBE_NS, article, bpmn_children, text_of};
use super::process::Builder;
use super::values::{self, TimerKind};
use crate::model::{
    MessageDefinition, SignalDefinition, TimerDefinition, TriggerDefinition, ValueOrExpr,
};

/// Which thrown and caught codes a reference names.
#[derive(Clone, Copy)]
pub(in crate::parse) enum CodeKind {
    Error,
    Escalation,
}

impl CodeKind {
    fn what(self) -> &'static str {
        match self {
            CodeKind::Error => "error",
            CodeKind::Escalation => "escalation",
        }
    }

    fn reference(self) -> &'static str {
        match self {
            CodeKind::Error => "errorRef",
            CodeKind::Escalation => "escalationRef",
        }
    }

    fn code(self) -> &'static str {
        match self {
            CodeKind::Error => "errorCode",
            CodeKind::Escalation => "escalationCode",
        }
    }

    fn definitions<'d, 'a, 'input>(
        self,
        ctx: &'d Context<'a, 'input>,
    ) -> &'d HashMap<&'a str, Node<'a, 'input>> {
        match self {
            CodeKind::Error => &ctx.errors,
            CodeKind::Escalation => &ctx.escalations,
        }
    }
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    /// The single event definition of an event, or `None` for a none event. More than
    /// one is reported.
    pub(in crate::parse) fn event_definition(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
    ) -> Option<Node<'a, 'input>> {
        let mut definitions = bpmn_children(node).filter(|n| {
            let name = n.tag_name().name();
            name.ends_with("EventDefinition") || name == "eventDefinitionRef"
        });
        let first = definitions.next()?;
        if let Some(second) = definitions.next() {
            self.problem(
                Some(id),
                second,
                "an event with several event definitions is not supported; keep one".to_owned(),
            );
        }
        Some(first)
    }

    /// The message an event or receive task waits for: `messageRef` to a root-level
    /// `bpmn:message` with a name and a `zeebe:subscription correlationKey`.
    pub(in crate::parse) fn message(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        message_ref: Option<&str>,
    ) -> MessageDefinition {
        let mut definition = MessageDefinition {
            message_name: ValueOrExpr::Static(String::new()),
            correlation_key: ValueOrExpr::Static(String::new()),
        };
        let Some(message_ref) = message_ref.filter(|r| !r.trim().is_empty()) else {
            self.problem(
                Some(id),
                node,
                "no message is referenced; select a message (messageRef) with a name and a \
                 correlation key"
                    .to_owned(),
            );
            return definition;
        };
        let Some(&message) = self.ctx.messages.get(message_ref) else {
            self.problem(
                Some(id),
                node,
                format!("the referenced message '{message_ref}' does not exist in this file"),
            );
            return definition;
        };
        match message.attribute("name").filter(|n| !n.trim().is_empty()) {
            None => self.problem(
                Some(id),
                node,
                format!(
                    "the message '{message_ref}' has no name; name the message that publishers send"
                ),
            ),
            Some(raw) => match values::string_or_expr("message name", raw) {
                Ok(name) => definition.message_name = name,
                Err(text) => self.problem(Some(id), message, text),
            },
        }
        let correlation_key = bpmn_children(message)
            .filter(|n| n.tag_name().name() == "extensionElements")
            .flat_map(|container| container.children())
            .find(|n| {
                n.tag_name().namespace() == Some(ZEEBE_NS) && n.tag_name().name() == "subscription"
            })
            .and_then(|subscription| subscription.attribute("correlationKey"))
            .filter(|key| !key.trim().is_empty());
        match correlation_key {
            None => self.problem(
                Some(id),
                node,
                format!(
                    "the message '{message_ref}' has no correlation key; add zeebe:subscription \
                     with a correlationKey (e.g. '=orderId')"
                ),
            ),
            Some(raw) => match values::string_or_expr("correlation key", raw) {
                Ok(key) => definition.correlation_key = key,
                Err(text) => self.problem(Some(id), message, text),
            },
        }
        definition
    }

    /// The signal a signal event catches or throws: `signalRef` to a root-level
    /// `bpmn:signal` with a name (static, or an expression).
    pub(in crate::parse) fn signal(
        &mut self,
        id: &str,
        definition: Node<'a, 'input>,
    ) -> SignalDefinition {
        let placeholder = SignalDefinition {
            signal_name: ValueOrExpr::Static(String::new()),
        };
        let Some(reference) = definition
            .attribute("signalRef")
            .filter(|r| !r.trim().is_empty())
        else {
            self.problem(
                Some(id),
                definition,
                "no signal is referenced; select a signal (signalRef) with a name".to_owned(),
            );
            return placeholder;
        };
        let Some(&signal) = self.ctx.signals.get(reference) else {
            self.problem(
                Some(id),
                definition,
                format!("the referenced signal '{reference}' does not exist in this file"),
            );
            return placeholder;
        };
        match signal.attribute("name").filter(|n| !n.trim().is_empty()) {
            None => {
                self.problem(
                    Some(id),
                    signal,
                    format!("the signal '{reference}' has no name; name the signal to broadcast"),
                );
                placeholder
            }
            Some(raw) => match values::string_or_expr("signal name", raw) {
                Ok(signal_name) => SignalDefinition { signal_name },
                Err(text) => {
                    self.problem(Some(id), signal, text);
                    placeholder
                }
            },
        }
    }

    /// A `timerEventDefinition`: exactly one of `timeDuration`, `timeDate` and, where
    /// `allow_cycle`, `timeCycle`.
    pub(in crate::parse) fn timer(
        &mut self,
        id: &str,
        definition: Node<'a, 'input>,
        allow_cycle: bool,
    ) -> TimerDefinition {
        let placeholder = TimerDefinition::Duration(ValueOrExpr::Static(IsoDuration {
            months: 0,
            millis: 0,
        }));
        let accepted = if allow_cycle {
            "timeDuration, timeDate or timeCycle"
        } else {
            "timeDuration or timeDate"
        };
        let mut values = bpmn_children(definition)
            .filter_map(|n| TimerKind::from_element_name(n.tag_name().name()).map(|k| (k, n)));
        let Some((kind, value_node)) = values.next() else {
            self.problem(
                Some(id),
                definition,
                format!("the timer has no value; set one of {accepted}"),
            );
            return placeholder;
        };
        if values.next().is_some() {
            self.problem(
                Some(id),
                definition,
                format!("the timer has several values; keep one of {accepted}"),
            );
            return placeholder;
        }
        if kind == TimerKind::Cycle && !allow_cycle {
            self.problem(
                Some(id),
                value_node,
                "timeCycle is only supported on non-interrupting boundary events and \
                 event subprocesses; use timeDuration or timeDate"
                    .to_owned(),
            );
            return placeholder;
        }
        values::timer(kind, &text_of(value_node)).unwrap_or_else(|message| {
            self.problem(Some(id), value_node, message);
            placeholder
        })
    }

    /// The code an error or escalation throw event throws: from its `errorRef` or
    /// `escalationRef`, required.
    pub(in crate::parse) fn thrown_code(
        &mut self,
        id: &str,
        definition: Node<'a, 'input>,
        kind: CodeKind,
        thrower: &str,
    ) -> ValueOrExpr<String> {
        let placeholder = ValueOrExpr::Static(String::new());
        let what = kind.what();
        let Some(reference) = definition
            .attribute(kind.reference())
            .filter(|r| !r.trim().is_empty())
        else {
            self.problem(
                Some(id),
                definition,
                format!(
                    "{a} {what} {thrower} needs {a} {what} to throw; select {a} {what} ({}) \
                     with {a} {what} code",
                    kind.reference(),
                    a = article(what),
                ),
            );
            return placeholder;
        };
        let Some(&target) = kind.definitions(self.ctx).get(reference) else {
            self.problem(
                Some(id),
                definition,
                format!("the referenced {what} '{reference}' does not exist in this file"),
            );
            return placeholder;
        };
        match target
            .attribute(kind.code())
            .filter(|c| !c.trim().is_empty())
        {
            None => {
                self.problem(
                    Some(id),
                    definition,
                    format!("the {what} '{reference}' has no {what} code; set the code to throw"),
                );
                placeholder
            }
            Some(raw) => {
                values::string_or_expr(&format!("{what} code"), raw).unwrap_or_else(|message| {
                    self.problem(Some(id), target, message);
                    placeholder
                })
            }
        }
    }

    /// The code an error or escalation catch event catches: `None` (any) without a
    /// reference or when the referenced error or escalation has no code.
    pub(in crate::parse) fn caught_code(
        &mut self,
        id: &str,
        definition: Node<'a, 'input>,
        kind: CodeKind,
    ) -> Option<String> {
        let what = kind.what();
        let reference = definition
            .attribute(kind.reference())
            .filter(|r| !r.trim().is_empty())?;
        let Some(&target) = kind.definitions(self.ctx).get(reference) else {
            self.problem(
                Some(id),
                definition,
                format!("the referenced {what} '{reference}' does not exist in this file"),
            );
            return None;
        };
        let code = target
            .attribute(kind.code())
            .filter(|c| !c.trim().is_empty())?;
        if code.starts_with('=') {
            self.problem(
                Some(id),
                target,
                format!(
                    "the {what} code '{code}' of a catching event must be static text, not an \
                     expression"
                ),
            );
            return None;
        }
        Some(code.to_owned())
    }

    /// The `name` of a `linkEventDefinition`, required and non-empty.
    pub(in crate::parse) fn link_name(&mut self, id: &str, definition: Node<'a, 'input>) -> String {
        match definition.attribute("name").map(str::trim) {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => {
                self.problem(
                    Some(id),
                    definition,
                    "the link event has no link name; name it (the throw and catch events of a \
                     link share the name)"
                        .to_owned(),
                );
                String::new()
            }
        }
    }

    /// What a boundary event or an event subprocess's start event waits for, or `None`
    /// for a definition Rill does not run there. A timer cycle needs a non-interrupting
    /// event; an error an interrupting one (else the problem `fix`).
    pub(in crate::parse) fn trigger(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        definition: Node<'a, 'input>,
        interrupting: bool,
        fix: &str,
    ) -> Option<TriggerDefinition> {
        Some(match definition.tag_name().name() {
            "timerEventDefinition" => {
                TriggerDefinition::Timer(self.timer(id, definition, !interrupting))
            }
            "messageEventDefinition" => TriggerDefinition::Message(self.message(
                id,
                definition,
                definition.attribute("messageRef"),
            )),
            "errorEventDefinition" => {
                if !interrupting {
                    self.problem(Some(id), node, fix.to_owned());
                }
                TriggerDefinition::Error {
                    error_code: self.caught_code(id, definition, CodeKind::Error),
                }
            }
            "escalationEventDefinition" => TriggerDefinition::Escalation {
                escalation_code: self.caught_code(id, definition, CodeKind::Escalation),
            },
            "signalEventDefinition" => TriggerDefinition::Signal(self.signal(id, definition)),
            _ => return None,
        })
    }

    /// Zeebe always waits for the handlers a compensation throw event starts (Camunda
    /// Modeler's checks refuse `waitForCompletion="false"` for Camunda 8).
    pub(in crate::parse) fn check_wait_for_completion(
        &mut self,
        id: &str,
        definition: Node<'a, 'input>,
    ) {
        if definition.attribute("waitForCompletion").map(str::trim) == Some("false") {
            self.problem(
                Some(id),
                definition,
                "a compensation throw event that does not wait for its handlers \
                 (waitForCompletion=\"false\") is not supported, as in Zeebe; remove the \
                 attribute"
                    .to_owned(),
            );
        }
    }
}
