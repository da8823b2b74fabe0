"""Drives a running Rill gateway with Camunda's own Python SDK, unmodified (process
instances are read over plain HTTP: see read_instance).

Deploys the two-task example, creates an instance, activates and completes its jobs,
and checks that the instance finishes; also checks topology, incidents, variables,
messages, create-and-await, process instance and job searches (as the SDK's README
shows them, with its eventual-consistency polling), and that the SDK surfaces Rill's
errors as its typed errors. Exits non-zero on the first failed check.

Usage: CAMUNDA_REST_ADDRESS=http://127.0.0.1:8080 python sdk_flow.py EXAMPLES_DIR
"""

import asyncio
import json
import os
import sys
import threading
import time
import urllib.request
from pathlib import Path

from camunda_orchestration_sdk import CamundaAsyncClient, CamundaClient, WorkerConfig, errors
from camunda_orchestration_sdk.models import (
    CursorBasedForwardPagination,
    IncidentFilter,
    IncidentSearchQuery,
    JobActivationRequest,
    JobCompletionRequest,
    JobSearchQuery,
    JobSearchQueryFilter,
    MessagePublicationRequest,
    ProcessCreationById,
    ProcessInstanceSearchQuery,
    ProcessInstanceSearchQueryFilter,
    VariableFilter,
    VariableSearchQuery,
)
from camunda_orchestration_sdk.runtime.eventual import ConsistencyOptions


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", flush=True)
        sys.exit(1)
    print(f"ok: {message}", flush=True)


def read_instance(key):
    """GET /v2/process-instances/{key} over plain HTTP. Rill answers in Camunda 8.8's
    shape, which leaves out fields without a value (endDate of a running instance, the
    version tag of a model without one); this SDK (Camunda 8.10's API) requires them in
    its ProcessInstanceResult, so instances are read without its model."""
    base = os.environ["CAMUNDA_REST_ADDRESS"].rstrip("/")
    url = f"{base}/v2/process-instances/{key}"
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def complete_jobs(client, job_type, count, variables=None):
    """Activates and completes `count` jobs of `job_type`, long polling for them."""
    done = 0
    deadline = time.monotonic() + 30
    while done < count and time.monotonic() < deadline:
        result = client.activate_jobs(
            data=JobActivationRequest(
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
                data=JobCompletionRequest.from_dict({"variables": variables or {}}),
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
        client.create_job_worker(
            config=WorkerConfig(job_type="restCall", job_timeout_milliseconds=30_000),
            callback=handle,
        )
        created = await client.create_process_instance(
            data=ProcessCreationById.from_dict({"processDefinitionId": "two-rest-calls"})
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            instance = await asyncio.to_thread(read_instance, created.process_instance_key)
            if instance["state"] == "COMPLETED":
                return True, len(handled)
            await asyncio.sleep(0.1)
    return False, len(handled)


def main():
    examples = Path(sys.argv[1])
    client = CamundaClient()

    topology = client.get_topology()
    check(topology.partitions_count >= 1, f"topology lists {topology.partitions_count} partition(s)")

    deployment = client.deploy_resources_from_files([examples / "two-rest-calls.bpmn"])
    check(
        [p.process_definition_id for p in deployment.processes] == ["two-rest-calls"],
        f"deployed two-rest-calls as key {deployment.processes[0].process_definition_key}",
    )

    created = client.create_process_instance(
        data=ProcessCreationById.from_dict(
            {"processDefinitionId": "two-rest-calls", "variables": {"orderId": "py-1"}}
        )
    )
    key = created.process_instance_key
    check(created.process_definition_id == "two-rest-calls", f"created instance {key}")

    instance = read_instance(key)
    check(instance["state"] == "ACTIVE", "the new instance is ACTIVE")
    check(instance["processDefinitionName"] == "Two REST calls", "it names its process model")

    check(complete_jobs(client, "restCall", 2, {"status": 200}) == 2, "completed both jobs")

    instance = read_instance(key)
    check(instance["state"] == "COMPLETED", "the instance finished (COMPLETED)")
    check("endDate" in instance, f"it has an end date ({instance.get('endDate')})")

    incidents = client.search_incidents(
        data=IncidentSearchQuery(filter_=IncidentFilter.from_dict({"processInstanceKey": key}))
    )
    check(incidents.page.total_items == 0, "the instance has no incidents")

    def state(item):
        return str(item.state.value)

    # Searches as the SDK's README shows them, polling until the history has the answer.
    found = client.search_process_instances(
        data=ProcessInstanceSearchQuery(
            filter_=ProcessInstanceSearchQueryFilter(process_definition_id="two-rest-calls"),
        ),
        consistency=ConsistencyOptions(
            wait_up_to_ms=10_000,
            poll_interval_ms=100,
            predicate=lambda r: any(
                i.process_instance_key == key and state(i) == "COMPLETED" for i in r.items
            ),
        ),
    )
    mine = [i for i in found.items if i.process_instance_key == key]
    check(
        len(mine) == 1 and mine[0].end_date is not None and mine[0].process_definition_version == 1,
        f"search_process_instances finds the finished instance ({found.page.total_items} in all)",
    )
    active = client.search_process_instances(
        data=ProcessInstanceSearchQuery(
            filter_=ProcessInstanceSearchQueryFilter.from_dict(
                {"processDefinitionId": "two-rest-calls", "state": "ACTIVE"}
            ),
        )
    )
    check(
        all(state(i) == "ACTIVE" for i in active.items) and key not in [i.process_instance_key for i in active.items],
        f"a state filter leaves it out ({active.page.total_items} active)",
    )
    jobs = client.search_jobs(
        data=JobSearchQuery(filter_=JobSearchQueryFilter(process_instance_key=key)),
        consistency=ConsistencyOptions(
            wait_up_to_ms=10_000,
            poll_interval_ms=100,
            predicate=lambda r: len(r.items) == 2 and all(state(j) == "COMPLETED" for j in r.items),
        ),
    )
    check(
        sorted(j.element_id for j in jobs.items) == ["Rest1", "Rest2"]
        and all(j.worker == "python-sdk" and j.type_ == "restCall" for j in jobs.items),
        "search_jobs finds both jobs of the instance, completed by this worker",
    )
    failed = client.search_jobs(
        data=JobSearchQuery(filter_=JobSearchQueryFilter.from_dict({"type": "restCall", "state": "FAILED"}))
    )
    check(failed.page.total_items == 0, "no job failed")

    # Create-and-await, with a worker thread doing the jobs.
    worker = threading.Thread(target=complete_jobs, args=(CamundaClient(), "restCall", 2, {"n": 7}))
    worker.start()
    awaited = client.create_process_instance(
        data=ProcessCreationById.from_dict(
            {
                "processDefinitionId": "two-rest-calls",
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
        data=ProcessCreationById.from_dict(
            {"processDefinitionId": "two-rest-calls", "variables": {"orderId": "py-3"}}
        )
    )
    found = client.search_variables(
        data=VariableSearchQuery(
            filter_=VariableFilter.from_dict({"processInstanceKey": running.process_instance_key})
        )
    )
    names = sorted(v.name for v in found.items)
    check(names == ["orderId"], f"variables of a running instance: {names}")

    # Paging with the cursor, one instance a page: three instances of the process now.
    first = client.search_process_instances(
        data=ProcessInstanceSearchQuery(
            filter_=ProcessInstanceSearchQueryFilter(process_definition_id="two-rest-calls"),
            page=CursorBasedForwardPagination(limit=1),
        )
    )
    second = client.search_process_instances(
        data=ProcessInstanceSearchQuery(
            filter_=ProcessInstanceSearchQueryFilter(process_definition_id="two-rest-calls"),
            page=CursorBasedForwardPagination(limit=1, after=first.page.end_cursor),
        )
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
        data=MessagePublicationRequest.from_dict({"name": "nobody-waits", "correlationKey": "k"})
    )
    check(int(published.message_key) > 0, f"published message {published.message_key}")

    try:
        client.create_process_instance(
            data=ProcessCreationById.from_dict({"processDefinitionId": "no-such-process"})
        )
        check(False, "an unknown process id is rejected")
    except errors.NotFoundError as error:
        check(error.status_code == 404, f"an unknown process id is a NotFoundError: {error.parsed.detail}")
    except errors.ApiError as error:
        check(error.status_code == 404, f"an unknown process id is a 404 ({error.status_code})")

    print("all checks passed", flush=True)


if __name__ == "__main__":
    main()
