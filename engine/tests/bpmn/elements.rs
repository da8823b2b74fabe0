//! Each element family parses into the expected model shape.

use rill_engine::model::{
    CatchEventDefinition, ElementKind, ProcessModel, ThrowEventDefinition, TimerDefinition,
    TriggerDefinition,
};
use rill_feel::temporal::{IsoCycle, IsoDuration};
use rill_protocol::value::{BpmnElementType, BpmnEventType};

use super::*;

fn duration_millis(millis: i64) -> IsoDuration {
    IsoDuration { months: 0, millis }
}

#[test]
fn service_tasks_carry_job_type_retries_headers_and_mappings() {
    let model = parse_one("elements/service-task.bpmn");
    assert_eq!(model.bpmn_process_id, "service-task");
    assert_eq!(model.name.as_deref(), Some("Service tasks"));

    let charge = el(&model, "Charge");
    assert_eq!(charge.name.as_deref(), Some("Charge card"));
    assert_eq!(charge.element_type(), BpmnElementType::ServiceTask);
    let ElementKind::ServiceTask(job) = &charge.kind else {
        panic!("Charge is {:?}", charge.kind)
    };
    assert_eq!(static_value(&job.job_type), "charge-card");
    assert_eq!(static_value(&job.retries), 5);
    assert_eq!(
        job.headers,
        vec![
            ("provider".to_owned(), "acme-pay".to_owned()),
            ("region".to_owned(), "eu".to_owned())
        ]
    );
    assert_eq!(charge.inputs.len(), 1);
    assert_eq!(charge.inputs[0].source.source(), "order.total");
    assert_eq!(charge.inputs[0].target, vec!["amount"]);
    assert_eq!(charge.outputs.len(), 1);
    assert_eq!(charge.outputs[0].source.source(), "transactionId");
    assert_eq!(charge.outputs[0].target, vec!["payment", "transactionId"]);

    let ElementKind::ServiceTask(dynamic) = &el(&model, "Dynamic").kind else {
        panic!("Dynamic is a service task")
    };
    assert_eq!(expr_source(&dynamic.job_type), "\"ship-\" + carrier");
    assert_eq!(expr_source(&dynamic.retries), "retryCount + 1");

    let ElementKind::ServiceTask(defaults) = &el(&model, "Defaults").kind else {
        panic!("Defaults is a service task")
    };
    assert_eq!(
        static_value(&defaults.retries),
        3,
        "Zeebe's default retries"
    );
    assert!(defaults.headers.is_empty());
    assert!(el(&model, "Defaults").inputs.is_empty());

    // The chain Start -> Charge -> Dynamic -> Defaults -> End, all in the process.
    assert_eq!(
        model.start_event(ProcessModel::ROOT),
        Some(idx(&model, "Start"))
    );
    assert_eq!(
        ids(&model, model.children(ProcessModel::ROOT)),
        vec!["Start", "Charge", "Dynamic", "Defaults", "End"]
    );
    for id in ["Start", "Charge", "Dynamic", "Defaults", "End"] {
        assert_eq!(el(&model, id).flow_scope, Some(ProcessModel::ROOT), "{id}");
    }
    assert_eq!(outgoing(&model, "Charge"), vec!["F2"]);
    assert_eq!(incoming(&model, "Charge"), vec!["F1"]);
    let f2 = flow(&model, "F2");
    assert_eq!(
        (f2.source, f2.target),
        (idx(&model, "Charge"), idx(&model, "Dynamic"))
    );
    assert!(f2.condition.is_none());
    assert!(outgoing(&model, "End").is_empty());
}

#[test]
fn receive_task_waits_for_a_message() {
    let model = parse_one("elements/receive-task.bpmn");
    let task = el(&model, "AwaitPayment");
    assert_eq!(task.element_type(), BpmnElementType::ReceiveTask);
    assert_eq!(task.event_type(), BpmnEventType::Message);
    let ElementKind::ReceiveTask(message) = &task.kind else {
        panic!("AwaitPayment is {:?}", task.kind)
    };
    assert_eq!(static_value(&message.message_name), "payment-received");
    assert_eq!(expr_source(&message.correlation_key), "orderId");
    assert_eq!(task.outputs[0].target, vec!["paidAmount"]);
}

#[test]
fn exclusive_gateway_has_conditions_in_document_order_and_a_default() {
    let model = parse_one("elements/exclusive-gateway.bpmn");
    let split = el(&model, "Split");
    let ElementKind::ExclusiveGateway { default_flow } = split.kind else {
        panic!("Split is {:?}", split.kind)
    };
    assert_eq!(default_flow, model.flow_by_id("Small"));
    assert_eq!(outgoing(&model, "Split"), vec!["Big", "Medium", "Small"]);
    let condition = |id: &str| {
        flow(&model, id)
            .condition
            .as_ref()
            .map(|c| c.source().to_owned())
    };
    assert_eq!(condition("Big").as_deref(), Some("amount > 1000"));
    assert_eq!(condition("Medium").as_deref(), Some("amount > 100"));
    assert_eq!(condition("Small"), None);

    let merge = el(&model, "Merge");
    assert!(matches!(
        merge.kind,
        ElementKind::ExclusiveGateway { default_flow: None }
    ));
    assert_eq!(incoming(&model, "Merge"), vec!["Small", "F2", "F3"]);
}

#[test]
fn parallel_gateway_forks_and_joins() {
    let model = parse_one("elements/parallel-gateway.bpmn");
    assert_eq!(
        el(&model, "Fork").element_type(),
        BpmnElementType::ParallelGateway
    );
    assert_eq!(outgoing(&model, "Fork"), vec!["F2", "F3", "F4"]);
    assert_eq!(incoming(&model, "Join"), vec!["F5", "F6", "F7"]);
    assert_eq!(outgoing(&model, "Join"), vec!["F8"]);
    assert!(model.flows.iter().all(|f| f.condition.is_none()));
}

#[test]
fn timer_catch_events_parse_static_values_at_deploy_time() {
    let model = parse_one("elements/timer-catch.bpmn");
    let timer = |id: &str| match &el(&model, id).kind {
        ElementKind::IntermediateCatchEvent(CatchEventDefinition::Timer(timer)) => timer,
        other => panic!("{id} is {other:?}"),
    };
    assert!(matches!(timer("WaitDuration"),
        TimerDefinition::Duration(d) if static_value(d) == duration_millis(5_400_000)));
    assert!(matches!(timer("WaitDate"),
        TimerDefinition::Date(d) if static_value(d) == 1_893_492_000_000));
    assert!(matches!(timer("WaitExpr"),
        TimerDefinition::Duration(d) if expr_source(d) == "delay"));
    assert_eq!(el(&model, "WaitDate").event_type(), BpmnEventType::Timer);
    assert_eq!(
        el(&model, "WaitDate").element_type(),
        BpmnElementType::IntermediateCatchEvent
    );
}

#[test]
fn message_catch_events_resolve_the_message_and_its_subscription() {
    let model = parse_one("elements/message-catch.bpmn");
    let message = |id: &str| match &el(&model, id).kind {
        ElementKind::IntermediateCatchEvent(CatchEventDefinition::Message(m)) => m,
        other => panic!("{id} is {other:?}"),
    };
    let shipment = message("AwaitShipment");
    assert_eq!(static_value(&shipment.message_name), "shipment-confirmed");
    assert_eq!(expr_source(&shipment.correlation_key), "order.id");
    assert_eq!(
        el(&model, "AwaitShipment").outputs[0].target,
        vec!["shipment", "trackingId"]
    );

    let dynamic = message("AwaitDynamic");
    assert_eq!(expr_source(&dynamic.message_name), "\"status-\" + region");
    assert_eq!(static_value(&dynamic.correlation_key), "static-key");
    assert_eq!(
        el(&model, "AwaitDynamic").event_type(),
        BpmnEventType::Message
    );
}

#[test]
fn boundary_events_attach_to_tasks_and_subprocesses() {
    let model = parse_one("elements/boundary-events.bpmn");
    assert_eq!(
        ids(&model, &el(&model, "Pay").boundary_events),
        vec!["PayTimeout", "PayReminder", "PayDeclined", "PayAnyError"]
    );
    assert_eq!(
        ids(&model, &el(&model, "Wait").boundary_events),
        vec!["WaitTimeout"]
    );
    assert_eq!(
        ids(&model, &el(&model, "Sub").boundary_events),
        vec!["SubError"]
    );

    let boundary = |id: &str| match &el(&model, id).kind {
        ElementKind::BoundaryEvent {
            attached_to,
            interrupting,
            definition,
        } => (
            model.element(*attached_to).id.as_str(),
            *interrupting,
            definition,
        ),
        other => panic!("{id} is {other:?}"),
    };

    let (host, interrupting, definition) = boundary("PayTimeout");
    assert_eq!((host, interrupting), ("Pay", true));
    assert!(matches!(definition,
        TriggerDefinition::Timer(TimerDefinition::Duration(d)) if static_value(d) == duration_millis(30_000)));

    let (host, interrupting, definition) = boundary("PayReminder");
    assert_eq!((host, interrupting), ("Pay", false));
    let expected = IsoCycle {
        repetitions: 3,
        interval: duration_millis(10_000),
    };
    assert!(matches!(definition,
        TriggerDefinition::Timer(TimerDefinition::Cycle(c)) if static_value(c) == expected));
    assert_eq!(
        el(&model, "PayReminder").outputs[0].target,
        vec!["reminded"]
    );

    let (_, interrupting, definition) = boundary("PayDeclined");
    assert!(interrupting);
    assert!(matches!(definition,
        TriggerDefinition::Error { error_code: Some(code) } if code == "CARD_DECLINED"));
    let (_, _, definition) = boundary("PayAnyError");
    assert!(matches!(
        definition,
        TriggerDefinition::Error { error_code: None }
    ));
    assert_eq!(el(&model, "PayAnyError").event_type(), BpmnEventType::Error);

    let (host, _, definition) = boundary("WaitTimeout");
    assert_eq!(host, "Wait");
    assert!(matches!(definition,
        TriggerDefinition::Timer(TimerDefinition::Date(d)) if static_value(d) == 1_906_495_200_000));

    // An error without a code catches every error, as no errorRef does.
    let (host, _, definition) = boundary("SubError");
    assert_eq!(host, "Sub");
    assert!(matches!(
        definition,
        TriggerDefinition::Error { error_code: None }
    ));

    assert_eq!(
        el(&model, "PayTimeout").flow_scope,
        Some(ProcessModel::ROOT)
    );
    assert!(incoming(&model, "PayTimeout").is_empty());
    assert_eq!(outgoing(&model, "PayTimeout"), vec!["F5"]);
}

#[test]
fn end_events_none_terminate_and_error() {
    let model = parse_one("elements/end-events.bpmn");
    let end = |id: &str| match &el(&model, id).kind {
        ElementKind::EndEvent(kind) => kind,
        other => panic!("{id} is {other:?}"),
    };
    assert!(matches!(end("Done"), ThrowEventDefinition::None));
    assert_eq!(el(&model, "Done").event_type(), BpmnEventType::None);
    assert!(matches!(end("Stop"), ThrowEventDefinition::Terminate));
    assert_eq!(el(&model, "Stop").event_type(), BpmnEventType::Terminate);
    assert!(matches!(end("Fail"),
        ThrowEventDefinition::Error { error_code } if static_value(error_code) == "OUT_OF_STOCK"));
    assert!(matches!(end("SubFail"),
        ThrowEventDefinition::Error { error_code } if expr_source(error_code) == "errorCode"));
    assert_eq!(el(&model, "SubFail").flow_scope, Some(idx(&model, "Sub")));
    assert_eq!(el(&model, "SubFail").event_type(), BpmnEventType::Error);
}

#[test]
fn subprocesses_nest_with_their_own_start_events() {
    let model = parse_one("elements/subprocess.bpmn");
    let all: Vec<&str> = model.elements.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        all,
        vec![
            "subprocess",
            "Start",
            "Outer",
            "OuterStart",
            "Inner",
            "InnerStart",
            "InnerWork",
            "InnerEnd",
            "OuterEnd",
            "End"
        ],
        "document order, each subprocess followed by its content"
    );
    let outer = idx(&model, "Outer");
    let inner = idx(&model, "Inner");
    assert_eq!(
        el(&model, "Outer").element_type(),
        BpmnElementType::SubProcess
    );
    assert_eq!(
        ids(&model, model.children(outer)),
        vec!["OuterStart", "Inner", "OuterEnd"]
    );
    assert_eq!(
        ids(&model, model.children(inner)),
        vec!["InnerStart", "InnerWork", "InnerEnd"]
    );
    assert_eq!(model.start_event(outer), Some(idx(&model, "OuterStart")));
    assert_eq!(model.start_event(inner), Some(idx(&model, "InnerStart")));
    assert_eq!(el(&model, "Inner").flow_scope, Some(outer));
    assert_eq!(el(&model, "InnerWork").flow_scope, Some(inner));
    assert_eq!(el(&model, "Outer").flow_scope, Some(ProcessModel::ROOT));
    assert_eq!(el(&model, "Outer").inputs[0].target, vec!["batch"]);
    assert_eq!(el(&model, "Outer").outputs[0].target, vec!["result"]);
    let i1 = flow(&model, "I1");
    assert_eq!(
        (i1.source, i1.target),
        (idx(&model, "InnerStart"), idx(&model, "InnerWork"))
    );
    assert!(model.children(idx(&model, "InnerWork")).is_empty());
    assert_eq!(model.start_event(idx(&model, "InnerWork")), None);
}

#[test]
fn namespace_prefixes_do_not_matter() {
    for path in [
        "elements/prefix-bpmn2.bpmn",
        "elements/default-namespace.bpmn",
    ] {
        let model = parse_one(path);
        let ElementKind::ServiceTask(job) = &el(&model, "Work").kind else {
            panic!("{path}: Work is a service task")
        };
        assert_eq!(static_value(&job.job_type), "work", "{path}");
    }
    let model = parse_one("elements/default-namespace.bpmn");
    assert!(matches!(&el(&model, "Wait").kind,
        ElementKind::IntermediateCatchEvent(CatchEventDefinition::Timer(TimerDefinition::Duration(d)))
            if static_value(d) == duration_millis(300_000)));
}

#[test]
fn collaborations_deploy_only_the_executable_processes() {
    let models = parse_ok("elements/collaboration.bpmn");
    let ids: Vec<&str> = models.iter().map(|m| m.bpmn_process_id.as_str()).collect();
    assert_eq!(
        ids,
        vec!["shop"],
        "the non-executable 'customer' process is skipped"
    );
    assert_eq!(models[0].name.as_deref(), Some("Shop"));
}

#[test]
fn a_file_can_hold_several_processes() {
    let models = parse_ok("elements/two-processes.bpmn");
    let ids: Vec<&str> = models.iter().map(|m| m.bpmn_process_id.as_str()).collect();
    assert_eq!(ids, vec!["first", "second"]);
    assert!(
        models[0].element_by_id("Work2").is_none(),
        "processes do not share elements"
    );
    assert!(models[1].element_by_id("Work2").is_some());
}

#[test]
fn artifacts_documentation_and_diagrams_are_read_past() {
    let model = parse_one("elements/artifacts.bpmn");
    let all: Vec<&str> = model.elements.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(all, vec!["artifacts", "Start", "Work", "End"]);
}

#[test]
fn the_process_element_is_the_root() {
    let model = parse_one("elements/parallel-gateway.bpmn");
    let root = model.element(ProcessModel::ROOT);
    assert_eq!(root.id, "parallel-gateway");
    assert_eq!(root.element_type(), BpmnElementType::Process);
    assert_eq!(root.flow_scope, None);
    assert_eq!(
        model.element_by_id("parallel-gateway"),
        Some(ProcessModel::ROOT)
    );
}

#[test]
fn parsing_is_deterministic() {
    for path in [
        "order-fulfilment.bpmn",
        "elements/boundary-events.bpmn",
        "elements/subprocess.bpmn",
    ] {
        let first = parse_one(path);
        let second = parse_one(path);
        // Elements and flows are vectors in document order: compare them whole.
        assert_eq!(
            format!("{:?}", first.elements),
            format!("{:?}", second.elements),
            "{path}"
        );
        assert_eq!(
            format!("{:?}", first.flows),
            format!("{:?}", second.flows),
            "{path}"
        );
        assert_eq!(first.element_index.len(), first.elements.len(), "{path}");
        assert_eq!(first.flow_index.len(), first.flows.len(), "{path}");
    }
}

#[test]
fn undefined_and_manual_tasks_carry_mappings_and_boundary_events() {
    let model = parse_one("elements/tasks.bpmn");
    let review = el(&model, "Review");
    assert!(matches!(review.kind, ElementKind::Task));
    assert_eq!(review.element_type(), BpmnElementType::Task);
    assert_eq!(review.event_type(), BpmnEventType::Unspecified);
    assert_eq!(review.inputs[0].target, vec!["amount"]);
    assert_eq!(review.outputs[0].source.source(), "amount * 2");
    assert_eq!(ids(&model, &review.boundary_events), vec!["ReviewTooLong"]);

    let sign = el(&model, "Sign");
    assert!(matches!(sign.kind, ElementKind::ManualTask));
    assert_eq!(sign.element_type(), BpmnElementType::ManualTask);
    assert_eq!(sign.outputs[0].target, vec!["status"]);

    assert_eq!(
        ids(&model, model.children(idx(&model, "Packing"))),
        vec!["PackingStart", "Pack", "Label"]
    );
    assert!(outgoing(&model, "Label").is_empty());
}

#[test]
fn throw_events_and_links_pair_within_their_scope() {
    let model = parse_one("elements/throw-events.bpmn");
    let received = el(&model, "Received");
    assert!(matches!(
        received.kind,
        ElementKind::IntermediateThrowEvent(ThrowEventDefinition::None)
    ));
    assert_eq!(
        received.element_type(),
        BpmnElementType::IntermediateThrowEvent
    );
    assert_eq!(received.event_type(), BpmnEventType::None);
    assert_eq!(received.outputs[0].target, vec!["received"]);

    let link_target = |id: &str| match &el(&model, id).kind {
        ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Link { name, catch_event }) => {
            (name.clone(), model.element(*catch_event).id.clone())
        }
        other => panic!("{id} is {other:?}"),
    };
    // The subprocess's "Skip" goes to the subprocess's catch event, not the root's.
    assert_eq!(
        link_target("GoSkip"),
        ("Skip".to_owned(), "Skipped".to_owned())
    );
    assert_eq!(
        link_target("RetryThrow"),
        ("Retry".to_owned(), "RetryCatch".to_owned())
    );
    let catch = el(&model, "RetryCatch");
    assert_eq!(catch.event_type(), BpmnEventType::Link);
    assert!(matches!(
        &catch.kind,
        ElementKind::IntermediateCatchEvent(CatchEventDefinition::Link { name }) if name == "Retry"
    ));
    assert!(catch.incoming.is_empty());
    assert!(outgoing(&model, "RetryThrow").is_empty());
    assert_eq!(incoming(&model, "Work"), vec!["F3", "F6"]);
}

#[test]
fn script_tasks_hold_an_expression_or_a_job() {
    use rill_engine::model::ScriptDefinition;
    let model = parse_one("elements/script-tasks.bpmn");
    let sum = el(&model, "Sum");
    assert_eq!(sum.element_type(), BpmnElementType::ScriptTask);
    let ElementKind::ScriptTask(ScriptDefinition::Expression {
        expression,
        result_variable,
    }) = &sum.kind
    else {
        panic!("Sum is {:?}", sum.kind)
    };
    assert_eq!(expression.source(), "a + b");
    assert_eq!(result_variable, "sum");
    let fee = el(&model, "Fee");
    assert_eq!(fee.inputs[0].target, vec!["base"]);
    assert_eq!(fee.outputs[0].target, vec!["orderFee"]);

    let ElementKind::ScriptTask(ScriptDefinition::Job(job)) = &el(&model, "Remote").kind else {
        panic!("Remote is a job-worker script task")
    };
    assert_eq!(static_value(&job.job_type), "script-worker");
    assert_eq!(static_value(&job.retries), 2);
    assert_eq!(job.headers.len(), 2);
    assert!(el(&model, "Remote").kind.job_definition().is_some());
    assert!(sum.kind.job_definition().is_none());
}

#[test]
fn send_tasks_and_message_throw_events_are_jobs() {
    let model = parse_one("elements/message-throw.bpmn");
    let notify = el(&model, "Notify");
    assert_eq!(notify.element_type(), BpmnElementType::SendTask);
    let ElementKind::SendTask(job) = &notify.kind else {
        panic!("Notify is {:?}", notify.kind)
    };
    assert_eq!(static_value(&job.job_type), "notify");
    assert_eq!(job.headers, vec![("topic".to_owned(), "orders".to_owned())]);

    let shipped = el(&model, "Shipped");
    assert_eq!(shipped.event_type(), BpmnEventType::Message);
    let ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Message(job)) = &shipped.kind
    else {
        panic!("Shipped is {:?}", shipped.kind)
    };
    assert_eq!(static_value(&job.job_type), "publish-shipped");
    assert_eq!(shipped.inputs[0].target, vec!["key"]);
    assert_eq!(shipped.outputs[0].target, vec!["shippedMessageId"]);

    let done = el(&model, "Done");
    assert_eq!(done.element_type(), BpmnElementType::EndEvent);
    assert_eq!(done.event_type(), BpmnEventType::Message);
    let ElementKind::EndEvent(ThrowEventDefinition::Message(job)) = &done.kind else {
        panic!("Done is {:?}", done.kind)
    };
    assert_eq!(static_value(&job.job_type), "publish-closed");
    assert_eq!(static_value(&job.retries), 5);
}

#[test]
fn start_and_end_events_carry_output_mappings() {
    let model = parse_one("elements/start-end-mappings.bpmn");
    let start = el(&model, "Start");
    assert_eq!(start.outputs.len(), 2);
    assert_eq!(start.outputs[1].target, vec!["order", "state"]);
    assert!(start.inputs.is_empty());
    assert_eq!(
        el(&model, "PricingStart").outputs[0].source.source(),
        "itemCount * 10"
    );
    assert_eq!(el(&model, "PricingEnd").outputs[0].target, vec!["price"]);
    assert!(matches!(
        el(&model, "End").kind,
        ElementKind::EndEvent(ThrowEventDefinition::Terminate)
    ));
    assert_eq!(el(&model, "End").outputs.len(), 1);
}

#[test]
fn inclusive_gateways_fork_with_conditions_and_joins_know_what_can_reach_them() {
    let mut models = parse_ok("elements/inclusive-gateway.bpmn");
    assert_eq!(models.len(), 2);
    let model = models.remove(0);
    let split = el(&model, "Split");
    assert_eq!(split.element_type(), BpmnElementType::InclusiveGateway);
    let ElementKind::InclusiveGateway {
        default_flow,
        upstream,
    } = &split.kind
    else {
        panic!("Split is {:?}", split.kind)
    };
    assert_eq!(*default_flow, model.flow_by_id("ToNothing"));
    assert!(upstream.is_empty(), "a fork does not wait");
    assert_eq!(
        flow(&model, "ToPasta")
            .condition
            .as_ref()
            .map(|c| c.source()),
        Some("pasta")
    );
    assert!(flow(&model, "ToNothing").condition.is_none());

    let join = el(&model, "Join");
    let ElementKind::InclusiveGateway { upstream, .. } = &join.kind else {
        panic!("Join is {:?}", join.kind)
    };
    let mut ids: Vec<&str> = upstream
        .iter()
        .map(|i| model.element(*i).id.as_str())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, vec!["Pasta", "Salad", "Served", "Split", "Start"]);
    assert_eq!(
        model.inclusive_joins(ProcessModel::ROOT),
        &[idx(&model, "Join")]
    );

    // In a subprocess, the join belongs to the subprocess's scope.
    let nested = models.remove(0);
    let kitchen = idx(&nested, "Kitchen");
    assert_eq!(
        nested.inclusive_joins(kitchen),
        &[idx(&nested, "KitchenJoin")]
    );
    assert!(nested.inclusive_joins(ProcessModel::ROOT).is_empty());
}

#[test]
fn multi_instance_activities_carry_their_loop_characteristics() {
    let models = parse_ok("elements/multi-instance.bpmn");
    assert_eq!(models.len(), 4);
    let pick = el(&models[0], "Pick");
    assert_eq!(pick.element_type(), BpmnElementType::ServiceTask);
    let mi = pick.multi_instance.as_ref().expect("multi-instance");
    assert!(!mi.sequential, "parallel is the default");
    assert_eq!(mi.input_collection.source(), "lines");
    assert_eq!(mi.input_element.as_deref(), Some("item"));
    assert!(mi.completion_condition.is_none());
    assert_eq!(
        pick.boundary_events.len(),
        1,
        "the boundary attaches to the activity"
    );
    let ship = el(&models[1], "Ship");
    let mi = ship.multi_instance.as_ref().expect("multi-instance");
    assert!(mi.sequential);
    assert_eq!(
        mi.output_element_variable(),
        None,
        "a context is not a plain variable"
    );
    let ballot = el(&models[2], "Ballot");
    assert!(matches!(ballot.kind, ElementKind::SubProcess { .. }));
    assert!(
        ballot
            .multi_instance
            .as_ref()
            .expect("mi")
            .completion_condition
            .is_some()
    );
    assert!(el(&models[2], "Vote").multi_instance.is_none());
}

#[test]
fn execution_listeners_are_jobs_in_document_order_per_event_type() {
    let model = parse_one("elements/execution-listeners.bpmn");
    let process = model.element(ProcessModel::ROOT);
    let types = |jobs: &[rill_engine::model::JobDefinition]| -> Vec<String> {
        jobs.iter()
            .map(|job| match &job.job_type {
                ValueOrExpr::Static(t) => t.clone(),
                ValueOrExpr::Expr(e) => format!("={}", e.source()),
            })
            .collect()
    };
    assert_eq!(types(&process.listeners.start), vec!["process-start"]);
    assert_eq!(types(&process.listeners.end), vec!["process-end"]);

    let work = el(&model, "Work");
    assert_eq!(
        types(&work.listeners.start),
        vec!["prepare", "=\"check-\" + region"]
    );
    assert_eq!(static_value(&work.listeners.start[1].retries), 1);
    assert_eq!(static_value(&work.listeners.start[0].retries), 3);
    assert!(
        work.listeners
            .start
            .iter()
            .all(|job| job.headers.is_empty())
    );
    assert_eq!(types(&work.listeners.end), vec!["audit"]);

    let route = el(&model, "Route");
    assert_eq!(types(&route.listeners.start), vec!["decide"]);
    assert!(route.listeners.end.is_empty());
    assert!(el(&model, "Start").listeners.start.is_empty());
}

#[test]
fn message_boundary_events_carry_their_message_and_interrupting_flag() {
    let model = parse_one("elements/message-boundary.bpmn");
    let work = el(&model, "Work");
    assert_eq!(
        ids(&model, &work.boundary_events),
        vec!["Cancelled", "Updated", "Reminder", "Nudge"]
    );
    let ElementKind::BoundaryEvent {
        interrupting,
        definition: TriggerDefinition::Message(message),
        ..
    } = &el(&model, "Cancelled").kind
    else {
        panic!("Cancelled is a message boundary event")
    };
    assert!(*interrupting);
    assert_eq!(static_value(&message.message_name), "order-cancelled");
    assert_eq!(expr_source(&message.correlation_key), "orderId");
    let updated = el(&model, "Updated");
    assert!(matches!(
        updated.kind,
        ElementKind::BoundaryEvent {
            interrupting: false,
            definition: TriggerDefinition::Message(_),
            ..
        }
    ));
    assert_eq!(updated.event_type(), BpmnEventType::Message);
    assert_eq!(updated.outputs[0].target, vec!["lastChange"]);
    assert!(matches!(
        el(&model, "Nudge").kind,
        ElementKind::BoundaryEvent {
            interrupting: false,
            definition: TriggerDefinition::Timer(TimerDefinition::Cycle(_)),
            ..
        }
    ));
}

#[test]
fn event_subprocesses_have_one_event_start_event_and_no_flows() {
    let model = parse_one("elements/event-subprocesses.bpmn");
    let on_cancel = el(&model, "OnCancel");
    assert_eq!(on_cancel.element_type(), BpmnElementType::EventSubProcess);
    assert!(on_cancel.incoming.is_empty() && on_cancel.outgoing.is_empty());
    assert_eq!(on_cancel.flow_scope, Some(ProcessModel::ROOT));
    assert_eq!(
        ids(
            &model,
            &model
                .event_subprocess_starts(ProcessModel::ROOT)
                .collect::<Vec<_>>()
        ),
        vec!["CancelStart", "StatusStart", "SlowStart", "FailureStart"]
    );
    assert_eq!(
        model.start_event(idx(&model, "OnCancel")),
        Some(idx(&model, "CancelStart"))
    );
    assert_eq!(
        model.start_event(ProcessModel::ROOT),
        Some(idx(&model, "Start")),
        "the process still starts at its none start event"
    );
    let kinds: Vec<(bool, BpmnEventType)> =
        ["CancelStart", "StatusStart", "SlowStart", "FailureStart"]
            .iter()
            .map(|id| match &el(&model, id).kind {
                ElementKind::EventStartEvent {
                    interrupting,
                    definition,
                } => (*interrupting, definition.event_type()),
                other => panic!("{id} is {other:?}"),
            })
            .collect();
    assert_eq!(
        kinds,
        vec![
            (true, BpmnEventType::Message),
            (false, BpmnEventType::Message),
            (false, BpmnEventType::Timer),
            (true, BpmnEventType::Error),
        ]
    );
    assert_eq!(
        el(&model, "FailureStart").element_type(),
        BpmnElementType::StartEvent
    );
    assert_eq!(
        el(&model, "FailureStart").event_type(),
        BpmnEventType::Error
    );

    let nested = parse_one("elements/nested-event-subprocess.bpmn");
    let handling = idx(&nested, "Handling");
    assert_eq!(
        ids(
            &nested,
            &nested.event_subprocess_starts(handling).collect::<Vec<_>>()
        ),
        vec!["TooSlowStart", "CheckFailedStart"]
    );
    assert_eq!(el(&nested, "TooSlow").flow_scope, Some(handling));
}

#[test]
fn an_event_based_gateway_leads_to_its_catch_events() {
    let model = parse_one("elements/event-based-gateway.bpmn");
    let gateway = el(&model, "AwaitPayment");
    assert!(matches!(gateway.kind, ElementKind::EventBasedGateway));
    assert_eq!(gateway.element_type(), BpmnElementType::EventBasedGateway);
    assert_eq!(outgoing(&model, "AwaitPayment"), vec!["F2", "F3"]);
    assert_eq!(incoming(&model, "Paid"), vec!["F2"]);
    assert!(matches!(
        el(&model, "Paid").kind,
        ElementKind::IntermediateCatchEvent(CatchEventDefinition::Message(_))
    ));
    assert!(matches!(
        el(&model, "Expired").kind,
        ElementKind::IntermediateCatchEvent(CatchEventDefinition::Timer(
            TimerDefinition::Duration(ValueOrExpr::Expr(_))
        ))
    ));
}
