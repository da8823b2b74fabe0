//! `POST /v2/element-instances/ad-hoc-activities/{key}/activation`: elements of an
//! active ad-hoc subprocess activated over REST (204), with their variables, and
//! Camunda's problems for what cannot be activated.

use serde_json::{Value, json};

use crate::support::TestGateway;
use crate::support::engine_backend::EngineBackend;

const TOOLS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="tools" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:adHocSubProcess id="toolbox">
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
      <bpmn:serviceTask id="search">
        <bpmn:extensionElements><zeebe:taskDefinition type="search" /></bpmn:extensionElements>
        <bpmn:outgoing>f3</bpmn:outgoing>
      </bpmn:serviceTask>
      <bpmn:task id="summarize"><bpmn:incoming>f3</bpmn:incoming></bpmn:task>
      <bpmn:sequenceFlow id="f3" sourceRef="search" targetRef="summarize" />
    </bpmn:adHocSubProcess>
    <bpmn:endEvent id="end"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="toolbox" />
    <bpmn:sequenceFlow id="f2" sourceRef="toolbox" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#;

fn activation_path(key: &str) -> String {
    format!("/v2/element-instances/ad-hoc-activities/{key}/activation")
}

/// A gateway with `model` deployed and one instance created with `request`; the
/// instance's key.
async fn started(model: (&str, &str), request: Value) -> (TestGateway, String) {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let deployed = gateway.deploy(&[(model.0, model.1.as_bytes())]).await;
    assert_eq!(deployed.status, 200, "{:?}", deployed.body);
    let created = gateway.post("/v2/process-instances", request).await;
    assert_eq!(created.status, 200, "{:?}", created.body);
    let instance = created.body["processInstanceKey"]
        .as_str()
        .expect("key")
        .to_owned();
    (gateway, instance)
}

async fn element_of_type(gateway: &TestGateway, instance: &str, kind: &str) -> Value {
    let found = gateway
        .post(
            "/v2/element-instances/search",
            json!({"filter": {"processInstanceKey": instance, "type": kind}}),
        )
        .await;
    assert_eq!(found.status, 200, "{:?}", found.body);
    found.body["items"][0].clone()
}

#[tokio::test]
async fn elements_of_an_ad_hoc_subprocess_are_activated_over_rest() {
    let (gateway, instance) = started(
        ("tools.bpmn", TOOLS),
        json!({"processDefinitionId": "tools"}),
    )
    .await;
    let ad_hoc = element_of_type(&gateway, &instance, "AD_HOC_SUB_PROCESS").await;
    assert_eq!(ad_hoc["elementId"], "toolbox");
    assert_eq!(ad_hoc["state"], "ACTIVE");
    let key = ad_hoc["elementInstanceKey"]
        .as_str()
        .expect("key")
        .to_owned();

    // Refused, with Camunda's problem shapes; nothing is activated.
    let problems = [
        (
            activation_path(&key),
            json!({"elements": [{"elementId": "nope"}]}),
            404,
            "but the given elements [nope] do not exist",
        ),
        (
            activation_path(&key),
            json!({"elements": [{"elementId": "summarize"}]}),
            404,
            "but the given elements [summarize] do not exist",
        ),
        (
            activation_path(&instance),
            json!({"elements": [{"elementId": "search"}]}),
            404,
            "the element instance is the process 'tools', not an ad-hoc sub-process",
        ),
        (
            activation_path("2251799813699999"),
            json!({"elements": [{"elementId": "search"}]}),
            404,
            "no ad-hoc sub-process instance found with key '2251799813699999'",
        ),
        (
            activation_path(&key),
            json!({"elements": []}),
            400,
            "No elements provided",
        ),
        (
            activation_path(&key),
            json!({"cancelRemainingInstances": true}),
            400,
            "elements",
        ),
        (
            activation_path(&key),
            json!({"elements": [{"elementId": "search", "variables": [1]}]}),
            400,
            "expected a JSON object of variables",
        ),
        (
            activation_path(&key),
            json!({"elements": [{"elementId": "search"}, {"elementId": "search"}]}),
            400,
            "duplicate activities were given",
        ),
        (
            activation_path("not-a-key"),
            json!({"elements": [{"elementId": "search"}]}),
            400,
            "not-a-key",
        ),
    ];
    for (path, body, status, fragment) in problems {
        let reply = gateway.post(&path, body.clone()).await;
        assert_eq!(reply.status, status, "{body}: {:?}", reply.body);
        assert_eq!(reply.body["status"], status, "{:?}", reply.body);
        let expected_title = match status {
            404 => "NOT_FOUND",
            _ => "INVALID_ARGUMENT",
        };
        assert_eq!(reply.body["title"], expected_title, "{:?}", reply.body);
        let detail = reply.body["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(fragment), "{body}: {detail}");
    }
    let inner = element_of_type(&gateway, &instance, "AD_HOC_SUB_PROCESS_INNER_INSTANCE").await;
    assert!(inner.is_null(), "nothing was activated: {inner:?}");

    // Activated: 204, the job sees the element's variables.
    let reply = gateway
        .post(
            &activation_path(&key),
            json!({"elements": [{"elementId": "search", "variables": {"query": "rivers"}}],
                   "cancelRemainingInstances": false}),
        )
        .await;
    assert_eq!(reply.status, 204, "{:?}", reply.body);
    let jobs = gateway
        .post(
            "/v2/jobs/activation",
            json!({"type": "search", "timeout": 30000, "maxJobsToActivate": 1,
                   "worker": "test", "requestTimeout": -1}),
        )
        .await;
    assert_eq!(jobs.status, 200, "{:?}", jobs.body);
    let job = &jobs.body["jobs"][0];
    assert_eq!(job["variables"]["query"], "rivers", "{job:?}");
    let job_key = job["jobKey"].as_str().expect("job key");
    let inner = element_of_type(&gateway, &instance, "AD_HOC_SUB_PROCESS_INNER_INSTANCE").await;
    assert_eq!(inner["elementId"], "toolbox#innerInstance");

    // The flow inside completes; nothing is left and there is no condition: done.
    let completed = gateway
        .post(&format!("/v2/jobs/{job_key}/completion"), json!({}))
        .await;
    assert_eq!(completed.status, 204, "{:?}", completed.body);
    let got = gateway
        .get(&format!("/v2/process-instances/{instance}"))
        .await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    assert_eq!(got.body["state"], "COMPLETED", "{:?}", got.body);
}

const AGENT: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="agent" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:adHocSubProcess id="brain">
      <bpmn:extensionElements>
        <zeebe:taskDefinition type="think" />
        <zeebe:taskHeaders><zeebe:header key="model" value="small" /></zeebe:taskHeaders>
      </bpmn:extensionElements>
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
      <bpmn:serviceTask id="search">
        <bpmn:extensionElements><zeebe:taskDefinition type="search" /></bpmn:extensionElements>
      </bpmn:serviceTask>
    </bpmn:adHocSubProcess>
    <bpmn:endEvent id="end"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="brain" />
    <bpmn:sequenceFlow id="f2" sourceRef="brain" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#;

async fn activate_one(gateway: &TestGateway, job_type: &str) -> Value {
    let jobs = gateway
        .post(
            "/v2/jobs/activation",
            json!({"type": job_type, "timeout": 30000, "maxJobsToActivate": 5,
                   "worker": "test", "requestTimeout": -1}),
        )
        .await;
    assert_eq!(jobs.status, 200, "{:?}", jobs.body);
    let list = jobs.body["jobs"].as_array().expect("jobs");
    assert_eq!(list.len(), 1, "one '{job_type}' job: {list:?}");
    list[0].clone()
}

#[tokio::test]
async fn an_ad_hoc_subprocess_job_is_completed_with_an_ad_hoc_result_over_rest() {
    let (gateway, instance) = started(
        ("agent.bpmn", AGENT),
        json!({"processDefinitionId": "agent"}),
    )
    .await;

    let job = activate_one(&gateway, "think").await;
    assert_eq!(job["kind"], "AD_HOC_SUB_PROCESS", "{job:?}");
    assert_eq!(job["elementId"], "brain");
    assert_eq!(job["customHeaders"]["model"], "small");
    assert_eq!(
        job["variables"]["adHocSubProcessElements"][0]["elementId"],
        "search"
    );
    let completion = format!(
        "/v2/jobs/{}/completion",
        job["jobKey"].as_str().expect("job key")
    );

    // Malformed results: 400 naming the field; the engine's refusals: 404 and 400.
    let problems = [
        (
            json!({"result": {"type": "adHocSubProcess", "activateElements": [{"variables": {}}]}}),
            400,
            "result.activateElements[0]",
        ),
        (
            json!({"result": {"type": "adHocSubProcess",
                              "activateElements": [{"elementId": "search", "variables": [1]}]}}),
            400,
            "result.activateElements[0].variables",
        ),
        (
            json!({"result": {"type": "adHocSubProcess", "denied": true}}),
            400,
            "result.denied",
        ),
        (
            json!({"result": {"isCompletionConditionFulfilled": true}}),
            400,
            "result.isCompletionConditionFulfilled",
        ),
        (
            json!({"result": {"type": "adHocSubprocessing"}}),
            400,
            "'adHocSubprocessing'",
        ),
        (
            json!({"result": {"type": "adHocSubProcess",
                              "activateElements": [{"elementId": "search", "extra": 1}]}}),
            400,
            "extra",
        ),
        (
            json!({"result": {"type": "adHocSubProcess",
                              "activateElements": [{"elementId": "lunch"}]}}),
            404,
            "the given elements [lunch] do not exist",
        ),
        (
            json!({"result": {"type": "adHocSubProcess", "isCompletionConditionFulfilled": true,
                              "activateElements": [{"elementId": "search"}]}}),
            400,
            "either activating elements or fulfilling its completion condition",
        ),
    ];
    for (body, status, fragment) in problems {
        let reply = gateway.post(&completion, body.clone()).await;
        assert_eq!(reply.status, status, "{body}: {:?}", reply.body);
        let detail = reply.body["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(fragment), "{body}: {detail}");
    }

    // Activated with the element's variables; the job's variables go to the process.
    let reply = gateway
        .post(
            &completion,
            json!({"variables": {"turn": 1},
                   "result": {"type": "adHocSubProcess",
                              "activateElements": [{"elementId": "search",
                                                    "variables": {"query": "rivers"}}],
                              "isCompletionConditionFulfilled": false,
                              "isCancelRemainingInstances": false}}),
        )
        .await;
    assert_eq!(reply.status, 204, "{:?}", reply.body);
    let search = activate_one(&gateway, "search").await;
    assert_eq!(search["variables"]["query"], "rivers");
    assert_eq!(search["variables"]["turn"], 1);
    let done = gateway
        .post(
            &format!(
                "/v2/jobs/{}/completion",
                search["jobKey"].as_str().expect("key")
            ),
            json!({}),
        )
        .await;
    assert_eq!(done.status, 204, "{:?}", done.body);

    // The flow completed: the worker decides again, and ends it.
    let next = activate_one(&gateway, "think").await;
    assert_ne!(next["jobKey"], job["jobKey"]);
    let reply = gateway
        .post(
            &format!(
                "/v2/jobs/{}/completion",
                next["jobKey"].as_str().expect("key")
            ),
            json!({"result": {"type": "adHocSubProcess", "isCompletionConditionFulfilled": true,
                              "isCancelRemainingInstances": true}}),
        )
        .await;
    assert_eq!(reply.status, 204, "{:?}", reply.body);
    let got = gateway
        .get(&format!("/v2/process-instances/{instance}"))
        .await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    assert_eq!(got.body["state"], "COMPLETED", "{:?}", got.body);
}

const COMPENSATED: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="compensated" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:adHocSubProcess id="toolbox">
      <bpmn:extensionElements>
        <zeebe:adHoc activeElementsCollection="=[&#34;book&#34;]" />
      </bpmn:extensionElements>
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
      <bpmn:completionCondition>=false</bpmn:completionCondition>
      <bpmn:serviceTask id="book">
        <bpmn:extensionElements><zeebe:taskDefinition type="book" /></bpmn:extensionElements>
      </bpmn:serviceTask>
      <bpmn:boundaryEvent id="booked" attachedToRef="book"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
      <bpmn:serviceTask id="unbook" isForCompensation="true">
        <bpmn:extensionElements><zeebe:taskDefinition type="unbook" /></bpmn:extensionElements>
      </bpmn:serviceTask>
      <bpmn:association id="a1" sourceRef="booked" targetRef="unbook" />
      <bpmn:intermediateThrowEvent id="undo"><bpmn:compensateEventDefinition /></bpmn:intermediateThrowEvent>
    </bpmn:adHocSubProcess>
    <bpmn:endEvent id="end"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="toolbox" />
    <bpmn:sequenceFlow id="f2" sourceRef="toolbox" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#;

#[tokio::test]
async fn a_throw_event_activated_over_rest_compensates_the_ad_hoc_subprocess() {
    let (gateway, instance) = started(
        ("compensated.bpmn", COMPENSATED),
        json!({"processDefinitionId": "compensated"}),
    )
    .await;
    let ad_hoc = element_of_type(&gateway, &instance, "AD_HOC_SUB_PROCESS").await;
    let key = ad_hoc["elementInstanceKey"]
        .as_str()
        .expect("key")
        .to_owned();
    let book = activate_one(&gateway, "book").await;
    let completed = gateway
        .post(
            &format!(
                "/v2/jobs/{}/completion",
                book["jobKey"].as_str().expect("key")
            ),
            json!({}),
        )
        .await;
    assert_eq!(completed.status, 204, "{:?}", completed.body);

    // A handler is not an element to activate.
    let refused = gateway
        .post(
            &activation_path(&key),
            json!({"elements": [{"elementId": "unbook"}]}),
        )
        .await;
    assert_eq!(refused.status, 404, "{:?}", refused.body);
    // The throw event compensates what completed in the other activation.
    let thrown = gateway
        .post(
            &activation_path(&key),
            json!({"elements": [{"elementId": "undo"}]}),
        )
        .await;
    assert_eq!(thrown.status, 204, "{:?}", thrown.body);
    let unbook = activate_one(&gateway, "unbook").await;
    assert_eq!(unbook["elementId"], "unbook");
}

const INTERRUPTIBLE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:message id="m-stop" name="stop">
    <bpmn:extensionElements><zeebe:subscription correlationKey="=orderId" /></bpmn:extensionElements>
  </bpmn:message>
  <bpmn:process id="interruptible" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:adHocSubProcess id="toolbox">
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
      <bpmn:serviceTask id="search">
        <bpmn:extensionElements><zeebe:taskDefinition type="search" /></bpmn:extensionElements>
      </bpmn:serviceTask>
      <bpmn:subProcess id="onStop" triggeredByEvent="true">
        <bpmn:startEvent id="stop"><bpmn:outgoing>f3</bpmn:outgoing>
          <bpmn:messageEventDefinition messageRef="m-stop" />
        </bpmn:startEvent>
        <bpmn:serviceTask id="wrap">
          <bpmn:extensionElements><zeebe:taskDefinition type="wrap" /></bpmn:extensionElements>
          <bpmn:incoming>f3</bpmn:incoming>
        </bpmn:serviceTask>
        <bpmn:sequenceFlow id="f3" sourceRef="stop" targetRef="wrap" />
      </bpmn:subProcess>
    </bpmn:adHocSubProcess>
    <bpmn:endEvent id="end"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="toolbox" />
    <bpmn:sequenceFlow id="f2" sourceRef="toolbox" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#;

#[tokio::test]
async fn an_interrupted_ad_hoc_subprocess_refuses_activations_over_rest() {
    let (gateway, instance) = started(
        ("interruptible.bpmn", INTERRUPTIBLE),
        json!({"processDefinitionId": "interruptible", "variables": {"orderId": "o-1"}}),
    )
    .await;
    let ad_hoc = element_of_type(&gateway, &instance, "AD_HOC_SUB_PROCESS").await;
    let key = ad_hoc["elementInstanceKey"]
        .as_str()
        .expect("key")
        .to_owned();

    // An event subprocess is not an element to activate.
    let reply = gateway
        .post(
            &activation_path(&key),
            json!({"elements": [{"elementId": "onStop"}]}),
        )
        .await;
    assert_eq!(reply.status, 404, "{:?}", reply.body);

    let published = gateway
        .post(
            "/v2/messages/publication",
            json!({"name": "stop", "correlationKey": "o-1", "timeToLive": 0}),
        )
        .await;
    assert_eq!(published.status, 200, "{:?}", published.body);
    let subprocess = element_of_type(&gateway, &instance, "EVENT_SUB_PROCESS").await;
    assert_eq!(subprocess["elementId"], "onStop", "{subprocess:?}");
    assert_eq!(subprocess["state"], "ACTIVE", "{subprocess:?}");

    let reply = gateway
        .post(
            &activation_path(&key),
            json!({"elements": [{"elementId": "search"}]}),
        )
        .await;
    assert_eq!(reply.status, 409, "{:?}", reply.body);
    assert_eq!(reply.body["title"], "INVALID_STATE", "{:?}", reply.body);
    let detail = reply.body["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("interrupted by an event sub-process"),
        "{detail}"
    );
}

const EACH: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="each" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:adHocSubProcess id="toolbox">
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
      <bpmn:multiInstanceLoopCharacteristics>
        <bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=topics" inputElement="topic" /></bpmn:extensionElements>
      </bpmn:multiInstanceLoopCharacteristics>
      <bpmn:serviceTask id="search">
        <bpmn:extensionElements><zeebe:taskDefinition type="search" /></bpmn:extensionElements>
      </bpmn:serviceTask>
    </bpmn:adHocSubProcess>
    <bpmn:endEvent id="end"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="toolbox" />
    <bpmn:sequenceFlow id="f2" sourceRef="toolbox" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#;

#[tokio::test]
async fn an_iteration_of_a_multi_instance_ad_hoc_subprocess_is_activated_over_rest() {
    let (gateway, instance) = started(
        ("each.bpmn", EACH),
        json!({"processDefinitionId": "each", "variables": {"topics": ["rivers"]}}),
    )
    .await;
    let body = element_of_type(&gateway, &instance, "MULTI_INSTANCE_BODY").await;
    let body_key = body["elementInstanceKey"].as_str().expect("key").to_owned();
    let iteration = element_of_type(&gateway, &instance, "AD_HOC_SUB_PROCESS").await;
    assert_eq!(iteration["elementId"], "toolbox");
    let iteration_key = iteration["elementInstanceKey"]
        .as_str()
        .expect("key")
        .to_owned();

    // The body holds the iterations; it is not an ad-hoc subprocess instance.
    let reply = gateway
        .post(
            &activation_path(&body_key),
            json!({"elements": [{"elementId": "search"}]}),
        )
        .await;
    assert_eq!(reply.status, 404, "{:?}", reply.body);
    let detail = reply.body["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("multi-instance body"), "{detail}");

    let reply = gateway
        .post(
            &activation_path(&iteration_key),
            json!({"elements": [{"elementId": "search"}]}),
        )
        .await;
    assert_eq!(reply.status, 204, "{:?}", reply.body);
    let job = activate_one(&gateway, "search").await;
    assert_eq!(job["variables"]["topic"], "rivers", "{job:?}");
    let job_key = job["jobKey"].as_str().expect("job key");
    let completed = gateway
        .post(&format!("/v2/jobs/{job_key}/completion"), json!({}))
        .await;
    assert_eq!(completed.status, 204, "{:?}", completed.body);
    let got = gateway
        .get(&format!("/v2/process-instances/{instance}"))
        .await;
    assert_eq!(got.body["state"], "COMPLETED", "{:?}", got.body);
}
