"""Drives a running Rill gateway with Camunda's own Python SDK (the Camunda 8.8 API
client pinned in requirements.txt), unmodified.

Deploys the two-task example, creates an instance, activates and completes its jobs,
and checks that the instance finishes; also checks topology, incidents, variables,
messages, create-and-await, process instance and job searches (polling until the
history has the answer: searches are eventually consistent), and that the SDK
surfaces Rill's errors as its typed errors; then works a user task, and deploys a DMN
with a form and a process, evaluates a decision and runs a business rule task. Exits
non-zero on the first failed check.

Usage: CAMUNDA_REST_ADDRESS=http://127.0.0.1:8080 python sdk_flow.py EXAMPLES_DIR
"""

import asyncio
import sys
import tempfile
import threading
import time
from pathlib import Path

from camunda_orchestration_sdk import CamundaAsyncClient, CamundaClient, WorkerConfig, errors
from camunda_orchestration_sdk.models.activate_jobs_data import ActivateJobsData
from camunda_orchestration_sdk.models.assign_user_task_data import AssignUserTaskData
from camunda_orchestration_sdk.models.complete_user_task_data import CompleteUserTaskData
from camunda_orchestration_sdk.models.complete_job_data import CompleteJobData
from camunda_orchestration_sdk.models.decisionevaluationby_id import DecisionevaluationbyID
from camunda_orchestration_sdk.models.decisionevaluationbykey import Decisionevaluationbykey
from camunda_orchestration_sdk.models.processcreationbyid import Processcreationbyid
from camunda_orchestration_sdk.models.publish_message_data import PublishMessageData
from camunda_orchestration_sdk.models.search_decision_instances_data import (
    SearchDecisionInstancesData,
)
from camunda_orchestration_sdk.models.search_incidents_data import SearchIncidentsData
from camunda_orchestration_sdk.models.search_jobs_data import SearchJobsData
from camunda_orchestration_sdk.models.search_process_instances_data import (
    SearchProcessInstancesData,
)
from camunda_orchestration_sdk.models.search_user_tasks_data import SearchUserTasksData
from camunda_orchestration_sdk.models.search_variables_data import SearchVariablesData
from camunda_orchestration_sdk.types import Unset


# The example's process is deployed as `two_rest_calls`: this SDK's ProcessDefinitionId
# pattern is escaped twice (r'[a-zA-Z0-9_\\-\\.]'), so it refuses the `-` that the 8.8
# spec allows and fails on every answer naming `two-rest-calls`.
PROCESS_ID = "two_rest_calls"


def example_model(examples, workdir):
    """examples/two-rest-calls.bpmn with its process id spelled PROCESS_ID."""
    text = (examples / "two-rest-calls.bpmn").read_text()
    path = Path(workdir) / "two_rest_calls.bpmn"
    path.write_text(text.replace('"two-rest-calls"', f'"{PROCESS_ID}"'))
    return path


# A Camunda user task that links a deployed form (deployed together with it).
REVIEW_ID = "py_review"
REVIEW_BPMN = f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="review-defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="{REVIEW_ID}" name="Review" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:userTask id="approve" name="Approve">
      <bpmn:extensionElements>
        <zeebe:userTask />
        <zeebe:formDefinition formId="py_approval" />
        <zeebe:assignmentDefinition candidateGroups="reviewers" />
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve" />
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"""
REVIEW_FORM = """{"id": "py_approval", "type": "default", "components": [
  {"key": "approved", "type": "checkbox", "label": "Approve"}]}"""


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", flush=True)
        sys.exit(1)
    print(f"ok: {message}", flush=True)


def poll(search, predicate, wait_s=10.0):
    """Repeats `search` until `predicate` holds for its answer (or the time is up) and
    returns the last answer: the history behind searches is eventually consistent."""
    deadline = time.monotonic() + wait_s
    while True:
        answer = search()
        if predicate(answer) or time.monotonic() >= deadline:
            return answer
        time.sleep(0.1)


def state(item):
    return str(item.state.value)


def complete_jobs(client, job_type, count, variables=None):
    """Activates and completes `count` jobs of `job_type`, long polling for them."""
    done = 0
    deadline = time.monotonic() + 30
    while done < count and time.monotonic() < deadline:
        result = client.activate_jobs(
            data=ActivateJobsData(
                type_=job_type,
                timeout=30_000,
                max_jobs_to_activate=count - done,
                request_timeout=2_000,
                worker="python-sdk",
            )
        )
        for job in result.jobs:
            client.complete_job(
                job_key=job.job_key,
                data=CompleteJobData.from_dict({"variables": variables or {}}),
            )
            done += 1
    return done


async def run_with_sdk_worker():
    """Starts an instance and lets an SDK job worker do its jobs; True once COMPLETED."""
    handled = []

    async def handle(job):
        handled.append(job.job_key)
        return {"handledBy": "sdk-worker"}

    async with CamundaAsyncClient() as client:
        worker = client.create_job_worker(
            config=WorkerConfig(job_type="restCall", job_timeout_milliseconds=30_000),
            callback=handle,
        )
        created = await client.create_process_instance(
            data=Processcreationbyid.from_dict({"processDefinitionId": PROCESS_ID})
        )
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                instance = await client.get_process_instance(created.process_instance_key)
                if state(instance) == "COMPLETED":
                    return True, len(handled)
                await asyncio.sleep(0.1)
        finally:
            worker.stop()
    return False, len(handled)


def search_instances(client, query):
    return client.search_process_instances(data=SearchProcessInstancesData.from_dict(query))


def main():
    examples = Path(sys.argv[1])
    client = CamundaClient()

    topology = client.get_topology()
    check(topology.partitions_count >= 1, f"topology lists {topology.partitions_count} partition(s)")

    with tempfile.TemporaryDirectory() as workdir:
        deployment = client.deploy_resources_from_files([example_model(examples, workdir)])
    check(
        [p.process_definition_id for p in deployment.processes] == [PROCESS_ID],
        f"deployed two-rest-calls as key {deployment.processes[0].process_definition_key}",
    )

    created = client.create_process_instance(
        data=Processcreationbyid.from_dict(
            {"processDefinitionId": PROCESS_ID, "variables": {"orderId": "py-1"}}
        )
    )
    key = created.process_instance_key
    check(created.process_definition_id == PROCESS_ID, f"created instance {key}")

    # The SDK's own model for the instance: 8.8 leaves endDate and the version tag out
    # while they have no value.
    instance = client.get_process_instance(key)
    check(state(instance) == "ACTIVE", "the new instance is ACTIVE")
    check(instance.process_definition_name == "Two REST calls", "it names its process model")
    check(isinstance(instance.end_date, Unset), "a running instance has no end date")

    check(complete_jobs(client, "restCall", 2, {"status": 200}) == 2, "completed both jobs")

    instance = client.get_process_instance(key)
    check(state(instance) == "COMPLETED", "the instance finished (COMPLETED)")
    check(not isinstance(instance.end_date, Unset), f"it has an end date ({instance.end_date})")

    incidents = client.search_incidents(
        data=SearchIncidentsData.from_dict({"filter": {"processInstanceKey": key}})
    )
    check(incidents.page.total_items == 0, "the instance has no incidents")

    # Searches as the SDK's README shows them, polling until the history has the answer.
    by_process = {"filter": {"processDefinitionId": PROCESS_ID}}
    found = poll(
        lambda: search_instances(client, by_process),
        lambda r: any(i.process_instance_key == key and state(i) == "COMPLETED" for i in r.items),
    )
    mine = [i for i in found.items if i.process_instance_key == key]
    check(
        len(mine) == 1
        and not isinstance(mine[0].end_date, Unset)
        and mine[0].process_definition_version == 1,
        f"search_process_instances finds the finished instance ({found.page.total_items} in all)",
    )
    active = search_instances(
        client, {"filter": {"processDefinitionId": PROCESS_ID, "state": "ACTIVE"}}
    )
    check(
        all(state(i) == "ACTIVE" for i in active.items)
        and key not in [i.process_instance_key for i in active.items],
        f"a state filter leaves it out ({active.page.total_items} active)",
    )
    jobs = poll(
        lambda: client.search_jobs(
            data=SearchJobsData.from_dict({"filter": {"processInstanceKey": key}})
        ),
        lambda r: len(r.items) == 2 and all(state(j) == "COMPLETED" for j in r.items),
    )
    check(
        sorted(j.element_id for j in jobs.items) == ["Rest1", "Rest2"]
        and all(j.worker == "python-sdk" and j.type_ == "restCall" for j in jobs.items),
        "search_jobs finds both jobs of the instance, completed by this worker",
    )
    failed = client.search_jobs(
        data=SearchJobsData.from_dict({"filter": {"type": "restCall", "state": "FAILED"}})
    )
    check(failed.page.total_items == 0, "no job failed")

    # Create-and-await, with a worker thread doing the jobs.
    worker = threading.Thread(target=complete_jobs, args=(CamundaClient(), "restCall", 2, {"n": 7}))
    worker.start()
    awaited = client.create_process_instance(
        data=Processcreationbyid.from_dict(
            {
                "processDefinitionId": PROCESS_ID,
                "variables": {"orderId": "py-2"},
                "awaitCompletion": True,
                "requestTimeout": 20_000,
            }
        )
    )
    worker.join()
    variables = awaited.variables.to_dict()
    check(variables.get("n") == 7 and variables.get("orderId") == "py-2", f"awaited result {variables}")

    running = client.create_process_instance(
        data=Processcreationbyid.from_dict(
            {"processDefinitionId": PROCESS_ID, "variables": {"orderId": "py-3"}}
        )
    )
    found = client.search_variables(
        data=SearchVariablesData.from_dict(
            {"filter": {"processInstanceKey": running.process_instance_key}}
        )
    )
    names = sorted(v.name for v in found.items)
    check(names == ["orderId"], f"variables of a running instance: {names}")

    # Paging with the cursor, one instance a page: three instances of the process now.
    first = search_instances(client, {**by_process, "page": {"limit": 1}})
    second = search_instances(
        client, {**by_process, "page": {"limit": 1, "after": first.page.end_cursor}}
    )
    check(
        first.page.total_items == 3
        and len(first.items) == 1
        and len(second.items) == 1
        and first.items[0].process_instance_key != second.items[0].process_instance_key,
        "a cursor page continues after the previous one",
    )

    # The SDK's own job worker (long polling with requestTimeout 0 = the server's default).
    completed, handled = asyncio.run(run_with_sdk_worker())
    check(completed, f"the SDK's job worker completed an instance ({handled} jobs)")

    published = client.publish_message(
        data=PublishMessageData.from_dict({"name": "nobody-waits", "correlationKey": "k"})
    )
    check(int(published.message_key) > 0, f"published message {published.message_key}")

    # 8.8's spec lists no 404 for creating an instance, so this SDK raises its
    # UnexpectedStatus; reading an unknown instance has a typed NotFound.
    try:
        client.create_process_instance(
            data=Processcreationbyid.from_dict({"processDefinitionId": "no_such_process"})
        )
        check(False, "an unknown process id is rejected")
    except errors.ApiError as error:
        check(
            error.status_code == 404 and b"no_such_process" in error.content,
            f"an unknown process id is a 404 ({error.status_code})",
        )
    try:
        client.get_process_instance("2251799813685999")
        check(False, "an unknown instance key is rejected")
    except errors.GetProcessInstanceNotFound as error:
        check(error.status_code == 404, f"an unknown instance is a NotFound: {error.parsed.detail}")

    run_user_task(client)
    run_decision(client, examples)

    print("all checks passed", flush=True)


DINNER_FORM = """{"id": "py_dinner_feedback", "type": "default", "components": [
  {"key": "liked", "type": "checkbox", "label": "Liked it"}]}"""


def run_decision(client, examples):
    """Deploys a BPMN with a business rule task, the DMN it calls and a form together
    (as the SDK's README deploys a decision.dmn), evaluates the decision by id and by key,
    then runs the business rule task and finds its decision instance."""
    with tempfile.TemporaryDirectory() as workdir:
        form = Path(workdir) / "feedback.form"
        form.write_text(DINNER_FORM)
        deployment = client.deploy_resources_from_files(
            [examples / "dinner.bpmn", examples / "dish.dmn", form]
        )
    ids = sorted(d.decision_definition_id for d in deployment.decisions)
    check(ids == ["dish", "menu", "season"], f"deployed the decisions {ids}")
    check(
        [r.decision_requirements_id for r in deployment.decision_requirements]
        == ["DishDecisions"]
        and [p.process_definition_id for p in deployment.processes] == ["dinner"]
        and [f.form_id for f in deployment.forms] == ["py_dinner_feedback"],
        "with its requirements graph, the process and the form",
    )

    by_id = client.evaluate_decision(
        data=DecisionevaluationbyID.from_dict(
            {"decisionDefinitionId": "dish", "variables": {"month": 1, "guestCount": 4}}
        )
    )
    check(by_id.output == '"Roastbeef"', f"dish by id: {by_id.output}")
    evaluated = [d.decision_definition_id for d in by_id.evaluated_decisions]
    check(evaluated == ["season", "dish"], f"required decisions first: {evaluated}")
    dish_key = next(d.decision_definition_key for d in deployment.decisions if d.decision_definition_id == "dish")
    by_key = client.evaluate_decision(
        data=Decisionevaluationbykey.from_dict(
            {"decisionDefinitionKey": dish_key, "variables": {"month": 10, "guestCount": 2}}
        )
    )
    check(by_key.output == '"Spareribs"', f"dish by key: {by_key.output}")

    created = client.create_process_instance(
        data=Processcreationbyid.from_dict(
            {"processDefinitionId": "dinner", "variables": {"month": 1, "guestCount": 4}}
        )
    )
    check(complete_jobs(client, "cook", 1) == 1, "cooked after the business rule task")
    instance = poll(
        lambda: client.get_process_instance(created.process_instance_key),
        lambda answer: state(answer) == "COMPLETED",
    )
    check(state(instance) == "COMPLETED", "the dinner instance finished")
    dish = client.search_variables(
        data=SearchVariablesData.from_dict(
            {"filter": {"processInstanceKey": created.process_instance_key, "name": "dish"}}
        )
    )
    check(
        [v.value for v in dish.items] == ['"Roastbeef"'],
        f"the business rule task set dish: {[v.value for v in dish.items]}",
    )
    instances = poll(
        lambda: client.search_decision_instances(
            data=SearchDecisionInstancesData.from_dict(
                {"filter": {"processInstanceKey": created.process_instance_key}}
            )
        ),
        lambda answer: answer.page.total_items >= 1,
    )
    check(
        instances.page.total_items >= 1
        and all(i.process_instance_key == created.process_instance_key for i in instances.items),
        f"its decision instances are searchable ({instances.page.total_items})",
    )


def run_user_task(client):
    """Deploys a process and its form together, then searches, assigns and completes the
    user task through the SDK's user-task calls."""
    with tempfile.TemporaryDirectory() as workdir:
        bpmn = Path(workdir) / "review.bpmn"
        bpmn.write_text(REVIEW_BPMN)
        form = Path(workdir) / "approval.form"
        form.write_text(REVIEW_FORM)
        deployment = client.deploy_resources_from_files([bpmn, form])
    check(
        [f.form_id for f in deployment.forms] == ["py_approval"],
        f"deployed the form with the process (form key {deployment.forms[0].form_key})",
    )
    created = client.create_process_instance(
        data=Processcreationbyid.from_dict({"processDefinitionId": REVIEW_ID})
    )
    query = {"filter": {"processInstanceKey": created.process_instance_key}}
    tasks = poll(
        lambda: client.search_user_tasks(data=SearchUserTasksData.from_dict(query)),
        lambda answer: answer.page.total_items == 1,
    )
    check(tasks.page.total_items == 1, "the instance's user task is found by search")
    task = tasks.items[0]
    check(
        task.candidate_groups == ["reviewers"] and str(task.state.value) == "CREATED",
        f"it is CREATED for the group reviewers ({task.user_task_key})",
    )
    linked = client.get_user_task_form(task.user_task_key)
    check(linked.form_id == "py_approval", f"its linked form is {linked.form_id}")

    client.assign_user_task(
        task.user_task_key, data=AssignUserTaskData.from_dict({"assignee": "demo"})
    )
    assigned = client.get_user_task(task.user_task_key)
    check(assigned.assignee == "demo", "assigned to demo")
    try:
        client.assign_user_task(
            task.user_task_key,
            data=AssignUserTaskData.from_dict({"assignee": "other", "allowOverride": False}),
        )
        check(False, "a claim of a task assigned to someone else is refused")
    except errors.ApiError as error:
        check(error.status_code == 409, f"a conflicting claim is a 409 ({error.status_code})")

    client.complete_user_task(
        task.user_task_key,
        data=CompleteUserTaskData.from_dict({"variables": {"approved": True}}),
    )
    instance = poll(
        lambda: client.get_process_instance(created.process_instance_key),
        lambda answer: state(answer) == "COMPLETED",
    )
    check(state(instance) == "COMPLETED", "completing the user task finished the instance")


if __name__ == "__main__":
    main()
