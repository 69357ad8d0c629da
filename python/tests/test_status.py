"""Client.status() shows each tenant its own: bob sees his connection, buffers and
requests and nothing of alice's; alice, in admin_tenants, sees both tenants.
"""
import os
import socket

import numpy as np

import gpud

ALICE = "alice-0123456789abcdef"
BOB = "bob-fedcba9876543210xx"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_tenants(start_gpud, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("alice %s\nbob %s\n" % (ALICE, BOB))
    os.chmod(tokens, 0o600)
    tcp = "tcp://127.0.0.1:%d" % free_port()
    start_gpud("[gpud]\ntokens_file = %s\nadmin_tenants = alice\n" % tokens,
               ("--listen", tcp))
    return tcp


def test_status_of_a_tenant(start_gpud, tmp_path):
    tcp = two_tenants(start_gpud, tmp_path)
    alice = gpud.connect(tcp, token=ALICE)
    bob = gpud.connect(tcp, token=BOB)
    try:
        kept = [alice.upload(np.arange(3.0)), alice.upload(np.arange(4.0))]
        mine = bob.upload(np.arange(5.0))

        everyone = alice.status()
        assert everyone["scope"] == "all" and everyone["tenant"] == "alice"
        # alice's and bob's; the fixture's readiness probe (gpuctl status over
        # ipc://) may not have been seen to close yet
        tenants = [s["tenant"] for s in everyone["sessions"]]
        assert sorted(t for t in tenants if t in ("alice", "bob")) == ["alice", "bob"]
        assert everyone["buffers"] == 3
        her = [s for s in everyone["sessions"] if s["id"] == alice.server.connection][0]
        assert her["peer"].startswith("127.0.0.1:")

        st = bob.status()
        assert st["scope"] == "tenant" and st["tenant"] == "bob"
        assert st["connections"] == 1
        assert [s["id"] for s in st["sessions"]] == [bob.server.connection]
        assert st["sessions"][0]["tenant"] == "bob"
        assert st["sessions"][0]["buffers"] == 1
        assert st["sessions"][0]["bytes"] == 5 * 8
        assert st["buffers"] == 1 and st["bytes_in_use"] == 5 * 8
        # over every device (the GPU suite may run with several: GPUD_TEST_DEVICES)
        assert sum(d["buffers"] for d in st["devices"]) == 1
        assert st["requests"] == 3  # hello, the upload, this status
        assert st["errors"] == 0 and st["in_flight"] == 1
        assert "alice" not in repr(st) and her["peer"] not in repr(st)
        # the device and the daemon stay: what they are, their memory
        assert st["server"].version == bob.server.version
        assert st["server"].devices[0]["memory_total"] > 0
        mine.free()
        for b in kept:
            b.free()
    finally:
        alice.close()
        bob.close()
