"""Middlebox unit programs written in Python (Rosebud's Python prototyping path), stepped
deterministically: forwarding, drops by reason, host tags, kept packets, swaps, exceptions.

Needs the binding registered as `linerate.middlebox` (crates/py/src/middlebox.rs)."""

import linerate as lr
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

mb = lr.middlebox


def frames(n: int) -> list[bytes]:
    return [
        bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2")
              / TCP(sport=1000 + i, dport=443 if i % 3 == 0 else 80)
              / Raw(b"EVIL" if i == 4 else b"ok"))
        for i in range(n)
    ]


class Filter:
    def __init__(self) -> None:
        self.seen = 0

    def on_packet(self, ctx: mb.Ctx, pkt: mb.Packet) -> None:
        self.seen += 1
        data = ctx.data(pkt)
        if data[36:38] == b"\x01\xbb":
            ctx.drop(pkt, "port_443")
        elif b"EVIL" in data:
            ctx.to_host(pkt, [42])
        else:
            ctx.forward(pkt, 1 - ctx.port(pkt))

    def dump(self) -> str:
        return f"seen={self.seen}"


def test_python_program_filters_and_tags() -> None:
    rt = mb.Runtime([Filter(), "forward"], ports=2, policy="rr")
    for f in frames(12):
        rt.send(0, f)
    assert rt.run()
    out, host, st = rt.recv(1), rt.host(), rt.stats()
    assert st["unit0.drop.port_443"] == 2
    assert st["unit0.rx_frames"] == st["unit1.rx_frames"] == 6
    assert [h[1] for h in host] == [[42]]
    assert len(out) + len(host) + 2 == 12
    assert rt.dump(0)["program_state"] == "seen=6"


def test_unsent_packets_are_dropped_and_kept_ones_wait() -> None:
    class Lazy:
        def on_packet(self, ctx: mb.Ctx, pkt: mb.Packet) -> None:
            pass

    class Keeper:
        def __init__(self) -> None:
            self.kept: list[mb.Packet] = []

        def on_packet(self, ctx: mb.Ctx, pkt: mb.Packet) -> None:
            self.kept.append(pkt)
            if len(self.kept) == 3:
                for p in self.kept:
                    ctx.forward(p, 1)
                self.kept = []

    rt = mb.Runtime([Lazy()], ports=2)
    for f in frames(5):
        rt.send(0, f)
    rt.run()
    assert rt.stats()["unit0.drop.not_sent"] == 5
    rt = mb.Runtime([Keeper()], ports=2)
    for f in frames(7):
        rt.send(0, f)
    rt.step(20)
    assert len(rt.recv(1)) == 6
    assert rt.swap(0, "forward") >= 0.0
    rt.run()


def test_exceptions_are_counted_not_fatal() -> None:
    class Boom:
        def on_packet(self, ctx: mb.Ctx, pkt: mb.Packet) -> None:
            raise ValueError("boom")

    rt = mb.Runtime([Boom()], ports=2)
    rt.send(0, frames(1)[0])
    rt.run()
    assert rt.stats()["unit0.program_panics"] == 1
    assert "boom" in rt.traps()[0][1]
