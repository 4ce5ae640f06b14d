import json
from importlib import resources

import pytest
from click.testing import CliRunner

from harmonic.cli import main

BOUTIQUE = str(resources.files("harmonic.data").joinpath("topologies", "online-boutique.json"))


def test_graph_prints_top_edges_from_a_topology():
    r = CliRunner().invoke(main, ["graph", "--topology", BOUTIQUE, "--namespace", "shop", "--top", "2"])
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert lines[0].startswith("affinity graph v1:")
    assert "shop/frontend" in lines[1] and "shop/productcatalogservice" in lines[1]
    assert len(lines) == 3


def test_graph_json_and_explain():
    r = CliRunner().invoke(main, ["graph", "--topology", BOUTIQUE, "--json"])
    assert r.exit_code == 0
    doc = json.loads(r.output)
    assert any(e["src"] == "default/frontend" and e["dst"] == "default/cartservice" for e in doc["edges"])
    r = CliRunner().invoke(main, ["graph", "--topology", BOUTIQUE, "--workload", "default/cartservice"])
    peers = {p["workload"] for p in json.loads(r.output)["peers"]}
    assert peers == {"default/frontend", "default/checkoutservice", "default/redis-cart"}


def test_graph_errors_are_one_line():
    r = CliRunner().invoke(main, ["graph", "--topology", "/nonexistent.json"])
    assert r.exit_code == 1
    assert r.output.strip().startswith("error: topology /nonexistent.json")
    r = CliRunner().invoke(main, ["graph"])
    assert r.exit_code == 2


@pytest.mark.parametrize("output", [[], ["--json"]])
def test_an_empty_graph_fails_with_or_without_json(tmp_path, output):
    edgeless = tmp_path / "t.json"
    edgeless.write_text(json.dumps({"name": "t", "services": [{"name": "a"}], "edges": []}))
    r = CliRunner().invoke(main, ["graph", "--topology", str(edgeless), *output])
    assert r.exit_code == 1, r.output
    assert r.stderr.splitlines()[-1] == "error: the graph is empty: no source gave a signal"
    if output:
        assert json.loads(r.stdout)["edges"] == []
