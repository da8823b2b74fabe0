//! Models of the Modeler corpus (`tests/fixtures/modeler/`) run end to end: instances
//! created, jobs worked, messages and signals correlated, timers fired by the rule's
//! clock, user tasks completed; each test asserts the path taken and the variables left.

use rill_engine::ProcessInstanceState;
use rill_protocol::value::{BpmnElementType, JobRecord, UserTaskRecord};
use rill_protocol::{
    BroadcastSignal, Command, Intent, JsonValue, Key, RecordValue, ThrowError, UserTaskCommand,
    ValueType,
};
use serde_json::{Value, json};

use super::modeler_corpus::CORPUS;
use super::*;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

/// Deploys corpus files in one deployment.
fn deploy(rule: &mut EngineRule, files: &[&str]) {
    let resources: Vec<(&str, Vec<u8>)> = files
        .iter()
        .map(|name| (*name, fixture(&format!("{CORPUS}/{name}"))))
        .collect();
    let outcome = rule.deploy(&resources);
    assert!(!outcome.is_rejected(), "{files:?}: {:?}", outcome.response);
}

fn state(rule: &mut EngineRule, instance: Key) -> ProcessInstanceState {
    rule.instance_state(instance).expect("the instance").state
}

/// Activates the one job of `job_type`, completes it with `variables`, returns it.
fn work(rule: &mut EngineRule, job_type: &str, variables: Value) -> JobRecord {
    let (key, job) = rule.job(job_type);
    let outcome = rule.complete(key, variables);
    assert!(!outcome.is_rejected(), "{job_type}: {:?}", outcome.response);
    job
}

fn throw_error(rule: &mut EngineRule, job_type: &str, code: &str, variables: Value) {
    let (job_key, _) = rule.job(job_type);
    let outcome = rule.process(Command::ThrowError(ThrowError {
        job_key,
        error_code: code.to_owned(),
        error_message: format!("{job_type} failed"),
        variables: JsonValue::from(variables),
    }));
    assert!(!outcome.is_rejected(), "{job_type}: {:?}", outcome.response);
}

/// The newest user task of `element_id`, as its last CREATED or ASSIGNED record tells it
/// (Zeebe 8.8 creates the task, then assigns the model's assignee).
fn user_task(rule: &EngineRule, element_id: &str) -> UserTaskRecord {
    rule.records()
        .events()
        .of_type(ValueType::UserTask)
        .records
        .iter()
        .filter(|r| matches!(r.intent, Intent::Created | Intent::Assigned))
        .filter_map(|r| match &r.value {
            RecordValue::UserTask(task) if task.element_id == element_id => Some(task.clone()),
            _ => None,
        })
        .next_back()
        .unwrap_or_else(|| panic!("no user task '{element_id}' created"))
}

fn complete_user_task(rule: &mut EngineRule, element_id: &str, variables: Value) {
    let task = user_task(rule, element_id);
    let outcome = rule.process(Command::UserTask(UserTaskCommand::Complete {
        user_task_key: Key(task.user_task_key),
        variables: JsonValue::from(variables),
        action: String::new(),
    }));
    assert!(
        !outcome.is_rejected(),
        "{element_id}: {:?}",
        outcome.response
    );
}

fn publish(rule: &mut EngineRule, name: &str, correlation_key: &str, variables: Value) {
    let outcome = rule.publish(name, correlation_key, 60_000, variables);
    assert!(!outcome.is_rejected(), "{name}: {:?}", outcome.response);
}

fn broadcast(rule: &mut EngineRule, signal_name: &str, variables: Value) {
    let outcome = rule.process(Command::BroadcastSignal(BroadcastSignal {
        signal_name: signal_name.to_owned(),
        variables: JsonValue::from(variables),
    }));
    assert!(
        !outcome.is_rejected(),
        "{signal_name}: {:?}",
        outcome.response
    );
}

/// Moves the clock on and fires what is due.
fn pass(rule: &mut EngineRule, millis: i64) {
    rule.advance(millis);
    rule.fire_due();
}

/// The ids of the elements of `instance` (its call activities' children excluded) that
/// completed, in order; the process itself left out.
fn completed(rule: &EngineRule, instance: Key) -> Vec<String> {
    element_ids(rule, instance, Intent::ElementCompleted)
}

fn element_ids(rule: &EngineRule, instance: Key, intent: Intent) -> Vec<String> {
    rule.records()
        .events()
        .of_type(ValueType::ProcessInstance)
        .with_intent(intent)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessInstance(v)
                if v.process_instance_key == instance.get()
                    && v.bpmn_element_type != BpmnElementType::Process =>
            {
                Some(v.element_id.clone())
            }
            _ => None,
        })
        .collect()
}

/// The job types created for `instance`, in order.
fn job_types(rule: &EngineRule, instance: Key) -> Vec<String> {
    rule.records()
        .events()
        .of_type(ValueType::Job)
        .with_intent(Intent::Created)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::Job(job) if job.process_instance_key == instance.get() => {
                Some(job.job_type.clone())
            }
            _ => None,
        })
        .collect()
}

fn header<'a>(job: &'a JobRecord, key: &str) -> Option<&'a str> {
    job.custom_headers.get(key).map(String::as_str)
}

#[test]
fn order_process_ships_what_is_in_stock_and_notifies_about_what_is_not() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["order-process.bpmn"]);
    let order = json!({
        "orderId": "A-1001",
        "items": [{"sku": "mug", "quantity": 2}],
        "orderTotal": 24.5,
        "customer": {"id": "c-7"}
    });

    let shipped = rule.create("order-process", order.clone());
    let check = work(&mut rule, "check-stock", json!({"available": true}));
    assert_eq!(check.variables.to_value()["items"], order["items"]);
    let charge = work(
        &mut rule,
        "charge-payment",
        json!({"transactionId": "tx-9"}),
    );
    let inputs = charge.variables.to_value();
    assert_eq!(
        (&inputs["amount"], &inputs["customerId"]),
        (&json!(24.5), &json!("c-7"))
    );
    let ship = work(&mut rule, "ship-order", json!({}));
    assert_eq!(header(&ship, "carrier"), Some("DHL"));
    assert_eq!(header(&ship, "service"), Some("express"));
    assert_eq!(state(&mut rule, shipped), ProcessInstanceState::Completed);
    assert_eq!(
        completed(&rule, shipped),
        [
            "OrderReceived",
            "CheckStock",
            "Gateway_InStock",
            "ChargePayment",
            "ShipOrder",
            "OrderShipped"
        ]
    );
    let variables = rule.variables(shipped);
    assert_eq!(variables["inStock"], json!(true));
    assert_eq!(variables["paymentTransactionId"], json!("tx-9"));
    assert!(
        variables.get("available").is_none(),
        "mapped to inStock only"
    );

    let rejected = rule.create("order-process", order);
    work(&mut rule, "check-stock", json!({"available": false}));
    let notify = work(&mut rule, "notify-customer", json!({}));
    assert_eq!(
        notify.variables.to_value()["text"],
        json!("Sorry, order A-1001 is out of stock")
    );
    assert_eq!(state(&mut rule, rejected), ProcessInstanceState::Completed);
    assert_eq!(
        completed(&rule, rejected).last().map(String::as_str),
        Some("OrderRejected")
    );
    assert!(!job_types(&rule, rejected).contains(&"charge-payment".to_owned()));
    rule.assert_replay_matches();
}

#[test]
fn loan_application_decides_with_its_table_and_asks_an_officer_with_its_form() {
    let mut rule = EngineRule::new();
    deploy(
        &mut rule,
        &["loan-application.bpmn", "loan-risk.dmn", "loan-review.form"],
    );

    // Small amount, good credit: low risk, paid out without a person.
    let low = rule.create(
        "loan-application",
        json!({"amount": 5000, "creditScore": 720}),
    );
    work(&mut rule, "pay-out-loan", json!({}));
    assert_eq!(state(&mut rule, low), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(low)["risk"], json!("low"));
    assert_eq!(
        completed(&rule, low).last().map(String::as_str),
        Some("LoanGranted")
    );

    // A larger amount: an officer reviews it in the linked form.
    let medium = rule.create(
        "loan-application",
        json!({"amount": 40000, "creditScore": 700}),
    );
    assert_eq!(rule.variables(medium)["risk"], json!("medium"));
    let task = user_task(&rule, "ReviewApplication");
    assert_eq!(task.candidate_groups_list, ["loan-officers"]);
    assert!(
        task.form_key > 0,
        "the deployed form's key: {}",
        task.form_key
    );
    // dueDate = now + 2 days, from the engine's clock.
    assert!(
        task.due_date.starts_with("2023-11-16T"),
        "{}",
        task.due_date
    );
    complete_user_task(&mut rule, "ReviewApplication", json!({"approved": true}));
    work(&mut rule, "pay-out-loan", json!({}));
    assert_eq!(state(&mut rule, medium), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(medium)["reviewApproved"], json!(true));

    // Poor credit: the first rule of the FIRST table, rejected by letter.
    let high = rule.create(
        "loan-application",
        json!({"amount": 5000, "creditScore": 420}),
    );
    let letter = work(&mut rule, "send-letter", json!({}));
    assert_eq!(header(&letter, "template"), Some("loan-rejected"));
    assert_eq!(state(&mut rule, high), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(high)["risk"], json!("high"));
    assert_eq!(
        completed(&rule, high).last().map(String::as_str),
        Some("LoanRejected")
    );
    rule.assert_replay_matches();
}

#[test]
fn a_declined_card_is_caught_updated_by_the_customer_and_charged_again() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["payment-process.bpmn"]);
    let instance = rule.create(
        "payment-process",
        json!({"orderId": 77, "customerId": "c-1", "cardNumber": "4111-0000", "amount": 30}),
    );
    let (job_key, first) = rule.job("charge-credit-card");
    // retries="=if attempts = null then 3 else 1"
    assert_eq!(first.retries, 3);
    let outcome = rule.process(Command::ThrowError(ThrowError {
        job_key,
        error_code: "CARD_DECLINED".to_owned(),
        error_message: "insufficient funds".to_owned(),
        variables: JsonValue::from(json!({"declineReason": "insufficient funds"})),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);

    let task = user_task(&rule, "UpdateCardDetails");
    assert_eq!(task.assignee, "c-1");
    assert_eq!(
        task.external_form_reference,
        "https://shop.example.com/payment/77"
    );
    complete_user_task(
        &mut rule,
        "UpdateCardDetails",
        json!({"newCardNumber": "5500-1111"}),
    );
    let second = work(
        &mut rule,
        "charge-credit-card",
        json!({"confirmation": "ok-2"}),
    );
    assert_eq!(second.retries, 1);
    assert_eq!(
        second.variables.to_value()["cardNumber"],
        json!("5500-1111")
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let variables = rule.variables(instance);
    assert_eq!(variables["lastDeclineReason"], json!("insufficient funds"));
    assert_eq!(variables["paymentConfirmation"], json!("ok-2"));
    assert_eq!(
        element_ids(&rule, instance, Intent::ElementActivated)
            .iter()
            .filter(|id| *id == "ChargeCreditCard")
            .count(),
        2
    );
    rule.assert_replay_matches();
}

#[test]
fn the_event_based_gateway_takes_the_payment_or_the_deadline() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["event-gateway-payment.bpmn"]);

    let paid = rule.create("event-gateway-payment", json!({"invoiceId": "INV-1"}));
    pass(&mut rule, 3 * DAY);
    publish(
        &mut rule,
        "payment-received",
        "INV-1",
        json!({"amount": 99.9}),
    );
    work(&mut rule, "book-payment", json!({}));
    assert_eq!(state(&mut rule, paid), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(paid)["paidAmount"], json!(99.9));
    assert!(completed(&rule, paid).contains(&"PaymentReceived".to_owned()));
    assert!(!completed(&rule, paid).contains(&"PaymentOverdue".to_owned()));

    let overdue = rule.create("event-gateway-payment", json!({"invoiceId": "INV-2"}));
    pass(&mut rule, 14 * DAY - 1);
    assert!(
        rule.activate("send-dunning-letter", 10).is_empty(),
        "not yet"
    );
    pass(&mut rule, 1);
    work(&mut rule, "send-dunning-letter", json!({}));
    assert_eq!(state(&mut rule, overdue), ProcessInstanceState::Completed);
    assert_eq!(
        completed(&rule, overdue),
        [
            "StartEvent_1",
            "Gateway_Await",
            "PaymentOverdue",
            "SendDunningLetter",
            "InvoiceOverdue"
        ]
    );
    // A late payment finds no one waiting.
    publish(&mut rule, "payment-received", "INV-2", json!({"amount": 1}));
    assert!(rule.activate("book-payment", 10).is_empty());
    rule.assert_replay_matches();
}

#[test]
fn an_open_ticket_reminds_the_team_three_times_then_escalates() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["support-ticket-reminders.bpmn"]);
    let instance = rule.create(
        "support-ticket-reminders",
        json!({"region": "emea", "severity": "critical"}),
    );
    let task = user_task(&rule, "AnswerTicket");
    assert_eq!(task.candidate_groups_list, ["support-emea"]);
    assert_eq!(task.priority, 90);

    // R3/PT4H: three reminders, four hours apart, the task still open.
    for reminder in 1..=3 {
        pass(&mut rule, 4 * HOUR);
        work(&mut rule, "remind-team", json!({}));
        assert_eq!(
            completed(&rule, instance)
                .iter()
                .filter(|id| *id == "TeamReminded")
                .count(),
            reminder
        );
    }
    pass(&mut rule, 4 * HOUR);
    assert!(rule.activate("remind-team", 10).is_empty(), "three only");
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);

    // P2D: the ticket goes to the lead, and the open task is gone.
    pass(&mut rule, 2 * DAY - 16 * HOUR);
    let escalated = user_task(&rule, "HandleEscalatedTicket");
    assert_eq!(escalated.assignee, "support-lead");
    assert_eq!(
        element_ids(&rule, instance, Intent::ElementTerminated),
        ["AnswerTicket"]
    );
    complete_user_task(&mut rule, "HandleEscalatedTicket", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        completed(&rule, instance).last().map(String::as_str),
        Some("TicketEscalated")
    );
    rule.assert_replay_matches();
}

#[test]
fn an_invalid_address_ends_in_the_error_event_subprocess_and_a_worker_error_in_the_catch_all() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["order-validation-errors.bpmn"]);

    let invalid = rule.create("order-validation-errors", json!({}));
    work(&mut rule, "check-address", json!({"addressValid": false}));
    work(&mut rule, "notify-support", json!({}));
    assert_eq!(state(&mut rule, invalid), ProcessInstanceState::Completed);
    let path = completed(&rule, invalid);
    assert_eq!(
        path.last().map(String::as_str),
        Some("ValidationFailedSubProcess")
    );
    assert!(
        element_ids(&rule, invalid, Intent::ElementActivated)
            .contains(&"InvalidAddress".to_owned())
    );
    // The error end event is terminated with its scope, as in Zeebe.
    assert_eq!(
        element_ids(&rule, invalid, Intent::ElementTerminated),
        ["InvalidAddress", "ValidateOrder"]
    );
    assert!(!job_types(&rule, invalid).contains(&"process-order".to_owned()));

    let failing = rule.create("order-validation-errors", json!({}));
    work(&mut rule, "check-address", json!({"addressValid": true}));
    throw_error(
        &mut rule,
        "process-order",
        "WAREHOUSE_CLOSED",
        json!({"reason": "closed for inventory"}),
    );
    assert_eq!(state(&mut rule, failing), ProcessInstanceState::Completed);
    assert_eq!(
        completed(&rule, failing).last().map(String::as_str),
        Some("ProcessingFailed")
    );
    // The error's variables reach the catch event's output mapping.
    assert_eq!(
        rule.variables(failing)["failureReason"],
        json!("closed for inventory")
    );
    rule.assert_replay_matches();
}

#[test]
fn a_late_delivery_escalates_to_the_boundary_while_the_parcel_is_still_delivered() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["late-delivery-escalation.bpmn"]);
    let instance = rule.create("late-delivery-escalation", json!({"promisedDays": 2}));
    work(&mut rule, "plan-route", json!({"expectedDays": 4}));
    // Non-interrupting: the apology runs beside the delivery.
    work(&mut rule, "apologise", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    work(&mut rule, "deliver-parcel", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let path = completed(&rule, instance);
    for id in [
        "ReportDelay",
        "DeliveryLate",
        "CustomerInformed",
        "ParcelDelivered",
    ] {
        assert!(path.contains(&id.to_owned()), "{id} in {path:?}");
    }
    let escalations = rule
        .records()
        .events()
        .of_type(ValueType::Escalation)
        .count();
    assert_eq!(escalations, 1);
    rule.assert_replay_matches();
}

#[test]
fn a_failed_payment_compensates_the_flight_and_the_hotel_with_their_own_data() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["travel-booking-compensation.bpmn"]);
    let instance = rule.create("travel-booking-compensation", json!({"traveller": "ada"}));
    work(&mut rule, "book-hotel", json!({"reservationId": "H-17"}));
    work(&mut rule, "book-flight", json!({"ticketNumber": "LH-400"}));
    throw_error(&mut rule, "charge-traveller", "PAYMENT_FAILED", json!({}));

    let cancel_flight = work(&mut rule, "cancel-flight", json!({}));
    assert_eq!(
        cancel_flight.variables.to_value()["ticketNumber"],
        json!("LH-400")
    );
    let cancel_hotel = work(&mut rule, "cancel-hotel", json!({}));
    assert_eq!(
        cancel_hotel.variables.to_value()["reservationId"],
        json!("H-17")
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let path = completed(&rule, instance);
    assert_eq!(path.last().map(String::as_str), Some("TripCancelled"));
    for id in ["CancelHotel", "CancelFlight", "UndoBookings"] {
        assert!(path.contains(&id.to_owned()), "{id} in {path:?}");
    }
    assert!(!path.contains(&"TripBooked".to_owned()));
    rule.assert_replay_matches();
}

#[test]
fn the_call_activity_ships_with_the_child_process_and_takes_back_only_the_tracking_number() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["order-shipping.bpmn", "ship-parcel.bpmn"]);
    let instance = rule.create(
        "order-shipping",
        json!({"order": {
            "address": "1 Main St",
            "items": [{"sku": "desk", "weight": 25}, {"sku": "lamp", "weight": 7}]
        }}),
    );
    // The child's script chose the carrier from the weight (32 kg): the job type says so.
    let label = work(
        &mut rule,
        "create-label-freight",
        json!({"trackingNumber": "TRK-123", "labelPdf": "…"}),
    );
    let child = Key(label.process_instance_key);
    assert_ne!(child, instance);
    assert_eq!(rule.variables(child)["weight"], json!(32));
    assert_eq!(rule.variables(child)["address"], json!("1 Main St"));
    work(&mut rule, "send-tracking-mail", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(state(&mut rule, child), ProcessInstanceState::Completed);
    let variables = rule.variables(instance);
    assert_eq!(variables["trackingNumber"], json!("TRK-123"));
    assert!(
        variables.get("labelPdf").is_none(),
        "propagateAllChildVariables=false"
    );
    assert!(variables.get("carrier").is_none());
    rule.assert_replay_matches();
}

#[test]
fn the_discount_table_sums_its_matching_rules_and_the_script_applies_it() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["order-discount.bpmn", "order-discount.dmn"]);
    let gold = rule.create(
        "order-discount",
        json!({"orderTotal": 600, "customer": {"status": "gold", "memberSince": 2010}}),
    );
    // gold 10 + total >= 500: 5 + long-standing 2 + the catch-all 0 = 17 %.
    assert_eq!(state(&mut rule, gold), ProcessInstanceState::Completed);
    let variables = rule.variables(gold);
    assert_eq!(variables["discount"], json!(17));
    assert_eq!(variables["amountDue"], json!(498));

    let new_customer = rule.create(
        "order-discount",
        json!({"orderTotal": 80, "customer": {"status": "silver", "memberSince": 2022}}),
    );
    let variables = rule.variables(new_customer);
    assert_eq!(variables["discount"], json!(0));
    assert_eq!(variables["amountDue"], json!(80));
    // Both decisions of the graph were evaluated, the required one first.
    let decisions: Vec<_> = rule
        .records()
        .events()
        .of_type(ValueType::DecisionEvaluation)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::DecisionEvaluation(v) => Some(
                v.evaluated_decisions
                    .iter()
                    .map(|d| d.decision_id.clone())
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(
        decisions,
        [
            ["customerLoyalty", "order-discount-decision"],
            ["customerLoyalty", "order-discount-decision"]
        ]
    );
    rule.assert_replay_matches();
}

#[test]
fn script_tasks_compute_the_totals_with_feel() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["order-totals-script.bpmn"]);
    let instance = rule.create(
        "order-totals-script",
        json!({
            "orderId": "A-7",
            "items": [
                {"sku": "pen", "price": 1.5, "quantity": 10},
                {"sku": "pad", "price": 3, "quantity": 2}
            ]
        }),
    );
    assert!(
        rule.incidents(instance).is_empty(),
        "{:?}",
        rule.incidents(instance)
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let variables = rule.variables(instance);
    assert_eq!(variables["subtotal"], json!(21));
    assert_eq!(variables["shipping"], json!(4.95));
    // With output mappings, the script's result stays local to the task; what they map
    // reaches the process.
    assert!(variables.get("summary").is_none(), "{variables}");
    let summary = rule
        .records()
        .events()
        .of_type(ValueType::Variable)
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::Variable(v) if v.name == "summary" => {
                Some(serde_json::from_str::<Value>(&v.value).expect("JSON"))
            }
            _ => None,
        })
        .expect("the summary, set on the task");
    assert_eq!(
        summary,
        json!({
            "total": 25.95,
            "itemCount": 2,
            "skus": ["pen", "pad"],
            "heavy": true,
            "text": "Order A-7: 25.95 EUR"
        })
    );
    assert_eq!(variables["orderTotal"], json!(25.95));
    assert_eq!(variables["headline"], json!("ORDER A-7: 25.95 EUR"));
    rule.assert_replay_matches();
}

#[test]
fn each_item_is_reserved_in_parallel_and_the_reservations_are_collected_in_order() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["reserve-items-multi-instance.bpmn"]);
    let instance = rule.create(
        "reserve-items-multi-instance",
        json!({"items": [
            {"sku": "a", "quantity": 1},
            {"sku": "b", "quantity": 2},
            {"sku": "c", "quantity": 3}
        ]}),
    );
    let mut jobs = rule.activate("reserve-item", 10);
    assert_eq!(jobs.len(), 3, "all at once");
    // Completed in reverse; the output collection keeps the input order.
    jobs.reverse();
    for (key, job) in jobs {
        let sku = job.variables.to_value()["sku"].clone();
        let quantity = job.variables.to_value()["quantity"].clone();
        let reservation = format!("R-{}-{}", sku.as_str().expect("sku"), quantity);
        let outcome = rule.complete(key, json!({"reservationId": reservation}));
        assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    }
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        rule.variables(instance)["reservations"],
        json!([
            {"sku": "a", "reservationId": "R-a-1"},
            {"sku": "b", "reservationId": "R-b-2"},
            {"sku": "c", "reservationId": "R-c-3"}
        ])
    );
    rule.assert_replay_matches();
}

#[test]
fn sequential_approvals_stop_at_the_first_rejection() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["sequential-approvals.bpmn"]);
    let rejected = rule.create(
        "sequential-approvals",
        json!({"approvers": ["ann", "bob", "cid"]}),
    );
    assert_eq!(user_task(&rule, "ApprovePurchase").assignee, "ann");
    complete_user_task(&mut rule, "ApprovePurchase", json!({"approved": true}));
    assert_eq!(user_task(&rule, "ApprovePurchase").assignee, "bob");
    complete_user_task(&mut rule, "ApprovePurchase", json!({"approved": false}));
    // approved = false: the completion condition holds, cid is never asked.
    assert_eq!(state(&mut rule, rejected), ProcessInstanceState::Completed);
    assert_eq!(
        rule.variables(rejected)["decisions"],
        json!([true, false, null])
    );
    assert_eq!(
        completed(&rule, rejected).last().map(String::as_str),
        Some("PurchaseRejected")
    );
    let asked = rule
        .records()
        .events()
        .of_type(ValueType::UserTask)
        .with_intent(Intent::Created)
        .count();
    assert_eq!(asked, 2);

    let approved = rule.create("sequential-approvals", json!({"approvers": ["dee", "eve"]}));
    complete_user_task(&mut rule, "ApprovePurchase", json!({"approved": true}));
    complete_user_task(&mut rule, "ApprovePurchase", json!({"approved": true}));
    assert_eq!(state(&mut rule, approved), ProcessInstanceState::Completed);
    assert_eq!(
        completed(&rule, approved).last().map(String::as_str),
        Some("PurchaseApproved")
    );
    rule.assert_replay_matches();
}

#[test]
fn the_claim_answers_inquiries_alongside_and_the_sla_timer_settles_it() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["customer-inquiry.bpmn"]);
    let instance = rule.create("customer-inquiry", json!({"claimId": "CL-5"}));
    // Two inquiries while the claim is assessed: two answers, the task stays.
    for _ in 0..2 {
        publish(&mut rule, "customer-inquiry", "CL-5", json!({}));
        work(&mut rule, "send-claim-status", json!({}));
    }
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    assert!(element_ids(&rule, instance, Intent::ElementTerminated).is_empty());

    // Five days without an assessment: the interrupting SLA subprocess takes over.
    pass(&mut rule, 5 * DAY);
    work(&mut rule, "pay-compensation", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        element_ids(&rule, instance, Intent::ElementTerminated),
        ["AssessClaim"]
    );
    let path = completed(&rule, instance);
    assert_eq!(path.iter().filter(|id| *id == "InquiryAnswered").count(), 2);
    assert_eq!(path.last().map(String::as_str), Some("SlaSubProcess"));
    rule.assert_replay_matches();
}

#[test]
fn the_webhook_start_and_the_webhook_callback_are_plain_messages_to_the_engine() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["webhook-inbound.bpmn"]);
    // What the connector runtime publishes when the webhook is called.
    publish(
        &mut rule,
        "2f6f1a2e-7b1c-4a39-9d1e-8a1c7c0b5e41",
        "",
        json!({"checkout": {"checkoutId": "co-3", "amount": 12}}),
    );
    let reserve = work(&mut rule, "reserve-goods", json!({}));
    let instance = Key(reserve.process_instance_key);
    publish(
        &mut rule,
        "8c3d0e9b-5f2a-4b6e-a1c7-2d9e4f1b3a70",
        "co-3",
        json!({"payment": {"status": "paid"}}),
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let variables = rule.variables(instance);
    assert_eq!(variables["payment"], json!({"status": "paid"}));
    assert_eq!(
        completed(&rule, instance),
        [
            "CheckoutWebhook",
            "ReserveGoods",
            "PaymentCallback",
            "EndEvent_1"
        ]
    );
    rule.assert_replay_matches();
}

#[test]
fn a_backorder_waits_for_the_stock_signal_and_throws_signals_of_its_own() {
    let mut rule = EngineRule::new();
    deploy(
        &mut rule,
        &["backorder-signals.bpmn", "newsletter-signal-start.bpmn"],
    );
    let first = rule.create("backorder-signals", json!({"sku": "kettle"}));
    let second = rule.create("backorder-signals", json!({"sku": "toaster"}));
    broadcast(
        &mut rule,
        "stock-replenished",
        json!({"warehouse": "north"}),
    );
    // One signal, every waiting instance.
    let mut jobs = rule.activate("ship-backorder", 10);
    assert_eq!(jobs.len(), 2);
    jobs.sort_by_key(|(_, job)| job.process_instance_key);
    for (key, _) in jobs {
        assert!(!rule.complete(key, json!({})).is_rejected());
    }
    for instance in [first, second] {
        assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
        assert_eq!(rule.variables(instance)["warehouse"], json!("north"));
    }
    // The throw event's name is an expression; the end event's is static.
    let thrown: Vec<String> = rule
        .records()
        .events()
        .of_type(ValueType::Signal)
        .with_intent(Intent::Broadcasted)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::Signal(signal) => Some(signal.signal_name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        thrown,
        [
            "stock-replenished",
            "backorder-shipped-kettle",
            "backorder-closed",
            "backorder-shipped-toaster",
            "backorder-closed"
        ]
    );
    // A signal start event starts a process per broadcast.
    broadcast(&mut rule, "newsletter-ready", json!({"issue": 12}));
    let newsletter = work(&mut rule, "send-newsletter", json!({}));
    assert_eq!(newsletter.variables.to_value()["issue"], json!(12));
    assert_eq!(
        state(&mut rule, Key(newsletter.process_instance_key)),
        ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn the_terminate_end_event_cancels_the_review_of_a_blacklisted_transaction() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["fraud-check-terminate.bpmn"]);
    let instance = rule.create("fraud-check-terminate", json!({}));
    let review = user_task(&rule, "ReviewTransaction");
    assert_eq!(review.candidate_groups_list, ["fraud-team"]);
    work(&mut rule, "check-blacklist", json!({"blacklisted": true}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        element_ids(&rule, instance, Intent::ElementTerminated),
        ["ReviewTransaction"]
    );
    assert_eq!(
        completed(&rule, instance).last().map(String::as_str),
        Some("BlockTransaction")
    );
    let canceled = rule
        .records()
        .events()
        .of_type(ValueType::UserTask)
        .with_intent(Intent::Canceled)
        .count();
    assert_eq!(canceled, 1);
    rule.assert_replay_matches();
}

#[test]
fn listeners_run_as_jobs_around_the_process_the_task_the_gateway_and_the_end() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["audit-listeners.bpmn"]);
    let instance = rule.create(
        "audit-listeners",
        json!({"department": "sales", "remote": true}),
    );
    for job_type in [
        "audit-process-start",
        "prepare-sales",
        "create-account",
        "notify-it",
        "audit-decision",
        "order-laptop",
        "send-welcome-mail",
        "audit-process-end",
    ] {
        let job = work(&mut rule, job_type, json!({}));
        if job_type == "prepare-sales" {
            assert_eq!(job.retries, 3, "retries=\"=3\"");
        }
    }
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        job_types(&rule, instance),
        [
            "audit-process-start",
            "prepare-sales",
            "create-account",
            "notify-it",
            "audit-decision",
            "order-laptop",
            "send-welcome-mail",
            "audit-process-end"
        ]
    );
    rule.assert_replay_matches();
}

#[test]
fn a_start_form_process_starts_with_the_form_data_and_links_the_task_form() {
    let mut rule = EngineRule::new();
    deploy(
        &mut rule,
        &[
            "expense-claim-start-form.bpmn",
            "expense-claim.form",
            "expense-approval.form",
        ],
    );
    let instance = rule.create(
        "expense-claim-start-form",
        json!({"description": "Train", "amount": 89.5, "category": "travel", "approvers": ["fin1", "fin2"]}),
    );
    let task = user_task(&rule, "ApproveExpense");
    assert!(task.form_key > 0);
    assert_eq!(task.candidate_groups_list, ["finance"]);
    assert_eq!(task.candidate_users_list, ["fin1", "fin2"]);
    assert_eq!(task.priority, 75);
    assert!(
        task.due_date.starts_with("2023-11-17T"),
        "{}",
        task.due_date
    );
    assert!(
        task.follow_up_date.starts_with("2023-11-15T"),
        "{}",
        task.follow_up_date
    );
    complete_user_task(&mut rule, "ApproveExpense", json!({"approved": true}));
    let reimburse = work(&mut rule, "reimburse", json!({}));
    assert_eq!(reimburse.variables.to_value()["amount"], json!(89.5));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

/// The start events that started instances of `process_id`, in order.
fn started_by(rule: &EngineRule, process_id: &str) -> Vec<String> {
    rule.records()
        .events()
        .of_type(ValueType::ProcessInstance)
        .with_intent(Intent::ElementCompleted)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessInstance(v)
                if v.bpmn_process_id == process_id
                    && v.bpmn_element_type == BpmnElementType::StartEvent =>
            {
                Some(v.element_id.clone())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn timer_start_events_fire_hourly_and_on_weekday_mornings() {
    let mut rule = EngineRule::new();
    // The rule's clock starts on Tuesday 2023-11-14 at 22:13:20 UTC.
    deploy(&mut rule, &["report-scheduler.bpmn"]);
    for _ in 0..9 {
        pass(&mut rule, HOUR);
    }
    // 07:13:20 on Wednesday: nine hourly starts, the 8:00 cron not yet.
    assert_eq!(started_by(&rule, "report-scheduler"), ["EveryHour"; 9]);
    pass(&mut rule, HOUR);
    let starts = started_by(&rule, "report-scheduler");
    assert_eq!(starts.len(), 11, "{starts:?}");
    assert_eq!(starts.iter().filter(|id| *id == "EveryWeekday").count(), 1);
    assert_eq!(rule.activate("generate-report", 20).len(), 11);
    rule.assert_replay_matches();
}

#[test]
fn timer_dates_from_an_expression_and_from_the_model_are_waited_for() {
    let mut rule = EngineRule::new();
    deploy(
        &mut rule,
        &["contract-renewal.bpmn", "new-year-greeting.bpmn"],
    );
    let instance = rule.create(
        "contract-renewal",
        json!({"renewalDate": "2024-03-01T00:00:00Z"}),
    );
    // 30 days before 2024-03-01: 2024-01-31T00:00:00Z.
    let due = rill_protocol::Timestamp(1_706_659_200_000);
    assert_eq!(rule.next_due(), Some(due));
    let wait = due.0 - rule.now;
    pass(&mut rule, wait - 1);
    assert!(
        rule.activate("send-renewal-offer", 10).is_empty(),
        "not yet"
    );
    pass(&mut rule, 1);
    work(&mut rule, "send-renewal-offer", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);

    // The static date of the model, 2031-01-01T00:00:00Z; the new year's greeting, a
    // timer start date, is due at 2031-01-01T08:00:00Z, after it.
    let wait = 1_924_992_000_000 - rule.now;
    pass(&mut rule, wait);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert!(started_by(&rule, "new-year-greeting").is_empty());
    pass(&mut rule, 8 * HOUR);
    assert_eq!(started_by(&rule, "new-year-greeting"), ["NewYear"]);
    let greeting = work(&mut rule, "send-greetings", json!({}));
    assert_eq!(
        greeting.variables.to_value()["subject"],
        json!("Happy new year!")
    );
    rule.assert_replay_matches();
}

#[test]
fn a_receive_task_waits_for_its_message_and_a_message_starts_a_webshop_order() {
    let mut rule = EngineRule::new();
    deploy(
        &mut rule,
        &["delivery-confirmation.bpmn", "webshop-order.bpmn"],
    );
    let instance = rule.create("delivery-confirmation", json!({"shipmentId": "SH-4"}));
    let request = work(&mut rule, "request-confirmation", json!({}));
    assert_eq!(request.variables.to_value()["shipmentId"], json!("SH-4"));
    // Another shipment's confirmation does not match.
    publish(
        &mut rule,
        "delivery-confirmed",
        "SH-5",
        json!({"signedBy": "x"}),
    );
    assert!(rule.activate("close-shipment", 10).is_empty());
    publish(
        &mut rule,
        "delivery-confirmed",
        "SH-4",
        json!({"signedBy": "J. Doe", "deliveredAt": "2023-11-15T10:00:00Z"}),
    );
    work(&mut rule, "close-shipment", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let variables = rule.variables(instance);
    assert_eq!(variables["receivedBy"], json!("J. Doe"));
    assert_eq!(variables["deliveredAt"], json!("2023-11-15T10:00:00Z"));
    assert!(variables.get("signedBy").is_none(), "mapped to receivedBy");

    publish(
        &mut rule,
        "order-placed",
        "",
        json!({"order": {"id": "W-9", "lines": [{"sku": "cap"}]}}),
    );
    let confirm = work(&mut rule, "confirm-order", json!({}));
    let order = Key(confirm.process_instance_key);
    assert_eq!(state(&mut rule, order), ProcessInstanceState::Completed);
    let variables = rule.variables(order);
    assert_eq!(variables["orderId"], json!("W-9"));
    assert_eq!(variables["items"], json!([{"sku": "cap"}]));
    rule.assert_replay_matches();
}

#[test]
fn the_triage_runs_the_checks_its_collection_names_until_the_severity_is_known() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["incident-triage-ad-hoc.bpmn"]);
    let instance = rule.create(
        "incident-triage-ad-hoc",
        json!({"checks": ["CheckMonitoring", "CollectLogs"]}),
    );
    // Both named checks start; the customer call does not.
    let mut types = job_types(&rule, instance);
    types.sort();
    assert_eq!(types, ["check-monitoring", "collect-logs"]);
    assert!(
        !element_ids(&rule, instance, Intent::ElementActivated)
            .contains(&"CallCustomer".to_owned())
    );
    work(&mut rule, "collect-logs", json!({"logs": "…"}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    // The monitoring check leads to the severity rating, which fulfils the condition.
    work(&mut rule, "check-monitoring", json!({"alerts": 14}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["severity"], json!("high"));
    assert_eq!(
        completed(&rule, instance),
        // Each activated element runs in an inner instance of its own (Zeebe 8.8).
        [
            "StartEvent_1",
            "CollectLogs",
            "Triage#innerInstance",
            "CheckMonitoring",
            "RateSeverity",
            "Triage#innerInstance",
            "Triage",
            "EndEvent_1"
        ]
    );
    rule.assert_replay_matches();
}

#[test]
fn a_job_worker_user_task_hands_its_assignment_and_linked_form_to_the_worker_in_headers() {
    let mut rule = EngineRule::new();
    deploy(
        &mut rule,
        &["invoice-approval.bpmn", "invoice-approval-form.form"],
    );
    let instance = rule.create(
        "invoice-approval",
        json!({"approver": "maria", "invoiceDueDate": "2023-12-01T12:00:00Z", "total": 120}),
    );
    let form_key = rule
        .records()
        .events()
        .of_type(ValueType::Form)
        .records
        .first()
        .map(|r| r.key.get())
        .expect("the deployed form");
    let task = work(
        &mut rule,
        "io.camunda.zeebe:userTask",
        json!({"approved": true}),
    );
    assert_eq!(header(&task, "io.camunda.zeebe:assignee"), Some("maria"));
    assert_eq!(
        header(&task, "io.camunda.zeebe:candidateGroups"),
        Some(r#"["accounting"]"#)
    );
    assert_eq!(
        header(&task, "io.camunda.zeebe:dueDate"),
        Some("2023-12-01T12:00:00Z")
    );
    assert_eq!(
        header(&task, "io.camunda.zeebe:formKey"),
        Some(form_key.to_string().as_str())
    );
    assert_eq!(header(&task, "costCenter"), Some("CC-4711"));
    work(&mut rule, "archive-invoice", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        completed(&rule, instance).last().map(String::as_str),
        Some("InvoicePaid")
    );
    rule.assert_replay_matches();
}

#[test]
fn static_input_mappings_reach_the_worker_as_written_beside_the_evaluated_ones() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &["static-input-mappings.bpmn"]);
    let instance = rule.create(
        "static-input-mappings",
        json!({"parcel": {"trackingNumber": "TRK-77"}}),
    );
    let job = work(&mut rule, "print-label", json!({"printJobId": 5}));
    let inputs = job.variables.to_value();
    assert_eq!(
        inputs["label"],
        json!({
            "format": "A6",
            "dpi": "300",
            "duplex": "true",
            "barcode": "TRK-77",
            "note": "Handle with care: glass"
        })
    );
    assert_eq!(inputs["printer"], json!("printer-2nd-floor"));
    assert_eq!(job.retries, 2);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let variables = rule.variables(instance);
    assert_eq!(variables["labelPrintJob"], json!(5));
    assert!(variables.get("label").is_none());
    rule.assert_replay_matches();
}
