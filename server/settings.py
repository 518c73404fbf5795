"""The one settings class: every knob comes from the environment (prefix ``AGENT_MEMORY_``).

``DATABASE_URL`` is also read unprefixed, because that is what operators set.
When no database URL is given, an embedded PostgreSQL (with pgvector) is started
in ``<data_dir>/postgres`` and kept between runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from server.domain.usage import Price


def default_data_dir() -> Path:
    """The checkout's ``.data`` when the code runs from a source checkout (whatever the
    working directory), else the user's data directory: never the working directory."""
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "migrations").is_dir():
        return checkout / ".data"
    return Path.home() / ".local" / "share" / "agent-memory"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AGENT_MEMORY_", extra="ignore")

    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("AGENT_MEMORY_DATABASE_URL", "DATABASE_URL"),
        description="PostgreSQL URL (with pgvector). Unset: start the embedded server.",
    )
    data_dir: Path = Field(
        default_factory=lambda: default_data_dir(),
        description="Where the embedded PostgreSQL keeps its data: default `.data` in the "
        "source checkout the server runs from, else ~/.local/share/agent-memory.",
    )
    database_name: str = Field(
        default="agent_memory", description="Database created inside the embedded server."
    )
    host: str = "127.0.0.1"
    port: int = 8000
    dev: bool = Field(default=False, description="Development mode: GraphiQL and introspection.")
    embedding_model: str | None = Field(
        default=None,
        description="Path or name of a sentence-transformers model; default: the bundled "
        "all-MiniLM-L6-v2.",
    )
    embedding_backend: Literal["onnx", "torch"] = Field(
        default="onnx",
        description="Where the model's forward pass runs: ONNX Runtime (the model exported "
        "once to `embedding_cache_dir`) or PyTorch. Both give the same vectors (PyTorch "
        "embeds queries at float32).",
    )
    embedding_query_precision: Literal["int8", "float32"] = Field(
        default="int8",
        description="The weights of the graph a memory search's query is embedded with: int8 "
        "(quantized once from the model's own, kept in `embedding_cache_dir`; half the CPU, "
        "the vector within a cosine of 0.95 of float32's) or float32 (the "
        "model's own). Stored texts and history queries are always embedded at float32.",
    )
    embedding_cache_dir: Path | None = Field(
        default=None,
        description="Where the exported ONNX model is kept; default $XDG_CACHE_HOME/agent-memory.",
    )
    embedding_batch_size: int = Field(
        default=8,
        ge=1,
        le=1024,
        description="Most texts in one forward pass. Small length-sorted batches waste "
        "little on padding: a turn's texts embed at 136 texts/s in batches of 8, at 85 in "
        "one batch (bench history-ingest).",
    )
    embedding_cache_size: int = Field(default=4096, ge=0)
    pool_size: int = Field(default=10, ge=1)
    workers: int | None = Field(
        default=None,
        ge=1,
        description="Processes `serve` answers requests with (`--workers`); default 1. Each "
        "has its own connection pool and model, whose forward passes run on its share of the "
        "cores. An MCP session lives in the process that opened it (docs/mcp.md).",
    )
    max_page_size: int = Field(default=100, ge=1, le=1000)
    statement_timeout_ms: int = Field(default=15000, ge=100)
    log_level: Literal["debug", "info", "warning", "error", "critical"] = Field(
        default="info", description="Least severe log level written (also for the CLI)."
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="`json`: one JSON object a line, with request id, operation and duration.",
    )
    # Hardening of the public endpoint (docs/security.md). Each limit rejects a request
    # before any resolver runs or any SQL is sent.
    max_query_depth: int = Field(
        default=12, ge=1, description="Deepest selection nesting a document may have."
    )
    max_aliases: int = Field(default=20, ge=0, description="Aliased fields per document.")
    max_tokens: int = Field(default=2000, ge=10, description="Lexical tokens per document.")
    max_query_cost: int = Field(
        default=5000,
        ge=1,
        description="Fields a document may resolve: each field counts the product of the "
        "`first` arguments of the connections above it.",
    )
    max_body_bytes: int = Field(
        default=262_144, ge=1024, description="Largest request body accepted on /graphql."
    )
    query_timeout_ms: int = Field(
        default=30_000,
        ge=1,
        description="Wall-clock limit of one GraphQL request, until it sends COMMIT "
        "(a TIMEOUT answer means nothing was kept).",
    )

    cors_allowed_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Origins a browser may call the API from (comma-separated, e.g. "
        "`https://dash.example.com`; `*` for any); default none: no CORS headers.",
    )

    subscription_poll_ms: int = Field(
        default=1000,
        ge=100,
        description="How often a server process looks for the turns that began or ended in "
        "the sessions its subscribers follow: one statement each time, whatever their number.",
    )
    max_subscriptions: int = Field(
        default=100, ge=0, description="Subscriptions one server process serves at once."
    )
    model_prices: dict[str, Price] = Field(
        default_factory=dict,
        description="The price of each model per million tokens, as JSON: "
        '`{"gpt-4o": {"input": 2.5, "output": 10}}`; a name ending in `*` prices every '
        "model it begins (`gpt-4o*`). Costs are computed from it; a model it does not "
        "name has none. One currency, the operator's; default: no prices.",
    )

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        """A PostgreSQL URL, refused at start-up in one line when it is not one (the URL
        itself is not echoed: it may hold a password)."""
        if value is None:
            return value
        try:
            scheme = make_url(value).drivername
        except ArgumentError:
            scheme = ""
        if not scheme.startswith("postgres"):
            raise ValueError(
                "DATABASE_URL is not a PostgreSQL URL: give "
                "postgresql://user:password@host:5432/database"
            )
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @field_validator("cors_allowed_origins", mode="before")
    @classmethod
    def _origins(cls, value: object) -> object:
        if isinstance(value, str):
            return [o.strip().rstrip("/") for o in value.split(",") if o.strip()]
        return value
