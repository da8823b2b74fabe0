"""Drives a Rill gateway over Zeebe's gRPC API with pyzeebe, unmodified from PyPI:
topology, deploy, create with result, polling and streaming workers completing jobs, a
published message correlating, and Zeebe's error for a duplicate message id.

    python flow.py HOST:PORT EXAMPLES_DIR     (prints "all checks passed" at the end)

With RILL_GRPC_CA=ca.crt it opens a secure channel trusting that CA, as a TLS gateway
needs (docs/security.md); with RILL_CLIENT_OAUTH_URL, RILL_CLIENT_ID, RILL_CLIENT_SECRET
and RILL_CLIENT_AUDIENCE as well, pyzeebe's OAuth2 client-credentials channel.
"""

import asyncio
import os
import sys

import grpc
from pyzeebe import (
    ZeebeClient,
    ZeebeWorker,
    create_insecure_channel,
    create_oauth2_client_credentials_channel,
    create_secure_channel,
)
from pyzeebe.errors import MessageAlreadyExistsError


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print(f"ok: {what}")


def workers_for(channel, stream_enabled):
    worker = ZeebeWorker(
        channel, name="pyzeebe-flow", request_timeout=2000, stream_enabled=stream_enabled
    )

    @worker.task(task_type="restCall")
    async def rest_call(steps: int = 0):
        return {"steps": steps + 1, "streamed": stream_enabled}

    @worker.task(task_type="charge-card")
    async def charge_card(amount: float = 0):
        return {"transactionId": f"tx-{int(amount)}"}

    @worker.task(task_type="pack")
    async def pack():
        return {"packed": True}

    @worker.task(task_type="invoice")
    async def invoice():
        return {"invoiced": True}

    return worker


async def main(address: str, examples: str) -> None:
    ca = os.environ.get("RILL_GRPC_CA")
    oauth_url = os.environ.get("RILL_CLIENT_OAUTH_URL")
    if ca and oauth_url:
        # OIDC on a TLS gateway (docs/security.md): pyzeebe's OAuth2 client-credentials
        # channel, which fetches the token from the provider and sends it with each call.
        with open(ca, "rb") as f:
            credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
        channel = create_oauth2_client_credentials_channel(
            grpc_address=address,
            client_id=os.environ["RILL_CLIENT_ID"],
            client_secret=os.environ["RILL_CLIENT_SECRET"],
            authorization_server=oauth_url,
            audience=os.environ["RILL_CLIENT_AUDIENCE"],
            channel_credentials=credentials,
        )
    elif ca:
        # A TLS gateway (docs/security.md): a secure channel trusting its CA.
        with open(ca, "rb") as f:
            credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
        channel = create_secure_channel(grpc_address=address, channel_credentials=credentials)
    else:
        channel = create_insecure_channel(grpc_address=address)
    client = ZeebeClient(channel)

    topology = await client.topology()
    check(len(topology.brokers) >= 1, "topology names the brokers")
    check(topology.partitions_count >= 1, "topology counts the partitions")

    deployed = await client.deploy_resource(
        os.path.join(examples, "two-rest-calls.bpmn"),
        os.path.join(examples, "order-fulfilment.bpmn"),
    )
    ids = sorted(d.bpmn_process_id for d in deployed.deployments)
    check(ids == ["order-fulfilment", "two-rest-calls"], f"deployed {ids}")

    # A polling worker.
    worker = workers_for(channel, stream_enabled=False)
    working = asyncio.create_task(worker.work())
    for _ in range(3):
        result = await client.run_process_with_result(
            "two-rest-calls", {"steps": 0}, timeout=20000, variables_to_fetch=["steps"]
        )
        check(result.variables == {"steps": 2}, f"both jobs completed: {result.variables}")

    # A message published before the instance waits for it is buffered, then correlates.
    await client.publish_message(
        "shipment-confirmed", "order-1", {"carrier": "post"},
        time_to_live_in_milliseconds=60000, message_id="ship-order-1",
    )
    try:
        await client.publish_message(
            "shipment-confirmed", "order-1", {}, time_to_live_in_milliseconds=60000,
            message_id="ship-order-1",
        )
        check(False, "a second message with the same id is refused")
    except MessageAlreadyExistsError:
        check(True, "a second message with the same id is refused")
    order = {"id": "order-1", "total": 40, "customer": {"id": "c-1"}}
    result = await client.run_process_with_result(
        "order-fulfilment", {"order": order}, timeout=30000
    )
    check(result.variables.get("carrier") == "post", "the message's variables arrived")
    check(
        result.variables.get("payment", {}).get("transactionId") == "tx-40",
        "the charge-card job's output was mapped",
    )
    await worker.stop()
    await working

    # A streaming worker.
    streaming = workers_for(channel, stream_enabled=True)
    working = asyncio.create_task(streaming.work())
    for _ in range(3):
        result = await client.run_process_with_result(
            "two-rest-calls", {"steps": 0}, timeout=20000, variables_to_fetch=["steps"]
        )
        check(result.variables == {"steps": 2}, f"streaming worker: {result.variables}")
    await streaming.stop()
    await working
    await channel.close()
    print("all checks passed")


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), timeout=120))
