"""Client generators accept schema.graphql: the checked-in ariadne-codegen clients match a
fresh generation, sgqlc-codegen writes a schema module (and operations) that import and
build valid documents, and gql's DSL builds queries over it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from gql import dsl
from graphql import GraphQLSchema, build_schema, introspection_from_schema, parse, validate

ROOT = Path(__file__).resolve().parents[2]
CODEGEN = ROOT / ".venv-codegen" / "bin"
OPERATIONS = ROOT / "clients" / "python" / "operations"


@pytest.fixture(scope="module")
def schema() -> GraphQLSchema:
    return build_schema((ROOT / "schema.graphql").read_text())


@pytest.fixture(scope="module")
def codegen() -> Path:
    """The generators' own venv (graphql-core 3.2; the server needs 3.3): `make test`
    makes it; a bare pytest run without it skips, but never in CI."""
    if not (CODEGEN / "python").exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CODEGEN.parent} is missing: `make test` makes it (make codegen-tools)")
        pytest.skip(f"{CODEGEN.parent} is missing: run `make codegen-tools` (make test does)")
    return CODEGEN


def _errors(schema: GraphQLSchema, document: str) -> list[str]:
    return [e.message for e in validate(schema, parse(document))]


def test_the_generated_clients_match_schema_graphql(codegen: Path) -> None:
    done = subprocess.run(
        [codegen / "python", "clients/python/generate.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


_SGQLC_USE = """
import sys, uuid
sys.path.insert(0, sys.argv[1])
import am_schema as m, am_operations as ops
from sgqlc.operation import Operation
add = Operation(m.am_schema.mutation_type)
add.add_memory(input=m.AddMemoryInput(turn_id=str(uuid.uuid4()), summary="x")).memories.record_id()
read = Operation(m.am_schema.query_type)
node = read.agent(id=str(uuid.uuid4())).memory_records(first=5).edges.node
node.status()
node.versions.__fields__("number", "summary")
print(add)
print("#---")
print(read)
print("#---")
print(ops.Operations.mutation.begin_turn)
"""


def test_sgqlc_codegen_generates_modules_that_build_valid_documents(
    codegen: Path, schema: GraphQLSchema, tmp_path: Path
) -> None:
    introspection = tmp_path / "schema.json"
    introspection.write_text(json.dumps({"data": introspection_from_schema(schema)}))
    sgqlc = str(codegen / "sgqlc-codegen")
    subprocess.run(
        [sgqlc, "schema", introspection, tmp_path / "am_schema.py"], check=True, timeout=120
    )
    subprocess.run(
        [
            *(sgqlc, "operation", "--schema", introspection, "am_schema"),
            tmp_path / "am_operations.py",
            *(OPERATIONS / name for name in ("fragments.graphql", "runtime.graphql")),
        ],
        check=True,
        timeout=120,
    )
    done = subprocess.run(
        [codegen / "python", "-c", _SGQLC_USE, tmp_path],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    documents = done.stdout.split("#---")
    assert len(documents) == 3 and "beginTurn" in documents[2]
    for document in documents:
        assert _errors(schema, document) == [], document


def test_gql_dsl_builds_valid_queries(schema: GraphQLSchema) -> None:
    ds = dsl.DSLSchema(schema)
    variables = dsl.DSLVariableDefinitions()
    query = dsl.DSLQuery(
        ds.Query.agent.args(id=variables.agent).select(
            ds.Agent.name,
            ds.Agent.memoryRecords.args(first=10).select(
                ds.MemoryRecordConnection.edges.select(
                    ds.MemoryRecordEdge.node.select(
                        ds.MemoryRecord.status,
                        ds.MemoryRecord.versions.select(
                            ds.MemoryVersion.number, ds.MemoryVersion.summary
                        ),
                    )
                )
            ),
        ),
        ds.Query.searchAgentMemory.args(agentId=variables.agent, query="phone").select(
            ds.MemorySearchResult.score, ds.MemorySearchResult.version.select(ds.MemoryVersion.id)
        ),
    )
    query.variable_definitions = variables
    mutation = dsl.DSLMutation(
        ds.Mutation.addMemory.args(input={"turnId": "x", "summary": "y"}).select(
            ds.AddMemoryPayload.memories.select(ds.MemoryVersion.recordId)
        )
    )
    texts = [dsl.print_ast(dsl.dsl_gql(op).document) for op in (query, mutation)]
    for text in texts:
        assert _errors(schema, text) == [], text
    assert "query ($agent: ID!)" in texts[0]
