"""The generated clients are typed packages: installed as another project installs them,
the README's examples pass mypy and pyright in strict mode (they run against a server
in tests/e2e/test_client.py); both clients raise one hierarchy of exceptions; and no
operation can ask for more than the server's default limits allow."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from graphql import DocumentNode, FragmentDefinitionNode, OperationDefinitionNode, parse

from resolvers.cost import document_cost
from server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "clients" / "python"
BIN = Path(sys.executable).parent


def _readme_examples() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Generated Python client", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment holding the client as `pip install clients/python` installs it
    (its dependencies, httpx and pydantic, from the test environment): its interpreter."""
    home = tmp_path_factory.mktemp("client-env")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", home / "env"], check=True)
    python = home / "env" / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"),
            *("--target", str(site), str(CLIENTS)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    # the dependencies: this environment's packages, after the installed client
    (site / "zz-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _write_examples(into: Path) -> list[Path]:
    files = []
    for i, example in enumerate(_readme_examples()):
        path = into / f"example_{i}.py"
        path.write_text(example)
        files.append(path)
    assert len(files) == 2
    return files


def test_the_installed_packages_are_marked_typed(installed: Path) -> None:
    site = installed.parents[1] / "lib"
    marks = sorted(p.parent.name for p in site.rglob("py.typed") if "agent_memory" in str(p))
    assert marks == ["agent_memory_client", "agent_memory_client_async"]


def test_the_readme_examples_pass_mypy_strict(installed: Path, tmp_path: Path) -> None:
    files = _write_examples(tmp_path)
    done = subprocess.run(
        [BIN / "mypy", "--strict", "--python-executable", installed, "--no-incremental", *files],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_readme_examples_pass_pyright_strict(installed: Path, tmp_path: Path) -> None:
    files = _write_examples(tmp_path)
    (tmp_path / "pyrightconfig.json").write_text(
        json.dumps({"typeCheckingMode": "strict", "reportMissingModuleSource": "error"})
    )
    done = subprocess.run(
        [BIN / "pyright", "--outputjson", "--pythonpath", installed, *files],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(done.stdout)
    problems = [
        f"{d['file']}:{d['range']['start']['line']}: {d['message']}"
        for d in report["generalDiagnostics"]
    ]
    assert report["summary"]["errorCount"] == 0, problems
    assert report["summary"]["filesAnalyzed"] == 2


_SAME_EXCEPTIONS = """
import agent_memory_client as sync, agent_memory_client_async as aio
import agent_memory_client_async.async_base_client as base
for name in ("GraphQLClientError", "GraphQLClientHttpError", "GraphQLClientGraphQLError",
             "GraphQLClientGraphQLMultiError", "GraphQLClientInvalidResponseError"):
    assert getattr(aio, name) is getattr(sync, name), name
    assert getattr(base, name, getattr(sync, name)) is getattr(sync, name), name
assert issubclass(sync.GraphQLClientGraphQLMultiError, sync.GraphQLClientError)
print("one hierarchy")
"""


def test_both_clients_raise_the_same_exceptions(installed: Path) -> None:
    """The async client raises the sync package's classes: one except clause catches both."""
    done = subprocess.run(
        [installed, "-c", _SAME_EXCEPTIONS], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "one hierarchy", done.stderr


def test_no_operation_asks_for_more_than_the_default_limits() -> None:
    """At the largest page every paged argument allows (``first``, ``limit``)."""
    settings = Settings()
    operations = CLIENTS / "operations"
    fragments = [
        d
        for d in parse((operations / "fragments.graphql").read_text()).definitions
        if isinstance(d, FragmentDefinitionNode)
    ]
    seen = 0
    for path in operations.glob("*.graphql"):
        for definition in parse(path.read_text()).definitions:
            if not isinstance(definition, OperationDefinitionNode):
                continue
            largest = {
                v.variable.name.value: settings.max_page_size
                for v in definition.variable_definitions or ()
                if v.variable.name.value in ("first", "limit")
            }
            cost = document_cost(
                DocumentNode(definitions=(definition, *fragments)),
                largest,
                maximum=settings.max_query_cost,
                max_page_size=settings.max_page_size,
            )
            assert cost <= settings.max_query_cost, (definition.name, cost)
            seen += 1
    assert seen >= 25
