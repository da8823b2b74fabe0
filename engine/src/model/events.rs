//! What events wait for and throw: messages, timers, signals, and the triggers of
//! boundary events and event subprocesses.

use super::*;

/// A message to wait for: the `bpmn:message` name and its `zeebe:subscription`.
#[derive(Debug)]
pub struct MessageDefinition {
    pub message_name: ValueOrExpr<String>,
    /// Evaluated when the element is entered (a static value is used as it is).
    pub correlation_key: ValueOrExpr<String>,
}

#[derive(Debug)]
pub enum TimerDefinition {
    Duration(ValueOrExpr<IsoDuration>),
    /// An absolute date-time, ms since the epoch.
    Date(ValueOrExpr<i64>),
    Cycle(ValueOrExpr<IsoCycle>),
    /// A cron cycle (`timeCycle` such as `0 0 9-17 * * MON-FRI`): fires at every match,
    /// forever.
    Cron(CronSchedule),
}

#[derive(Debug)]
pub enum CatchEventDefinition {
    Timer(TimerDefinition),
    Message(MessageDefinition),
    /// Entered from the link throw events of its scope that carry this name; passes
    /// the token on at once.
    Link {
        name: String,
    },
    Signal(SignalDefinition),
}

/// A signal to catch or throw: the name of the referenced `bpmn:signal`, static or an
/// expression (evaluated when the catch event's holder is entered, or when thrown).
#[derive(Debug)]
pub struct SignalDefinition {
    pub signal_name: ValueOrExpr<String>,
}

/// What an end event or an intermediate throw event throws (in BPMN an end event is a
/// throw event). Only end events are `Terminate` or `Error`, only intermediate throw
/// events are `Link`: the parser builds no other.
#[derive(Debug)]
pub enum ThrowEventDefinition {
    /// A none event: an end event ends the token; an intermediate throw event (a
    /// milestone) passes it on at once.
    None,
    /// A terminate end event: ends every token of its scope, then the scope.
    Terminate,
    /// An error end event: throws the error with this code (from the referenced
    /// `bpmn:error`).
    Error { error_code: ValueOrExpr<String> },
    /// Completes, then the token continues at `catch_event`: the link catch event of
    /// the same scope with the same name.
    Link {
        name: String,
        catch_event: ElementIdx,
    },
    /// A message event: a job for a worker that sends the message (as in Zeebe); the
    /// token goes on (or ends) when the job is completed.
    Message(JobDefinition),
    /// Throws the escalation with this code (from the referenced `bpmn:escalation`),
    /// then the token goes on or ends (unless an interrupting catch event ended its
    /// scope).
    Escalation {
        escalation_code: ValueOrExpr<String>,
    },
    /// Broadcasts the signal, with the event's input mappings as its variables; then
    /// the token goes on or ends.
    Signal(SignalDefinition),
    /// Compensates the completed activities of its scope (or only `activity`), waits
    /// for their handlers, then the token goes on or ends.
    Compensation { activity: Option<ElementIdx> },
}

impl ThrowEventDefinition {
    pub fn event_type(&self) -> BpmnEventType {
        match self {
            ThrowEventDefinition::None => BpmnEventType::None,
            ThrowEventDefinition::Terminate => BpmnEventType::Terminate,
            ThrowEventDefinition::Error { .. } => BpmnEventType::Error,
            ThrowEventDefinition::Link { .. } => BpmnEventType::Link,
            ThrowEventDefinition::Message(_) => BpmnEventType::Message,
            ThrowEventDefinition::Escalation { .. } => BpmnEventType::Escalation,
            ThrowEventDefinition::Signal(_) => BpmnEventType::Signal,
            ThrowEventDefinition::Compensation { .. } => BpmnEventType::Compensation,
        }
    }
}

/// What a boundary event or an event subprocess's start event waits for. The element
/// instance that holds the trigger (the attached activity, the enclosing scope) opens
/// timers and subscriptions when it is entered and closes them when it is left.
#[derive(Debug)]
pub enum TriggerDefinition {
    Timer(TimerDefinition),
    Message(MessageDefinition),
    /// Catches errors with this code, or any error when `None`.
    Error {
        error_code: Option<String>,
    },
    /// Catches escalations with this code, or any escalation when `None`.
    Escalation {
        escalation_code: Option<String>,
    },
    Signal(SignalDefinition),
    /// A compensation boundary event: nothing is opened while the activity runs; once
    /// it completed, a compensation throw event can run `handler`.
    Compensation {
        handler: ElementIdx,
    },
}

impl TriggerDefinition {
    pub fn message(&self) -> Option<&MessageDefinition> {
        match self {
            TriggerDefinition::Message(message) => Some(message),
            _ => None,
        }
    }

    /// For an error trigger, the code it catches (`None`: any error).
    pub fn error_code(&self) -> Option<Option<String>> {
        match self {
            TriggerDefinition::Error { error_code } => Some(error_code.clone()),
            _ => None,
        }
    }

    /// For an escalation trigger, the code it catches (`None`: any escalation).
    pub fn escalation_code(&self) -> Option<Option<String>> {
        match self {
            TriggerDefinition::Escalation { escalation_code } => Some(escalation_code.clone()),
            _ => None,
        }
    }

    pub fn event_type(&self) -> BpmnEventType {
        match self {
            TriggerDefinition::Timer(_) => BpmnEventType::Timer,
            TriggerDefinition::Message(_) => BpmnEventType::Message,
            TriggerDefinition::Error { .. } => BpmnEventType::Error,
            TriggerDefinition::Escalation { .. } => BpmnEventType::Escalation,
            TriggerDefinition::Signal(_) => BpmnEventType::Signal,
            TriggerDefinition::Compensation { .. } => BpmnEventType::Compensation,
        }
    }
}
