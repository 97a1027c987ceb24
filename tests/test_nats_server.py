import nats
import pytest


@pytest.mark.connected
async def test_acked_messages_survive_a_server_kill(fresh_nats_server):
    nc = await nats.connect(fresh_nats_server.url)
    js = nc.jetstream()
    await js.add_stream(name="T", subjects=["t.>"])
    for i in range(50):
        await js.publish("t.x", str(i).encode(), headers={"Nats-Msg-Id": f"m{i}"})
    await nc.close()
    fresh_nats_server.restart()
    nc = await nats.connect(fresh_nats_server.url)
    info = await nc.jetstream().stream_info("T")
    assert info.state.messages == 50
    await nc.close()
