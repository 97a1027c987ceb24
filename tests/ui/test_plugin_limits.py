"""The plugin's copy of the server's limits (plugin/content/core/limits.js) is generated from the
contracts, reads back in Node as the same values, and is the only copy in the plugin (issue 15)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tools.pluginlimits import OUT, render, values


def test_the_plugin_limits_module_matches_the_contracts():
    assert OUT.read_text() == render(), (
        "the contracts' limits changed: run `make schemas` and commit plugin/content/core/limits.js"
    )


def test_node_reads_the_limits_as_the_contracts_define_them():
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: the plugin's limits cannot be checked (install Node 20)")
    script = (
        f"const m = await import({json.dumps(OUT.as_uri())});"
        "console.log(JSON.stringify(Object.fromEntries(Object.entries(m).map(([k, v]) =>"
        " [k, v instanceof RegExp ? v.source : v]))));"
    )
    out = subprocess.run(
        [node, "--input-type=module", "-e", script], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    got = json.loads(out)
    want = values()
    for name, value in want.items():
        if name.endswith("_PATTERN"):
            assert got[name].replace("\\/", "/") == value, name
        else:
            assert got[name] == value, name
    assert set(got) == set(want)


def test_no_other_plugin_module_copies_a_limit():
    copies = [v for k, v in values().items() if k.endswith("_PATTERN")] + ["xhtml+xml", "786432", "768 * 1024"]
    offenders = []
    for path in sorted(OUT.parent.parent.rglob("*.js")):
        if path == OUT:
            continue
        text = path.read_text()
        offenders += [(path.name, copy) for copy in copies if copy.strip("^$") in text]
    assert not offenders, f"import these from core/limits.js instead: {offenders}"
