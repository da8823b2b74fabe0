"""Records the request bytes that pyzeebe (unmodified, from PyPI) sends for Zeebe's gRPC
RPCs, to prove Rill's gateway.proto uses Zeebe's field numbers.

A bare gRPC server keeps every request's raw bytes and answers with empty messages; the
client calls each RPC once with known values. The result is the fixture
gateway/tests/fixtures/pyzeebe-requests.txt ("Method hex" per line), which the gateway's
tests decode (gateway/src/grpc/wire_tests.rs). Run once, after a pyzeebe upgrade:

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install -r requirements.txt
    /tmp/venv/bin/python capture.py ../../../gateway/tests/fixtures/pyzeebe-requests.txt
"""

import asyncio
import os
import sys
import tempfile

import grpc
from pyzeebe import ZeebeClient, create_insecure_channel
from pyzeebe.grpc_internals.zeebe_adapter import ZeebeAdapter

captured: list[tuple[str, bytes]] = []


class Recorder(grpc.GenericRpcHandler):
    def service(self, details):
        method = details.method.rsplit("/", 1)[-1]

        async def unary(request: bytes, context) -> bytes:
            captured.append((method, request))
            return b""

        async def streaming(request: bytes, context):
            captured.append((method, request))
            if False:
                yield b""

        if method in ("ActivateJobs", "StreamActivatedJobs"):
            return grpc.unary_stream_rpc_method_handler(streaming)
        return grpc.unary_unary_rpc_method_handler(unary)


async def main(out: str) -> None:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((Recorder(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = create_insecure_channel(grpc_address=f"127.0.0.1:{port}")
    client = ZeebeClient(channel)
    adapter = ZeebeAdapter(channel)

    async def quietly(call):
        # The empty answers are not what the client expects back; only the request counts.
        try:
            await call
        except Exception:
            pass

    await quietly(client.run_process("order", variables={"amount": 5}, version=3))
    await quietly(
        client.run_process_with_result(
            "order", variables={"a": 1}, timeout=2500, variables_to_fetch=["a", "b"]
        )
    )
    await quietly(
        client.publish_message(
            "paid", "order-7", variables={"x": True}, time_to_live_in_milliseconds=60000,
            message_id="m-1",
        )
    )
    await quietly(adapter.complete_job(2251799813685253, {"done": 1}))
    await quietly(adapter.fail_job(2251799813685254, 2, "boom", 1500, {"e": "x"}))
    await quietly(adapter.throw_error(2251799813685255, "declined", {"r": 1}, "CARD_DECLINED"))
    await quietly(adapter.update_job_timeout(2251799813685256, 90000))
    await quietly(adapter.cancel_process_instance(2251799813685257))
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "flow.bpmn")
        with open(model, "wb") as f:
            f.write(b"<definitions/>")
        await quietly(client.deploy_resource(model))
    await quietly(client.topology())
    async for _ in adapter.activate_jobs("pay", "w1", 30000, 10, ["a"], 20000):
        pass
    async for _ in adapter.stream_activate_jobs("pay", "w2", 40000, ["b"], 3600):
        pass
    await channel.close()
    await server.stop(None)
    with open(out, "w") as f:
        for method, request in captured:
            f.write(f"{method} {request.hex()}\n")
    print(f"captured {len(captured)} requests into {out}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
