//! Arbitrary bytes into the BPMN parser: it must never panic, and every model it
//! accepts must keep the promises `rill_engine::model` documents.
//!
//! Run from `fuzz/`: `cargo +nightly fuzz run bpmn_parse corpus/bpmn_parse ../engine/tests/fixtures
//!       -- -dict=bpmn.dict` (seeds: the fixture models).

#![no_main]

use libfuzzer_sys::fuzz_target;
use rill_engine::model::{ElementKind, ProcessModel};

fuzz_target!(|data: &[u8]| {
    match rill_engine::parse_bpmn("fuzz.bpmn", data) {
        Ok(models) => models.iter().for_each(check_promises),
        Err(error) => {
            assert!(!error.problems.is_empty());
            let _ = error.to_string();
        }
    }
});

fn check_promises(model: &ProcessModel) {
    let count = model.elements.len();
    assert!(matches!(
        model.elements[0].kind,
        ElementKind::Process { .. }
    ));
    for (i, element) in model.elements.iter().enumerate() {
        assert_eq!(
            model.element_by_id(&element.id).map(|e| e.0 as usize),
            Some(i)
        );
        let event_subprocess = matches!(
            element.kind,
            ElementKind::SubProcess {
                triggered_by_event: true,
                ..
            }
        );
        if let Some(start) = model.start_event(rill_engine::model::ElementIdx(i as u32)) {
            if event_subprocess {
                assert!(matches!(model.element(start).kind, ElementKind::EventStartEvent { .. }));
            } else {
                assert!(matches!(model.element(start).kind, ElementKind::StartEvent));
            }
            assert_eq!(
                model.element(start).flow_scope.map(|s| s.0 as usize),
                Some(i)
            );
        }
        if let ElementKind::AdHocSubProcess(definition) = &element.kind {
            assert_eq!(definition.inner_instance.0 as usize, i + 1);
            assert!(matches!(
                model.element(definition.inner_instance).kind,
                ElementKind::AdHocInnerInstance { .. }
            ));
            for &activatable in &definition.activatable {
                assert_eq!(model.element(activatable).flow_scope, Some(definition.inner_instance));
                assert!(model.element(activatable).incoming.is_empty());
            }
        }
        for &flow in element.outgoing.iter() {
            assert_eq!(model.flow(flow).source.0 as usize, i);
        }
        for &flow in element.incoming.iter() {
            assert_eq!(model.flow(flow).target.0 as usize, i);
        }
        let listeners = &element.listeners;
        for job in listeners.start.iter().chain(listeners.end.iter()) {
            if let rill_engine::model::ValueOrExpr::Static(job_type) = &job.job_type {
                assert!(!job_type.is_empty());
            }
        }
        match &element.kind {
            ElementKind::StartEvent
            | ElementKind::TimerStartEvent(_)
            | ElementKind::MessageStartEvent { .. }
            | ElementKind::SignalStartEvent { .. }
            | ElementKind::EventStartEvent { .. }
            | ElementKind::BoundaryEvent { .. } => assert!(listeners.start.is_empty()),
            ElementKind::ExclusiveGateway { .. }
            | ElementKind::ParallelGateway
            | ElementKind::EventBasedGateway
            | ElementKind::InclusiveGateway { .. } => assert!(listeners.end.is_empty()),
            _ => {}
        }
        match &element.kind {
            ElementKind::SubProcess {
                triggered_by_event: true,
                ..
            } => {
                assert!(element.incoming.is_empty() && element.outgoing.is_empty());
                assert!(element.boundary_events.is_empty());
                assert!(element.multi_instance.is_none());
            }
            ElementKind::EventStartEvent {
                interrupting,
                definition,
            } => {
                let scope = model.element(element.flow_scope.expect("a scope"));
                assert!(matches!(
                    scope.kind,
                    ElementKind::SubProcess {
                        triggered_by_event: true,
                        ..
                    }
                ));
                assert!(element.incoming.is_empty());
                if definition.error_code().is_some() {
                    assert!(*interrupting);
                }
            }
            ElementKind::EventBasedGateway => {
                assert!(element.outgoing.len() >= 2);
                for &flow in &element.outgoing {
                    let target = model.element(model.flow(flow).target);
                    assert!(matches!(
                        target.kind,
                        ElementKind::IntermediateCatchEvent(
                            rill_engine::model::CatchEventDefinition::Timer(_)
                                | rill_engine::model::CatchEventDefinition::Message(_)
                                | rill_engine::model::CatchEventDefinition::Signal(_)
                        )
                    ));
                    assert_eq!(target.incoming.len(), 1);
                }
            }
            ElementKind::BoundaryEvent {
                attached_to,
                definition,
                ..
            } => {
                let host = model.element(*attached_to);
                assert!(!matches!(
                    host.kind,
                    ElementKind::SubProcess {
                        triggered_by_event: true,
                        ..
                    }
                ));
                assert!(host.boundary_events.iter().any(|b| b.0 as usize == i));
                assert_eq!(host.flow_scope, element.flow_scope);
                // A compensation boundary event leads to its handler by an association,
                // every other one by its outgoing flows.
                let compensation = matches!(
                    definition,
                    rill_engine::model::TriggerDefinition::Compensation { .. }
                );
                assert_eq!(element.outgoing.is_empty(), compensation);
            }
            ElementKind::ExclusiveGateway { default_flow }
            | ElementKind::InclusiveGateway { default_flow, .. } => {
                assert!(!element.outgoing.is_empty());
                if let Some(default) = default_flow {
                    assert!(element.outgoing.contains(default));
                    assert!(model.flow(*default).condition.is_none());
                }
            }
            ElementKind::ParallelGateway => assert!(!element.outgoing.is_empty()),
            ElementKind::CallActivity(called) => {
                if let rill_engine::model::ValueOrExpr::Static(id) = &called.process_id {
                    assert!(!id.is_empty());
                }
                if let rill_engine::model::CalledBinding::VersionTag(tag) = &called.binding {
                    assert!(!tag.is_empty());
                }
            }
            ElementKind::TimerStartEvent(timer) => {
                assert_eq!(element.flow_scope.map(|s| s.0), Some(0));
                assert!(element.incoming.is_empty());
                assert!(!matches!(timer, rill_engine::model::TimerDefinition::Duration(_)));
            }
            ElementKind::MessageStartEvent { message_name } => {
                assert_eq!(element.flow_scope.map(|s| s.0), Some(0));
                assert!(element.incoming.is_empty());
                assert!(!message_name.is_empty());
            }
            ElementKind::SignalStartEvent { signal_name } => {
                assert_eq!(element.flow_scope.map(|s| s.0), Some(0));
                assert!(element.incoming.is_empty());
                assert!(!signal_name.is_empty());
            }
            ElementKind::EndEvent(_) => assert!(element.outgoing.is_empty()),
            _ => {}
        }
    }
    for flow in &model.flows {
        assert!((flow.source.0 as usize) < count && (flow.target.0 as usize) < count);
        let source = model.element(flow.source);
        assert_eq!(source.flow_scope, model.element(flow.target).flow_scope);
        if flow.condition.is_some() {
            assert!(matches!(
                source.kind,
                ElementKind::ExclusiveGateway { .. } | ElementKind::InclusiveGateway { .. }
            ));
        }
    }
}
