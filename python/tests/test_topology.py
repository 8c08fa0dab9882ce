"""Topologies, embeddings, programs, the simulator and the fabric from
Python, against the CLI's --json output for the same input ($MRC_CLI)."""

import json
import os
import subprocess

import numpy as np
import pytest

import mrc

CLI = os.environ["MRC_CLI"]
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def cli_json(*args):
    out = subprocess.run([CLI, *args, "--json"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)


def cli_text(*args):
    return subprocess.run([CLI, *args], check=True, stdout=subprocess.PIPE,
                          text=True).stdout


SPECS = ["hcm8", "torus2d:4,4,bw=50", "ladder:6,rung=2,lat=100",
         "prism:3,4", "ring:5"]


@pytest.mark.parametrize("spec", SPECS)
def test_topology_matches_cli(spec):
    want = cli_json("topo", "show", spec)
    with mrc.Topology(spec) as t:
        assert json.loads(t.to_json()) == want
        assert t.name == want["name"]
        assert t.num_nodes == len(want["nodes"])
        assert t.num_links == len(want["links"])
        for got, link in zip(t.links, want["links"]):
            for k in ("a", "b", "count", "bandwidth_gbps", "latency_ns"):
                assert got[k] == link[k]
        assert t.num_physical_links == sum(l["count"] for l in want["links"])
        bw = np.zeros(t.num_nodes)
        for l in want["links"]:
            bw[l["a"]] += l["count"] * l["bandwidth_gbps"]
            bw[l["b"]] += l["count"] * l["bandwidth_gbps"]
        assert np.array_equal(t.node_bandwidth_gbps, bw)
        arrays = t.links_array()
        assert arrays["count"].tolist() == [l["count"] for l in want["links"]]


def test_topology_sources_agree(tmp_path):
    t = mrc.Topology("ladder:4,rung=2")
    again = mrc.Topology.from_json(t.to_json())
    assert again.to_json() == t.to_json()
    path = tmp_path / "t.json"
    t.save(path)
    assert mrc.Topology(path).to_json() == t.to_json()
    links = [(l["a"], l["b"], l["count"], l["bandwidth_gbps"],
              l["latency_ns"]) for l in t.links]
    made = mrc.Topology.from_links(t.num_nodes, links)
    assert made.links == t.links
    as_dicts = mrc.Topology.from_links(3, [{"a": 0, "b": 1}, (1, 2)])
    assert as_dicts.links[0]["count"] == 1
    assert as_dicts.links[1]["bandwidth_gbps"] == 32.0
    # what is behind each port, from both ends
    for node in range(t.num_nodes):
        for port in range(t.num_ports(node)):
            link, peer, peer_port = t.port(node, port)
            assert t.port(peer, peer_port)[1] == node
    assert "graph" in t.to_dot()


EMBEDDINGS = [("hcm8", {}), ("hcm8", {"groups": "4+4"}),
              ("hcm8", {"strategy": "ring"}),
              ("torus2d:4,4", {"max_rings": 2}),
              ("ladder:8", {"replica_size": 4}),
              ("ladder:6,rung=2", {"groups": "0,3+1,4+2,5"})]


def cli_rings_args(spec, kw):
    args = ["rings", spec]
    for k, opt in (("strategy", "--strategy"), ("groups", "--groups"),
                   ("replica_size", "--replica-size"),
                   ("max_rings", "--max-rings")):
        if k in kw:
            args += [opt, str(kw[k])]
    return args


@pytest.mark.parametrize("spec,kw", EMBEDDINGS)
def test_embedding_matches_cli(spec, kw):
    want = cli_json(*cli_rings_args(spec, kw))
    e = mrc.Embedding(mrc.Topology(spec), **kw)
    assert e.strategy == want["strategy"]
    assert e.num_groups == len(want["groups"])
    for g, wg in enumerate(want["groups"]):
        assert e.group_nodes(g).tolist() == wg["nodes"]
        assert e.figures(g) == {k: wg[k] for k in ("bound_gbps", "algbw_gbps",
                                                   "efficiency")}
        rings = e.rings(g)
        assert len(rings) == len(wg["rings"])
        for got, ring in zip(rings, wg["rings"]):
            assert got["nodes"].tolist() == ring["nodes"]
            assert got["bidirectional"] == ring["bidirectional"]
            assert got["share"] == ring["share"]
            for h, wh in zip(got["hops"], ring["hops"]):
                assert (h["from"], h["to"]) == (wh["from"], wh["to"])
                for k in ("route", "links", "ports"):
                    assert h[k].tolist() == wh[k]
    loads = e.link_loads
    assert loads.shape == (len(want["link_loads"]), 2)
    assert loads.tolist() == [l["load"] for l in want["link_loads"]]
    assert e.idle_link_directions == want["idle_link_directions"]
    assert e.idle_physical_links == want["idle_physical_links"]
    assert e.idle_ports.tolist() == want["idle_ports"]
    assert e.figures() == {k: want[k] for k in ("bound_gbps", "algbw_gbps",
                                                "efficiency")}
    e.verify()
    again = mrc.Embedding.from_json(e.topology, e.to_json())
    assert again.link_loads.tolist() == loads.tolist()
    assert "digraph" in e.to_dot() or "graph" in e.to_dot()


def test_strategies_listed():
    names = mrc.strategies()
    assert names[0] == "auto" and "hcm8" in names
    # each name is a strategy: it embeds, or says what it needs
    for n in names:
        try:
            mrc.Embedding("hcm8", strategy=n)
        except mrc.Error as err:
            assert err.name == "MRC_ERR_NOT_APPLICABLE", err


@pytest.mark.parametrize("coll,dtype,op,root", [
    ("allreduce", "float32", "sum", 0), ("reduce_scatter", "int64", "max", 0),
    ("allgather", "uint8", "sum", 0), ("reduce", "int32", "sum", 2),
    ("broadcast", "float16", "sum", 5), ("allreduce", "bfloat16", "avg", 0)])
def test_compile_matches_cli(coll, dtype, op, root):
    e = mrc.Embedding("hcm8")
    p = mrc.compile(e, coll, 1000, dtype=dtype, op=op, root=root)
    args = ["compile", "hcm8", "--collective", coll.replace("_", "-"),
            "--count", "1000", "--dtype", dtype, "--op", op, "--root",
            str(root)]
    want = cli_json(*args)
    info = p.info
    for k in ("collective", "count", "dtype", "root", "chunk_bytes",
              "num_nodes", "num_groups", "num_streams", "code_instructions",
              "table_bytes", "image_bytes"):
        assert info[k] == want[k], k
    listing = p.listing()
    assert listing == cli_text(*args, "--listing")
    p.check()
    image = p.save()
    assert len(image) == info["image_bytes"]
    loaded = mrc.Program.load(image, topology=e.topology)
    assert loaded.listing() == listing


@pytest.mark.parametrize("spec,coll,size,mode", [
    ("hcm8", "allreduce", 1 << 20, "bsp"),
    ("hcm8", "allreduce", 1 << 20, "pipelined"),
    ("torus2d:4,4,bw=50", "reduce-scatter", 64 << 10, "bsp"),
    ("ladder:6,rung=2", "allgather", 4 << 10, "pipelined"),
    ("ring:5", "broadcast", 100000, "bsp")])
def test_simulation_matches_cli(spec, coll, size, mode):
    want = cli_json("sim", spec, "--collective", coll, "--size", str(size),
                    "--mode", mode)
    p = mrc.compile(mrc.Embedding(spec), coll, size // 4)
    r = mrc.simulate(p, mode=mode)
    for k in ("time_us", "algbw_gbps", "busbw_gbps", "bound_gbps",
              "efficiency"):
        assert getattr(r, k) == pytest.approx(want[k], abs=1e-6), k
    for k in ("energy_j", "energy_no_gating_j"):
        assert getattr(r, k) == pytest.approx(want[k], rel=1e-8), k
    assert r.bytes_moved == want["bytes_moved"]
    assert r.steps == want["steps"]
    assert r.idle_link_directions == want["idle_link_directions"]
    assert r.link_bytes.tolist() == [l["bytes"] for l in want["links"]]
    assert np.allclose(r.link_utilisation,
                       [l["utilisation"] for l in want["links"]],
                       rtol=0, atol=1e-6)
    d = r.as_dict()
    assert d["time_us"] == r.time_us and len(d["link_bytes"]) == r.num_links


def test_simulation_options_change_the_figures():
    p = mrc.compile(mrc.Embedding("hcm8"), "allreduce", 1 << 18)
    base = mrc.simulate(p)
    dear = mrc.simulate(p, pj_per_bit=10)
    assert base.time_us == dear.time_us
    assert dear.energy_j > base.energy_j
    want = cli_json("sim", "hcm8", "--collective", "allreduce", "--size",
                    "1M", "--chunks", "4", "--pj-per-bit", "10")
    r = mrc.simulate(p, chunks=4, pj_per_bit=10)
    assert r.time_us == pytest.approx(want["time_us"], abs=1e-6)
    assert r.energy_j == pytest.approx(want["energy_j"], rel=1e-8)


def test_workload_matches_cli():
    path = os.path.join(EXAMPLES, "workloads", "mlp.json")
    want = cli_json("sim", "hcm8", "--workload", path)
    got = mrc.simulate_workload(path, "hcm8")
    for k in ("steps", "step_us", "total_us", "compute_us", "comm_us",
              "exposed_comm_us", "distinct_collectives"):
        assert got[k] == pytest.approx(want[k], abs=1e-6), k
    assert got["energy_j"] == pytest.approx(want["energy_j"], rel=1e-8)
    assert [o["id"] for o in got["ops"]] == [o["id"] for o in want["ops"]]
    for o, w in zip(got["ops"], want["ops"]):
        assert o["kind"] == w["kind"]
        assert o["end_us"] == pytest.approx(w["end_us"], abs=1e-6)
    with open(path) as f:
        assert mrc.simulate_workload(f.read(), mrc.Topology("hcm8"))[
            "step_us"] == got["step_us"]


@pytest.mark.parametrize("pattern,tiles,columns", [
    ("all-to-all", 64, 4), ("neighbour", 1472, 16), ("random", 200, 7),
    ("broadcast", 100, 3)])
def test_fabric_matches_cli(pattern, tiles, columns):
    want = cli_json("fabric", "--pattern", pattern, "--tiles", str(tiles),
                    "--columns", str(columns))
    with mrc.Fabric(tiles, columns) as f:
        assert (f.tiles, f.columns, f.rows, f.packet_bytes) == (
            want["tiles"], want["columns"], want["rows"],
            want["packet_bytes"])
        got = f.run(mrc.Exchange.pattern(pattern, tiles, columns))
    for k in ("packets", "deliveries", "delivered", "misdelivered", "late",
              "missed", "slipped", "cycles", "simulated_cycles",
              "lower_bound_cycles", "toggles", "toggles_ungated", "saved"):
        assert got[k] == want[k], k


def test_fabric_schedule_by_hand():
    f = mrc.Fabric(tiles=8, columns=2)
    assert f.delay(0, 7) == (1 + f.row_of(0)) + abs(
        f.column_of(0) - f.column_of(7)) + (1 + f.row_of(7))
    x = mrc.Exchange()
    x.add(0, [1, 5], bytes=8)
    x.add(6, np.array([2]))
    assert len(x) == 2
    s = f.schedule(x)
    assert s.info["packets"] == 3 and s.info["deliveries"] == 5
    pk = s.packets()
    assert pk["source"].tolist() == [0, 0, 6]
    # each recipient's multiplexer takes the sender's wires as the packet
    # passes its column: the fixed delay less its own trip from the exchange
    for p in range(3):
        src, cycle = pk["source"][p], pk["send_cycle"][p]
        for d in ([1, 5] if src == 0 else [2]):
            at = cycle + f.delay(src, d) - (1 + f.row_of(d))
            assert s.mux_select(d, at) == src
    assert pk["flags"][2] == mrc.WEST
    stats = s.simulate()
    assert stats["delivered"] == 5 and stats["missed"] == 0
    y = mrc.Exchange.from_json('{"tiles": 8, "exchange": [{"source": 0, '
                               '"destinations": [1, 5], "bytes": 8}]}')
    assert (y.tiles, y.columns) == (8, None)
    assert f.run(y)["delivered"] == 4


PROFILE = {"format": "mrc-profile", "version": 1, "transport": "threads",
           "ranks": 2, "cores": 2, "nodes_per_memory": 2,
           "cache_bytes": 4194304, "copy_gbps_cache": 40,
           "copy_gbps_memory": 8, "memory_gbps_shared": 10,
           "peer_gbps_cache": 12, "slot_gbps": 4.5, "rendezvous_bytes": 16384,
           "rendezvous_us": 2.5,
           "reduce_gbps": {"float32": {"sum": {"cache": 20, "memory": 6}}},
           "copy_gbps_shared": 30, "latency_us": 0.3,
           "quiet_turn_share": 0.75,
           "message_us": 0.4, "sync_us": 0.2}


def test_simulation_with_a_profile_matches_cli(tmp_path):
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(PROFILE))
    prof = mrc.load_profile(path)
    assert prof.transport == "threads" and prof.message_us == 0.4
    assert prof.peer_gbps_cache == 12  # the struct's layout is the C one
    assert (prof.slot_gbps, prof.rendezvous_us) == (4.5, 2.5)
    # the struct's last fields, where one left out of the Python layout
    # would have the C library write past its end
    assert (prof.copy_gbps_shared, prof.latency_us,
            prof.quiet_turn_share) == (30, 0.3, 0.75)
    assert prof.reduce_gbps_cache.shape == (10, 5)
    assert prof.reduce_gbps_cache.max() == 20
    p = mrc.compile(mrc.Embedding("ring:4"), "allreduce", 1 << 18)
    want = cli_json("sim", "ring:4", "--collective", "allreduce", "--size",
                    "1M", "--profile", str(path))
    for profile in (str(path), prof,
                    mrc.Profile(json_text=json.dumps(PROFILE))):
        r = mrc.simulate(p, profile=profile)
        assert r.time_us == pytest.approx(want["time_us"], abs=1e-6)
    # the node model costs time that the links alone do not
    assert mrc.simulate(p).time_us < r.time_us
    with pytest.raises(mrc.Error, match="unknown field \"bogus\""):
        mrc.Profile(json_text=json.dumps(dict(PROFILE, bogus=1)))
